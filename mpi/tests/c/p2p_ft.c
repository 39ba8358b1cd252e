/*
 * ULFM rules of the point-to-point calls added for issue 17, at N >= 3 ranks: the last
 * rank sends rank 0 one message, then SIGKILLs itself. Survivors check that
 * - a message the dead rank sent before dying is still probed and received;
 * - MPI_Probe of the dead rank (nothing waiting) fails with MPIX_ERR_PROC_FAILED;
 * - MPI_Iprobe(MPI_ANY_SOURCE) fails with MPIX_ERR_PROC_FAILED_PENDING while the
 *   failure is not acknowledged, MPI_Probe(MPI_ANY_SOURCE) with MPIX_ERR_PROC_FAILED,
 *   and after MPIX_Comm_failure_ack both work again;
 * - MPI_Waitany over an MPI_Issend to the dead rank (posted before it died, never
 *   received) and a receive from a survivor: the receive completes, the issend fails
 *   with MPIX_ERR_PROC_FAILED (no hang); MPI_Ssend to the dead rank fails too;
 * - probes and an MPI_Issend pending on a revoked communicator fail with
 *   MPIX_ERR_REVOKED.
 * Each survivor prints "rank R: P2P FT OK".
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static int me = -1;

#include "check.h"

static int class_of(int rc) {
    int cls = -1;
    OK(MPI_Error_class(rc, &cls));
    return cls;
}

int main(int argc, char **argv) {
    int size;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size >= 3);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int victim = size - 1;
    MPI_Comm comm, rev;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &rev));
    OK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(rev, MPI_ERRORS_RETURN));
    if (me == victim) {
        int last = 77;
        OK(MPI_Send(&last, 1, MPI_INT, 0, 1, comm));
    }
    /* Issends nobody receives: to the victim, and to the next survivor on `rev`. */
    int sync_out = me, sync_rev = me;
    MPI_Request to_victim = MPI_REQUEST_NULL, on_rev = MPI_REQUEST_NULL;
    if (me != victim) {
        OK(MPI_Issend(&sync_out, 1, MPI_INT, victim, 6, comm, &to_victim));
        OK(MPI_Issend(&sync_rev, 1, MPI_INT, (me + 1) % victim, 7, rev, &on_rev));
    }
    /* The victim dies as it leaves the barrier: a survivor still in it may see the
       failure (ULFM lets a collective fail at some ranks when a member dies in it). */
    int b = MPI_Barrier(MPI_COMM_WORLD);
    CHECK(b == MPI_SUCCESS || class_of(b) == MPIX_ERR_PROC_FAILED);
    if (me == victim) raise(SIGKILL);

    MPI_Status st;
    int flag = -1, count = -1;
    if (me == 0) {
        OK(MPI_Probe(victim, 1, comm, &st));
        OK(MPI_Get_count(&st, MPI_INT, &count));
        CHECK(st.MPI_SOURCE == victim && st.MPI_TAG == 1 && count == 1);
        int got = 0;
        OK(MPI_Recv(&got, 1, MPI_INT, victim, 1, comm, MPI_STATUS_IGNORE));
        CHECK(got == 77);
    }
    /* Nothing more will come from the dead rank: the probe learns of its death. */
    CHECK(class_of(MPI_Probe(victim, 1, comm, &st)) == MPIX_ERR_PROC_FAILED);
    CHECK(class_of(MPI_Iprobe(victim, MPI_ANY_TAG, comm, &flag, &st)) == MPIX_ERR_PROC_FAILED);
    /* Tag 5: nobody sends it. */
    CHECK(class_of(MPI_Iprobe(MPI_ANY_SOURCE, 5, comm, &flag, &st)) ==
          MPIX_ERR_PROC_FAILED_PENDING);
    CHECK(class_of(MPI_Probe(MPI_ANY_SOURCE, 5, comm, &st)) == MPIX_ERR_PROC_FAILED);
    OK(MPIX_Comm_failure_ack(comm));
    flag = -1;
    OK(MPI_Iprobe(MPI_ANY_SOURCE, 5, comm, &flag, &st));
    CHECK(flag == 0);
    /* A survivor's message is probed by a wildcard once the failure is acknowledged. */
    int right = (me + 1) % victim, left = (me + victim - 1) % victim;
    int v = me;
    OK(MPI_Send(&v, 1, MPI_INT, right, 3, comm));
    OK(MPI_Probe(MPI_ANY_SOURCE, 3, comm, &st));
    CHECK(st.MPI_SOURCE == left);
    OK(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 3, comm, MPI_STATUS_IGNORE));
    CHECK(v == left);

    /* Waitany: the survivor's message arrives, the issend to the dead rank fails. */
    MPI_Request two[2] = {to_victim, MPI_REQUEST_NULL};
    int from_left = -1, index = -1, failed = 0, received = 0;
    OK(MPI_Irecv(&from_left, 1, MPI_INT, left, 8, comm, &two[1]));
    OK(MPI_Send(&me, 1, MPI_INT, right, 8, comm));
    for (int k = 0; k < 2; k++) {
        int rc = MPI_Waitany(2, two, &index, &st);
        if (index == 0) {
            CHECK(class_of(rc) == MPIX_ERR_PROC_FAILED);
            failed++;
        } else {
            OK(rc);
            CHECK(index == 1 && from_left == left);
            received++;
        }
    }
    CHECK(failed == 1 && received == 1);
    CHECK(class_of(MPI_Ssend(&v, 1, MPI_INT, victim, 6, comm)) == MPIX_ERR_PROC_FAILED);

    /* Revoked: probes and the pending issend fail with MPIX_ERR_REVOKED. */
    if (me == 0) OK(MPIX_Comm_revoke(rev));
    CHECK(class_of(MPI_Probe(left, 4, rev, &st)) == MPIX_ERR_REVOKED);
    CHECK(class_of(MPI_Iprobe(MPI_ANY_SOURCE, 4, rev, &flag, &st)) == MPIX_ERR_REVOKED);
    CHECK(class_of(MPI_Wait(&on_rev, MPI_STATUS_IGNORE)) == MPIX_ERR_REVOKED);

    OK(MPI_Comm_free(&rev));
    OK(MPI_Comm_free(&comm));
    OK(MPI_Finalize());
    printf("rank %d: P2P FT OK\n", me);
    return 0;
}
