/*
 * Reductions with types with gaps (every element checked, the gaps must stay as they
 * were in receive buffers):
 * - MPI_Allreduce, Reduce (every root), Scan, Exscan, Reduce_scatter_block and
 *   Reduce_scatter of a vector of ints (SUM, MAX), also MPI_IN_PLACE;
 * - MINLOC of MPI_2INT pairs inside a vector, SUM of a resized contiguous of doubles;
 * - a commutative user operation (a sum) and a non-commutative one (2x2 matrices
 *   multiplied in rank order) over a type with gaps: the function gets the program's
 *   datatype and reads the elements where the type puts them;
 * - the non-blocking forms all in flight at once, a persistent MPI_Allreduce_init
 *   started twice, and MPI_Reduce_local with the non-commutative operation;
 * - on an inter-communicator between the low and the high ranks (np >= 2):
 *   MPI_Allreduce and MPI_Reduce of the vector type, MPI_Allreduce and Iallreduce of
 *   the matrices by the non-commutative operation, and MPI_Reduce_scatter_block and
 *   MPI_Reduce_scatter (the other group's reduction, scattered here), of ints and of
 *   the vector type, blocking and not.
 * Each rank prints "rank R: RTYPES OK".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me = -1, np;

#include "check.h"

#define GAP (-7)
/* vec: 3 ints at 0, 2, 4 (extent 5 ints); 2 items per buffer: 10 ints. */
#define VN 10
static MPI_Datatype vec, mat;
static int is_elem(int i) { return (i % 5) % 2 == 0; }
/* The k-th element (in type order) of a vec buffer sits at int index at(k). */
static int at(int k) { return (k / 3) * 5 + (k % 3) * 2; }

static void fill(int *b, int rank) {
    for (int i = 0; i < VN; i++) b[i] = is_elem(i) ? rank * 100 + i : GAP;
}
static void gaps(int *b) {
    for (int i = 0; i < VN; i++) b[i] = GAP;
}
/* Sum over ranks lo..hi-1 of element i. */
static int sum(int i, int lo, int hi) {
    int s = 0;
    for (int r = lo; r < hi; r++) s += r * 100 + i;
    return s;
}
/* Rank `rank`'s input at int i (GAP in the gaps). */
static int orig(int i, int rank) { return is_elem(i) ? rank * 100 + i : GAP; }
static void check_sum(const int *b, int lo, int hi) {
    for (int i = 0; i < VN; i++) CHECK(b[i] == (is_elem(i) ? sum(i, lo, hi) : GAP));
}

static void blocking(void) {
    int s[VN], r[VN];
    fill(s, me);
    gaps(r);
    OK(MPI_Allreduce(s, r, 2, vec, MPI_SUM, MPI_COMM_WORLD));
    check_sum(r, 0, np);
    fill(r, me);
    OK(MPI_Allreduce(MPI_IN_PLACE, r, 2, vec, MPI_SUM, MPI_COMM_WORLD));
    check_sum(r, 0, np);
    for (int root = 0; root < np; root++) {
        gaps(r);
        OK(MPI_Reduce(s, r, 2, vec, MPI_MAX, root, MPI_COMM_WORLD));
        for (int i = 0; i < VN; i++)
            CHECK(r[i] == (me == root && is_elem(i) ? (np - 1) * 100 + i : GAP));
        fill(r, me);
        OK(MPI_Reduce(me == root ? MPI_IN_PLACE : s, r, 2, vec, MPI_SUM, root,
                      MPI_COMM_WORLD));
        for (int i = 0; i < VN; i++)
            CHECK(r[i] == (me == root && is_elem(i) ? sum(i, 0, np) : orig(i, me)));
    }
    gaps(r);
    OK(MPI_Scan(s, r, 2, vec, MPI_SUM, MPI_COMM_WORLD));
    check_sum(r, 0, me + 1);
    gaps(r);
    OK(MPI_Exscan(s, r, 2, vec, MPI_SUM, MPI_COMM_WORLD));
    if (me == 0)
        for (int i = 0; i < VN; i++) CHECK(r[i] == GAP);
    else
        check_sum(r, 0, me);
    fill(r, me);
    OK(MPI_Scan(MPI_IN_PLACE, r, 2, vec, MPI_SUM, MPI_COMM_WORLD));
    check_sum(r, 0, me + 1);
}

/* Reduce-scatters: every rank gives np blocks of 2 vec items; block r to rank r. */
static void scatters(void) {
    int *s = malloc(sizeof(int) * VN * np), *r = malloc(sizeof(int) * VN * np);
    for (int b = 0; b < np; b++) fill(s + b * VN, me + b);
    gaps(r);
    OK(MPI_Reduce_scatter_block(s, r, 2, vec, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < VN; i++)
        CHECK(r[i] == (is_elem(i) ? sum(i, 0, np) + 100 * np * me : GAP));
    /* In place: the whole vector in r, the result in its first block. */
    for (int b = 0; b < np; b++) fill(r + b * VN, me + b);
    OK(MPI_Reduce_scatter_block(MPI_IN_PLACE, r, 2, vec, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < VN; i++) CHECK(r[i] == (is_elem(i) ? sum(i, 0, np) + 100 * np * me : GAP));
    for (int i = VN; i < VN * np; i++) CHECK(is_elem(i % VN) || r[i] == GAP);
    /* Reduce_scatter: rank r gets r % 2 + 1 items (of ints at element positions). */
    int *counts = malloc(sizeof(int) * np), total = 0;
    for (int q = 0; q < np; q++) total += counts[q] = q % 2 + 1;
    int *vs = malloc(sizeof(int) * 5 * total), *vr = malloc(sizeof(int) * 5 * 2);
    for (int i = 0; i < 5 * total; i++) vs[i] = me * 1000 + i;
    for (int i = 0; i < 10; i++) vr[i] = GAP;
    OK(MPI_Reduce_scatter(vs, vr, counts, vec, MPI_MAX, MPI_COMM_WORLD));
    int first = 0;
    for (int q = 0; q < me; q++) first += counts[q];
    for (int i = 0; i < 10; i++)
        CHECK(vr[i] == (i < 5 * counts[me] && is_elem(i) ? (np - 1) * 1000 + first * 5 + i : GAP));
    free(counts);
    free(vs);
    free(vr);
    free(s);
    free(r);
}

/* MINLOC of pairs inside a vector (every other pair); SUM of a resized contiguous of
 * two doubles spaced by three. */
static void pairs_and_doubles(void) {
    struct { int v, i; } ps[4], pr[4];
    for (int k = 0; k < 4; k++) {
        ps[k].v = (me * 3 + k) % 4;
        ps[k].i = me;
        pr[k].v = pr[k].i = GAP;
    }
    MPI_Datatype pv, dd, d2;
    OK(MPI_Type_vector(2, 1, 2, MPI_2INT, &pv));
    OK(MPI_Type_commit(&pv));
    OK(MPI_Allreduce(ps, pr, 1, pv, MPI_MINLOC, MPI_COMM_WORLD));
    for (int k = 0; k < 4; k++) {
        if (k % 2) {
            CHECK(pr[k].v == GAP && pr[k].i == GAP);
            continue;
        }
        int best = 99, who = -1;
        for (int r = 0; r < np; r++)
            if ((r * 3 + k) % 4 < best) best = (r * 3 + k) % 4, who = r;
        CHECK(pr[k].v == best && pr[k].i == who);
    }
    OK(MPI_Type_contiguous(2, MPI_DOUBLE, &d2));
    OK(MPI_Type_create_resized(d2, 0, 3 * sizeof(double), &dd));
    OK(MPI_Type_commit(&dd));
    double ds[9], dr[9];
    for (int i = 0; i < 9; i++) ds[i] = me + i * 0.5, dr[i] = GAP;
    OK(MPI_Allreduce(ds, dr, 3, dd, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < 9; i++)
        CHECK(dr[i] == (i % 3 == 2 ? GAP : np * (np - 1) / 2 + np * i * 0.5));
    OK(MPI_Type_free(&pv));
    OK(MPI_Type_free(&dd));
    OK(MPI_Type_free(&d2));
}

/* A user sum over vec: reads and writes only where the type puts elements. */
static void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt) {
    CHECK(*dt == vec);
    int *a = in, *b = inout;
    for (int k = 0; k < 3 * *len; k++) b[at(k)] += a[at(k)];
}

/* mat: a 2x2 int matrix as 4 ints at 0, 2, 4, 6 (extent 7 ints). inout = in x inout. */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt) {
    CHECK(*dt == mat);
    for (int k = 0; k < *len; k++) {
        int *a = (int *)in + 7 * k, *b = (int *)inout + 7 * k;
        int c00 = a[0] * b[0] + a[2] * b[4], c01 = a[0] * b[2] + a[2] * b[6];
        int c10 = a[4] * b[0] + a[6] * b[4], c11 = a[4] * b[2] + a[6] * b[6];
        b[0] = c00, b[2] = c01, b[4] = c10, b[6] = c11;
    }
}

/* Rank r's matrix (item k): [[1, r + k + 1], [(r + k) % 2, 1]]. */
static void mat_of(int *m, int r, int k) {
    m[0] = 1, m[2] = r + k + 1, m[4] = (r + k) % 2, m[6] = 1;
}
/* The product of ranks lo..hi-1's matrices (item k) in rank order into p. */
static void product(int *p, int lo, int hi, int k) {
    int acc[7] = {1, 0, 0, 0, 0, 0, 1}, m[7];
    for (int r = lo; r < hi; r++) {
        mat_of(m, r, k);
        int t = 1;
        matmul(acc, m, &t, &mat);
        memcpy(acc, m, sizeof acc);
    }
    memcpy(p, acc, sizeof acc);
}
static void check_mat(const int *got, int lo, int hi) {
    for (int k = 0; k < 2; k++) {
        int want[7];
        product(want, lo, hi, k);
        for (int i = 0; i < 7; i++) CHECK(got[7 * k + i] == (i % 2 == 0 ? want[i] : GAP));
    }
}

static void user_ops(void) {
    MPI_Op add, mul;
    OK(MPI_Op_create(user_sum, 1, &add));
    OK(MPI_Op_create(matmul, 0, &mul));
    int s[VN], r[VN];
    fill(s, me);
    gaps(r);
    OK(MPI_Allreduce(s, r, 2, vec, add, MPI_COMM_WORLD));
    check_sum(r, 0, np);
    int ms[14], mr[14];
    for (int i = 0; i < 14; i++) ms[i] = mr[i] = GAP;
    mat_of(ms, me, 0);
    mat_of(ms + 7, me, 1);
    OK(MPI_Allreduce(ms, mr, 2, mat, mul, MPI_COMM_WORLD));
    check_mat(mr, 0, np);
    for (int root = 0; root < np; root++) {
        for (int i = 0; i < 14; i++) mr[i] = GAP;
        OK(MPI_Reduce(ms, mr, 2, mat, mul, root, MPI_COMM_WORLD));
        if (me == root) check_mat(mr, 0, np);
        else
            for (int i = 0; i < 14; i++) CHECK(mr[i] == GAP);
    }
    for (int i = 0; i < 14; i++) mr[i] = GAP;
    OK(MPI_Scan(ms, mr, 2, mat, mul, MPI_COMM_WORLD));
    check_mat(mr, 0, me + 1);
    memcpy(mr, ms, sizeof ms);
    OK(MPI_Exscan(MPI_IN_PLACE, mr, 2, mat, mul, MPI_COMM_WORLD));
    if (me > 0) check_mat(mr, 0, me);
    /* Non-blocking, all in flight at once; and a persistent allreduce twice. */
    int r1[VN], r2[VN], r3[VN], m1[14], m2[14], m3[14];
    gaps(r1), gaps(r2), gaps(r3);
    for (int i = 0; i < 14; i++) m1[i] = m2[i] = m3[i] = GAP;
    MPI_Request q[7];
    OK(MPI_Iallreduce(s, r1, 2, vec, add, MPI_COMM_WORLD, &q[0]));
    OK(MPI_Ireduce(s, r2, 2, vec, MPI_SUM, np - 1, MPI_COMM_WORLD, &q[1]));
    OK(MPI_Iscan(s, r3, 2, vec, MPI_SUM, MPI_COMM_WORLD, &q[2]));
    OK(MPI_Iallreduce(ms, m1, 2, mat, mul, MPI_COMM_WORLD, &q[3]));
    OK(MPI_Iexscan(ms, m2, 2, mat, mul, MPI_COMM_WORLD, &q[4]));
    OK(MPI_Ireduce(ms, m3, 2, mat, mul, 0, MPI_COMM_WORLD, &q[5]));
    int *bs = malloc(sizeof(int) * VN * np), br[VN];
    for (int b = 0; b < np; b++) fill(bs + b * VN, me + b);
    gaps(br);
    OK(MPI_Ireduce_scatter_block(bs, br, 2, vec, add, MPI_COMM_WORLD, &q[6]));
    OK(MPI_Waitall(7, q, MPI_STATUSES_IGNORE));
    check_sum(r1, 0, np);
    if (me == np - 1) check_sum(r2, 0, np);
    else
        for (int i = 0; i < VN; i++) CHECK(r2[i] == GAP);
    check_sum(r3, 0, me + 1);
    check_mat(m1, 0, np);
    if (me > 0) check_mat(m2, 0, me);
    else
        for (int i = 0; i < 14; i++) CHECK(m2[i] == GAP);
    if (me == 0) check_mat(m3, 0, np);
    for (int i = 0; i < VN; i++)
        CHECK(br[i] == (is_elem(i) ? sum(i, 0, np) + 100 * np * me : GAP));
    MPI_Request p;
    OK(MPI_Allreduce_init(ms, m1, 2, mat, mul, MPI_COMM_WORLD, MPI_INFO_NULL, &p));
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 14; i++) m1[i] = GAP;
        OK(MPI_Start(&p));
        OK(MPI_Wait(&p, MPI_STATUS_IGNORE));
        check_mat(m1, 0, np);
    }
    OK(MPI_Request_free(&p));
    /* MPI_Reduce_local: inout = in x inout (ranks 0 and 1's matrices), in untouched. */
    int la[14], lb[14];
    for (int i = 0; i < 14; i++) la[i] = lb[i] = GAP;
    mat_of(la, 0, 0), mat_of(la + 7, 0, 1), mat_of(lb, 1, 0), mat_of(lb + 7, 1, 1);
    OK(MPI_Reduce_local(la, lb, 2, mat, mul));
    check_mat(lb, 0, 2);
    check_mat(la, 0, 1);
    free(bs);
    OK(MPI_Op_free(&add));
    OK(MPI_Op_free(&mul));
}

/* The low ranks (0..np/2-1) and the high ones: each group gets the other's
 * reductions. */
static void inter(void) {
    if (np < 2) return;
    int lows = np / 2, low = me < lows, lo = low ? lows : 0, hi = low ? np : lows;
    MPI_Comm half, ic;
    OK(MPI_Comm_split(MPI_COMM_WORLD, low, me, &half));
    OK(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, low ? lows : 0, 7, &ic));
    int lsize, lrank;
    OK(MPI_Comm_size(half, &lsize));
    OK(MPI_Comm_rank(half, &lrank));
    int s[VN], r[VN];
    fill(s, me);
    gaps(r);
    OK(MPI_Allreduce(s, r, 2, vec, MPI_SUM, ic));
    check_sum(r, lo, hi);
    /* The non-commutative user operation: the other group's matrices in rank order,
     * blocking and not. */
    MPI_Op mul;
    OK(MPI_Op_create(matmul, 0, &mul));
    int ms[14], mr[14];
    for (int i = 0; i < 14; i++) ms[i] = GAP;
    mat_of(ms, me, 0);
    mat_of(ms + 7, me, 1);
    for (int nb = 0; nb < 2; nb++) {
        MPI_Request mq = MPI_REQUEST_NULL;
        for (int i = 0; i < 14; i++) mr[i] = GAP;
        if (nb) OK(MPI_Iallreduce(ms, mr, 2, mat, mul, ic, &mq));
        else OK(MPI_Allreduce(ms, mr, 2, mat, mul, ic));
        OK(MPI_Wait(&mq, MPI_STATUS_IGNORE));
        check_mat(mr, lo, hi);
    }
    OK(MPI_Op_free(&mul));
    /* Reduce to the high group's rank 0. */
    gaps(r);
    int root = low ? 0 : (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL);
    OK(MPI_Reduce(s, r, 2, vec, MPI_SUM, root, ic));
    if (root == MPI_ROOT) check_sum(r, 0, lows);
    else
        for (int i = 0; i < VN; i++) CHECK(r[i] == GAP);
    /* Reduce_scatter_block of 12 ints in all (MPI: the count n * recvcount is the
     * same in both groups, n the local group's size); int j from rank q is q * 10 + j;
     * here: block lrank of the other group's sums. */
    int rc = 12 / lsize, is[12], ir[13];
    for (int j = 0; j < 12; j++) is[j] = me * 10 + j;
    MPI_Request q;
    for (int nb = 0; nb < 2; nb++) {
        for (int j = 0; j < 13; j++) ir[j] = GAP;
        if (nb) {
            OK(MPI_Ireduce_scatter_block(is, ir, rc, MPI_INT, MPI_SUM, ic, &q));
            OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
        } else
            OK(MPI_Reduce_scatter_block(is, ir, rc, MPI_INT, MPI_SUM, ic));
        for (int j = 0; j < 13; j++) {
            int want = 0;
            for (int o = lo; o < hi; o++) want += o * 10 + lrank * rc + j;
            CHECK(ir[j] == (j < rc ? want : GAP));
        }
    }
    /* Reduce_scatter of 4 vec items in all: local rank l gets 1, the last 4 - (L - 1). */
    int *counts = malloc(sizeof(int) * lsize), first = 0, vs[20], vr[20];
    for (int l = 0; l < lsize; l++) {
        counts[l] = l == lsize - 1 ? 4 - (lsize - 1) : 1;
        if (l < lrank) first += counts[l];
    }
    for (int i = 0; i < 20; i++) vs[i] = me * 1000 + i, vr[i] = GAP;
    for (int nb = 0; nb < 2; nb++) {
        for (int i = 0; i < 20; i++) vr[i] = GAP;
        if (nb) {
            OK(MPI_Ireduce_scatter(vs, vr, counts, vec, MPI_MAX, ic, &q));
            OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
        } else
            OK(MPI_Reduce_scatter(vs, vr, counts, vec, MPI_MAX, ic));
        for (int i = 0; i < 20; i++)
            CHECK(vr[i] == (i < 5 * counts[lrank] && is_elem(i % 5)
                                ? (hi - 1) * 1000 + first * 5 + i
                                : GAP));
    }
    free(counts);
    OK(MPI_Comm_free(&ic));
    OK(MPI_Comm_free(&half));
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    OK(MPI_Type_vector(3, 1, 2, MPI_INT, &vec));
    OK(MPI_Type_commit(&vec));
    OK(MPI_Type_vector(4, 1, 2, MPI_INT, &mat));
    OK(MPI_Type_commit(&mat));
    blocking();
    scatters();
    pairs_and_doubles();
    user_ops();
    inter();
    OK(MPI_Type_free(&vec));
    OK(MPI_Type_free(&mat));
    printf("rank %d: RTYPES OK\n", me);
    MPI_Finalize();
    return 0;
}
