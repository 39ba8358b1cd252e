/*
 * MPI 4.1's large-count (_c) forms of point to point, RMA and the datatype queries, at 2
 * or more ranks (ranks 0 and 1 talk; the others join the collective calls only).
 * - Refusals: a count below INT_MIN on MPI_Send_c, MPI_Isend_c, MPI_Recv_c,
 *   MPI_Sendrecv_c (which take any count: a negative one is refused), of INT_MAX + 1 on
 *   the calls that narrow theirs, MPI_Bsend_c, MPI_Put_c, MPI_Rget_c, a disp_unit of INT_MAX + 1 on
 *   MPI_Win_allocate_c, a position or pack end past INT_MAX on MPI_Pack_c: each is
 *   MPI_ERR_COUNT (MPI_Error_class), leaves a request or window MPI_*_NULL, and sends
 *   nothing (the next message with that tag is the marker sent after them).
 * - Point to point, data and MPI_Get_count_c checked each time: MPI_Send_c/Recv_c;
 *   MPI_Bsend_c, Ibsend_c, Bsend_init_c of messages too large for an eager send, all
 *   completing before the receiver posts anything (so not standard or synchronous
 *   sends); MPI_Issend_c and Ssend_init_c not complete before the receive is posted,
 *   MPI_Ssend_c lasting until the receiver, busy for 0.3 s, posts it; MPI_Rsend_c,
 *   Irsend_c, Rsend_init_c into posted MPI_Irecv_c; MPI_Isend_c, MPI_Send_init_c and
 *   MPI_Recv_init_c started twice with new data; MPI_Sendrecv_c,
 *   Sendrecv_replace_c, Isendrecv_c, Isendrecv_replace_c exchanging; MPI_Mrecv_c and
 *   MPI_Imrecv_c of probed messages (an Imrecv_c refused first leaves its message).
 * - RMA: windows from MPI_Win_allocate_c, MPI_Win_create_c (disp_unit sizeof(int): a
 *   target_disp lands on that int) and MPI_Win_allocate_shared_c (MPI_Win_shared_query_c
 *   gives each part's size and disp_unit as an MPI_Aint); MPI_Put_c, Get_c,
 *   Accumulate_c, Get_accumulate_c, Rput_c, Rget_c, Raccumulate_c, Rget_accumulate_c in
 *   fence epochs, every target word and result checked.
 * - Datatype queries: a 4 GiB type's MPI_Type_size_c, extent and true extent and
 *   MPI_Pack_size_c (above INT_MAX); a resized type's extent against its true extent;
 *   MPI_Get_count_c of a status of 3 GiB (above INT_MAX), of a partial item
 *   (MPI_UNDEFINED), against MPI_Get_elements_c of a two-int type; MPI_Pack_c /
 *   MPI_Unpack_c round trips, a vector type's gaps kept, and (when 2 GiB can be
 *   reserved) packing into a buffer larger than INT_MAX up to its INT_MAX-th byte.
 * With the argument "huge" (2 ranks), only this: INT_MAX + 100 chars (2 GiB) from rank 0
 * to rank 1 by MPI_Isend_c into MPI_Recv_c, every byte checked, the count from
 * MPI_Get_count_c (MPI_Get_count gives MPI_UNDEFINED), then 2 GiB + 24 back by
 * MPI_Send_c into MPI_Irecv_c, then INT_MAX + 50 chars both ways at once by
 * MPI_Sendrecv_replace_c, then INT_MAX + 10 by MPI_Isend_c matched by MPI_Mprobe
 * (its MPI_Get_count_c) and received by MPI_Imrecv_c.
 * Each rank prints "rank R: LARGE P2P OK".
 */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me = -1, n = 0;

#include "check.h"

#define W MPI_COMM_WORLD
#define BIG ((MPI_Count)INT_MAX + 1)
/* Larger than any eager limit: a standard send of it waits for its receive. */
#define BLEN (1 << 20)

static int class_of(int rc) {
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}

static void busy(double seconds) {
    double t = MPI_Wtime();
    while (MPI_Wtime() - t < seconds) {
    }
}

/* MPI_Get_count_c of `st` in `dt` is `want`. */
static void count_is(MPI_Status *st, MPI_Datatype dt, MPI_Count want) {
    MPI_Count c = -7;
    OK(MPI_Get_count_c(st, dt, &c));
    CHECK(c == want);
}

static void fill(int *a, int len, int base) {
    for (int i = 0; i < len; i++) a[i] = base + i;
}

static int holds(const int *a, int len, int base) {
    for (int i = 0; i < len; i++)
        if (a[i] != base + i) return 0;
    return 1;
}

static void refusals(void) {
    int buf[4] = {0}, peer = (me + 1) % n;
    MPI_Request r;
    CHECK(class_of(MPI_Send_c(buf, -BIG, MPI_CHAR, peer, 99, W)) == MPI_ERR_COUNT);
    CHECK(class_of(MPI_Isend_c(buf, -BIG, MPI_CHAR, peer, 99, W, &r)) == MPI_ERR_COUNT);
    CHECK(r == MPI_REQUEST_NULL);
    CHECK(class_of(MPI_Send_init_c(buf, -BIG, MPI_CHAR, peer, 99, W, &r)) == MPI_ERR_COUNT);
    CHECK(r == MPI_REQUEST_NULL);
    CHECK(class_of(MPI_Recv_c(buf, -BIG, MPI_CHAR, peer, 99, W, MPI_STATUS_IGNORE)) ==
          MPI_ERR_COUNT);
    CHECK(class_of(MPI_Sendrecv_c(buf, 1, MPI_INT, peer, 99, buf, -BIG, MPI_INT, peer, 99, W,
                                  MPI_STATUS_IGNORE)) == MPI_ERR_COUNT);
    CHECK(class_of(MPI_Bsend_c(buf, BIG, MPI_INT, peer, 99, W)) == MPI_ERR_COUNT);
    /* Nothing went: the first tag-99 message from the left is the marker. */
    int marker = 1000 + me, got = -1, left = (me + n - 1) % n;
    OK(MPI_Send(&marker, 1, MPI_INT, peer, 99, W));
    OK(MPI_Recv(&got, 1, MPI_INT, left, 99, W, MPI_STATUS_IGNORE));
    CHECK(got == 1000 + left);

    MPI_Win win = MPI_WIN_NULL;
    void *base = NULL;
    CHECK(class_of(MPI_Win_allocate_c(16, BIG, MPI_INFO_NULL, W, &base, &win)) ==
          MPI_ERR_COUNT);
    CHECK(win == MPI_WIN_NULL);

    char out[16];
    MPI_Count pos = BIG;
    CHECK(class_of(MPI_Pack_c(buf, 1, MPI_INT, out, 16, &pos, W)) == MPI_ERR_COUNT);
    CHECK(pos == BIG);
    pos = INT_MAX - 2;
    /* A buffer said to be larger than INT_MAX, the data ending past INT_MAX: refused
     * before the buffer is touched. */
    CHECK(class_of(MPI_Pack_c(buf, 4, MPI_CHAR, out, 2 * BIG, &pos, W)) == MPI_ERR_COUNT);
    CHECK(pos == INT_MAX - 2);
    CHECK(class_of(MPI_Pack_c(buf, BIG, MPI_CHAR, out, 16, &pos, W)) == MPI_ERR_COUNT);
}

static void blocking_and_buffered(void) {
    int a[10], b[10];
    MPI_Status st;
    if (me == 0) {
        fill(a, 5, 100);
        OK(MPI_Send_c(a, 5, MPI_INT, 1, 1, W));
    } else if (me == 1) {
        memset(b, 0, sizeof b);
        OK(MPI_Recv_c(b, 10, MPI_INT, 0, 1, W, &st));
        CHECK(holds(b, 5, 100) && st.MPI_SOURCE == 0 && st.MPI_TAG == 1);
        count_is(&st, MPI_INT, 5);
        count_is(&st, MPI_SHORT, 10);
    }
    /* Buffered: all three complete before rank 1 has posted a receive. */
    int *big = malloc(3 * BLEN * sizeof(int));
    CHECK(big != NULL);
    if (me == 0) {
        int size = 3 * (BLEN * (int)sizeof(int) + MPI_BSEND_OVERHEAD);
        char *pool = malloc(size);
        CHECK(pool != NULL);
        OK(MPI_Buffer_attach(pool, size));
        for (int k = 0; k < 3; k++) fill(big + k * BLEN, BLEN, k * 7);
        MPI_Request r;
        OK(MPI_Bsend_c(big, BLEN, MPI_INT, 1, 2, W));
        OK(MPI_Ibsend_c(big + BLEN, BLEN, MPI_INT, 1, 2, W, &r));
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        OK(MPI_Bsend_init_c(big + 2 * BLEN, BLEN, MPI_INT, 1, 2, W, &r));
        OK(MPI_Start(&r));
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        OK(MPI_Request_free(&r));
        OK(MPI_Barrier(W));
        void *detached;
        int dsize;
        OK(MPI_Buffer_detach(&detached, &dsize));
        free(pool);
    } else {
        OK(MPI_Barrier(W));
        if (me == 1) {
            for (int k = 0; k < 3; k++) {
                memset(big, 0, BLEN * sizeof(int));
                OK(MPI_Recv_c(big, BLEN, MPI_INT, 0, 2, W, &st));
                CHECK(holds(big, BLEN, k * 7));
                count_is(&st, MPI_INT, BLEN);
            }
        }
    }
    free(big);
}

static void synchronous_and_ready(void) {
    int a[8], b[8];
    MPI_Request r[3];
    MPI_Status st;
    int flag = -1;
    /* Issend_c and Ssend_init_c: not complete while the receive is not posted. */
    if (me == 0) {
        fill(a, 8, 300);
        OK(MPI_Issend_c(a, 4, MPI_INT, 1, 3, W, &r[0]));
        OK(MPI_Ssend_init_c(a + 4, 4, MPI_INT, 1, 4, W, &r[1]));
        OK(MPI_Start(&r[1]));
        busy(0.05);
        OK(MPI_Test(&r[0], &flag, MPI_STATUS_IGNORE));
        CHECK(flag == 0);
        OK(MPI_Test(&r[1], &flag, MPI_STATUS_IGNORE));
        CHECK(flag == 0);
        OK(MPI_Barrier(W));
        OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
        CHECK(r[1] != MPI_REQUEST_NULL);
        OK(MPI_Request_free(&r[1]));
    } else {
        OK(MPI_Barrier(W));
        if (me == 1) {
            OK(MPI_Recv_c(b, 8, MPI_INT, 0, 3, W, &st));
            CHECK(holds(b, 4, 300));
            count_is(&st, MPI_INT, 4);
            OK(MPI_Recv_c(b, 8, MPI_INT, 0, 4, W, &st));
            CHECK(holds(b, 4, 304));
        }
    }
    /* Ssend_c lasts until the receiver, busy for 0.3 s, posts its receive. */
    OK(MPI_Barrier(W));
    if (me == 0) {
        double t = MPI_Wtime();
        OK(MPI_Ssend_c(a, 2, MPI_INT, 1, 5, W));
        CHECK(MPI_Wtime() - t > 0.1);
    } else if (me == 1) {
        busy(0.3);
        OK(MPI_Recv_c(b, 2, MPI_INT, 0, 5, W, MPI_STATUS_IGNORE));
        CHECK(holds(b, 2, 300));
    }
    /* Ready sends into posted receives. */
    int in[3][4];
    if (me == 1) {
        for (int k = 0; k < 3; k++) OK(MPI_Irecv_c(in[k], 4, MPI_INT, 0, 6 + k, W, &r[k]));
    }
    OK(MPI_Barrier(W));
    if (me == 0) {
        fill(a, 8, 600);
        OK(MPI_Rsend_c(a, 4, MPI_INT, 1, 6, W));
        OK(MPI_Irsend_c(a + 1, 4, MPI_INT, 1, 7, W, &r[0]));
        OK(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
        OK(MPI_Rsend_init_c(a + 2, 4, MPI_INT, 1, 8, W, &r[1]));
        OK(MPI_Start(&r[1]));
        OK(MPI_Wait(&r[1], MPI_STATUS_IGNORE));
        OK(MPI_Request_free(&r[1]));
    } else if (me == 1) {
        MPI_Status s3[3];
        OK(MPI_Waitall(3, r, s3));
        for (int k = 0; k < 3; k++) {
            CHECK(holds(in[k], 4, 600 + k) && s3[k].MPI_TAG == 6 + k);
            count_is(&s3[k], MPI_INT, 4);
        }
    }
}

static void nonblocking_and_persistent(void) {
    int a[6], b[6];
    MPI_Request r[2];
    MPI_Status st;
    if (me == 0) {
        fill(a, 6, 900);
        OK(MPI_Isend_c(a, 6, MPI_INT, 1, 10, W, &r[0]));
        OK(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
        CHECK(r[0] == MPI_REQUEST_NULL);
        OK(MPI_Send_init_c(a, 3, MPI_INT, 1, 11, W, &r[0]));
        for (int round = 0; round < 2; round++) {
            fill(a, 3, 50 * round);
            OK(MPI_Start(&r[0]));
            OK(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
        }
        OK(MPI_Request_free(&r[0]));
    } else if (me == 1) {
        memset(b, 0, sizeof b);
        OK(MPI_Irecv_c(b, 6, MPI_INT, 0, 10, W, &r[1]));
        OK(MPI_Wait(&r[1], &st));
        CHECK(holds(b, 6, 900));
        count_is(&st, MPI_INT, 6);
        OK(MPI_Recv_init_c(b, 6, MPI_INT, 0, 11, W, &r[1]));
        for (int round = 0; round < 2; round++) {
            memset(b, 0, sizeof b);
            OK(MPI_Start(&r[1]));
            OK(MPI_Wait(&r[1], &st));
            CHECK(holds(b, 3, 50 * round));
            count_is(&st, MPI_INT, 3);
        }
        OK(MPI_Request_free(&r[1]));
    }
}

static void exchanges(void) {
    if (me > 1) return;
    int peer = 1 - me, a[4], b[8], c[4];
    MPI_Status st;
    MPI_Request r;
    fill(a, 4, 10 * me);
    OK(MPI_Sendrecv_c(a, 4, MPI_INT, peer, 12, b, 8, MPI_INT, peer, 12, W, &st));
    CHECK(holds(b, 4, 10 * peer));
    count_is(&st, MPI_INT, 4);
    fill(c, 4, 20 * me);
    OK(MPI_Sendrecv_replace_c(c, 3, MPI_INT, peer, 13, peer, 13, W, &st));
    CHECK(holds(c, 3, 20 * peer) && c[3] == 20 * me + 3);
    count_is(&st, MPI_INT, 3);
    memset(b, 0, sizeof b);
    OK(MPI_Isendrecv_c(a, 2, MPI_INT, peer, 14, b, 8, MPI_INT, peer, 14, W, &r));
    OK(MPI_Wait(&r, &st));
    CHECK(holds(b, 2, 10 * peer) && b[2] == 0);
    count_is(&st, MPI_INT, 2);
    fill(c, 4, 40 * me);
    OK(MPI_Isendrecv_replace_c(c, 4, MPI_INT, peer, 15, peer, 15, W, &r));
    OK(MPI_Wait(&r, &st));
    CHECK(holds(c, 4, 40 * peer));
    count_is(&st, MPI_INT, 4);
}

static void matched(void) {
    int a[5], b[5];
    if (me == 0) {
        fill(a, 5, 70);
        OK(MPI_Send(a, 5, MPI_INT, 1, 20, W));
        OK(MPI_Send(a, 4, MPI_INT, 1, 21, W));
    } else if (me == 1) {
        MPI_Message m;
        MPI_Status st;
        MPI_Request r = MPI_REQUEST_NULL;
        OK(MPI_Mprobe(0, 20, W, &m, &st));
        memset(b, 0, sizeof b);
        OK(MPI_Mrecv_c(b, 5, MPI_INT, &m, &st));
        CHECK(holds(b, 5, 70) && m == MPI_MESSAGE_NULL);
        count_is(&st, MPI_INT, 5);
        OK(MPI_Mprobe(0, 21, W, &m, &st));
        CHECK(class_of(MPI_Imrecv_c(b, -BIG, MPI_INT, &m, &r)) == MPI_ERR_COUNT);
        CHECK(r == MPI_REQUEST_NULL && m != MPI_MESSAGE_NULL);
        memset(b, 0, sizeof b);
        OK(MPI_Imrecv_c(b, 5, MPI_INT, &m, &r));
        OK(MPI_Wait(&r, &st));
        CHECK(holds(b, 4, 70) && b[4] == 0);
        count_is(&st, MPI_INT, 4);
    }
}

/* The one-sided part: the window of MPI_Win_allocate_c holds 16 ints per rank; each
 * rank works on its right neighbour's, in two fence epochs. */
static void rma(void) {
    int right = (me + 1) % n, left = (me + n - 1) % n;
    int *w = NULL;
    MPI_Win win;
    OK(MPI_Win_allocate_c(16 * sizeof(int), sizeof(int), MPI_INFO_NULL, W, &w, &win));
    OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    OK(MPI_Win_fence(0, win));
    for (int i = 0; i < 16; i++) w[i] = 0;
    fill(w + 8, 4, 1000 * me);
    OK(MPI_Win_fence(0, win));
    int put[4], got[4] = {0}, acc[4] = {1, 2, 3, 4};
    fill(put, 4, 10 * me);
    OK(MPI_Put_c(put, 4, MPI_INT, right, 0, 4, MPI_INT, win));
    OK(MPI_Get_c(got, 4, MPI_INT, right, 8, 4, MPI_INT, win));
    OK(MPI_Accumulate_c(acc, 4, MPI_INT, right, 4, 4, MPI_INT, MPI_SUM, win));
    CHECK(class_of(MPI_Put_c(put, BIG, MPI_INT, right, 0, 4, MPI_INT, win)) == MPI_ERR_COUNT);
    OK(MPI_Win_fence(0, win));
    CHECK(holds(got, 4, 1000 * right));
    CHECK(holds(w, 4, 10 * left) && holds(w + 4, 4, 1));
    int five[2] = {5, 5}, old[2] = {0}, rput[2], rgot[2] = {0}, one = 1, old15 = -1;
    fill(rput, 2, 10 * me + 100);
    MPI_Request r[4];
    OK(MPI_Get_accumulate_c(five, 2, MPI_INT, old, 2, MPI_INT, right, 4, 2, MPI_INT, MPI_SUM,
                            win));
    OK(MPI_Rput_c(rput, 2, MPI_INT, right, 12, 2, MPI_INT, win, &r[0]));
    OK(MPI_Rget_c(rgot, 2, MPI_INT, right, 10, 2, MPI_INT, win, &r[1]));
    OK(MPI_Raccumulate_c(&one, 1, MPI_INT, right, 14, 1, MPI_INT, MPI_SUM, win, &r[2]));
    OK(MPI_Rget_accumulate_c(&one, 1, MPI_INT, &old15, 1, MPI_INT, right, 15, 1, MPI_INT,
                             MPI_REPLACE, win, &r[3]));
    OK(MPI_Waitall(4, r, MPI_STATUSES_IGNORE));
    MPI_Request bad = MPI_REQUEST_NULL;
    CHECK(class_of(MPI_Rget_c(rgot, 2, MPI_INT, right, 0, -BIG, MPI_INT, win, &bad)) ==
          MPI_ERR_COUNT);
    CHECK(bad == MPI_REQUEST_NULL);
    OK(MPI_Win_fence(0, win));
    CHECK(old[0] == 1 && old[1] == 2 && old15 == 0);
    CHECK(rgot[0] == 1000 * right + 2 && rgot[1] == 1000 * right + 3);
    CHECK(w[4] == 6 && w[5] == 7 && w[6] == 3 && w[7] == 4);
    CHECK(holds(w + 8, 4, 1000 * me) && holds(w + 12, 2, 10 * left + 100));
    CHECK(w[14] == 1 && w[15] == 1);
    OK(MPI_Win_free(&win));

    /* MPI_Win_create_c: disp_unit sizeof(int), so target_disp 2 is the third int. */
    int mem[4] = {0, 0, 0, 0}, v = 77 + me;
    OK(MPI_Win_create_c(mem, sizeof mem, sizeof(int), MPI_INFO_NULL, W, &win));
    OK(MPI_Win_fence(0, win));
    OK(MPI_Put_c(&v, 1, MPI_INT, right, 2, 1, MPI_INT, win));
    OK(MPI_Win_fence(0, win));
    CHECK(mem[0] == 0 && mem[1] == 0 && mem[2] == 77 + left && mem[3] == 0);
    OK(MPI_Win_free(&win));

    /* MPI_Win_allocate_shared_c: part r of r + 1 ints, disp_unit 4; the query widens. */
    MPI_Comm node;
    int nme, nn;
    OK(MPI_Comm_split_type(W, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    OK(MPI_Comm_rank(node, &nme));
    OK(MPI_Comm_size(node, &nn));
    int *part = NULL;
    OK(MPI_Win_allocate_shared_c((nme + 1) * sizeof(int), 4, MPI_INFO_NULL, node, &part, &win));
    OK(MPI_Win_fence(0, win));
    fill(part, nme + 1, 500 * nme);
    OK(MPI_Win_fence(0, win));
    for (int q = 0; q < nn; q++) {
        MPI_Aint size = -1, unit = -1;
        int *p = NULL;
        OK(MPI_Win_shared_query_c(win, q, &size, &unit, &p));
        CHECK(size == (MPI_Aint)((q + 1) * sizeof(int)) && unit == 4);
        CHECK(holds(p, q + 1, 500 * q));
    }
    OK(MPI_Win_free(&win));
    OK(MPI_Comm_free(&node));
}

/* The datatype queries and packing: local, at every rank. */
static void datatype_queries(void) {
    MPI_Datatype k64, g4, resized, pair, vec;
    MPI_Count size = -1, lb = -1, extent = -1;
    /* 65536 x 65536 chars: 4 GiB. */
    OK(MPI_Type_contiguous(1 << 16, MPI_CHAR, &k64));
    OK(MPI_Type_contiguous(1 << 16, k64, &g4));
    OK(MPI_Type_commit(&g4));
    OK(MPI_Type_size_c(g4, &size));
    CHECK(size == (MPI_Count)1 << 32);
    OK(MPI_Type_get_extent_c(g4, &lb, &extent));
    CHECK(lb == 0 && extent == (MPI_Count)1 << 32);
    lb = extent = -1;
    OK(MPI_Type_get_true_extent_c(g4, &lb, &extent));
    CHECK(lb == 0 && extent == (MPI_Count)1 << 32);
    OK(MPI_Pack_size_c(1, g4, W, &size));
    CHECK(size == (MPI_Count)1 << 32);
    OK(MPI_Pack_size_c(3, MPI_INT, W, &size));
    CHECK(size == 12);
    OK(MPI_Type_size_c(MPI_INT, &size));
    CHECK(size == (MPI_Count)sizeof(int));

    /* Extent against true extent. */
    OK(MPI_Type_create_resized(MPI_INT, -4, 16, &resized));
    OK(MPI_Type_get_extent_c(resized, &lb, &extent));
    CHECK(lb == -4 && extent == 16);
    OK(MPI_Type_get_true_extent_c(resized, &lb, &extent));
    CHECK(lb == 0 && extent == (MPI_Count)sizeof(int));

    /* A status of 3 GiB. */
    MPI_Status st;
    MPI_Count three = (MPI_Count)3 << 30, c = -1;
    int ic = 0;
    OK(MPI_Status_set_elements_x(&st, MPI_CHAR, three));
    count_is(&st, MPI_CHAR, three);
    count_is(&st, MPI_INT, three / 4);
    OK(MPI_Get_elements_c(&st, MPI_CHAR, &c));
    CHECK(c == three);
    OK(MPI_Get_count(&st, MPI_CHAR, &ic));
    CHECK(ic == MPI_UNDEFINED);
    /* A part of an item; items against elements. */
    OK(MPI_Type_contiguous(2, MPI_INT, &pair));
    OK(MPI_Type_commit(&pair));
    OK(MPI_Status_set_elements_x(&st, MPI_CHAR, 4 * sizeof(int)));
    count_is(&st, pair, 2);
    OK(MPI_Get_elements_c(&st, pair, &c));
    CHECK(c == 4);
    OK(MPI_Status_set_elements_x(&st, MPI_CHAR, 3 * sizeof(int)));
    count_is(&st, pair, MPI_UNDEFINED);

    /* Pack and unpack round trips, a vector's gaps kept. */
    int ints[6] = {1, 2, 3, 4, 5, 6}, back[6] = {0};
    double dbl[2] = {0.5, -2.25}, dback[2] = {0};
    char buf[48];
    MPI_Count pos = 0;
    OK(MPI_Type_vector(3, 1, 2, MPI_INT, &vec));
    OK(MPI_Type_commit(&vec));
    OK(MPI_Pack_c(ints, 2, MPI_INT, buf, sizeof buf, &pos, W));
    CHECK(pos == 2 * (MPI_Count)sizeof(int));
    OK(MPI_Pack_c(dbl, 2, MPI_DOUBLE, buf, sizeof buf, &pos, W));
    OK(MPI_Pack_c(ints, 1, vec, buf, sizeof buf, &pos, W));
    CHECK(pos == 5 * (MPI_Count)sizeof(int) + 2 * (MPI_Count)sizeof(double));
    CHECK(class_of(MPI_Pack_c(ints, 6, MPI_INT, buf, sizeof buf, &pos, W)) == MPI_ERR_TRUNCATE);
    MPI_Count end = pos;
    pos = 0;
    OK(MPI_Unpack_c(buf, end, &pos, back, 2, MPI_INT, W));
    OK(MPI_Unpack_c(buf, end, &pos, dback, 2, MPI_DOUBLE, W));
    CHECK(back[0] == 1 && back[1] == 2 && dback[0] == 0.5 && dback[1] == -2.25);
    memset(back, 0, sizeof back);
    OK(MPI_Unpack_c(buf, end, &pos, back, 1, vec, W));
    CHECK(pos == end);
    CHECK(back[0] == 1 && back[1] == 0 && back[2] == 3 && back[3] == 0 && back[4] == 5);
    pos = BIG;
    CHECK(class_of(MPI_Unpack_c(buf, end, &pos, back, 1, MPI_INT, W)) == MPI_ERR_COUNT);

    /* A buffer larger than INT_MAX (reserved, only two pages touched): packing up to
     * its INT_MAX-th byte works, one byte more is refused. */
    if (me == 0) {
        char *huge = malloc((size_t)INT_MAX + 64);
        if (huge != NULL) {
            pos = INT_MAX - 8;
            OK(MPI_Pack_c(ints, 2, MPI_INT, huge, (MPI_Count)INT_MAX + 64, &pos, W));
            CHECK(pos == INT_MAX);
            int two[2];
            memcpy(two, huge + INT_MAX - 8, sizeof two);
            CHECK(two[0] == 1 && two[1] == 2);
            CHECK(class_of(MPI_Pack_c(ints, 1, MPI_CHAR, huge, (MPI_Count)INT_MAX + 64, &pos,
                                      W)) == MPI_ERR_COUNT);
            pos = INT_MAX - 8;
            memset(back, 0, sizeof back);
            OK(MPI_Unpack_c(huge, (MPI_Count)INT_MAX + 64, &pos, back, 2, MPI_INT, W));
            CHECK(pos == INT_MAX && back[0] == 1 && back[1] == 2);
            free(huge);
        }
    }
    OK(MPI_Type_free(&vec));
    OK(MPI_Type_free(&pair));
    OK(MPI_Type_free(&resized));
    OK(MPI_Type_free(&g4));
    OK(MPI_Type_free(&k64));
}

/* One message of `count` chars (more than INT_MAX) from `from` to the other rank, by a
 * non-blocking send into a blocking receive or (`blocking_send`) the other way round;
 * every byte checked. */
static void huge_message(MPI_Count count, int from, int blocking_send) {
    char *b = malloc((size_t)count);
    CHECK(b != NULL);
    MPI_Status st;
    MPI_Request r;
    if (me == from) {
        for (size_t i = 0; i < (size_t)count; i++) b[i] = (char)(i * 7 + from + 1);
        if (blocking_send) {
            OK(MPI_Send_c(b, count, MPI_CHAR, 1 - from, 7, W));
        } else {
            OK(MPI_Isend_c(b, count, MPI_CHAR, 1 - from, 7, W, &r));
            OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        }
    } else {
        memset(b, 0, (size_t)count);
        if (blocking_send) {
            OK(MPI_Irecv_c(b, count, MPI_CHAR, from, 7, W, &r));
            OK(MPI_Wait(&r, &st));
        } else {
            OK(MPI_Recv_c(b, count, MPI_CHAR, from, 7, W, &st));
        }
        size_t bad = 0;
        for (size_t i = 0; i < (size_t)count; i++) bad += b[i] != (char)(i * 7 + from + 1);
        CHECK(bad == 0);
        MPI_Count got = -1;
        OK(MPI_Get_count_c(&st, MPI_CHAR, &got));
        CHECK(got == count);
        int small = 0;
        OK(MPI_Get_count(&st, MPI_CHAR, &small));
        CHECK(small == MPI_UNDEFINED);
    }
    free(b);
}

/* `count` chars (more than INT_MAX) both ways at once by MPI_Sendrecv_replace_c: each
 * rank ends with the other's bytes. */
static void huge_replace(MPI_Count count) {
    char *b = malloc((size_t)count);
    CHECK(b != NULL);
    int peer = 1 - me;
    for (size_t i = 0; i < (size_t)count; i++) b[i] = (char)(i * 5 + me + 3);
    MPI_Status st;
    OK(MPI_Sendrecv_replace_c(b, count, MPI_CHAR, peer, 8, peer, 8, W, &st));
    size_t bad = 0;
    for (size_t i = 0; i < (size_t)count; i++) bad += b[i] != (char)(i * 5 + peer + 3);
    CHECK(bad == 0);
    MPI_Count got = -1;
    OK(MPI_Get_count_c(&st, MPI_CHAR, &got));
    CHECK(got == count && st.MPI_SOURCE == peer && st.MPI_TAG == 8);
    free(b);
}

/* `count` chars (more than INT_MAX) from rank 0, matched at rank 1 by MPI_Mprobe and
 * received by MPI_Imrecv_c. */
static void huge_matched(MPI_Count count) {
    char *b = malloc((size_t)count);
    CHECK(b != NULL);
    MPI_Request r;
    MPI_Status st;
    if (me == 0) {
        for (size_t i = 0; i < (size_t)count; i++) b[i] = (char)(i * 3 + 11);
        OK(MPI_Isend_c(b, count, MPI_CHAR, 1, 9, W, &r));
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    } else {
        MPI_Message m;
        OK(MPI_Mprobe(0, 9, W, &m, &st));
        MPI_Count got = -1;
        OK(MPI_Get_count_c(&st, MPI_CHAR, &got));
        CHECK(got == count);
        memset(b, 0, (size_t)count);
        OK(MPI_Imrecv_c(b, count, MPI_CHAR, &m, &r));
        CHECK(m == MPI_MESSAGE_NULL);
        OK(MPI_Wait(&r, &st));
        size_t bad = 0;
        for (size_t i = 0; i < (size_t)count; i++) bad += b[i] != (char)(i * 3 + 11);
        CHECK(bad == 0);
        got = -1;
        OK(MPI_Get_count_c(&st, MPI_CHAR, &got));
        CHECK(got == count);
    }
    free(b);
}

int main(int argc, char **argv) {
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(W, &me));
    OK(MPI_Comm_size(W, &n));
    CHECK(n >= 2);
    OK(MPI_Comm_set_errhandler(W, MPI_ERRORS_RETURN));
    if (argc > 1 && strcmp(argv[1], "huge") == 0) {
        CHECK(n == 2);
        huge_message((MPI_Count)INT_MAX + 100, 0, 0);
        huge_message((MPI_Count)INT_MAX + 25, 1, 1);
        huge_replace((MPI_Count)INT_MAX + 50);
        huge_matched((MPI_Count)INT_MAX + 10);
        OK(MPI_Finalize());
        printf("rank %d: LARGE P2P OK\n", me);
        return 0;
    }
    refusals();
    blocking_and_buffered();
    synchronous_and_ready();
    nonblocking_and_persistent();
    exchanges();
    matched();
    rma();
    datatype_queries();
    OK(MPI_Barrier(W));
    OK(MPI_Finalize());
    printf("rank %d: LARGE P2P OK\n", me);
    return 0;
}
