/*
 * Fault tolerance at N >= 3 ranks: the last rank SIGKILLs itself; the survivors check
 * that a user error handler is called with MPIX_ERR_PROC_FAILED on a dead peer, that
 * MPI_Waitall reports the dead peer's request with MPI_ERR_IN_STATUS while the others
 * complete, wildcard receives (PROC_FAILED_PENDING until acknowledged), get_failed,
 * failure_ack, failure_get_acked, ack_failed, agree, iagree, revoke interrupting a
 * blocked receive, shrink and collectives on the shrunk communicator, then MPI_Finalize.
 * Each survivor prints "rank R: FT OK".
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#if !defined(OMPI_HAVE_MPI_EXT_FTMPI) || !defined(MPIX_ERR_PROC_FAILED)
#error "the ULFM feature macros are missing"
#endif

static int me = -1;

#include "check.h"

static int handler_calls = 0;
static int handler_code = MPI_SUCCESS;
static MPI_Comm handler_comm = MPI_COMM_NULL;
static void on_error(MPI_Comm *comm, int *code, ...) {
    handler_calls++;
    handler_code = *code;
    handler_comm = *comm;
}

int main(int argc, char **argv) {
    int size, rc, cls;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size >= 3);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int victim = size - 1, survivors = size - 1;

    MPI_Comm watched, revoked;
    MPI_Errhandler eh;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &watched));
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &revoked));
    OK(MPI_Comm_create_errhandler(on_error, &eh));
    OK(MPI_Comm_set_errhandler(watched, eh));
    OK(MPI_Comm_set_errhandler(revoked, MPI_ERRORS_RETURN));
    /* The victim dies as it leaves the barrier: a survivor still in it may see the
       failure (ULFM lets a collective fail at some ranks when a member dies in it). */
    int b = MPI_Barrier(MPI_COMM_WORLD), bclass = -1;
    if (b != MPI_SUCCESS) MPI_Error_class(b, &bclass);
    CHECK(b == MPI_SUCCESS || bclass == MPIX_ERR_PROC_FAILED);
    if (me == victim) raise(SIGKILL);

    /* A user handler called with the right code on a dead peer. */
    int x = 0;
    rc = MPI_Recv(&x, 1, MPI_INT, victim, 1, watched, MPI_STATUS_IGNORE);
    CHECK(rc == MPIX_ERR_PROC_FAILED);
    CHECK(handler_calls == 1 && handler_code == MPIX_ERR_PROC_FAILED && handler_comm == watched);

    /* Waitall: the dead peer's receive fails, the ring among survivors completes. */
    int right = (me + 1) % survivors, left = (me + survivors - 1) % survivors;
    int from_victim = -1, from_left = -1, mine = me;
    MPI_Request reqs[3];
    MPI_Status sts[3];
    OK(MPI_Irecv(&from_victim, 1, MPI_INT, victim, 2, MPI_COMM_WORLD, &reqs[0]));
    OK(MPI_Irecv(&from_left, 1, MPI_INT, left, 2, MPI_COMM_WORLD, &reqs[1]));
    OK(MPI_Isend(&mine, 1, MPI_INT, right, 2, MPI_COMM_WORLD, &reqs[2]));
    rc = MPI_Waitall(3, reqs, sts);
    CHECK(rc == MPI_ERR_IN_STATUS);
    CHECK(sts[0].MPI_ERROR == MPIX_ERR_PROC_FAILED);
    CHECK(sts[1].MPI_ERROR == MPI_SUCCESS && sts[2].MPI_ERROR == MPI_SUCCESS);
    CHECK(from_left == left && sts[1].MPI_SOURCE == left);
    CHECK(reqs[1] == MPI_REQUEST_NULL && reqs[2] == MPI_REQUEST_NULL);

    /* Waitany over a dead peer's receive reports its error. */
    MPI_Request one;
    int index = -1;
    OK(MPI_Irecv(&x, 1, MPI_INT, victim, 3, MPI_COMM_WORLD, &one));
    rc = MPI_Waitany(1, &one, &index, MPI_STATUS_IGNORE);
    OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPIX_ERR_PROC_FAILED && index == 0);

    /* Wildcard receives wait for an acknowledgement: a blocking one fails, a
     * non-blocking one stays pending (ULFM, as Open MPI). */
    rc = MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(rc == MPIX_ERR_PROC_FAILED);
    MPI_Request pending;
    OK(MPI_Irecv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &pending));
    int flag = -1;
    rc = MPI_Test(&pending, &flag, MPI_STATUS_IGNORE);
    CHECK(rc == MPIX_ERR_PROC_FAILED_PENDING && pending != MPI_REQUEST_NULL);
    MPI_Group failed, acked;
    int n = -1, wr = -1, zero = 0;
    OK(MPIX_Comm_get_failed(MPI_COMM_WORLD, &failed));
    OK(MPI_Group_size(failed, &n));
    CHECK(n == 1);
    MPI_Group world;
    OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    OK(MPI_Group_translate_ranks(failed, 1, &zero, world, &wr));
    CHECK(wr == victim);
    OK(MPIX_Comm_failure_get_acked(MPI_COMM_WORLD, &acked));
    CHECK(acked == MPI_GROUP_EMPTY);
    OK(MPIX_Comm_ack_failed(MPI_COMM_WORLD, 0, &n));
    CHECK(n == 0);
    OK(MPIX_Comm_failure_ack(MPI_COMM_WORLD));
    OK(MPIX_Comm_failure_get_acked(MPI_COMM_WORLD, &acked));
    OK(MPI_Group_size(acked, &n));
    CHECK(n == 1);
    OK(MPIX_Comm_ack_failed(MPI_COMM_WORLD, 1, &n));
    CHECK(n == 1);
    /* Communicators over the acknowledged survivors: a split (the dead rank is left
     * out) and a uniform inter-communicator between its two halves. */
    MPI_Comm side, inter;
    int ls = -1, rs = -1;
    OK(MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &side));
    OK(MPI_Comm_size(side, &ls));
    CHECK(ls == (me % 2 == 0 ? (survivors + 1) / 2 : survivors / 2));
    OK(MPI_Intercomm_create(side, 0, MPI_COMM_WORLD, me % 2 == 0 ? 1 : 0, 9, &inter));
    OK(MPI_Comm_remote_size(inter, &rs));
    CHECK(rs == survivors - ls);
    OK(MPI_Comm_free(&inter));
    OK(MPI_Comm_free(&side));

    /* Agreement over the survivors: the AND of every flag. */
    flag = me == 0 ? 0x3 : 0x7;
    OK(MPIX_Comm_agree(MPI_COMM_WORLD, &flag));
    CHECK(flag == 0x3);
    MPI_Request ag;
    int iflag = 0x5;
    OK(MPIX_Comm_iagree(MPI_COMM_WORLD, &iflag, &ag));
    OK(MPI_Wait(&ag, MPI_STATUS_IGNORE));
    CHECK(iflag == 0x5);
    /* Acknowledged everywhere (the agreement above is after every ack): the pending wildcard receive now completes with the left's message. */
    int token = 100 + me;
    OK(MPI_Send(&token, 1, MPI_INT, right, 5, MPI_COMM_WORLD));
    MPI_Status st;
    OK(MPI_Wait(&pending, &st));
    CHECK(x == 100 + left && st.MPI_SOURCE == left);

    /* Not acknowledged on this communicator: agree says so (and still agrees). */
    flag = 1;
    rc = MPIX_Comm_agree(revoked, &flag);
    CHECK(rc == MPIX_ERR_PROC_FAILED && flag == 1);

    /* Revoke interrupts a receive blocked on a live peer. */
    int is = -1;
    if (me == 0) {
        OK(MPIX_Comm_revoke(revoked));
    } else {
        rc = MPI_Recv(&x, 1, MPI_INT, 0, 6, revoked, MPI_STATUS_IGNORE);
        CHECK(rc == MPIX_ERR_REVOKED);
    }
    OK(MPIX_Comm_is_revoked(revoked, &is));
    CHECK(is == 1);
    CHECK(MPI_Send(&x, 1, MPI_INT, 0, 7, revoked) == MPIX_ERR_REVOKED);
    /* A non-blocking call that fails leaves an empty request, which waits at once. */
    MPI_Request stale = (MPI_Request)(uintptr_t)0x7777;
    CHECK(MPI_Isend(&x, 1, MPI_INT, 0, 7, revoked, &stale) == MPIX_ERR_REVOKED);
    CHECK(stale == MPI_REQUEST_NULL);
    OK(MPI_Wait(&stale, MPI_STATUS_IGNORE));
    /* A receive may fail at the call or at completion (MPI's choice): either way. */
    stale = (MPI_Request)(uintptr_t)0x7777;
    rc = MPI_Irecv(&x, 1, MPI_INT, 0, 7, revoked, &stale);
    if (rc == MPIX_ERR_REVOKED) {
        CHECK(stale == MPI_REQUEST_NULL);
    } else {
        CHECK(rc == MPI_SUCCESS);
        CHECK(MPI_Wait(&stale, MPI_STATUS_IGNORE) == MPIX_ERR_REVOKED);
    }

    /* Shrink the revoked communicator, then compute on the survivors. */
    MPI_Comm shrunk, ishrunk;
    OK(MPIX_Comm_shrink(revoked, &shrunk));
    int ssize = -1, srank = -1;
    OK(MPI_Comm_size(shrunk, &ssize));
    OK(MPI_Comm_rank(shrunk, &srank));
    CHECK(ssize == survivors && srank == me);
    int one_each = 1, total = 0;
    OK(MPI_Allreduce(&one_each, &total, 1, MPI_INT, MPI_SUM, shrunk));
    CHECK(total == survivors);
    OK(MPI_Barrier(shrunk));
    MPI_Request sr;
    OK(MPIX_Comm_ishrink(MPI_COMM_WORLD, &ishrunk, &sr));
    OK(MPI_Wait(&sr, MPI_STATUS_IGNORE));
    OK(MPI_Comm_size(ishrunk, &ssize));
    CHECK(ssize == survivors);
    OK(MPI_Bcast(&token, 1, MPI_INT, 0, ishrunk));
    CHECK(token == 100);

    OK(MPI_Comm_free(&ishrunk));
    OK(MPI_Comm_free(&shrunk));
    OK(MPI_Group_free(&failed));
    OK(MPI_Group_free(&acked));
    OK(MPI_Group_free(&world));
    OK(MPI_Finalize());
    printf("rank %d: FT OK\n", me);
    return 0;
}
