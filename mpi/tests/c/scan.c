/*
 * Prefix reductions and reduce-scatter at any size: MPI_Scan and MPI_Exscan (int sums
 * and double maxima, a long vector, MPI_IN_PLACE), MPI_Reduce_scatter_block and
 * MPI_Reduce_scatter (blocks of different lengths, an empty one, MPI_IN_PLACE), and
 * MPI_Sendrecv_replace around a ring and with MPI_PROC_NULL. Every element is checked
 * against the value computed here from the ranks. Each rank prints "rank R: SCAN OK".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int me = -1;

#include "check.h"

/* Rank r's input element i. */
static int in_int(int r, int i) { return (r + 1) * 1000 + i; }
static double in_dbl(int r, int i) { return (double)((r * 7 + i * 3) % 11) + 0.5 * r; }

static void scans(int n) {
    enum { LEN = 3000 };
    int *in = malloc(sizeof(int) * LEN), *out = malloc(sizeof(int) * LEN);
    for (int i = 0; i < LEN; i++) in[i] = in_int(me, i);
    OK(MPI_Scan(in, out, LEN, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < LEN; i++) {
        int want = 0;
        for (int r = 0; r <= me; r++) want += in_int(r, i);
        CHECK(out[i] == want);
    }
    for (int i = 0; i < LEN; i++) out[i] = -7;
    OK(MPI_Exscan(in, out, LEN, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < LEN; i++) {
        if (me == 0) {
            CHECK(out[i] == -7); /* not written at rank 0 */
            continue;
        }
        int want = 0;
        for (int r = 0; r < me; r++) want += in_int(r, i);
        CHECK(out[i] == want);
    }
    /* In place. */
    for (int i = 0; i < LEN; i++) out[i] = in_int(me, i);
    OK(MPI_Scan(MPI_IN_PLACE, out, LEN, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < LEN; i++) {
        int want = 0;
        for (int r = 0; r <= me; r++) want += in_int(r, i);
        CHECK(out[i] == want);
    }
    for (int i = 0; i < LEN; i++) out[i] = in_int(me, i);
    OK(MPI_Exscan(MPI_IN_PLACE, out, LEN, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < LEN && me > 0; i++) {
        int want = 0;
        for (int r = 0; r < me; r++) want += in_int(r, i);
        CHECK(out[i] == want);
    }
    /* Maxima of doubles. */
    double d[5], dm[5];
    for (int i = 0; i < 5; i++) d[i] = in_dbl(me, i);
    OK(MPI_Scan(d, dm, 5, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    for (int i = 0; i < 5; i++) {
        double want = in_dbl(0, i);
        for (int r = 1; r <= me; r++) want = in_dbl(r, i) > want ? in_dbl(r, i) : want;
        CHECK(dm[i] == want);
    }
    /* A bad operation for the type is refused at every rank. */
    CHECK(MPI_Scan(d, dm, 5, MPI_DOUBLE, MPI_BXOR, MPI_COMM_WORLD) != MPI_SUCCESS);
    (void)n;
    free(in);
    free(out);
}

static void reduce_scatters(int n) {
    /* Block sizes: rank r gets 2r + 1 items, rank 1 none. */
    int *counts = malloc(sizeof(int) * n), total = 0, first = 0;
    for (int r = 0; r < n; r++) {
        counts[r] = r == 1 ? 0 : 2 * r + 1;
        if (r < me) first += counts[r];
        total += counts[r];
    }
    int *in = malloc(sizeof(int) * total), *out = malloc(sizeof(int) * (total + 1));
    for (int i = 0; i < total; i++) in[i] = in_int(me, i);
    out[counts[me]] = -9; /* past the block: not written */
    OK(MPI_Reduce_scatter(in, out, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < counts[me]; i++) {
        int want = 0;
        for (int r = 0; r < n; r++) want += in_int(r, first + i);
        CHECK(out[i] == want);
    }
    CHECK(out[counts[me]] == -9);
    /* In place: the whole vector in recvbuf, the block at its start. */
    for (int i = 0; i < total; i++) out[i] = in_int(me, i);
    OK(MPI_Reduce_scatter(MPI_IN_PLACE, out, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < counts[me]; i++) {
        int want = 0;
        for (int r = 0; r < n; r++) want += in_int(r, first + i);
        CHECK(out[i] == want);
    }
    /* Blocks of 4. */
    int blk = 4, *vin = malloc(sizeof(int) * blk * n), vout[4];
    for (int i = 0; i < blk * n; i++) vin[i] = in_int(me, i);
    OK(MPI_Reduce_scatter_block(vin, vout, blk, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    for (int i = 0; i < blk; i++) CHECK(vout[i] == in_int(n - 1, me * blk + i));
    OK(MPI_Reduce_scatter_block(MPI_IN_PLACE, vin, blk, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < blk; i++) {
        int want = 0;
        for (int r = 0; r < n; r++) want += in_int(r, me * blk + i);
        CHECK(vin[i] == want);
    }
    free(counts);
    free(in);
    free(out);
    free(vin);
}

static void replace(int n) {
    int buf[6];
    for (int i = 0; i < 6; i++) buf[i] = in_int(me, i);
    MPI_Status st;
    int right = (me + 1) % n, left = (me + n - 1) % n;
    OK(MPI_Sendrecv_replace(buf, 6, MPI_INT, right, 5, left, 5, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 5);
    for (int i = 0; i < 6; i++) CHECK(buf[i] == in_int(left, i));
    /* Only receiving (the first rank sends to nobody), only sending (the last receives
     * from nobody). */
    int to = me == 0 ? MPI_PROC_NULL : me - 1, from = me == n - 1 ? MPI_PROC_NULL : me + 1;
    for (int i = 0; i < 6; i++) buf[i] = in_int(me, i);
    OK(MPI_Sendrecv_replace(buf, 6, MPI_INT, to, 6, from, 6, MPI_COMM_WORLD, &st));
    for (int i = 0; i < 6; i++) CHECK(buf[i] == (from == MPI_PROC_NULL ? in_int(me, i) : in_int(from, i)));
    CHECK(st.MPI_SOURCE == from);
}

int main(int argc, char **argv) {
    int n;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &n));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    scans(n);
    reduce_scatters(n);
    replace(n);
    /* On a dup too (its own tag sequence). */
    MPI_Comm d;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    int one = 1, sum;
    OK(MPI_Scan(&one, &sum, 1, MPI_INT, MPI_SUM, d));
    CHECK(sum == me + 1);
    OK(MPI_Comm_free(&d));
    printf("rank %d: SCAN OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
