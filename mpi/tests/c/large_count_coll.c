/*
 * The MPI 4.1 large-count (_c) collectives: every blocking, non-blocking, persistent and
 * neighborhood _c function, each run in its three forms where MPI has them (blocking,
 * non-blocking waited on, persistent started twice with new data in between), the
 * results checked element by element at every rank:
 * - the scalar forms (Bcast, Reduce, Allreduce, Reduce_local, Scan, Exscan, Gather,
 *   Scatter, Allgather, Alltoall, Reduce_scatter_block), with MPI_IN_PLACE once;
 * - the v and w forms with uneven counts and displacements (blocks in reverse rank
 *   order, with gaps that must stay untouched), Gatherv/Scatterv with the arrays NULL
 *   or full of out-of-range counts at the ranks where they are not significant,
 *   Alltoallv in place with out-of-range send arrays (ignored);
 * - Allgatherv_c and Gatherv_c (MPI_ROOT / MPI_PROC_NULL) on an inter-communicator;
 * - the neighborhood forms on a periodic ring (Cartesian topology);
 * - counts and displacements beyond INT_MAX refused with an error of class
 *   MPI_ERR_COUNT at every rank (MPI_ERRORS_RETURN), after which the communicator
 *   still works.
 * Each rank prints "rank R: LARGE COLL OK".
 */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me = -1;

#include "check.h"

static int n;
/* The round of the current test (a persistent request's second start sees new data). */
static int rnd;

#define SENTINEL (-7)
#define BIG ((MPI_Count)INT_MAX + 1)

static int V(int r, int i) { return r * 1000 + i + rnd * 100000; }

enum mode { BLOCKING, NONBLOCKING, PERSISTENT };

/* One call of collective `name` in mode `m`: MPI_<name>_c; MPI_<iname>_c waited on; or
 * MPI_<name>_init_c made at the first round and then started and waited on. The request
 * of a persistent call stays in `req` until free_req. */
#define COLL(m, req, name, iname, ...)                                                    \
    do {                                                                                  \
        switch (m) {                                                                      \
        case BLOCKING:                                                                    \
            OK(MPI_##name##_c(__VA_ARGS__));                                              \
            break;                                                                        \
        case NONBLOCKING:                                                                 \
            OK(MPI_##iname##_c(__VA_ARGS__, &(req)));                                     \
            OK(MPI_Wait(&(req), MPI_STATUS_IGNORE));                                      \
            CHECK((req) == MPI_REQUEST_NULL);                                             \
            break;                                                                        \
        case PERSISTENT:                                                                  \
            if ((req) == MPI_REQUEST_NULL) OK(MPI_##name##_init_c(__VA_ARGS__, MPI_INFO_NULL, &(req))); \
            OK(MPI_Start(&(req)));                                                        \
            OK(MPI_Wait(&(req), MPI_STATUS_IGNORE));                                      \
            break;                                                                        \
        }                                                                                 \
    } while (0)

static void free_req(MPI_Request *req) {
    if (*req != MPI_REQUEST_NULL) OK(MPI_Request_free(req));
}

static void fill(int *b, int len, int v) {
    for (int i = 0; i < len; i++) b[i] = v;
}

/* The sum over ranks lo..hi-1 of V(r, i). */
static int sum_v(int lo, int hi, int i) {
    int s = 0;
    for (int r = lo; r < hi; r++) s += V(r, i);
    return s;
}

/* Uneven counts: rank r's block has r + 1 items. */
static int cnt(int r) { return r + 1; }

/* Blocks of counts c[0..k-1] in reverse order with a one-item gap after each: block j
 * at d[j]; returns the span. */
static int reverse_layout(const MPI_Count *c, MPI_Aint *d, int k) {
    int at = 0;
    for (int j = k - 1; j >= 0; j--) {
        d[j] = at;
        at += (int)c[j] + 1;
    }
    return at;
}

/* Checks recv of span `span` laid out by c/d: block j holds want(j, i), gaps SENTINEL. */
static void check_blocks(const int *recv, int span, const MPI_Count *c, const MPI_Aint *d,
                         int k, int (*want)(int, int)) {
    int *seen = calloc((size_t)span, sizeof(int));
    for (int j = 0; j < k; j++)
        for (int i = 0; i < (int)c[j]; i++) {
            CHECK(recv[d[j] + i] == want(j, i));
            seen[d[j] + i] = 1;
        }
    for (int i = 0; i < span; i++)
        if (!seen[i]) CHECK(recv[i] == SENTINEL);
    free(seen);
}

static void scalar_forms(enum mode m) {
    for (int root = 0; root < n; root++) {
        MPI_Request req = MPI_REQUEST_NULL;
        for (rnd = 0; rnd < 2; rnd++) {
            int buf[5];
            for (int i = 0; i < 5; i++) buf[i] = me == root ? V(root, i) : SENTINEL;
            COLL(m, req, Bcast, Ibcast, buf, (MPI_Count)5, MPI_INT, root, MPI_COMM_WORLD);
            for (int i = 0; i < 5; i++) CHECK(buf[i] == V(root, i));
        }
        free_req(&req);
    }
    MPI_Request rq[12];
    for (int k = 0; k < 12; k++) rq[k] = MPI_REQUEST_NULL;
    for (rnd = 0; rnd < 2; rnd++) {
        int in[4], out[4], root = n - 1;
        for (int i = 0; i < 4; i++) in[i] = V(me, i);
        fill(out, 4, SENTINEL);
        COLL(m, rq[0], Reduce, Ireduce, in, out, (MPI_Count)4, MPI_INT, MPI_SUM, root,
             MPI_COMM_WORLD);
        for (int i = 0; i < 4; i++) CHECK(out[i] == (me == root ? sum_v(0, n, i) : SENTINEL));
        fill(out, 4, SENTINEL);
        COLL(m, rq[1], Allreduce, Iallreduce, in, out, (MPI_Count)4, MPI_INT, MPI_SUM,
             MPI_COMM_WORLD);
        for (int i = 0; i < 4; i++) CHECK(out[i] == sum_v(0, n, i));
        for (int i = 0; i < 4; i++) out[i] = V(me, i);
        COLL(m, rq[2], Allreduce, Iallreduce, MPI_IN_PLACE, out, (MPI_Count)4, MPI_INT,
             MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < 4; i++) CHECK(out[i] == sum_v(0, n, i));
        COLL(m, rq[3], Scan, Iscan, in, out, (MPI_Count)4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < 4; i++) CHECK(out[i] == sum_v(0, me + 1, i));
        fill(out, 4, SENTINEL);
        COLL(m, rq[4], Exscan, Iexscan, in, out, (MPI_Count)4, MPI_INT, MPI_SUM,
             MPI_COMM_WORLD);
        if (me > 0)
            for (int i = 0; i < 4; i++) CHECK(out[i] == sum_v(0, me, i));

        int mine[3], all[3 * 3], blocks[3 * 3];
        for (int i = 0; i < 3; i++) mine[i] = V(me, i);
        fill(all, 3 * n, SENTINEL);
        COLL(m, rq[5], Gather, Igather, mine, (MPI_Count)3, MPI_INT, all, (MPI_Count)3,
             MPI_INT, root, MPI_COMM_WORLD);
        if (me == root)
            for (int r = 0; r < n; r++)
                for (int i = 0; i < 3; i++) CHECK(all[r * 3 + i] == V(r, i));
        for (int r = 0; r < n; r++)
            for (int i = 0; i < 3; i++) blocks[r * 3 + i] = V(r + 50, i);
        fill(mine, 3, SENTINEL);
        COLL(m, rq[6], Scatter, Iscatter, blocks, (MPI_Count)3, MPI_INT, mine, (MPI_Count)3,
             MPI_INT, 0, MPI_COMM_WORLD);
        for (int i = 0; i < 3; i++) CHECK(mine[i] == V(me + 50, i));
        for (int i = 0; i < 3; i++) mine[i] = V(me, i);
        fill(all, 3 * n, SENTINEL);
        COLL(m, rq[7], Allgather, Iallgather, mine, (MPI_Count)3, MPI_INT, all, (MPI_Count)3,
             MPI_INT, MPI_COMM_WORLD);
        for (int r = 0; r < n; r++)
            for (int i = 0; i < 3; i++) CHECK(all[r * 3 + i] == V(r, i));
        for (int j = 0; j < n; j++)
            for (int i = 0; i < 3; i++) blocks[j * 3 + i] = V(me * 16 + j, i);
        fill(all, 3 * n, SENTINEL);
        COLL(m, rq[8], Alltoall, Ialltoall, blocks, (MPI_Count)3, MPI_INT, all, (MPI_Count)3,
             MPI_INT, MPI_COMM_WORLD);
        for (int j = 0; j < n; j++)
            for (int i = 0; i < 3; i++) CHECK(all[j * 3 + i] == V(j * 16 + me, i));

        int vec[2 * 3], part[2];
        for (int k = 0; k < 2 * n; k++) vec[k] = V(me, k);
        fill(part, 2, SENTINEL);
        COLL(m, rq[9], Reduce_scatter_block, Ireduce_scatter_block, vec, part, (MPI_Count)2,
             MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        for (int j = 0; j < 2; j++) CHECK(part[j] == sum_v(0, n, me * 2 + j));
    }
    for (int k = 0; k < 12; k++) free_req(&rq[k]);
    if (m == BLOCKING) {
        int a[3] = {1, 2, 3}, b[3] = {10, 20, 30};
        OK(MPI_Reduce_local_c(a, b, (MPI_Count)3, MPI_INT, MPI_SUM));
        CHECK(b[0] == 11 && b[1] == 22 && b[2] == 33);
    }
}

static int gatherv_root;
static int want_gathered(int j, int i) { return V(j, i); }
static int want_a2a(int j, int i) { return V(j * 16 + me, i); }
/* Alltoallv's counts: symmetric, uneven. */
static MPI_Count c2(int a, int b) { return (a + b) % 3 + 1; }

static void v_forms(enum mode m) {
    MPI_Count counts[3], big[3], scounts[3], rcounts[3], rscounts[3];
    MPI_Aint displs[3], sdispls[3], rdispls[3], bdispls[3];
    MPI_Datatype types[3] = {MPI_INT, MPI_INT, MPI_INT};
    for (int r = 0; r < n; r++) {
        counts[r] = cnt(r);
        big[r] = BIG;
        bdispls[r] = (MPI_Aint)BIG;
        scounts[r] = c2(me, r);
        rcounts[r] = c2(r, me);
        rscounts[r] = (MPI_Count)cnt(r);
    }
    int span = reverse_layout(counts, displs, n);
    int sspan = reverse_layout(scounts, sdispls, n);
    int rspan = 0;
    for (int j = 0; j < n; j++) {
        rdispls[j] = rspan;
        rspan += (int)rcounts[j] + 1;
    }
    MPI_Aint sbytes[3], rbytes[3];
    for (int j = 0; j < n; j++) {
        sbytes[j] = sdispls[j] * (MPI_Aint)sizeof(int);
        rbytes[j] = rdispls[j] * (MPI_Aint)sizeof(int);
    }
    MPI_Request rq[8];
    for (int k = 0; k < 8; k++) rq[k] = MPI_REQUEST_NULL;
    gatherv_root = n - 1;
    for (rnd = 0; rnd < 2; rnd++) {
        int mine[3], all[16], send[16];
        for (int i = 0; i < cnt(me); i++) mine[i] = V(me, i);
        /* Gatherv: NULL arrays at the odd non-roots, out-of-range ones at the even. */
        int is_root = me == gatherv_root;
        const MPI_Count *gc = is_root ? counts : (me % 2 ? NULL : big);
        const MPI_Aint *gd = is_root ? displs : (me % 2 ? NULL : bdispls);
        fill(all, span, SENTINEL);
        COLL(m, rq[0], Gatherv, Igatherv, mine, (MPI_Count)cnt(me), MPI_INT, all, gc, gd,
             MPI_INT, gatherv_root, MPI_COMM_WORLD);
        if (is_root) check_blocks(all, span, counts, displs, n, want_gathered);
        /* Scatterv from rank 0. */
        fill(send, span, SENTINEL);
        for (int j = 0; j < n; j++)
            for (int i = 0; i < cnt(j); i++) send[displs[j] + i] = V(j + 20, i);
        const MPI_Count *sc = me == 0 ? counts : (me % 2 ? NULL : big);
        const MPI_Aint *sd = me == 0 ? displs : (me % 2 ? NULL : bdispls);
        fill(mine, 3, SENTINEL);
        COLL(m, rq[1], Scatterv, Iscatterv, send, sc, sd, MPI_INT, mine, (MPI_Count)cnt(me),
             MPI_INT, 0, MPI_COMM_WORLD);
        for (int i = 0; i < 3; i++) CHECK(mine[i] == (i < cnt(me) ? V(me + 20, i) : SENTINEL));
        /* Allgatherv. */
        for (int i = 0; i < cnt(me); i++) mine[i] = V(me, i);
        fill(all, span, SENTINEL);
        COLL(m, rq[2], Allgatherv, Iallgatherv, mine, (MPI_Count)cnt(me), MPI_INT, all, counts,
             displs, MPI_INT, MPI_COMM_WORLD);
        check_blocks(all, span, counts, displs, n, want_gathered);
        /* Alltoallv: send blocks in reverse order, receive blocks in rank order. */
        fill(send, sspan, SENTINEL);
        for (int j = 0; j < n; j++)
            for (int i = 0; i < (int)scounts[j]; i++) send[sdispls[j] + i] = V(me * 16 + j, i);
        fill(all, rspan, SENTINEL);
        COLL(m, rq[3], Alltoallv, Ialltoallv, send, scounts, sdispls, MPI_INT, all, rcounts,
             rdispls, MPI_INT, MPI_COMM_WORLD);
        check_blocks(all, rspan, rcounts, rdispls, n, want_a2a);
        /* In place: the send arrays are ignored (out of range here). */
        fill(all, rspan, SENTINEL);
        for (int j = 0; j < n; j++)
            for (int i = 0; i < (int)rcounts[j]; i++) all[rdispls[j] + i] = V(me * 16 + j, i);
        COLL(m, rq[4], Alltoallv, Ialltoallv, MPI_IN_PLACE, big, bdispls, MPI_INT, all,
             rcounts, rdispls, MPI_INT, MPI_COMM_WORLD);
        check_blocks(all, rspan, rcounts, rdispls, n, want_a2a);
        /* Alltoallw: the same blocks, displacements in bytes. */
        fill(all, rspan, SENTINEL);
        COLL(m, rq[5], Alltoallw, Ialltoallw, send, scounts, sbytes, types, all, rcounts,
             rbytes, types, MPI_COMM_WORLD);
        check_blocks(all, rspan, rcounts, rdispls, n, want_a2a);
        /* Reduce_scatter: rank r gets r + 1 items. */
        int total = n * (n + 1) / 2, vec[6], part[3];
        for (int k = 0; k < total; k++) vec[k] = V(me, k);
        fill(part, 3, SENTINEL);
        COLL(m, rq[6], Reduce_scatter, Ireduce_scatter, vec, part, rscounts, MPI_INT, MPI_SUM,
             MPI_COMM_WORLD);
        int off = me * (me + 1) / 2;
        for (int j = 0; j < 3; j++)
            CHECK(part[j] == (j < cnt(me) ? sum_v(0, n, off + j) : SENTINEL));
    }
    for (int k = 0; k < 8; k++) free_req(&rq[k]);
}

/* Inter-communicator: even world ranks on side 0, odd on side 1. */
static int side;
static int W(int s, int r, int i) { return (s * 16 + r) * 1000 + i + rnd * 100000; }
static int want_remote(int j, int i) { return W(1 - side, j, i); }

static void inter_forms(enum mode m) {
    if (n < 2) return;
    side = me % 2;
    MPI_Comm local, inter;
    OK(MPI_Comm_split(MPI_COMM_WORLD, side, me, &local));
    OK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, side == 0 ? 1 : 0, 77, &inter));
    int lrank, rsize;
    OK(MPI_Comm_rank(inter, &lrank));
    OK(MPI_Comm_remote_size(inter, &rsize));
    MPI_Count counts[2];
    MPI_Aint displs[2];
    for (int j = 0; j < rsize; j++) counts[j] = cnt(j);
    int span = reverse_layout(counts, displs, rsize);
    MPI_Request rq[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    for (rnd = 0; rnd < 2; rnd++) {
        int mine[2], all[8];
        for (int i = 0; i < cnt(lrank); i++) mine[i] = W(side, lrank, i);
        fill(all, span, SENTINEL);
        COLL(m, rq[0], Allgatherv, Iallgatherv, mine, (MPI_Count)cnt(lrank), MPI_INT, all,
             counts, displs, MPI_INT, inter);
        check_blocks(all, span, counts, displs, rsize, want_remote);
        /* Gatherv to side 0's rank 0. */
        int root = side == 1 ? 0 : (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL);
        int at_root = root == MPI_ROOT;
        fill(all, span, SENTINEL);
        COLL(m, rq[1], Gatherv, Igatherv, mine, (MPI_Count)cnt(lrank), MPI_INT, all,
             at_root ? counts : NULL, at_root ? displs : NULL, MPI_INT, root, inter);
        if (at_root) check_blocks(all, span, counts, displs, rsize, want_remote);
    }
    free_req(&rq[0]);
    free_req(&rq[1]);
    OK(MPI_Comm_free(&inter));
    OK(MPI_Comm_free(&local));
}

/* The neighborhood forms on a periodic ring: block 0 from/to the rank below, 1 above. */
static int down, up;
static int want_nv(int j, int i) { return V(j == 0 ? down : up, i); }
static int want_na(int j, int i) { return V(j == 0 ? down * 2 + 1 : up * 2, i); }
/* What rank r sends towards direction d (0 down, 1 up). */
static MPI_Count ncount(int r, int d) { return r + 1 + d * 2; }

static void neighbor_forms(enum mode m) {
    int dims[1] = {n}, periods[1] = {1};
    MPI_Comm ring;
    OK(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring));
    down = (me + n - 1) % n;
    up = (me + 1) % n;
    MPI_Count gcounts[2] = {cnt(down), cnt(up)}, scounts[2] = {ncount(me, 0), ncount(me, 1)};
    MPI_Count rcounts[2] = {ncount(down, 1), ncount(up, 0)};
    MPI_Aint gdispls[2], sdispls[2], rdispls[2], sbytes[2], rbytes[2];
    int gspan = reverse_layout(gcounts, gdispls, 2);
    int sspan = reverse_layout(scounts, sdispls, 2);
    int rspan = reverse_layout(rcounts, rdispls, 2);
    for (int j = 0; j < 2; j++) {
        sbytes[j] = sdispls[j] * (MPI_Aint)sizeof(int);
        rbytes[j] = rdispls[j] * (MPI_Aint)sizeof(int);
    }
    MPI_Datatype types[2] = {MPI_INT, MPI_INT};
    MPI_Request rq[5];
    for (int k = 0; k < 5; k++) rq[k] = MPI_REQUEST_NULL;
    for (rnd = 0; rnd < 2; rnd++) {
        int mine[4], got[16], send[16];
        for (int i = 0; i < 4; i++) mine[i] = V(me, i);
        fill(got, 8, SENTINEL);
        COLL(m, rq[0], Neighbor_allgather, Ineighbor_allgather, mine, (MPI_Count)4, MPI_INT,
             got, (MPI_Count)4, MPI_INT, ring);
        for (int i = 0; i < 4; i++) CHECK(got[i] == V(down, i) && got[4 + i] == V(up, i));
        for (int d = 0; d < 2; d++)
            for (int i = 0; i < 3; i++) send[d * 3 + i] = V(me * 2 + d, i);
        fill(got, 6, SENTINEL);
        COLL(m, rq[1], Neighbor_alltoall, Ineighbor_alltoall, send, (MPI_Count)3, MPI_INT, got,
             (MPI_Count)3, MPI_INT, ring);
        for (int i = 0; i < 3; i++) CHECK(got[i] == V(down * 2 + 1, i) && got[3 + i] == V(up * 2, i));
        fill(got, gspan, SENTINEL);
        COLL(m, rq[2], Neighbor_allgatherv, Ineighbor_allgatherv, mine, (MPI_Count)cnt(me),
             MPI_INT, got, gcounts, gdispls, MPI_INT, ring);
        check_blocks(got, gspan, gcounts, gdispls, 2, want_nv);
        fill(send, sspan, SENTINEL);
        for (int d = 0; d < 2; d++)
            for (int i = 0; i < (int)scounts[d]; i++) send[sdispls[d] + i] = V(me * 2 + d, i);
        fill(got, rspan, SENTINEL);
        COLL(m, rq[3], Neighbor_alltoallv, Ineighbor_alltoallv, send, scounts, sdispls, MPI_INT,
             got, rcounts, rdispls, MPI_INT, ring);
        check_blocks(got, rspan, rcounts, rdispls, 2, want_na);
        fill(got, rspan, SENTINEL);
        COLL(m, rq[4], Neighbor_alltoallw, Ineighbor_alltoallw, send, scounts, sbytes, types,
             got, rcounts, rbytes, types, ring);
        check_blocks(got, rspan, rcounts, rdispls, 2, want_na);
    }
    for (int k = 0; k < 5; k++) free_req(&rq[k]);
    if (m == BLOCKING) {
        /* An out-of-range count refused at every rank, the ring still usable. */
        MPI_Count bad[2] = {rcounts[0], BIG};
        int send[16], got[16];
        OK(MPI_Comm_set_errhandler(ring, MPI_ERRORS_RETURN));
        fill(send, 16, 0);
        int rc = MPI_Neighbor_alltoallw_c(send, scounts, sbytes, types, got, bad, rbytes, types,
                                          ring);
        int cls = -1;
        CHECK(rc != MPI_SUCCESS);
        OK(MPI_Error_class(rc, &cls));
        CHECK(cls == MPI_ERR_COUNT);
        int one = 1, two[2];
        OK(MPI_Neighbor_allgather_c(&one, 1, MPI_INT, two, 1, MPI_INT, ring));
        CHECK(two[0] == 1 && two[1] == 1);
    }
    OK(MPI_Comm_free(&ring));
}

static void count_error(int rc) {
    int cls = -1;
    CHECK(rc != MPI_SUCCESS);
    OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_COUNT);
}

/* Counts and displacements beyond INT_MAX, seen at every rank: MPI_ERR_COUNT everywhere,
 * nothing sent, the communicator usable afterwards. */
static void refusals(void) {
    MPI_Comm w = MPI_COMM_WORLD;
    OK(MPI_Comm_set_errhandler(w, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    int buf[8] = {0};
    MPI_Request req = MPI_REQUEST_NULL;
    count_error(MPI_Bcast_c(buf, BIG, MPI_INT, 0, w));
    count_error(MPI_Ibcast_c(buf, BIG, MPI_INT, 0, w, &req));
    count_error(MPI_Bcast_init_c(buf, BIG, MPI_INT, 0, w, MPI_INFO_NULL, &req));
    count_error(MPI_Allreduce_c(buf, buf + 4, -BIG - 1, MPI_INT, MPI_SUM, w));
    count_error(MPI_Reduce_local_c(buf, buf + 4, BIG, MPI_INT, MPI_SUM));
    MPI_Count counts[3], bad[3];
    MPI_Aint displs[3], bad_displs[3];
    for (int r = 0; r < n; r++) {
        counts[r] = 1;
        bad[r] = 1;
        displs[r] = r;
        bad_displs[r] = r;
    }
    bad[n - 1] = BIG;
    bad_displs[0] = (MPI_Aint)BIG;
    count_error(MPI_Allgatherv_c(buf, 1, MPI_INT, buf + 4, bad, displs, MPI_INT, w));
    count_error(MPI_Ialltoallv_c(buf, counts, bad_displs, MPI_INT, buf + 4, counts, displs,
                                 MPI_INT, w, &req));
    count_error(MPI_Alltoallw_init_c(buf, counts, displs, (MPI_Datatype[]){MPI_INT, MPI_INT, MPI_INT},
                                     buf + 4, bad, displs,
                                     (MPI_Datatype[]){MPI_INT, MPI_INT, MPI_INT}, w,
                                     MPI_INFO_NULL, &req));
    count_error(MPI_Reduce_scatter_init_c(buf, buf + 4, bad, MPI_INT, MPI_SUM, w, MPI_INFO_NULL,
                                          &req));
    count_error(MPI_Gather_c(buf, BIG, MPI_INT, buf + 4, 1, MPI_INT, 0, w));
    CHECK(req == MPI_REQUEST_NULL);
    /* Nothing was sent: the next collectives match as usual. */
    OK(MPI_Barrier(w));
    int one = 1, total = 0;
    OK(MPI_Allreduce_c(&one, &total, 1, MPI_INT, MPI_SUM, w));
    CHECK(total == n);
    OK(MPI_Comm_set_errhandler(w, MPI_ERRORS_ARE_FATAL));
}

int main(int argc, char **argv) {
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &n));
    CHECK(n <= 3);
#if MPI_VERSION >= 4
    for (int m = BLOCKING; m <= PERSISTENT; m++) {
        scalar_forms((enum mode)m);
        v_forms((enum mode)m);
        inter_forms((enum mode)m);
        neighbor_forms((enum mode)m);
    }
    refusals();
#else
#error "the _c forms need MPI 4"
#endif
    OK(MPI_Finalize());
    printf("rank %d: LARGE COLL OK\n", me);
    return 0;
}
