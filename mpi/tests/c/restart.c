/*
 * Restart in place from C: 3 ranks save a duplicate of the world as "grp"; rank 2 is
 * SIGKILLed; rank 0 restarts it (MPIX_Comm_irestart_rank + MPI_Wait); every process
 * calls MPIX_Comm_rejoin("grp") (the survivors readmit, the new incarnation gets the
 * communicator back with rank 2); then all three exchange messages in a ring, run an
 * allreduce and an agreement on it, and free it.
 *
 * Run under steadfast-run -np 3 --no-kill.
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdio.h>

#include "past.h"

static int rank = -1;

static int fail(const char *what, int rc) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    msg[0] = 0;
    MPI_Error_string(rc, msg, &len);
    fprintf(stderr, "rank %d: %s: %s\n", rank, what, msg);
    return 1;
}

int main(int argc, char *argv[]) {
    MPI_Comm group;
    int restored = -1, size, rc;

    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPIX_Is_restored_rank(&restored);
    if (size != 3) {
        fprintf(stderr, "run with 3 ranks\n");
        return 1;
    }
    if (!restored) {
        MPI_Comm_dup(MPI_COMM_WORLD, &group);
        MPI_Comm_set_errhandler(group, MPI_ERRORS_RETURN);
        if ((rc = MPIX_Comm_save(group, "grp")) != MPI_SUCCESS) return fail("save", rc);
        if ((rc = MPI_Barrier(group)) != MPI_SUCCESS) return fail("barrier", rc);
        if ((rc = others_past(group, 2)) != MPI_SUCCESS) return fail("past", rc);
        if (rank == 2) raise(SIGKILL);
        /* The survivors see the failure. */
        rc = MPI_Barrier(group);
        if (rc == MPI_SUCCESS) return fail("a barrier with rank 2 dead succeeded", rc);
        if (rank == 0) {
            MPI_Request req;
            if ((rc = MPIX_Comm_irestart_rank(group, 2, &req)) != MPI_SUCCESS)
                return fail("irestart_rank", rc);
            if ((rc = MPI_Wait(&req, MPI_STATUS_IGNORE)) != MPI_SUCCESS)
                return fail("wait for the restart", rc);
        }
        MPI_Comm same;
        if ((rc = MPIX_Comm_rejoin("grp", &same)) != MPI_SUCCESS) return fail("rejoin", rc);
        if (same != group) return fail("a survivor's rejoin gave another handle", MPI_ERR_OTHER);
    } else {
        if (rank != 2) return fail("the restarted process has another rank", MPI_ERR_OTHER);
        if ((rc = MPIX_Comm_rejoin("grp", &group)) != MPI_SUCCESS) return fail("rejoin", rc);
        MPI_Comm_set_errhandler(group, MPI_ERRORS_RETURN);
    }
    int grank, gsize;
    MPI_Comm_rank(group, &grank);
    MPI_Comm_size(group, &gsize);
    if (grank != rank || gsize != 3) return fail("rank or size in the rejoined group", MPI_ERR_OTHER);
    /* A ring: each sends its rank times 10 (plus whether it is restored) to the next. */
    int mine = rank * 10 + restored, got = -1;
    rc = MPI_Sendrecv(&mine, 1, MPI_INT, (rank + 1) % 3, 7, &got, 1, MPI_INT, (rank + 2) % 3, 7,
                      group, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return fail("sendrecv", rc);
    int from = (rank + 2) % 3;
    if (got != from * 10 + (from == 2)) return fail("the ring's message", MPI_ERR_OTHER);
    int one = rank + 1, sum = 0;
    if ((rc = MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, group)) != MPI_SUCCESS)
        return fail("allreduce", rc);
    if (sum != 6) return fail("the allreduce's sum", MPI_ERR_OTHER);
    int flag = rank == 1 ? 1 : 3;
    if ((rc = MPIX_Comm_agree(group, &flag)) != MPI_SUCCESS) return fail("agree", rc);
    if (flag != 1) return fail("the agreed value", MPI_ERR_OTHER);
    printf("rank %d: RESTART OK restored=%d\n", rank, restored);
    fflush(stdout);
    MPI_Comm_free(&group);
    MPI_Finalize();
    return 0;
}
