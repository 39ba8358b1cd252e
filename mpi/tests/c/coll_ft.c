/*
 * ULFM rules of the collectives, at N >= 4 ranks (argument "ft"): the last rank prints
 * a line (no fflush) and SIGKILLs itself before the first collective that needs it.
 * Survivors check that
 * - MPI_Barrier and MPI_Allreduce on a communicator holding the dead rank fail with
 *   MPIX_ERR_PROC_FAILED at every survivor, none waiting forever on a survivor that
 *   gave up (the dissemination barrier at 4 ranks has rank 2 wait on rank 0 only);
 * - MPIX_Comm_failure_ack does not re-enable them (a known old failure fails them
 *   again), MPI_Ibarrier's and MPI_Iallreduce's MPI_Wait fail the same way;
 * - a communicator without the dead rank works throughout;
 * - MPIX_Comm_ishrink (announced by OMPI_HAVE_MPIX_COMM_ISHRINK) gives N-1 ranks on
 *   which collectives work.
 * Each survivor prints "rank R: COLL FT OK"; the launcher shows the victim's line.
 * With the argument "attr V" it only checks that MPI_COMM_WORLD's MPIX_FT attribute
 * is V and prints "rank R: FT ATTR V".
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !defined(OMPI_HAVE_MPIX_COMM_ISHRINK) || !OMPI_HAVE_MPIX_COMM_ISHRINK
#error "mpi-ext.h does not announce MPIX_Comm_ishrink"
#endif

static int me = -1;

#include "check.h"
#include "past.h"

static int class_of(int rc) {
    int cls = -1;
    OK(MPI_Error_class(rc, &cls));
    return cls;
}

#define EXPECT_FAILED(call)                                                            \
    do {                                                                               \
        int rc_ = (call), cls_ = class_of(rc_);                                        \
        if (cls_ != MPIX_ERR_PROC_FAILED) {                                            \
            char s_[MPI_MAX_ERROR_STRING]; int l_ = 0;                                  \
            MPI_Error_string(rc_, s_, &l_);                                            \
            fprintf(stderr, "rank %d: line %d: %s\n", me, __LINE__, s_);               \
        }                                                                              \
        CHECK(cls_ == MPIX_ERR_PROC_FAILED);                                           \
    } while (0)

int main(int argc, char **argv) {
    int size;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(argc >= 2);

    int *ft = NULL, flag = 0;
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPIX_FT, &ft, &flag));
    CHECK(flag == 1 && ft != NULL);
    if (strcmp(argv[1], "attr") == 0) {
        CHECK(argc == 3 && *ft == atoi(argv[2]));
        printf("rank %d: FT ATTR %d\n", me, *ft);
        OK(MPI_Finalize());
        return 0;
    }
    CHECK(strcmp(argv[1], "ft") == 0 && *ft == 1 && size >= 4);

    int victim = size - 1;
    MPI_Comm comm, alive;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    OK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
    OK(MPI_Comm_split(MPI_COMM_WORLD, me == victim, me, &alive));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(others_past(MPI_COMM_WORLD, victim));
    if (me == victim) {
        /* Buffered only: the line reaches the output if stdout is line-buffered. */
        printf("rank %d: last words\n", me);
        raise(SIGKILL);
    }

    /* A new failure: nobody can complete, everybody must return. */
    EXPECT_FAILED(MPI_Barrier(comm));
    int one = 1, sum = 0;
    OK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, alive));
    CHECK(sum == size - 1);

    /* An old, acknowledged failure still fails the collectives. */
    OK(MPIX_Comm_failure_ack(comm));
    EXPECT_FAILED(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm));
    MPI_Request req;
    OK(MPI_Ibarrier(comm, &req));
    EXPECT_FAILED(MPI_Wait(&req, MPI_STATUS_IGNORE));
    /* A non-blocking allreduce too (every rank waits on the dead one's part). */
    OK(MPI_Iallreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm, &req));
    EXPECT_FAILED(MPI_Wait(&req, MPI_STATUS_IGNORE));
    EXPECT_FAILED(MPI_Barrier(comm));

    MPI_Comm shrunk;
    OK(MPIX_Comm_ishrink(comm, &shrunk, &req));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    int ssize = -1;
    OK(MPI_Comm_size(shrunk, &ssize));
    CHECK(ssize == size - 1);
    sum = 0;
    OK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, shrunk));
    CHECK(sum == size - 1);
    OK(MPI_Barrier(alive));

    OK(MPI_Comm_free(&shrunk));
    OK(MPI_Comm_free(&alive));
    MPI_Comm_free(&comm); /* holds a dead rank: freed without its barrier */
    printf("rank %d: COLL FT OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
