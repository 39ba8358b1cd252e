/*
 * Non-blocking inter-communicator collectives give up rather than hang, at 4 ranks
 * (the even ranks against the odd ones):
 * 1. a revoke: the odd group waits for an MPI_Ibcast whose root (world rank 0) revokes
 *    the inter-communicator instead of starting it; both odd ranks (the one waiting
 *    for the root and the one waiting for its own group's leader) get
 *    MPIX_ERR_REVOKED from MPI_Wait, while world rank 2 (MPI_PROC_NULL) completes;
 * 2. a death: on a second inter-communicator rank 3 SIGKILLs itself after a barrier;
 *    the survivors' next MPI_Iallreduce and MPI_Ibarrier on it fail with
 *    MPIX_ERR_PROC_FAILED at every one of them, in both groups (none can complete
 *    without rank 3), whether completed by MPI_Wait or by an MPI_Test loop.
 * Run with --exit-status survivors; each survivor prints "rank R: NBC INTER FT OK".
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int me = -1;

#include "check.h"
#include "past.h"

static int error_class(int rc) {
    int cls = -1;
    OK(MPI_Error_class(rc, &cls));
    return cls;
}

/* Completes `req` by MPI_Test calls; the last call's return code. */
static int test_loop(MPI_Request *req) {
    int flag = 0, rc = MPI_SUCCESS;
    while (!flag && rc == MPI_SUCCESS) rc = MPI_Test(req, &flag, MPI_STATUS_IGNORE);
    return rc;
}

int main(int argc, char **argv) {
    int size;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size == 4);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int side = me % 2;
    MPI_Comm local, inter, inter2;
    OK(MPI_Comm_split(MPI_COMM_WORLD, side, me, &local));
    OK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, side == 0 ? 1 : 0, 10, &inter));
    OK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, side == 0 ? 1 : 0, 11, &inter2));
    OK(MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(inter2, MPI_ERRORS_RETURN));

    /* 1. A revoke interrupts the waiting group. */
    int in = me, out = -1;
    MPI_Request req;
    OK(MPI_Iallreduce(&in, &out, 1, MPI_INT, MPI_SUM, inter, &req));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK(out == (side == 0 ? 1 + 3 : 0 + 2));
    int buf[4] = {0};
    if (me == 0) {
        struct timespec t = {0, 100 * 1000 * 1000};
        nanosleep(&t, NULL);
        OK(MPIX_Comm_revoke(inter));
    } else if (side == 0) {
        OK(MPI_Ibcast(NULL, 4, MPI_INT, MPI_PROC_NULL, inter, &req));
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    } else {
        OK(MPI_Ibcast(buf, 4, MPI_INT, 0, inter, &req));
        int rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        CHECK(rc != MPI_SUCCESS && error_class(rc) == MPIX_ERR_REVOKED);
    }

    /* 2. A death fails the next collectives everywhere. */
    OK(MPI_Iallreduce(&in, &out, 1, MPI_INT, MPI_SUM, inter2, &req));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK(out == (side == 0 ? 1 + 3 : 0 + 2));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(others_past(MPI_COMM_WORLD, 3));
    if (me == 3) raise(SIGKILL);
    int rc = MPI_Iallreduce(&in, &out, 1, MPI_INT, MPI_SUM, inter2, &req);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK(rc != MPI_SUCCESS && error_class(rc) == MPIX_ERR_PROC_FAILED);
    rc = MPI_Ibarrier(inter2, &req);
    if (rc == MPI_SUCCESS) rc = test_loop(&req);
    CHECK(rc != MPI_SUCCESS && error_class(rc) == MPIX_ERR_PROC_FAILED);
    printf("rank %d: NBC INTER FT OK\n", me);
    fflush(stdout);
    OK(MPI_Finalize());
    return 0;
}
