/*
 * Uniform inter-communicator creation over a failure, at 4 ranks: the even and the odd
 * ranks create inter-communicators again and again while rank 3 (odd side)
 * SIGKILLs itself after a delay (argument, microseconds) from a thread of its own, in
 * the middle of whatever call it is in. After each creation the survivors agree on
 * whether it succeeded everywhere or failed everywhere (never mixed), stop at the first
 * failure, then finalize. Each survivor prints "rank R: INTERCOMM OK".
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int me = -1;

#include "check.h"
#include "past.h"

static long delay_us = 0;

static void *die_later(void *arg) {
    (void)arg;
    struct timespec t = {delay_us / 1000000, (delay_us % 1000000) * 1000};
    nanosleep(&t, NULL);
    raise(SIGKILL);
    return NULL;
}

int main(int argc, char **argv) {
    int size, provided;
    delay_us = argc > 1 ? atol(argv[1]) : 0;
    OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size == 4);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_Comm side;
    OK(MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &side));
    OK(MPI_Comm_set_errhandler(side, MPI_ERRORS_RETURN));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(others_past(MPI_COMM_WORLD, 3));
    if (me == 3) {
        pthread_t t;
        CHECK(pthread_create(&t, NULL, die_later, NULL) == 0);
    }
    int failed_at = -1;
    for (int it = 0; it < 2000 && failed_at < 0; it++) {
        MPI_Comm inter;
        int rc = MPI_Intercomm_create(side, 0, MPI_COMM_WORLD, me % 2 == 0 ? 1 : 0, 10 + it % 1000,
                                      &inter);
        int ok = rc == MPI_SUCCESS;
        if (ok) {
            /* Not freed: the runtime's closing barrier is not fault tolerant, and a
             * death between MPI_Comm_free's agreement and that barrier can leave a
             * rank waiting in it (docs/mpi.md); creations are what this tests. */
            OK(MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN));
        } else {
            int cls;
            MPI_Error_class(rc, &cls);
            CHECK(cls == MPIX_ERR_PROC_FAILED || cls == MPIX_ERR_REVOKED);
        }
        /* Uniform: everyone succeeded, or everyone failed. The agreements decide the
         * same at every survivor even when they report an unacknowledged failure. */
        int all_ok = ok, all_failed = !ok;
        MPIX_Comm_agree(MPI_COMM_WORLD, &all_ok);
        MPIX_Comm_agree(MPI_COMM_WORLD, &all_failed);
        CHECK(all_ok || all_failed);
        if (!ok) failed_at = it;
    }
    CHECK(failed_at >= 0);
    OK(MPIX_Comm_failure_ack(MPI_COMM_WORLD));
    MPI_Comm survivors;
    OK(MPIX_Comm_shrink(MPI_COMM_WORLD, &survivors));
    int n = 0;
    OK(MPI_Comm_size(survivors, &n));
    CHECK(n == 3);
    OK(MPI_Finalize());
    printf("rank %d: INTERCOMM OK (failed at creation %d)\n", me, failed_at);
    return 0;
}
