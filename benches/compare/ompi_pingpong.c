/* Ping-pong latency (8 B, half the round trip) and window bandwidth (64 messages of
 * 1 MiB in flight, as steadfast-bench bw) between ranks 0 and 1, for Open MPI.
 * Prints "latency_8B <us>" and "bw_1MiB <MB/s>" (medians of 5 repetitions).
 * With the argument "sweep": "lat <size> <us>" and "bw <size> <MB/s>" for sizes 1 B to
 * 4 MiB at every power of two (median of 3), with steadfast-bench's iteration counts. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* As steadfast-bench's iterations_for(size, base). */
static int iterations_for(size_t size, int base) {
    if (size >= (1u << 20)) return base / 100 > 10 ? base / 100 : 10;
    if (size >= (64u << 10)) return base / 10 > 20 ? base / 10 : 20;
    return base;
}

/* One-way latency of `size` bytes: half the round trip, `iters` timed after iters/10. */
static double lat_of(int rank, char *buf, size_t size, int iters) {
    double t0 = 0;
    for (int i = -iters / 10; i < iters; i++) {
        if (i == 0) t0 = MPI_Wtime();
        if (rank == 0) {
            MPI_Send(buf, (int)size, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(buf, (int)size, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(buf, (int)size, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, (int)size, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) * 1e6 / iters / 2;
}

/* Bandwidth of windows of 64 messages of `size` bytes and an ack, `iters` timed. */
static double bw_of(int rank, char *buf, size_t size, int iters) {
    MPI_Request reqs[64];
    char ack = 0;
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
    return (double)size * 64 * iters / (MPI_Wtime() - t0) / 1e6;
}

static void sweep(int rank) {
    char *buf = calloc(4u << 20, 1);
    /* Warm start, as steadfast-bench's bw: 1000 windows of the first size (the
     * host's first few ms of load run slower). */
    bw_of(rank, buf, 1, 1000);
    for (size_t size = 1; size <= (4u << 20); size *= 2) {
        double lat[3], bw[3];
        for (int rep = 0; rep < 3; rep++) {
            lat[rep] = lat_of(rank, buf, size, iterations_for(size, 10000));
            bw[rep] = bw_of(rank, buf, size, iterations_for(size, 10000 / 64));
        }
        if (rank == 0) {
            qsort(lat, 3, sizeof(double), cmp);
            qsort(bw, 3, sizeof(double), cmp);
            printf("lat %zu %.3f\nbw %zu %.1f\n", size, lat[1], size, bw[1]);
            fflush(stdout);
        }
    }
    free(buf);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc > 1 && argv[1][0] == 's') {
        sweep(rank);
        MPI_Finalize();
        return 0;
    }
    char *buf = calloc(1 << 20, 1);
    double lat[5], bw[5];
    for (int rep = 0; rep < 5; rep++) lat[rep] = lat_of(rank, buf, 8, 20000);
    for (int rep = 0; rep < 5; rep++) bw[rep] = bw_of(rank, buf, 1 << 20, 20);
    if (rank == 0) {
        qsort(lat, 5, sizeof(double), cmp);
        qsort(bw, 5, sizeof(double), cmp);
        printf("latency_8B %.3f\nbw_1MiB %.1f\n", lat[2], bw[2]);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
