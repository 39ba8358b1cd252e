/*
 * Inter-communicator collectives give up rather than hang, at 4 ranks (the even ranks
 * against the odd ones):
 * 1. a revoke: the odd group waits in an MPI_Bcast whose root (world rank 0) revokes
 *    the inter-communicator instead of sending; both odd ranks (the one waiting for
 *    the root and the one waiting for its own group's leader) get MPIX_ERR_REVOKED;
 * 2. a death: on a second inter-communicator rank 3 SIGKILLs itself after a
 *    barrier; the survivors' next MPI_Allreduce on it fails with MPIX_ERR_PROC_FAILED
 *    at every one of them, in both groups (none of them can complete without rank 3's
 *    contribution);
 * 3. MPIX_Comm_shrink of that inter-communicator gives the survivors of both groups
 *    (sizes, ranks, an allreduce, messages across, an agreement on it).
 * Run with --exit-status survivors; each survivor prints "rank R: INTERCOMM COLL FT OK".
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

/* An allreduce that must succeed: each group gets the other's sum of world ranks. */
static void allreduce_ok(MPI_Comm inter, int side) {
    int in = me, out = -1;
    OK(MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, inter));
    CHECK(out == (side == 0 ? 1 + 3 : 0 + 2));
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
    allreduce_ok(inter, side);
    int buf[4] = {0};
    if (me == 0) {
        struct timespec t = {0, 100 * 1000 * 1000};
        nanosleep(&t, NULL);
        OK(MPIX_Comm_revoke(inter));
    } else if (side == 0) {
        OK(MPI_Bcast(NULL, 4, MPI_INT, MPI_PROC_NULL, inter));
    } else {
        int rc = MPI_Bcast(buf, 4, MPI_INT, 0, inter);
        CHECK(rc != MPI_SUCCESS && error_class(rc) == MPIX_ERR_REVOKED);
    }

    /* 2. A death fails the next collective everywhere. */
    allreduce_ok(inter2, side);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(others_past(MPI_COMM_WORLD, 3));
    if (me == 3) raise(SIGKILL);
    int in = me, out = -1;
    int rc = MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, inter2);
    CHECK(rc != MPI_SUCCESS && error_class(rc) == MPIX_ERR_PROC_FAILED);

    /* 3. MPIX_Comm_shrink on the inter-communicator: the survivors of both groups. */
    MPI_Comm shrunk;
    OK(MPIX_Comm_shrink(inter2, &shrunk));
    OK(MPI_Comm_set_errhandler(shrunk, MPI_ERRORS_RETURN));
    int is_inter = 0, lsize = -1, rsize = -1, rank = -1;
    OK(MPI_Comm_test_inter(shrunk, &is_inter));
    OK(MPI_Comm_size(shrunk, &lsize));
    OK(MPI_Comm_remote_size(shrunk, &rsize));
    OK(MPI_Comm_rank(shrunk, &rank));
    CHECK(is_inter);
    CHECK(lsize == (side == 0 ? 2 : 1) && rsize == (side == 0 ? 1 : 2));
    CHECK(rank == me / 2);
    in = me;
    OK(MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, shrunk));
    CHECK(out == (side == 0 ? 1 : 0 + 2));
    /* Point to point across it: the odd survivor greets each even one. */
    if (side == 1) {
        for (int r = 0; r < 2; r++) OK(MPI_Send(&me, 1, MPI_INT, r, 5, shrunk));
    } else {
        int from = -1;
        MPI_Status st;
        OK(MPI_Recv(&from, 1, MPI_INT, MPI_ANY_SOURCE, 5, shrunk, &st));
        CHECK(from == 1 && st.MPI_SOURCE == 0);
    }
    int flag = side == 0 ? 1 : 3;
    OK(MPIX_Comm_agree(shrunk, &flag));
    CHECK(flag == (side == 0 ? 3 : 1)); /* each side reads the other's AND */
    OK(MPI_Comm_free(&shrunk));
    printf("rank %d: INTERCOMM COLL FT OK\n", me);
    fflush(stdout);
    OK(MPI_Finalize());
    return 0;
}
