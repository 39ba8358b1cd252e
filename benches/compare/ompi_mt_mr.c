/* Multithreaded message rate for an MPI library with MPI_THREAD_MULTIPLE, doing what
 * `steadfast-bench mt_mr` does: ranks 0 and 1 each run T threads; thread t of rank 0
 * sends windows of 64 MPI_Isend of SIZE bytes to thread t of rank 1 and waits for them,
 * its receiver takes the 64 messages in order (MPI_Recv) and answers with a one-byte
 * acknowledgement. "private": each thread pair on its own MPI_Comm_dup of
 * MPI_COMM_WORLD (tags 2 and 3); "shared": all threads on one duplicate, thread t's
 * tags 2 + 2t and 3 + 2t. 156 windows per thread and repetition (steadfast-bench's
 * default --iterations 10000), 15 warm-up windows before the first, 3 repetitions,
 * each timed from before the threads start to after the last ends (the slower rank's
 * wall time), as steadfast-bench does.
 *
 * Usage: ompi_mt_mr [THREADS,...] [SIZE]   (default 1,2,4,8 and 8)
 * Prints "mt_mr <threads> <private|shared> <messages/s>" (median of the repetitions). */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 64
#define REPS 3
#define WINDOWS (10000 / WINDOW)
#define WARMUP 15
#define MAX_THREADS 64

struct job {
    MPI_Comm comm;
    int rank, tag, windows;
    size_t size;
};

static void *run_thread(void *arg) {
    struct job *j = arg;
    char *buf = calloc(j->size ? j->size : 1, 1);
    char ack = 0;
    MPI_Request reqs[WINDOW];
    int peer = 1 - j->rank;
    for (int w = 0; w < j->windows; w++) {
        if (j->rank == 0) {
            for (int i = 0; i < WINDOW; i++)
                MPI_Isend(buf, (int)j->size, MPI_CHAR, peer, j->tag, j->comm, &reqs[i]);
            MPI_Waitall(WINDOW, reqs, MPI_STATUSES_IGNORE);
            MPI_Recv(&ack, 1, MPI_CHAR, peer, j->tag + 1, j->comm, MPI_STATUS_IGNORE);
        } else {
            for (int i = 0; i < WINDOW; i++)
                MPI_Recv(buf, (int)j->size, MPI_CHAR, peer, j->tag, j->comm, MPI_STATUS_IGNORE);
            MPI_Send(&ack, 1, MPI_CHAR, peer, j->tag + 1, j->comm);
        }
    }
    free(buf);
    return NULL;
}

/* One repetition: its wall time at this rank. */
static double repetition(MPI_Comm *comms, int shared, int threads, int rank, int windows,
                         size_t size) {
    pthread_t th[MAX_THREADS];
    struct job jobs[MAX_THREADS];
    double start = MPI_Wtime();
    for (int t = 0; t < threads; t++) {
        jobs[t] = (struct job){shared ? comms[0] : comms[t], rank, shared ? 2 + 2 * t : 2,
                               windows, size};
        pthread_create(&th[t], NULL, run_thread, &jobs[t]);
    }
    for (int t = 0; t < threads; t++) pthread_join(th[t], NULL);
    return MPI_Wtime() - start;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    int provided, rank, n;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n != 2 || provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0)
            fprintf(stderr, "ompi_mt_mr: needs 2 ranks and MPI_THREAD_MULTIPLE (got %d ranks, level %d)\n",
                    n, provided);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int counts[16], ncounts = 0;
    char list[256] = "1,2,4,8";
    if (argc > 1) snprintf(list, sizeof list, "%s", argv[1]);
    for (char *tok = strtok(list, ","); tok && ncounts < 16; tok = strtok(NULL, ",")) {
        int c = atoi(tok);
        if (c < 1 || c > MAX_THREADS) {
            if (rank == 0) fprintf(stderr, "ompi_mt_mr: thread count %s: expected 1 to %d\n", tok, MAX_THREADS);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        counts[ncounts++] = c;
    }
    size_t size = argc > 2 ? (size_t)atol(argv[2]) : 8;
    for (int shared = 0; shared <= 1; shared++) {
        for (int k = 0; k < ncounts; k++) {
            int threads = counts[k], ncomms = shared ? 1 : threads;
            MPI_Comm comms[MAX_THREADS];
            for (int i = 0; i < ncomms; i++) MPI_Comm_dup(MPI_COMM_WORLD, &comms[i]);
            double rates[REPS];
            for (int r = 0; r < REPS; r++) {
                if (r == 0) repetition(comms, shared, threads, rank, WARMUP, size);
                MPI_Barrier(MPI_COMM_WORLD);
                double mine = repetition(comms, shared, threads, rank, WINDOWS, size), slowest;
                MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                rates[r] = (double)threads * WINDOWS * WINDOW / slowest;
            }
            for (int i = 0; i < ncomms; i++) MPI_Comm_free(&comms[i]);
            qsort(rates, REPS, sizeof rates[0], cmp);
            if (rank == 0)
                printf("mt_mr %d %s %.0f\n", threads, shared ? "shared" : "private", rates[REPS / 2]);
        }
    }
    MPI_Finalize();
    return 0;
}
