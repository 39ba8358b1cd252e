/*
 * Partitioned point-to-point (MPI 4.1, chapter 5) between rank pairs (r, r^1), each
 * rank sending to and receiving from its partner at once:
 * - equal partition counts (8 x 4 ints), the same two requests started five times with
 *   new data each time, the partitions readied in a shuffled order: before the last
 *   one is ready the send cannot complete (MPI_Test says no), and the last partition's
 *   data is written only after the others are ready, so a send that left before its
 *   MPI_Pready delivers stale data; the receiver polls MPI_Parrived until every
 *   partition is in, and its request still needs a completion call (Waitall, Waitany,
 *   Testsome in turn);
 * - different partition counts (4 x 6 ints sent, 3 x 8 received), readied with
 *   MPI_Pready_range and MPI_Pready_list, started by MPI_Startall;
 * - with "multiple" (MPI_THREAD_MULTIPLE): four threads ready the 16 partitions of one
 *   send, each its own, while the main thread polls MPI_Parrived;
 * - errors: MPI_Pready on an inactive send or on a receive (MPI_ERR_REQUEST), out of
 *   range or twice (MPI_ERR_ARG), a list naming a partition twice marks none,
 *   MPI_Parrived on a send (MPI_ERR_REQUEST) or out of range (MPI_ERR_ARG), true on an
 *   inactive receive; MPI_Request_free frees both.
 * Each rank prints "rank R: PARTITIONED OK".
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me = -1;

#include "check.h"

static int partner;

static int value(int from, int round, int i) { return from * 100000 + round * 1000 + i; }

/* Polls MPI_Parrived on every partition of `r` until all are in. */
static void poll_arrived(MPI_Request r, int parts) {
    for (int p = 0; p < parts; p++) {
        int flag = 0;
        while (!flag)
            OK(MPI_Parrived(r, p, &flag));
    }
}

static void equal_counts(void) {
    enum { P = 8, C = 4 };
    int sbuf[P * C] = {0}, rbuf[P * C];
    MPI_Request req[2];
    OK(MPI_Psend_init(sbuf, P, C, MPI_INT, partner, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &req[0]));
    OK(MPI_Precv_init(rbuf, P, C, MPI_INT, partner, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &req[1]));
    static const int order[P] = {5, 2, 7, 0, 3, 6, 1, 4};
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < P * C; i++) {
            sbuf[i] = value(me, round, i);
            rbuf[i] = -1;
        }
        /* The last partition readied is written only after the others are ready. */
        int last = order[(round + P - 1) % P];
        for (int i = 0; i < C; i++)
            sbuf[last * C + i] = -7;
        OK(MPI_Start(&req[1]));
        OK(MPI_Start(&req[0]));
        for (int k = 0; k < P - 1; k++)
            OK(MPI_Pready(order[(round + k) % P], req[0]));
        int flag = 1;
        OK(MPI_Test(&req[0], &flag, MPI_STATUS_IGNORE));
        CHECK(!flag);
        for (int i = 0; i < C; i++)
            sbuf[last * C + i] = value(me, round, last * C + i);
        OK(MPI_Pready(last, req[0]));
        poll_arrived(req[1], P);
        if (round % 3 == 0) {
            OK(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
        } else if (round % 3 == 1) {
            for (int k = 0; k < 2; k++) {
                int index;
                OK(MPI_Waitany(2, req, &index, MPI_STATUS_IGNORE));
                CHECK(index != MPI_UNDEFINED);
            }
            int index;
            OK(MPI_Waitany(2, req, &index, MPI_STATUS_IGNORE));
            CHECK(index == MPI_UNDEFINED);
        } else {
            int done = 0, out, idx[2];
            while (done < 2) {
                OK(MPI_Testsome(2, req, &out, idx, MPI_STATUSES_IGNORE));
                CHECK(out != MPI_UNDEFINED);
                done += out;
            }
        }
        CHECK(req[0] != MPI_REQUEST_NULL && req[1] != MPI_REQUEST_NULL);
        for (int i = 0; i < P * C; i++)
            CHECK(rbuf[i] == value(partner, round, i));
    }
    OK(MPI_Request_free(&req[0]));
    OK(MPI_Request_free(&req[1]));
    CHECK(req[0] == MPI_REQUEST_NULL && req[1] == MPI_REQUEST_NULL);
}

static void different_counts(void) {
    int sbuf[24] = {0}, rbuf[24];
    MPI_Request req[2];
    OK(MPI_Psend_init(sbuf, 4, 6, MPI_INT, partner, 8, MPI_COMM_WORLD, MPI_INFO_NULL, &req[0]));
    OK(MPI_Precv_init(rbuf, 3, 8, MPI_INT, partner, 8, MPI_COMM_WORLD, MPI_INFO_NULL, &req[1]));
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 24; i++) {
            sbuf[i] = value(me, round, i);
            rbuf[i] = -1;
        }
        OK(MPI_Startall(2, req));
        static const int list[2] = {3, 0};
        OK(MPI_Pready_list(2, list, req[0]));
        OK(MPI_Pready_range(1, 2, req[0]));
        poll_arrived(req[1], 3);
        OK(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
        for (int i = 0; i < 24; i++)
            CHECK(rbuf[i] == value(partner, round, i));
    }
    OK(MPI_Request_free(&req[0]));
    OK(MPI_Request_free(&req[1]));
}

enum { TP = 16, TC = 3, THREADS = 4 };
static int tbuf[TP * TC];
static MPI_Request treq;

static void *ready_mine(void *arg) {
    int t = (int)(long)arg;
    for (int p = THREADS - 1 - t; p < TP; p += THREADS) {
        for (int i = 0; i < TC; i++)
            tbuf[p * TC + i] = value(me, 9, p * TC + i);
        OK(MPI_Pready(p, treq));
    }
    return NULL;
}

static void threads(void) {
    int rbuf[TP * TC];
    MPI_Request rreq;
    OK(MPI_Psend_init(tbuf, TP, TC, MPI_INT, partner, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &treq));
    OK(MPI_Precv_init(rbuf, TP, TC, MPI_INT, partner, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &rreq));
    for (int round = 0; round < 2; round++) {
        memset(rbuf, 0xff, sizeof rbuf);
        OK(MPI_Start(&rreq));
        OK(MPI_Start(&treq));
        pthread_t th[THREADS];
        for (long t = 0; t < THREADS; t++)
            CHECK(pthread_create(&th[t], NULL, ready_mine, (void *)t) == 0);
        poll_arrived(rreq, TP);
        for (int t = 0; t < THREADS; t++)
            CHECK(pthread_join(th[t], NULL) == 0);
        OK(MPI_Wait(&treq, MPI_STATUS_IGNORE));
        OK(MPI_Wait(&rreq, MPI_STATUS_IGNORE));
        for (int i = 0; i < TP * TC; i++)
            CHECK(rbuf[i] == value(partner, 9, i));
    }
    OK(MPI_Request_free(&treq));
    OK(MPI_Request_free(&rreq));
}

static int class_of(int code) {
    int c;
    MPI_Error_class(code, &c);
    return c;
}

static void errors(void) {
    int sbuf[4] = {0}, rbuf[4], flag = 0;
    MPI_Request s, r;
    OK(MPI_Psend_init(sbuf, 4, 1, MPI_INT, partner, 10, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
    OK(MPI_Precv_init(rbuf, 4, 1, MPI_INT, partner, 10, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    CHECK(class_of(MPI_Pready(0, s)) == MPI_ERR_REQUEST); /* inactive */
    CHECK(class_of(MPI_Pready(0, r)) == MPI_ERR_REQUEST); /* a receive */
    CHECK(class_of(MPI_Parrived(s, 0, &flag)) == MPI_ERR_REQUEST);
    OK(MPI_Parrived(r, 0, &flag));
    CHECK(flag); /* inactive */
    for (int i = 0; i < 4; i++)
        sbuf[i] = value(me, 10, i);
    OK(MPI_Start(&r));
    OK(MPI_Start(&s));
    CHECK(class_of(MPI_Parrived(r, 4, &flag)) == MPI_ERR_ARG);
    CHECK(class_of(MPI_Parrived(r, -1, &flag)) == MPI_ERR_ARG);
    CHECK(class_of(MPI_Pready(4, s)) == MPI_ERR_ARG);
    CHECK(class_of(MPI_Pready(-1, s)) == MPI_ERR_ARG);
    CHECK(class_of(MPI_Pready_range(2, 1, s)) == MPI_ERR_ARG);
    CHECK(class_of(MPI_Pready_range(3, 4, s)) == MPI_ERR_ARG);
    OK(MPI_Pready(0, s));
    CHECK(class_of(MPI_Pready(0, s)) == MPI_ERR_ARG); /* twice */
    static const int dup[2] = {1, 1};
    CHECK(class_of(MPI_Pready_list(2, dup, s)) == MPI_ERR_ARG);
    OK(MPI_Pready(1, s)); /* the failed list marked none */
    OK(MPI_Pready(3, s)); /* the failed range marked none */
    OK(MPI_Test(&s, &flag, MPI_STATUS_IGNORE));
    CHECK(!flag);
    OK(MPI_Pready(2, s));
    OK(MPI_Wait(&s, MPI_STATUS_IGNORE));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int i = 0; i < 4; i++)
        CHECK(rbuf[i] == value(partner, 10, i));
    CHECK(class_of(MPI_Pready(2, s)) == MPI_ERR_REQUEST); /* complete: inactive */
    OK(MPI_Request_free(&s));
    OK(MPI_Request_free(&r));
}

int main(int argc, char **argv) {
    int multiple = argc > 1 && strcmp(argv[1], "multiple") == 0, provided, size;
    OK(MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE,
                       &provided));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size % 2 == 0);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    partner = me ^ 1;
    equal_counts();
    different_counts();
    if (multiple) {
        CHECK(provided == MPI_THREAD_MULTIPLE);
        threads();
    }
    errors();
    OK(MPI_Barrier(MPI_COMM_WORLD));
    printf("rank %d: PARTITIONED OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
