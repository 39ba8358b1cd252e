/* Ping-pong latency (8 B, half the round trip) and window bandwidth (64 messages of
 * 1 MiB in flight, as steadfast-bench bw) between ranks 0 and 1, for Open MPI.
 * Prints "latency_8B <us>" and "bw_1MiB <MB/s>" (best of 5 repetitions' medians). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char small[8] = {0};
    double lat[5], bw[5];
    for (int rep = 0; rep < 5; rep++) {
        int iters = 20000;
        for (int i = -1000; i < iters; i++) {
            static double t0;
            if (i == 0) t0 = MPI_Wtime();
            if (rank == 0) {
                MPI_Send(small, 8, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(small, 8, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(small, 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(small, 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
            }
            if (i == iters - 1) lat[rep] = (MPI_Wtime() - t0) * 1e6 / iters / 2;
        }
    }
    size_t size = 1 << 20;
    char *buf = malloc(size);
    MPI_Request reqs[64];
    char ack = 0;
    for (int rep = 0; rep < 5; rep++) {
        int iters = 20;
        double t0 = 0;
        for (int i = -2; i < iters; i++) {
            if (i == 0) t0 = MPI_Wtime();
            if (rank == 0) {
                for (int w = 0; w < 64; w++)
                    MPI_Isend(buf, (int)size, MPI_CHAR, 1, 2, MPI_COMM_WORLD, &reqs[w]);
                MPI_Waitall(64, reqs, MPI_STATUSES_IGNORE);
                MPI_Recv(&ack, 1, MPI_CHAR, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                for (int w = 0; w < 64; w++)
                    MPI_Recv(buf, (int)size, MPI_CHAR, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(&ack, 1, MPI_CHAR, 0, 3, MPI_COMM_WORLD);
            }
        }
        bw[rep] = (double)size * 64 * iters / (MPI_Wtime() - t0) / 1e6;
    }
    if (rank == 0) {
        qsort(lat, 5, sizeof(double), cmp);
        qsort(bw, 5, sizeof(double), cmp);
        printf("latency_8B %.3f\nbw_1MiB %.1f\n", lat[2], bw[2]);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
