/*
 * The non-blocking collectives on inter-communicators (MPI 4.1 §6.2.2, §6.12), at 3, 4
 * or 5 ranks: the world is split twice into two groups joined by MPI_Intercomm_create,
 * the low ranks against the high ones ((n+1)/2 + n/2: 2+1, 2+2, 3+2) and the even
 * against the odd ones. On each inter-communicator:
 * - every collective (Ibcast, Ireduce, Iallreduce, Igather, Iscatter, Iallgather,
 *   Ialltoall, Igatherv, Iscatterv, Iallgatherv, Ialltoallv, Ireduce_scatter_block,
 *   Ireduce_scatter, Ibarrier) alone with each group as the root's, the first and last rank of
 *   that group as root, counts 0, 1, 7 and 20 000 ints, every element checked against
 *   a value naming its sending side, rank, destination, position and call (reductions:
 *   the other group's sums); ranks outside a call (MPI_PROC_NULL) pass null buffers
 *   and their request is complete at once; gaps of the v layouts stay untouched;
 * - Iallgather and Ialltoall with data one way (counts 0 on the other side);
 * - an Ibarrier incomplete while a process of the other group has not started it;
 * - all fourteen in flight at once, with a blocking MPI_Allreduce and MPI_Bcast on the
 *   inter-communicator between the starts, completed by MPI_Waitall, by MPI_Wait in
 *   reverse order, by an MPI_Test loop in an order that differs by rank, by
 *   MPI_Testsome;
 * - MPI_IN_PLACE refused (MPI_ERR_BUFFER), MPI_Iscan/Iexscan refused (MPI_ERR_COMM),
 *   and a collective afterwards still matches.
 * With the argument "multiple": MPI_THREAD_MULTIPLE, and a second thread runs the
 * collectives one by one and all in flight on a dup of each inter-communicator while
 * the main thread runs them on the original.
 * Each rank prints "rank R: NBC INTER OK".
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me = -1;

#include "check.h"

typedef struct {
    MPI_Comm inter;
    int side, rank, lsize, rsize, salt;
} ctx;

/* A value naming who sent it, to whom, where and in which call. */
static int V(int side, int rank, int dest, int j, int salt) {
    unsigned parts[5] = {(unsigned)side, (unsigned)rank, (unsigned)dest, (unsigned)j,
                         (unsigned)salt};
    unsigned h = 2166136261u;
    for (int i = 0; i < 5; i++) {
        h ^= parts[i] + 0x9e3779b9u;
        h *= 16777619u;
        h ^= h >> 13;
    }
    return (int)(h & 0x7fffffff);
}

/* A reduction's contribution of element j (sums of a few fit an int). */
static int R(int side, int rank, int j, int salt) {
    return (side + 1) * 1000000 + (rank + 1) * 10000 + (j * 7 + salt) % 5000;
}

static int *ints(size_t n) {
    int *p = malloc((n ? n : 1) * sizeof(int));
    CHECK(p != NULL);
    for (size_t i = 0; i < n; i++) p[i] = -1;
    return p;
}

/* Count of a v block from rank a (of its side) to rank b. */
static int cnt(int count, int a, int b) { return count ? count + a + 2 * b : 0; }

/* Displacements of n blocks with 2 ints between them, in reverse rank order; the
 * span. */
static int layout(int n, const int *counts, int *displs) {
    int pos = 1;
    for (int k = n - 1; k >= 0; k--) {
        displs[k] = pos;
        pos += counts[k] + 2;
    }
    return pos;
}

static void gaps_untouched(const int *buf, int span, int n, const int *counts,
                           const int *displs) {
    char *in = calloc(span ? span : 1, 1);
    CHECK(in != NULL);
    for (int r = 0; r < n; r++)
        for (int j = 0; j < counts[r]; j++) in[displs[r] + j] = 1;
    for (int i = 0; i < span; i++) CHECK(in[i] || buf[i] == -1);
    free(in);
}

enum {
    BCAST,
    REDUCE,
    ALLREDUCE,
    GATHER,
    SCATTER,
    ALLGATHER,
    ALLTOALL,
    GATHERV,
    SCATTERV,
    ALLGATHERV,
    ALLTOALLV,
    RSBLOCK,
    RS,
    BARRIER,
    KINDS
};

/* One call in flight: its arguments, buffers and request. */
typedef struct {
    int kind, rside, root, count, salt;
    int role; /* 0: root, 1: outside (MPI_PROC_NULL), 2: in the other group; 3: unrooted */
    int *in, *out, span;
    int scounts[8], sdispls[8], rcounts[8], rdispls[8];
    MPI_Request req;
} call_t;

static int rooted(int kind) {
    return kind == BCAST || kind == REDUCE || kind == GATHER || kind == SCATTER ||
           kind == GATHERV || kind == SCATTERV;
}

/* The reduce-scatters' vector: length and this rank's block. */
static int rs_total(ctx *c, int count) { return count ? count * c->lsize * c->rsize + 1 : 0; }
static void rs_counts(ctx *c, int total, int *counts) {
    for (int i = 0; i < c->lsize; i++) counts[i] = total / c->lsize + (i < total % c->lsize);
}

static void start(ctx *c, call_t *k) {
    int count = k->count, salt = k->salt = ++c->salt;
    MPI_Comm ic = c->inter;
    int root_arg = k->root;
    k->role = 3;
    k->in = k->out = NULL;
    if (rooted(k->kind)) {
        if (c->side == k->rside) {
            k->role = c->rank == k->root ? 0 : 1;
            root_arg = k->role == 0 ? MPI_ROOT : MPI_PROC_NULL;
        } else {
            k->role = 2;
        }
    }
    int root = k->role == 0, member = k->role == 2;
    size_t rn = (size_t)count * c->rsize;
    switch (k->kind) {
    case BCAST:
        if (root || member) k->out = ints(count);
        if (root)
            for (int j = 0; j < count; j++) k->out[j] = V(k->rside, k->root, 0, j, salt);
        OK(MPI_Ibcast(k->out, count, MPI_INT, root_arg, ic, &k->req));
        break;
    case REDUCE:
        if (member) {
            k->in = ints(count);
            for (int j = 0; j < count; j++) k->in[j] = R(c->side, c->rank, j, salt);
        }
        if (root) k->out = ints(count);
        OK(MPI_Ireduce(k->in, k->out, count, MPI_INT, MPI_SUM, root_arg, ic, &k->req));
        break;
    case ALLREDUCE:
        k->in = ints(count);
        k->out = ints(count);
        for (int j = 0; j < count; j++) k->in[j] = R(c->side, c->rank, j, salt);
        OK(MPI_Iallreduce(k->in, k->out, count, MPI_INT, MPI_SUM, ic, &k->req));
        break;
    case GATHER:
        if (member) {
            k->in = ints(count);
            for (int j = 0; j < count; j++) k->in[j] = V(c->side, c->rank, k->root, j, salt);
        }
        if (root) k->out = ints(rn);
        OK(MPI_Igather(k->in, member ? count : 0, MPI_INT, k->out, root ? count : 0, MPI_INT,
                       root_arg, ic, &k->req));
        break;
    case SCATTER:
        if (root) {
            k->in = ints(rn);
            for (int r = 0; r < c->rsize; r++)
                for (int j = 0; j < count; j++) k->in[r * count + j] = V(c->side, c->rank, r, j, salt);
        }
        if (member) k->out = ints(count);
        OK(MPI_Iscatter(k->in, root ? count : 0, MPI_INT, k->out, member ? count : 0, MPI_INT,
                        root_arg, ic, &k->req));
        break;
    case ALLGATHER:
        k->in = ints(count);
        k->out = ints(rn);
        for (int j = 0; j < count; j++) k->in[j] = V(c->side, c->rank, 0, j, salt);
        OK(MPI_Iallgather(k->in, count, MPI_INT, k->out, count, MPI_INT, ic, &k->req));
        break;
    case ALLTOALL:
        k->in = ints(rn);
        k->out = ints(rn);
        for (int r = 0; r < c->rsize; r++)
            for (int j = 0; j < count; j++) k->in[r * count + j] = V(c->side, c->rank, r, j, salt);
        OK(MPI_Ialltoall(k->in, count, MPI_INT, k->out, count, MPI_INT, ic, &k->req));
        break;
    case GATHERV: {
        int n = member ? cnt(count, c->rank, k->root) : 0;
        if (member) {
            k->in = ints(n);
            for (int j = 0; j < n; j++) k->in[j] = V(c->side, c->rank, k->root, j, salt);
        }
        if (root) {
            for (int r = 0; r < c->rsize; r++) k->rcounts[r] = cnt(count, r, k->root);
            k->span = layout(c->rsize, k->rcounts, k->rdispls);
            k->out = ints(k->span);
        }
        OK(MPI_Igatherv(k->in, n, MPI_INT, k->out, root ? k->rcounts : NULL,
                        root ? k->rdispls : NULL, MPI_INT, root_arg, ic, &k->req));
        break;
    }
    case SCATTERV: {
        int n = member ? cnt(count, k->root, c->rank) : 0;
        if (root) {
            for (int r = 0; r < c->rsize; r++) k->scounts[r] = cnt(count, c->rank, r);
            int span = layout(c->rsize, k->scounts, k->sdispls);
            k->in = ints(span);
            for (int r = 0; r < c->rsize; r++)
                for (int j = 0; j < k->scounts[r]; j++)
                    k->in[k->sdispls[r] + j] = V(c->side, c->rank, r, j, salt);
        }
        if (member) k->out = ints(n);
        OK(MPI_Iscatterv(k->in, root ? k->scounts : NULL, root ? k->sdispls : NULL, MPI_INT,
                         k->out, n, MPI_INT, root_arg, ic, &k->req));
        break;
    }
    case ALLGATHERV: {
        int n = cnt(count, c->rank, 0);
        k->in = ints(n);
        for (int j = 0; j < n; j++) k->in[j] = V(c->side, c->rank, 0, j, salt);
        for (int r = 0; r < c->rsize; r++) k->rcounts[r] = cnt(count, r, 0);
        k->span = layout(c->rsize, k->rcounts, k->rdispls);
        k->out = ints(k->span);
        OK(MPI_Iallgatherv(k->in, n, MPI_INT, k->out, k->rcounts, k->rdispls, MPI_INT, ic,
                           &k->req));
        break;
    }
    case ALLTOALLV: {
        for (int r = 0; r < c->rsize; r++) {
            k->scounts[r] = cnt(count, c->rank, r);
            k->rcounts[r] = cnt(count, r, c->rank);
        }
        int sspan = layout(c->rsize, k->scounts, k->sdispls);
        k->span = layout(c->rsize, k->rcounts, k->rdispls);
        k->in = ints(sspan);
        k->out = ints(k->span);
        for (int r = 0; r < c->rsize; r++)
            for (int j = 0; j < k->scounts[r]; j++)
                k->in[k->sdispls[r] + j] = V(c->side, c->rank, r, j, salt);
        OK(MPI_Ialltoallv(k->in, k->scounts, k->sdispls, MPI_INT, k->out, k->rcounts,
                          k->rdispls, MPI_INT, ic, &k->req));
        break;
    }
    case RSBLOCK: {
        /* Both groups' vectors: count * lsize * rsize ints. */
        int rc = count * c->rsize, total = rc * c->lsize;
        k->in = ints(total);
        k->out = ints(rc + 1);
        for (int j = 0; j < total; j++) k->in[j] = R(c->side, c->rank, j, salt);
        OK(MPI_Ireduce_scatter_block(k->in, k->out, rc, MPI_INT, MPI_SUM, ic, &k->req));
        break;
    }
    case RS: {
        int total = rs_total(c, count);
        rs_counts(c, total, k->rcounts);
        k->in = ints(total);
        k->out = ints(k->rcounts[c->rank] + 1);
        for (int j = 0; j < total; j++) k->in[j] = R(c->side, c->rank, j, salt);
        OK(MPI_Ireduce_scatter(k->in, k->out, k->rcounts, MPI_INT, MPI_SUM, ic, &k->req));
        break;
    }
    case BARRIER:
        OK(MPI_Ibarrier(ic, &k->req));
        break;
    }
}

/* The other group's sum of element j. */
static int other_sum(ctx *c, int other_side, int j, int salt) {
    int want = 0;
    for (int r = 0; r < c->rsize; r++) want += R(other_side, r, j, salt);
    return want;
}

/* Checks a completed call's data and frees its buffers. */
static void check(ctx *c, call_t *k) {
    int count = k->count, salt = k->salt, o = 1 - c->side;
    int root = k->role == 0, member = k->role == 2;
    CHECK(k->req == MPI_REQUEST_NULL);
    switch (k->kind) {
    case BCAST:
        if (root || member)
            for (int j = 0; j < count; j++) CHECK(k->out[j] == V(k->rside, k->root, 0, j, salt));
        break;
    case REDUCE:
        if (root)
            for (int j = 0; j < count; j++) CHECK(k->out[j] == other_sum(c, o, j, salt));
        if (member)
            for (int j = 0; j < count; j++) CHECK(k->in[j] == R(c->side, c->rank, j, salt));
        break;
    case ALLREDUCE:
        for (int j = 0; j < count; j++) CHECK(k->out[j] == other_sum(c, o, j, salt));
        break;
    case GATHER:
        if (root)
            for (int r = 0; r < c->rsize; r++)
                for (int j = 0; j < count; j++)
                    CHECK(k->out[r * count + j] == V(o, r, k->root, j, salt));
        break;
    case SCATTER:
        if (member)
            for (int j = 0; j < count; j++) CHECK(k->out[j] == V(o, k->root, c->rank, j, salt));
        break;
    case ALLGATHER:
        for (int r = 0; r < c->rsize; r++)
            for (int j = 0; j < count; j++) CHECK(k->out[r * count + j] == V(o, r, 0, j, salt));
        break;
    case ALLTOALL:
        for (int r = 0; r < c->rsize; r++)
            for (int j = 0; j < count; j++)
                CHECK(k->out[r * count + j] == V(o, r, c->rank, j, salt));
        break;
    case GATHERV:
        if (root) {
            for (int r = 0; r < c->rsize; r++)
                for (int j = 0; j < k->rcounts[r]; j++)
                    CHECK(k->out[k->rdispls[r] + j] == V(o, r, k->root, j, salt));
            gaps_untouched(k->out, k->span, c->rsize, k->rcounts, k->rdispls);
        }
        break;
    case SCATTERV:
        if (member)
            for (int j = 0; j < cnt(count, k->root, c->rank); j++)
                CHECK(k->out[j] == V(o, k->root, c->rank, j, salt));
        break;
    case ALLGATHERV:
    case ALLTOALLV: {
        int dest = k->kind == ALLGATHERV ? 0 : c->rank;
        for (int r = 0; r < c->rsize; r++)
            for (int j = 0; j < k->rcounts[r]; j++)
                CHECK(k->out[k->rdispls[r] + j] == V(o, r, dest, j, salt));
        gaps_untouched(k->out, k->span, c->rsize, k->rcounts, k->rdispls);
        break;
    }
    case RSBLOCK: {
        int rc = count * c->rsize;
        for (int j = 0; j < rc; j++) CHECK(k->out[j] == other_sum(c, o, c->rank * rc + j, salt));
        CHECK(k->out[rc] == -1);
        break;
    }
    case RS: {
        int start = 0;
        for (int i = 0; i < c->rank; i++) start += k->rcounts[i];
        int n = k->rcounts[c->rank];
        for (int j = 0; j < n; j++) CHECK(k->out[j] == other_sum(c, o, start + j, salt));
        CHECK(k->out[n] == -1);
        break;
    }
    case BARRIER:
        break;
    }
    free(k->in);
    free(k->out);
}

/* Every collective alone, waited for, or tested until done. */
static void one_by_one(ctx *c) {
    static const int counts[] = {0, 1, 7, 20000};
    for (int kind = 0; kind < KINDS; kind++)
        for (int rside = 0; rside < 2; rside++)
            for (int rr = 0; rr < 2; rr++)
                for (int ci = 0; ci < 4; ci++) {
                    int rootsize = rside == c->side ? c->lsize : c->rsize;
                    call_t k = {.kind = kind, .rside = rside, .count = counts[ci]};
                    k.root = rr ? rootsize - 1 : 0;
                    if (!rooted(kind) && (rside || rr)) continue;
                    start(c, &k);
                    if (k.role == 1) {
                        /* Outside the call: complete at once. */
                        int flag = 0;
                        OK(MPI_Test(&k.req, &flag, MPI_STATUS_IGNORE));
                        CHECK(flag);
                    } else if (ci % 2) {
                        OK(MPI_Wait(&k.req, MPI_STATUS_IGNORE));
                    } else {
                        int flag = 0;
                        while (!flag) OK(MPI_Test(&k.req, &flag, MPI_STATUS_IGNORE));
                    }
                    check(c, &k);
                }
}

/* A blocking allreduce and bcast on the inter-communicator, between starts. */
static void blocking(ctx *c) {
    int salt = ++c->salt, v = R(c->side, c->rank, 0, salt), sum = -1;
    OK(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, c->inter));
    CHECK(sum == other_sum(c, 1 - c->side, 0, salt));
    int b[3] = {-1, -1, -1};
    if (c->side == 1) {
        if (c->rank == 0)
            for (int j = 0; j < 3; j++) b[j] = V(1, 0, 0, j, salt);
        OK(MPI_Bcast(b, 3, MPI_INT, c->rank == 0 ? MPI_ROOT : MPI_PROC_NULL, c->inter));
    } else {
        OK(MPI_Bcast(b, 3, MPI_INT, 0, c->inter));
        for (int j = 0; j < 3; j++) CHECK(b[j] == V(1, 0, 0, j, salt));
    }
}

/* All kinds in flight at once, completed in `how` (0: Waitall, 1: Wait in reverse, 2:
 * a Test loop in a rank-dependent order, 3: Testsome). */
static void in_flight(ctx *c, int how, int count) {
    call_t k[KINDS];
    MPI_Request reqs[KINDS];
    for (int i = 0; i < KINDS; i++) {
        memset(&k[i], 0, sizeof k[i]);
        k[i].kind = i;
        k[i].count = count + i;
        k[i].rside = (i + how) % 2;
        int rootsize = k[i].rside == c->side ? c->lsize : c->rsize;
        k[i].root = (i + how) % rootsize;
        start(c, &k[i]);
        if (i % 4 == 1) blocking(c);
    }
    blocking(c);
    for (int i = 0; i < KINDS; i++) reqs[i] = k[i].req;
    if (how == 0) {
        OK(MPI_Waitall(KINDS, reqs, MPI_STATUSES_IGNORE));
    } else if (how == 1) {
        for (int i = KINDS - 1; i >= 0; i--) OK(MPI_Wait(&reqs[i], MPI_STATUS_IGNORE));
    } else if (how == 2) {
        int left = KINDS;
        for (int step = 0; left; step++) {
            int i = (step * 5 + me * 3) % KINDS, flag = 0;
            if (reqs[i] == MPI_REQUEST_NULL) continue;
            OK(MPI_Test(&reqs[i], &flag, MPI_STATUS_IGNORE));
            if (flag) left--;
        }
    } else {
        int left = KINDS, done[KINDS], n = 0;
        while (left) {
            OK(MPI_Testsome(KINDS, reqs, &n, done, MPI_STATUSES_IGNORE));
            if (n != MPI_UNDEFINED) left -= n;
        }
    }
    for (int i = 0; i < KINDS; i++) {
        CHECK(reqs[i] == MPI_REQUEST_NULL);
        k[i].req = reqs[i];
        check(c, &k[i]);
    }
}

/* An MPI_Ibarrier is not complete at the first group while rank 0 of the second has
 * not started it (it starts after a message from each rank of the first group, sent
 * once that rank's barrier was tested incomplete 200 times). */
static void barrier_waits(ctx *c) {
    MPI_Request req;
    int token = 0, flag = 0;
    if (c->side == 0) {
        OK(MPI_Ibarrier(c->inter, &req));
        for (int i = 0; i < 200; i++) {
            OK(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
            CHECK(!flag);
        }
        OK(MPI_Send(&token, 1, MPI_INT, 0, 99, c->inter));
    } else {
        for (int r = 0; c->rank == 0 && r < c->rsize; r++)
            OK(MPI_Recv(&token, 1, MPI_INT, r, 99, c->inter, MPI_STATUS_IGNORE));
        OK(MPI_Ibarrier(c->inter, &req));
    }
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
}

/* Data one way only: the first group sends and receives nothing, the second sends
 * nothing (MPI_Iallgather, MPI_Ialltoall with counts 0 on one side). */
static void one_way(ctx *c) {
    int count = 300, salt = ++c->salt;
    int *in = ints((size_t)count * c->rsize), *out = ints((size_t)count * c->rsize);
    MPI_Request reqs[2];
    if (c->side == 0) {
        for (int r = 0; r < c->rsize; r++)
            for (int j = 0; j < count; j++) in[r * count + j] = V(0, c->rank, r, j, salt);
        OK(MPI_Iallgather(in, count, MPI_INT, NULL, 0, MPI_INT, c->inter, &reqs[0]));
        OK(MPI_Ialltoall(in, count, MPI_INT, NULL, 0, MPI_INT, c->inter, &reqs[1]));
    } else {
        OK(MPI_Iallgather(NULL, 0, MPI_INT, in, count, MPI_INT, c->inter, &reqs[0]));
        OK(MPI_Ialltoall(NULL, 0, MPI_INT, out, count, MPI_INT, c->inter, &reqs[1]));
    }
    OK(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));
    if (c->side == 1)
        for (int r = 0; r < c->rsize; r++)
            for (int j = 0; j < count; j++) {
                CHECK(in[r * count + j] == V(0, r, 0, j, salt));
                CHECK(out[r * count + j] == V(0, r, c->rank, j, salt));
            }
    free(in);
    free(out);
}

/* MPI_IN_PLACE and the scans are refused; the next collective still matches. */
static void refusals(ctx *c) {
    OK(MPI_Comm_set_errhandler(c->inter, MPI_ERRORS_RETURN));
    int buf[4] = {0}, out[8];
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = MPI_Iallreduce(MPI_IN_PLACE, buf, 1, MPI_INT, MPI_SUM, c->inter, &req), cls;
    OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_BUFFER && req == MPI_REQUEST_NULL);
    rc = MPI_Iallgather(MPI_IN_PLACE, 1, MPI_INT, out, 1, MPI_INT, c->inter, &req);
    OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_BUFFER && req == MPI_REQUEST_NULL);
    rc = MPI_Iscan(buf, out, 1, MPI_INT, MPI_SUM, c->inter, &req);
    OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_COMM && req == MPI_REQUEST_NULL);
    rc = MPI_Iexscan(buf, out, 1, MPI_INT, MPI_SUM, c->inter, &req);
    OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_COMM && req == MPI_REQUEST_NULL);
    call_t k = {.kind = ALLTOALL, .count = 3};
    start(c, &k);
    OK(MPI_Wait(&k.req, MPI_STATUS_IGNORE));
    check(c, &k);
    blocking(c);
}

static void *thread_suite(void *arg) {
    ctx *c = arg;
    one_by_one(c);
    in_flight(c, 2, 500);
    in_flight(c, 3, 1);
    return NULL;
}

static void run(int side, MPI_Comm local, int remote_leader, int multiple) {
    ctx c = {.side = side};
    OK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, remote_leader, 7, &c.inter));
    OK(MPI_Comm_rank(c.inter, &c.rank));
    OK(MPI_Comm_size(c.inter, &c.lsize));
    OK(MPI_Comm_remote_size(c.inter, &c.rsize));
    ctx b = c;
    pthread_t t;
    if (multiple) {
        OK(MPI_Comm_dup(c.inter, &b.inter));
        CHECK(pthread_create(&t, NULL, thread_suite, &b) == 0);
    }
    one_by_one(&c);
    for (int how = 0; how < 4; how++) in_flight(&c, how, how == 2 ? 3000 : how);
    barrier_waits(&c);
    one_way(&c);
    refusals(&c);
    if (multiple) {
        CHECK(pthread_join(t, NULL) == 0);
        OK(MPI_Comm_free(&b.inter));
    }
    OK(MPI_Comm_free(&c.inter));
}

int main(int argc, char **argv) {
    int size, provided;
    int multiple = argc > 1 && strcmp(argv[1], "multiple") == 0;
    OK(MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE,
                       &provided));
    if (multiple) CHECK(provided == MPI_THREAD_MULTIPLE);
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size >= 2 && size <= 8);
    MPI_Comm local;
    /* Low ranks against high ones. */
    int low = (size + 1) / 2, side = me < low ? 0 : 1;
    OK(MPI_Comm_split(MPI_COMM_WORLD, side, me, &local));
    run(side, local, side == 0 ? low : 0, multiple);
    OK(MPI_Comm_free(&local));
    /* Even ranks against odd ones (the smaller group second or first by size). */
    side = me % 2;
    OK(MPI_Comm_split(MPI_COMM_WORLD, side, me, &local));
    run(side, local, side == 0 ? 1 : 0, multiple);
    OK(MPI_Comm_free(&local));
    printf("rank %d: NBC INTER OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
