/*
 * MPI 4.1's buffers for buffered sends (§3.6.1) at 2 ranks (run with
 * -initial-errhandler mpi_errors_return): the process's, a communicator's and a
 * session's, and MPI_BUFFER_AUTOMATIC. Rank 0 sends, rank 1 receives every message
 * that was accepted, in order, and checks it. A buffer too small for a message makes
 * MPI_Bsend fail with MPI_ERR_BUFFER, so which buffer a send draws on shows:
 * - the process's automatic buffer takes a large message on MPI_COMM_WORLD;
 * - a small buffer attached to a dup of MPI_COMM_WORLD refuses it there (the
 *   communicator's buffer comes first) but not on MPI_COMM_WORLD; detached (its address
 *   and size given back), the dup draws on the process's buffer again;
 * - a small buffer attached to a session refuses it on a communicator made from the
 *   session's group, not on MPI_COMM_WORLD; an automatic buffer attached to that
 *   communicator then takes it (before the session's);
 * - the flushes return once the messages left; a second attach is MPI_ERR_BUFFER, a
 *   bad session MPI_ERR_SESSION; the _c forms give back the same;
 * - MPI_Buffer_iflush's request waits for the messages buffered before the call: a
 *   1 MiB message rank 1 has not received keeps it pending (MPI_Test), and it
 *   completes once rank 1 took that message, while a second one, buffered after the
 *   call, is taken only after the flush completed (a flush waiting for it hangs);
 *   MPI_Comm_iflush_buffer and MPI_Session_iflush_buffer with nothing in flight
 *   complete, a bad session is MPI_ERR_SESSION.
 * Each rank prints "rank R: BSEND POOLS OK".
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int me = -1;

#include "check.h"

#define BIG 4096
#define SMALL 8

static int class_of(int rc) {
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}

static int big[BIG];
static int seq = 0;

/* Rank 0: a buffered send of BIG ints on `comm` stamped with the next sequence number
 * when `accepted` is expected, else the expected MPI_ERR_BUFFER. Rank 1: receives it
 * when it was to be accepted. */
static void bsend_big(MPI_Comm comm, int accepted) {
    if (me == 0) {
        for (int i = 0; i < BIG; i++) big[i] = seq * 100000 + i;
        int rc = MPI_Bsend(big, BIG, MPI_INT, 1, seq, comm);
        if (accepted) {
            OK(rc);
        } else {
            CHECK(class_of(rc) == MPI_ERR_BUFFER);
        }
    } else if (accepted) {
        static int in[BIG];
        OK(MPI_Recv(in, BIG, MPI_INT, 0, seq, comm, MPI_STATUS_IGNORE));
        for (int i = 0; i < BIG; i++) CHECK(in[i] == seq * 100000 + i);
    }
    if (accepted) seq++;
}

/* The non-blocking flushes (see the top). */
static void iflushes(MPI_Session s, MPI_Comm sc) {
    static char a[1 << 20], b[1 << 20];
    MPI_Request r;
    int flag = -1;
    if (me == 0) {
        memset(a, 'a', sizeof a);
        memset(b, 'b', sizeof b);
        OK(MPI_Bsend(a, sizeof a, MPI_CHAR, 1, 101, MPI_COMM_WORLD));
        OK(MPI_Buffer_iflush(&r));
        OK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
        CHECK(!flag);
        OK(MPI_Bsend(b, sizeof b, MPI_CHAR, 1, 102, MPI_COMM_WORLD));
        OK(MPI_Send(NULL, 0, MPI_CHAR, 1, 103, MPI_COMM_WORLD));
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        CHECK(r == MPI_REQUEST_NULL);
        OK(MPI_Send(NULL, 0, MPI_CHAR, 1, 104, MPI_COMM_WORLD));
    } else {
        static char in[1 << 20];
        OK(MPI_Recv(NULL, 0, MPI_CHAR, 0, 103, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        OK(MPI_Recv(in, sizeof in, MPI_CHAR, 0, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (size_t i = 0; i < sizeof in; i++) CHECK(in[i] == 'a');
        OK(MPI_Recv(NULL, 0, MPI_CHAR, 0, 104, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        OK(MPI_Recv(in, sizeof in, MPI_CHAR, 0, 102, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (size_t i = 0; i < sizeof in; i++) CHECK(in[i] == 'b');
    }
    OK(MPI_Comm_iflush_buffer(sc, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    OK(MPI_Session_iflush_buffer(s, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(class_of(MPI_Session_iflush_buffer(MPI_SESSION_NULL, &r)) == MPI_ERR_SESSION);
}

int main(int argc, char **argv) {
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    int size;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size == 2);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    char small[SMALL];
    void *addr = NULL;
    int n = -1;
    MPI_Count nc = -1;

    /* The process's automatic buffer; a second attach is refused. */
    OK(MPI_Buffer_attach(MPI_BUFFER_AUTOMATIC, 0));
    CHECK(class_of(MPI_Buffer_attach(small, SMALL)) == MPI_ERR_BUFFER);
    bsend_big(MPI_COMM_WORLD, 1);

    /* A communicator's buffer comes first. */
    MPI_Comm dup;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    OK(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN));
    OK(MPI_Comm_attach_buffer(dup, small, SMALL));
    CHECK(class_of(MPI_Comm_attach_buffer(dup, small, SMALL)) == MPI_ERR_BUFFER);
    bsend_big(dup, 0);
    bsend_big(MPI_COMM_WORLD, 1);
    OK(MPI_Comm_flush_buffer(dup));
    OK(MPI_Comm_detach_buffer(dup, &addr, &n));
    CHECK(addr == small && n == SMALL);
    bsend_big(dup, 1);
    OK(MPI_Comm_attach_buffer_c(dup, small, SMALL));
    bsend_big(dup, 0);
    OK(MPI_Comm_detach_buffer_c(dup, &addr, &nc));
    CHECK(addr == small && nc == SMALL);

    /* A session's buffer serves the communicators made from its groups. */
    MPI_Session s;
    OK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s));
    MPI_Group g;
    OK(MPI_Group_from_session_pset(s, "mpi://WORLD", &g));
    MPI_Comm sc;
    OK(MPI_Comm_create_from_group(g, "org.steadfast.bsend-pools", MPI_INFO_NULL,
                                  MPI_ERRORS_RETURN, &sc));
    OK(MPI_Session_attach_buffer(s, small, SMALL));
    CHECK(class_of(MPI_Session_attach_buffer(s, small, SMALL)) == MPI_ERR_BUFFER);
    bsend_big(sc, 0);
    bsend_big(MPI_COMM_WORLD, 1);
    OK(MPI_Comm_attach_buffer(sc, MPI_BUFFER_AUTOMATIC, 0));
    bsend_big(sc, 1);
    OK(MPI_Comm_detach_buffer(sc, &addr, &n));
    CHECK(addr == MPI_BUFFER_AUTOMATIC && n == 0);
    OK(MPI_Session_flush_buffer(s));
    OK(MPI_Session_detach_buffer(s, &addr, &n));
    CHECK(addr == small && n == SMALL);
    bsend_big(sc, 1);
    OK(MPI_Session_attach_buffer_c(s, small, SMALL));
    OK(MPI_Session_detach_buffer_c(s, &addr, &nc));
    CHECK(addr == small && nc == SMALL);
    CHECK(class_of(MPI_Session_attach_buffer(MPI_SESSION_NULL, small, SMALL)) ==
          MPI_ERR_SESSION);

    iflushes(s, sc);
    OK(MPI_Buffer_flush());
    OK(MPI_Buffer_detach_c(&addr, &nc));
    CHECK(addr == MPI_BUFFER_AUTOMATIC && nc == 0);
    OK(MPI_Comm_free(&sc));
    OK(MPI_Group_free(&g));
    OK(MPI_Session_finalize(&s));
    OK(MPI_Comm_free(&dup));
    OK(MPI_Finalize());
    printf("rank %d: BSEND POOLS OK\n", me);
    return 0;
}
