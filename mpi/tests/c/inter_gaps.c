/*
 * Types with gaps in the collectives that move data on inter-communicators, in the
 * non-blocking v collectives, and MPI_Alltoallw on inter-communicators. `sp` is an int
 * resized to two ints: item k at int 2k, the odd ints gaps, which must stay GAP in
 * every receive buffer. Every element is checked against its sender, its destination
 * and its position.
 * - On MPI_COMM_WORLD: MPI_Igatherv (every root), Iscatterv, Iallgatherv, Ialltoallv
 *   (blocks of different lengths, in reverse rank order with a one-item hole before
 *   each) all in flight at once, and a persistent MPI_Gatherv_init started twice.
 * - On an inter-communicator between the low and the high ranks (np >= 2; 2+3 at 5):
 *   MPI_Bcast, Gather, Scatter, Allgather, Alltoall and the v forms of each with `sp`,
 *   blocking and non-blocking (the root group's other ranks pass MPI_PROC_NULL and
 *   their buffers stay untouched); MPI_Alltoallw, MPI_Ialltoallw and
 *   MPI_Alltoallw_init with int, double and `sp` blocks per remote rank at byte
 *   displacements (on MPI_COMM_WORLD too, and in place there).
 * Each rank prints "rank R: INTER GAPS OK".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me = -1, np;

#include "check.h"

#define GAP (-5)
static MPI_Datatype sp;

/* The value item k from world rank `from` to world rank `to` carries. */
static int val(int from, int to, int k) { return from * 10000 + to * 100 + k; }

/* n spaced items (2n ints) all GAP. */
static int *gaps(int n) {
    int *b = malloc(sizeof(int) * (2 * n + 1));
    for (int i = 0; i < 2 * n + 1; i++) b[i] = GAP;
    return b;
}
/* Checks item k of b (for k < n) is want(k) and every gap is GAP. */
#define CHECK_ITEMS(b, n, want)                                                          \
    do {                                                                                 \
        for (int k_ = 0; k_ < (n); k_++) {                                               \
            int k = k_;                                                                  \
            CHECK((b)[2 * k] == (want));                                                 \
            CHECK((b)[2 * k + 1] == GAP);                                                \
        }                                                                                \
    } while (0)

/* The peers of a v collective: n of them, peer j being world rank world[j]; this
 * process is peer `mine` for them (its rank in its group). */
struct peers {
    MPI_Comm comm;
    int n, mine, *world;
};

/* Blocks of the v layouts: peer j's block holds j + 1 items (its rank plus one), in
 * reverse order of j with a hole of one item before each. */
static void layout(int n, int *counts, int *displs, int *total) {
    int at = 0;
    for (int j = n - 1; j >= 0; j--) {
        at += 1;
        counts[j] = j + 1;
        displs[j] = at;
        at += j + 1;
    }
    *total = at;
}

/* Allgatherv and Alltoallv over `p`, blocking or not; checks. */
static void v_all(struct peers *p, int nb) {
    int n = p->n, counts[8], displs[8], total, mycounts[8], mydispls[8];
    layout(n, counts, displs, &total);
    /* Allgatherv: this process sends mine + 1 items. */
    int *s = gaps(p->mine + 1), *r = gaps(total);
    for (int k = 0; k <= p->mine; k++) s[2 * k] = val(me, -1, k);
    MPI_Request q;
    if (nb) {
        OK(MPI_Iallgatherv(s, p->mine + 1, sp, r, counts, displs, sp, p->comm, &q));
        OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    } else
        OK(MPI_Allgatherv(s, p->mine + 1, sp, r, counts, displs, sp, p->comm));
    for (int i = 0; i < 2 * total; i++) {
        int item = i / 2, who = -1;
        for (int j = 0; j < n; j++)
            if (item >= displs[j] && item < displs[j] + counts[j]) who = j;
        CHECK(r[i] == (i % 2 == 0 && who >= 0 ? val(p->world[who], -1, item - displs[who]) : GAP));
    }
    free(s);
    free(r);
    /* Alltoallv: to peer j, j + 1 items; from peer j, mine + 1 items. */
    int stotal, rtotal = 0;
    layout(n, counts, displs, &stotal);
    for (int j = 0; j < n; j++) {
        mycounts[j] = p->mine + 1;
        mydispls[j] = rtotal + 1;
        rtotal += p->mine + 2;
    }
    s = gaps(stotal), r = gaps(rtotal);
    for (int j = 0; j < n; j++)
        for (int k = 0; k < counts[j]; k++) s[2 * (displs[j] + k)] = val(me, p->world[j], k);
    if (nb) {
        OK(MPI_Ialltoallv(s, counts, displs, sp, r, mycounts, mydispls, sp, p->comm, &q));
        OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    } else
        OK(MPI_Alltoallv(s, counts, displs, sp, r, mycounts, mydispls, sp, p->comm));
    for (int j = 0; j < n; j++) {
        int *b = r + 2 * mydispls[j];
        CHECK(b[-2] == GAP && b[-1] == GAP);
        CHECK_ITEMS(b, p->mine + 1, val(p->world[j], me, k));
    }
    free(s);
    free(r);
}

/* MPI_Alltoallw over `p`: to peer j, j + 1 items of kind j % 3: ints, doubles, or
 * `sp` (ints spaced by one: the gaps stay 0x5a), at 8-byte aligned byte
 * displacements in reverse order. */
static MPI_Datatype kind_type(int j) { return j % 3 == 0 ? MPI_INT : j % 3 == 1 ? MPI_DOUBLE : sp; }
static void alltoallw(struct peers *p, int how) {
    int n = p->n, sc[8], sd[8], rc[8], rd[8], at = 0, slot = 8 * (p->mine + 2);
    MPI_Datatype st[8], rt[8];
    for (int j = n - 1; j >= 0; j--) {
        sc[j] = j + 1, st[j] = kind_type(j), sd[j] = at;
        at += 8 * (j + 1) + 8;
    }
    char *s = malloc(at), *r = malloc(slot * n);
    memset(s, 0x33, at);
    memset(r, 0x5a, slot * n);
    for (int j = 0; j < n; j++)
        for (int k = 0; k <= j; k++) {
            if (j % 3 == 1) ((double *)(s + sd[j]))[k] = val(me, p->world[j], k) + 0.5;
            else ((int *)(s + sd[j]))[k * (j % 3 == 2 ? 2 : 1)] = val(me, p->world[j], k);
        }
    for (int j = 0; j < n; j++) {
        rc[j] = p->mine + 1, rt[j] = kind_type(p->mine);
        rd[j] = slot * j;
    }
    MPI_Request q;
    if (how == 0) OK(MPI_Alltoallw(s, sc, sd, st, r, rc, rd, rt, p->comm));
    if (how == 1) {
        OK(MPI_Ialltoallw(s, sc, sd, st, r, rc, rd, rt, p->comm, &q));
        OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    }
    if (how == 2) {
        OK(MPI_Alltoallw_init(s, sc, sd, st, r, rc, rd, rt, p->comm, MPI_INFO_NULL, &q));
        OK(MPI_Start(&q));
        OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
        OK(MPI_Request_free(&q));
    }
    int kind = p->mine % 3, size = kind == 1 ? 8 : 4, stride = kind == 0 ? 4 : 8;
    for (int j = 0; j < n; j++) {
        char *b = r + rd[j];
        for (int k = 0; k <= p->mine; k++) {
            if (kind == 1) CHECK(((double *)b)[k] == val(p->world[j], me, k) + 0.5);
            else CHECK(*(int *)(b + stride * k) == val(p->world[j], me, k));
        }
        for (int x = 0; x < slot; x++) {
            int elem = x < stride * (p->mine + 1) && x % stride < size;
            CHECK(elem || (unsigned char)b[x] == 0x5a);
        }
    }
    free(s);
    free(r);
}

/* The intra-communicator non-blocking v collectives all in flight at once. */
static void world_v(void) {
    int counts[8], displs[8], total;
    layout(np, counts, displs, &total);
    int root = np - 1;
    int *gs = gaps(me + 1), *gr = gaps(total), *ss = gaps(total), *sr = gaps(me + 1);
    int *as = gaps(me + 1), *ar = gaps(total);
    for (int k = 0; k <= me; k++) gs[2 * k] = val(me, root, k), as[2 * k] = val(me, -1, k);
    if (me == root)
        for (int j = 0; j < np; j++)
            for (int k = 0; k < counts[j]; k++) ss[2 * (displs[j] + k)] = val(me, j, k);
    MPI_Request q[3];
    OK(MPI_Igatherv(gs, me + 1, sp, gr, counts, displs, sp, root, MPI_COMM_WORLD, &q[0]));
    OK(MPI_Iscatterv(ss, counts, displs, sp, sr, me + 1, sp, root, MPI_COMM_WORLD, &q[1]));
    OK(MPI_Iallgatherv(as, me + 1, sp, ar, counts, displs, sp, MPI_COMM_WORLD, &q[2]));
    OK(MPI_Waitall(3, q, MPI_STATUSES_IGNORE));
    for (int j = 0; j < np; j++) {
        if (me == root) CHECK_ITEMS(gr + 2 * displs[j], counts[j], val(j, root, k));
        CHECK_ITEMS(ar + 2 * displs[j], counts[j], val(j, -1, k));
        CHECK(gr[2 * displs[j] - 2] == GAP && ar[2 * displs[j] - 1] == GAP);
    }
    if (me != root)
        for (int i = 0; i < 2 * total; i++) CHECK(gr[i] == GAP);
    CHECK_ITEMS(sr, me + 1, val(root, me, k));
    CHECK(sr[2 * me + 2] == GAP);
    /* A persistent gatherv to rank 0, twice. */
    MPI_Request p;
    for (int k = 0; k <= me; k++) gs[2 * k] = val(me, 0, k);
    OK(MPI_Gatherv_init(gs, me + 1, sp, gr, counts, displs, sp, 0, MPI_COMM_WORLD,
                        MPI_INFO_NULL, &p));
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 2 * total; i++) gr[i] = GAP;
        OK(MPI_Start(&p));
        OK(MPI_Wait(&p, MPI_STATUS_IGNORE));
        if (me == 0)
            for (int j = 0; j < np; j++) CHECK_ITEMS(gr + 2 * displs[j], counts[j], val(j, 0, k));
    }
    OK(MPI_Request_free(&p));
    int world[8];
    for (int j = 0; j < np; j++) world[j] = j;
    struct peers all = {MPI_COMM_WORLD, np, me, world};
    v_all(&all, 1);
    for (int how = 0; how < 3; how++) alltoallw(&all, how);
    /* MPI_Alltoallw in place: 2 `sp` items with every rank. */
    int *ip = gaps(2 * np), ic[8], idp[8];
    MPI_Datatype it[8];
    for (int j = 0; j < np; j++) {
        ic[j] = 2, idp[j] = 16 * j, it[j] = sp;
        for (int k = 0; k < 2; k++) ip[4 * j + 2 * k] = val(me, j, k);
    }
    OK(MPI_Alltoallw(MPI_IN_PLACE, NULL, NULL, NULL, ip, ic, idp, it, MPI_COMM_WORLD));
    for (int j = 0; j < np; j++) CHECK_ITEMS(ip + 4 * j, 2, val(j, me, k));
    CHECK(ip[4 * np] == GAP);
    free(ip);
    free(gs), free(gr), free(ss), free(sr), free(as), free(ar);
}

/* The rooted calls on the inter-communicator: the high group's rank 0 is the root of
 * gathers and the source of scatters and broadcasts; `nb`: the I forms. */
static void rooted(struct peers *p, int low, int lrank, int nb) {
    int root = low ? 0 : (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL), n = p->n;
    int top = low ? p->world[0] : me; /* the root's world rank (high group's 0) */
    MPI_Request q = MPI_REQUEST_NULL;
    /* Bcast of 4 items. */
    int *b = gaps(4);
    if (root == MPI_ROOT)
        for (int k = 0; k < 4; k++) b[2 * k] = val(me, -1, k);
    if (nb) OK(MPI_Ibcast(b, 4, sp, root, p->comm, &q));
    else OK(MPI_Bcast(b, 4, sp, root, p->comm));
    OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    if (root == MPI_PROC_NULL)
        for (int i = 0; i < 9; i++) CHECK(b[i] == GAP);
    else CHECK_ITEMS(b, 4, val(top, -1, k));
    free(b);
    /* Gather of 3 items from each low rank; Scatter of 3 to each. */
    int *s = gaps(3), *r = gaps(3 * n);
    for (int k = 0; k < 3; k++) s[2 * k] = val(me, top, k);
    if (nb) OK(MPI_Igather(s, 3, sp, r, 3, sp, root, p->comm, &q));
    else OK(MPI_Gather(s, 3, sp, r, 3, sp, root, p->comm));
    OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    for (int j = 0; j < n && root == MPI_ROOT; j++) CHECK_ITEMS(r + 6 * j, 3, val(p->world[j], me, k));
    if (root != MPI_ROOT)
        for (int i = 0; i < 6 * n + 1; i++) CHECK(r[i] == GAP);
    for (int i = 0; i < 6 * n; i++) r[i] = i % 2 ? GAP : val(me, p->world[i / 6], i / 2 % 3);
    for (int i = 0; i < 7; i++) s[i] = GAP;
    if (nb) OK(MPI_Iscatter(r, 3, sp, s, 3, sp, root, p->comm, &q));
    else OK(MPI_Scatter(r, 3, sp, s, 3, sp, root, p->comm));
    OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    if (low) CHECK_ITEMS(s, 3, val(top, me, k));
    else
        for (int i = 0; i < 7; i++) CHECK(s[i] == GAP);
    free(s);
    free(r);
    /* Gatherv and Scatterv: peer j's block of j + 1 items. */
    int counts[8], displs[8], total;
    layout(n, counts, displs, &total);
    s = gaps(lrank + 1), r = gaps(total);
    for (int k = 0; k <= lrank; k++) s[2 * k] = val(me, top, k);
    if (nb) OK(MPI_Igatherv(s, lrank + 1, sp, r, counts, displs, sp, root, p->comm, &q));
    else OK(MPI_Gatherv(s, lrank + 1, sp, r, counts, displs, sp, root, p->comm));
    OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    for (int j = 0; j < n && root == MPI_ROOT; j++) {
        CHECK_ITEMS(r + 2 * displs[j], counts[j], val(p->world[j], me, k));
        CHECK(r[2 * displs[j] - 2] == GAP);
    }
    for (int i = 0; i < 2 * total; i++) r[i] = GAP;
    for (int j = 0; j < n && root == MPI_ROOT; j++)
        for (int k = 0; k < counts[j]; k++) r[2 * (displs[j] + k)] = val(me, p->world[j], k);
    for (int i = 0; i < 2 * lrank + 3; i++) s[i] = GAP;
    if (nb) OK(MPI_Iscatterv(r, counts, displs, sp, s, lrank + 1, sp, root, p->comm, &q));
    else OK(MPI_Scatterv(r, counts, displs, sp, s, lrank + 1, sp, root, p->comm));
    OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    if (low) CHECK_ITEMS(s, lrank + 1, val(top, me, k));
    else
        for (int i = 0; i < 2 * lrank + 3; i++) CHECK(s[i] == GAP);
    free(s);
    free(r);
}

/* Allgather of 2 items and Alltoall of 2 per remote rank on the inter-communicator. */
static void all(struct peers *p, int nb) {
    int n = p->n, *s = gaps(2 * n), *r = gaps(2 * n);
    MPI_Request q = MPI_REQUEST_NULL;
    for (int k = 0; k < 2; k++) s[2 * k] = val(me, -1, k);
    if (nb) OK(MPI_Iallgather(s, 2, sp, r, 2, sp, p->comm, &q));
    else OK(MPI_Allgather(s, 2, sp, r, 2, sp, p->comm));
    OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    for (int j = 0; j < n; j++) CHECK_ITEMS(r + 4 * j, 2, val(p->world[j], -1, k));
    for (int i = 0; i < 4 * n; i++) s[i] = i % 2 ? GAP : val(me, p->world[i / 4], i / 2 % 2);
    for (int i = 0; i < 4 * n; i++) r[i] = GAP;
    if (nb) OK(MPI_Ialltoall(s, 2, sp, r, 2, sp, p->comm, &q));
    else OK(MPI_Alltoall(s, 2, sp, r, 2, sp, p->comm));
    OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    for (int j = 0; j < n; j++) CHECK_ITEMS(r + 4 * j, 2, val(p->world[j], me, k));
    CHECK(r[4 * n] == GAP);
    free(s);
    free(r);
}

static void inter(void) {
    int lows = np / 2, low = me < lows, world[8], lrank;
    MPI_Comm half, ic;
    OK(MPI_Comm_split(MPI_COMM_WORLD, low, me, &half));
    OK(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, low ? lows : 0, 3, &ic));
    OK(MPI_Comm_rank(half, &lrank));
    int n = low ? np - lows : lows;
    for (int j = 0; j < n; j++) world[j] = low ? lows + j : j;
    struct peers p = {ic, n, lrank, world};
    for (int nb = 0; nb < 2; nb++) {
        rooted(&p, low, lrank, nb);
        all(&p, nb);
        v_all(&p, nb);
    }
    for (int how = 0; how < 3; how++) alltoallw(&p, how);
    OK(MPI_Comm_free(&ic));
    OK(MPI_Comm_free(&half));
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    CHECK(np <= 8);
    OK(MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &sp));
    OK(MPI_Type_commit(&sp));
    world_v();
    if (np >= 2) inter();
    OK(MPI_Type_free(&sp));
    printf("rank %d: INTER GAPS OK\n", me);
    MPI_Finalize();
    return 0;
}
