/* Message rate in the shape of OSU's osu_mbw_mr, for Open MPI, doing exactly what
 * `steadfast-bench mbw_mr` does: the ranks form pairs, rank i (first half) sending to
 * rank i + n/2; a sender posts a window of 64 MPI_Isend and waits for them all, its
 * receiver takes the 64 messages in order (MPI_Recv) and answers with a one-byte
 * acknowledgement. Windows per repetition as steadfast-bench's default --iterations
 * 10000: 156 (20 from 64 KiB, 10 from 1 MiB) after 15 warm-up windows in the first
 * repetition; 3 repetitions between barriers, the slowest sender's time each.
 * Prints "mbw_mr <size> <MB/s> <messages/s>" (medians) for sizes 8 B to 1 MiB, or to
 * the size given as the first argument. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define WINDOW 64
#define REPS 3

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* As steadfast-bench's windows_for(size, 10000). */
static int windows_for(size_t size) {
    int base = 10000 / WINDOW;
    if (size >= (1u << 20)) return base / 100 > 10 ? base / 100 : 10;
    if (size >= (64u << 10)) return base / 10 > 20 ? base / 10 : 20;
    return base;
}

static void step(int sender, int peer, char *sbuf, char *rbuf, size_t size) {
    MPI_Request reqs[WINDOW];
    char ack = 0;
    if (sender) {
        for (int w = 0; w < WINDOW; w++)
            MPI_Isend(sbuf, (int)size, MPI_CHAR, peer, 2, MPI_COMM_WORLD, &reqs[w]);
        MPI_Waitall(WINDOW, reqs, MPI_STATUSES_IGNORE);
        MPI_Recv(&ack, 1, MPI_CHAR, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        for (int w = 0; w < WINDOW; w++)
            MPI_Recv(rbuf, (int)size, MPI_CHAR, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&ack, 1, MPI_CHAR, peer, 3, MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n < 2 || n % 2) {
        if (rank == 0) fprintf(stderr, "ompi_mbw_mr: an even number of ranks, not %d\n", n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int pairs = n / 2, sender = rank < pairs;
    int peer = sender ? rank + pairs : rank - pairs;
    size_t max = argc > 1 ? strtoul(argv[1], NULL, 10) : (1u << 20);
    if (max < 8 || max > (1u << 20)) max = 1u << 20;
    char *sbuf = malloc(1u << 20), *rbuf = malloc(1u << 20);
    if (!sbuf || !rbuf) MPI_Abort(MPI_COMM_WORLD, 1);
    for (size_t i = 0; i < (1u << 20); i++) sbuf[i] = 0x5a;
    /* Warm start, as steadfast-bench's: 1000 windows of the first size before any
     * measurement (the host's first few ms of load run slower). */
    for (int w = 0; w < 1000; w++) step(sender, peer, sbuf, rbuf, 8);
    for (size_t size = 8; size <= max; size *= 2) {
        int windows = windows_for(size), warm = 15 < windows ? 15 : windows;
        double mbs[REPS];
        for (int rep = 0; rep < REPS; rep++) {
            for (int w = 0; rep == 0 && w < warm; w++) step(sender, peer, sbuf, rbuf, size);
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int w = 0; w < windows; w++) step(sender, peer, sbuf, rbuf, size);
            double secs = sender ? MPI_Wtime() - t0 : 0, slowest;
            MPI_Allreduce(&secs, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            mbs[rep] = (double)pairs * windows * WINDOW * size / slowest / 1e6;
        }
        if (rank == 0) {
            qsort(mbs, REPS, sizeof(double), cmp);
            printf("mbw_mr %zu %.2f %.0f\n", size, mbs[REPS / 2], mbs[REPS / 2] * 1e6 / size);
            fflush(stdout);
        }
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
