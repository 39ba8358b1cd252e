/*
 * A ULFM program of the shape of Open MPI's ULFM examples, written against Open MPI
 * (mpi-ext.h, MPIX_*, MPI_ERRORS_RETURN) and compiled unchanged with steadfast-cc: an
 * iterative computation (an allreduce per iteration) on a duplicate of the world; one
 * rank dies during it; the survivors revoke, agree on whether the iteration counts,
 * shrink, and redo it on the shrunk communicator, then agree that they finished.
 *
 *   ulfm_loop [victim [iteration]]   (default: the last rank, in iteration 5)
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#define ITERATIONS 20

static int rank = -1;

static void fatal(const char *what, int rc) {
    char msg[MPI_MAX_ERROR_STRING];
    int len;
    MPI_Error_string(rc, msg, &len);
    fprintf(stderr, "rank %d: %s: %s\n", rank, what, msg);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

int main(int argc, char *argv[]) {
    MPI_Comm world, shrunk;
    int size, rc, eclass, recoveries = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_dup(MPI_COMM_WORLD, &world);
    MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    int victim = argc > 1 ? atoi(argv[1]) : size - 1;
    int fail_at = argc > 2 ? atoi(argv[2]) : 5;
    int original = size;

    for (int i = 0; i < ITERATIONS; i++) {
        if (i == fail_at && rank == victim && recoveries == 0) {
            raise(SIGKILL);
        }
        long contribution = i + 1, sum = -1;
        rc = MPI_Allreduce(&contribution, &sum, 1, MPI_LONG, MPI_SUM, world);
        if (rc != MPI_SUCCESS) {
            MPI_Error_class(rc, &eclass);
            if (eclass != MPIX_ERR_PROC_FAILED && eclass != MPIX_ERR_REVOKED) {
                fatal("allreduce", rc);
            }
            /* Interrupt the others: they may wait on a rank that gave up. */
            MPIX_Comm_revoke(world);
        }
        /* A collective may succeed at some ranks and fail at others (a revoke can
         * interrupt a rank whose message was still on its way): the survivors agree
         * on whether this iteration counts, the ULFM idiom. */
        int ok = rc == MPI_SUCCESS;
        rc = MPIX_Comm_agree(world, &ok);
        if (rc != MPI_SUCCESS || !ok) {
            /* Every survivor gets here together; they rebuild and redo it. */
            MPIX_Comm_revoke(world);
            rc = MPIX_Comm_shrink(world, &shrunk);
            if (rc != MPI_SUCCESS) fatal("shrink", rc);
            MPI_Comm_free(&world);
            world = shrunk;
            MPI_Comm_rank(world, &rank);
            MPI_Comm_size(world, &size);
            recoveries++;
            i--; /* redo this iteration */
            continue;
        }
        if (sum != (long)size * (i + 1)) {
            fprintf(stderr, "rank %d: iteration %d: sum %ld, expected %ld\n", rank, i, sum,
                    (long)size * (i + 1));
            MPI_Abort(MPI_COMM_WORLD, 4);
        }
    }

    int done = 1;
    rc = MPIX_Comm_agree(world, &done);
    if (rc != MPI_SUCCESS || done != 1) fatal("agree", rc);
    printf("rank %d: ULFM OK, %d of %d survived, %d recovery\n", rank, size, original,
           recoveries);
    MPI_Comm_free(&world);
    MPI_Finalize();
    return 0;
}
