/*
 * Non-blocking operations toward a rank known dead (ULFM reports a process failure
 * of a non-blocking operation at its completion): the last rank SIGKILLs itself; once
 * a barrier has told each survivor, each one
 * - starts an MPI_Isend and an MPI_Irecv naming the dead rank: both return
 *   MPI_SUCCESS and a request;
 * - completes them with MPI_Waitall under a user error handler: the call returns
 *   MPI_ERR_IN_STATUS, each status holds MPIX_ERR_PROC_FAILED, and the handler is
 *   called with MPIX_ERR_PROC_FAILED (the failed request's error, which ULFM handlers
 *   test for), once;
 * - does the same with MPI_Waitsome beside a request to a live rank, which completes;
 * - MPI_Isend on a revoked communicator still fails at the call (MPIX_ERR_REVOKED).
 * Each survivor prints "rank R: ISEND FT OK".
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static int me = -1;

#include "check.h"
#include "past.h"

static int handled = 0, handled_class = -1;

static void record(MPI_Comm *comm, int *code, ...) {
    (void)comm;
    handled++;
    MPI_Error_class(*code, &handled_class);
}

int main(int argc, char **argv) {
    int size;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    MPI_Errhandler eh;
    OK(MPI_Comm_create_errhandler(record, &eh));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh));
    int victim = size - 1;

    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(others_past(MPI_COMM_WORLD, victim));
    if (me == victim)
        raise(SIGKILL);
    /* The barrier fails once the failure is known here (the handler counts it). */
    while (MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS) {
    }
    CHECK(handled >= 1 && handled_class == MPIX_ERR_PROC_FAILED);

    int x = me, y = -1;
    MPI_Request reqs[3];
    MPI_Status st[3];
    handled = 0;
    OK(MPI_Isend(&x, 1, MPI_INT, victim, 1, MPI_COMM_WORLD, &reqs[0]));
    OK(MPI_Irecv(&y, 1, MPI_INT, victim, 1, MPI_COMM_WORLD, &reqs[1]));
    CHECK(handled == 0);
    CHECK(MPI_Waitall(2, reqs, st) == MPI_ERR_IN_STATUS);
    CHECK(handled == 1 && handled_class == MPIX_ERR_PROC_FAILED);
    for (int i = 0; i < 2; i++) {
        int cls = -1;
        OK(MPI_Error_class(st[i].MPI_ERROR, &cls));
        CHECK(cls == MPIX_ERR_PROC_FAILED);
    }

    /* Waitsome: a live neighbour's message beside the dead rank's request. */
    int next = (me + 1) % victim, prev = (me + victim - 1) % victim, z = -1;
    handled = 0;
    OK(MPI_Isend(&x, 1, MPI_INT, victim, 2, MPI_COMM_WORLD, &reqs[0]));
    OK(MPI_Irecv(&z, 1, MPI_INT, prev, 3, MPI_COMM_WORLD, &reqs[1]));
    OK(MPI_Isend(&x, 1, MPI_INT, next, 3, MPI_COMM_WORLD, &reqs[2]));
    int left = 3, failed = 0;
    while (left > 0) {
        int outcount = 0, idx[3];
        int rc = MPI_Waitsome(3, reqs, &outcount, idx, st);
        CHECK(rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS);
        CHECK(outcount >= 1);
        for (int k = 0; k < outcount; k++) {
            int cls = -1;
            OK(MPI_Error_class(rc == MPI_SUCCESS ? MPI_SUCCESS : st[k].MPI_ERROR, &cls));
            if (idx[k] == 0) {
                CHECK(cls == MPIX_ERR_PROC_FAILED);
                failed++;
            } else {
                CHECK(cls == MPI_SUCCESS);
            }
        }
        left -= outcount;
    }
    CHECK(failed == 1 && z == prev);
    CHECK(handled == 1 && handled_class == MPIX_ERR_PROC_FAILED);

    /* A revoked communicator still refuses at the call. */
    MPI_Comm dup;
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPIX_Comm_shrink(MPI_COMM_WORLD, &dup));
    OK(MPIX_Comm_revoke(dup));
    MPI_Request r = MPI_REQUEST_NULL;
    CHECK(MPI_Isend(&x, 1, MPI_INT, 0, 4, dup, &r) == MPIX_ERR_REVOKED);
    CHECK(r == MPI_REQUEST_NULL);
    OK(MPI_Comm_free(&dup));

    printf("rank %d: ISEND FT OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
