/*
 * User reduction operations (MPI_Op_create, MPI_Op_free, MPI_Op_commutative) through
 * every reduction: MPI_Reduce (every root), MPI_Allreduce, MPI_Scan, MPI_Exscan,
 * MPI_Reduce_scatter_block, MPI_Reduce_scatter, with and without MPI_IN_PLACE, and
 * MPI_Reduce and MPI_Allreduce on an inter-communicator.
 *
 * Two operations: 2x2 matrix multiplication over 32-bit unsigned integers (wrapping, so
 * associative) on a contiguous type of 4 MPI_UNSIGNED, declared non-commutative: the
 * result must be the product in rank order, M(0) M(1) ... M(n-1), which is computed here
 * and checked element by element (any other order gives other matrices); and
 * multiplication of Gaussian integers held in MPI_C_DOUBLE_COMPLEX, declared
 * commutative (small integer parts: exact in any order). The functions check the
 * datatype handle and count they are given. Then: MPI_Op_commutative, MPI_Op_free
 * (MPI_OP_NULL after it; a freed handle and a predefined one are MPI_ERR_OP), and an
 * operation whose function calls MPI (MPI_Comm_rank works, MPI_Finalize is refused):
 * no deadlock, whatever the thread level. The argument "multiple" asks for
 * MPI_THREAD_MULTIPLE. Each rank prints "rank R: USER OP OK".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me = -1;

#include "check.h"

#include "mat_op.h"

typedef struct {
    double re, im;
} gauss;

static gauss G(int r, int i) {
    gauss g = {(double)((r + i) % 3) + 1.0, (double)((r * 2 + i) % 3) - 1.0};
    return g;
}

static void gauss_mul(void *in, void *inout, int *len, MPI_Datatype *dt) {
    CHECK(*dt == MPI_C_DOUBLE_COMPLEX);
    gauss *x = in, *y = inout;
    for (int i = 0; i < *len; i++) {
        gauss z = {x[i].re * y[i].re - x[i].im * y[i].im, x[i].re * y[i].im + x[i].im * y[i].re};
        y[i] = z;
    }
}

static gauss gprod(int lo, int hi, int i) {
    gauss z = {1.0, 0.0};
    for (int r = lo; r < hi; r++) {
        gauss x = G(r, i);
        gauss t = {z.re * x.re - z.im * x.im, z.re * x.im + z.im * x.re};
        z = t;
    }
    return z;
}

/* Every intra-communicator reduction with the matrix operation, `count` matrices. */
static void matrices(MPI_Op op, int n, int count, int salt) {
    mat *in = mats(count, salt), *out = blank(count);
    for (int root = 0; root < n; root++) {
        OK(MPI_Reduce(in, out, count, mat_type, op, root, MPI_COMM_WORLD));
        for (int i = 0; i < count && me == root; i++) CHECK(same(out[i], prod(0, n, i, salt)));
    }
    /* In place at the root. */
    int root = n - 1;
    if (me == root) memcpy(out, in, sizeof(mat) * count);
    OK(MPI_Reduce(me == root ? MPI_IN_PLACE : in, out, count, mat_type, op, root,
                  MPI_COMM_WORLD));
    for (int i = 0; i < count && me == root; i++) CHECK(same(out[i], prod(0, n, i, salt)));

    for (int i = 0; i < count; i++) out[i] = (mat){7, 7, 7, 7};
    OK(MPI_Allreduce(in, out, count, mat_type, op, MPI_COMM_WORLD));
    for (int i = 0; i < count; i++) CHECK(same(out[i], prod(0, n, i, salt)));
    memcpy(out, in, sizeof(mat) * count);
    OK(MPI_Allreduce(MPI_IN_PLACE, out, count, mat_type, op, MPI_COMM_WORLD));
    for (int i = 0; i < count; i++) CHECK(same(out[i], prod(0, n, i, salt)));

    OK(MPI_Scan(in, out, count, mat_type, op, MPI_COMM_WORLD));
    for (int i = 0; i < count; i++) CHECK(same(out[i], prod(0, me + 1, i, salt)));
    for (int i = 0; i < count; i++) out[i] = (mat){7, 7, 7, 7};
    OK(MPI_Exscan(in, out, count, mat_type, op, MPI_COMM_WORLD));
    for (int i = 0; i < count; i++) {
        if (me == 0)
            CHECK(same(out[i], (mat){7, 7, 7, 7})); /* not written at rank 0 */
        else
            CHECK(same(out[i], prod(0, me, i, salt)));
    }
    memcpy(out, in, sizeof(mat) * count);
    OK(MPI_Scan(MPI_IN_PLACE, out, count, mat_type, op, MPI_COMM_WORLD));
    for (int i = 0; i < count; i++) CHECK(same(out[i], prod(0, me + 1, i, salt)));
    free(in);
    free(out);

    /* Reduce-scatter: block r of `count` matrices to rank r. */
    in = mats(count * n, salt + 1);
    out = blank(count);
    OK(MPI_Reduce_scatter_block(in, out, count, mat_type, op, MPI_COMM_WORLD));
    for (int i = 0; i < count; i++) CHECK(same(out[i], prod(0, n, me * count + i, salt + 1)));
    /* Blocks of different lengths: rank r gets r + 1 (rank 1 none). */
    int *counts = malloc(sizeof(int) * n), total = 0, first = 0;
    for (int r = 0; r < n; r++) {
        counts[r] = r == 1 ? 0 : r + 1;
        if (r < me) first += counts[r];
        total += counts[r];
    }
    free(in);
    free(out);
    in = mats(total, salt + 2);
    out = blank(total);
    OK(MPI_Reduce_scatter(in, out, counts, mat_type, op, MPI_COMM_WORLD));
    for (int i = 0; i < counts[me]; i++) CHECK(same(out[i], prod(0, n, first + i, salt + 2)));
    CHECK(counts[me] > 0 || same(out[0], (mat){7, 7, 7, 7}));
    free(counts);
    free(in);
    free(out);
}

/* The commutative operation through the same calls (one root, fewer variants). */
static void gaussians(MPI_Op op, int n, int count) {
    gauss *in = malloc(sizeof(gauss) * count), *out = malloc(sizeof(gauss) * count * n);
    for (int i = 0; i < count; i++) in[i] = G(me, i);
    for (int root = 0; root < n; root += n > 2 ? n - 1 : 1) {
        OK(MPI_Reduce(in, out, count, MPI_C_DOUBLE_COMPLEX, op, root, MPI_COMM_WORLD));
        for (int i = 0; i < count && me == root; i++) {
            gauss w = gprod(0, n, i);
            CHECK(out[i].re == w.re && out[i].im == w.im);
        }
    }
    OK(MPI_Allreduce(in, out, count, MPI_C_DOUBLE_COMPLEX, op, MPI_COMM_WORLD));
    for (int i = 0; i < count; i++) {
        gauss w = gprod(0, n, i);
        CHECK(out[i].re == w.re && out[i].im == w.im);
    }
    OK(MPI_Scan(in, out, count, MPI_C_DOUBLE_COMPLEX, op, MPI_COMM_WORLD));
    for (int i = 0; i < count; i++) {
        gauss w = gprod(0, me + 1, i);
        CHECK(out[i].re == w.re && out[i].im == w.im);
    }
    OK(MPI_Exscan(in, out, count, MPI_C_DOUBLE_COMPLEX, op, MPI_COMM_WORLD));
    for (int i = 0; i < count && me > 0; i++) {
        gauss w = gprod(0, me, i);
        CHECK(out[i].re == w.re && out[i].im == w.im);
    }
    free(in);
    in = malloc(sizeof(gauss) * count * n);
    for (int i = 0; i < count * n; i++) in[i] = G(me, i);
    OK(MPI_Reduce_scatter_block(in, out, count, MPI_C_DOUBLE_COMPLEX, op, MPI_COMM_WORLD));
    for (int i = 0; i < count; i++) {
        gauss w = gprod(0, n, me * count + i);
        CHECK(out[i].re == w.re && out[i].im == w.im);
    }
    free(in);
    free(out);
}

/* On an inter-communicator: the low half and the high half of the world (n >= 2).
 * Each side's result is the product of the other side's matrices in its rank order. */
static void inter(MPI_Op op, int n, int count) {
    int half = n / 2, side = me < half ? 0 : 1, lrank = side ? me - half : me;
    int lsize = side ? n - half : half, rsize = n - lsize, roff = side ? 0 : half;
    MPI_Comm local, ic;
    OK(MPI_Comm_split(MPI_COMM_WORLD, side, me, &local));
    OK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, side ? 0 : half, 77, &ic));
    mat *in = mats(count, 5), *out = blank(count);
    OK(MPI_Allreduce(in, out, count, mat_type, op, ic));
    for (int i = 0; i < count; i++) CHECK(same(out[i], prod(roff, roff + rsize, i, 5)));
    free(out);
    /* Rooted at the last rank of either side. */
    for (int root_side = 0; root_side < 2; root_side++) {
        int root = (root_side ? n - half : half) - 1, arg;
        if (side == root_side)
            arg = lrank == root ? MPI_ROOT : MPI_PROC_NULL;
        else
            arg = root;
        out = blank(count);
        OK(MPI_Reduce(in, out, count, mat_type, op, arg, ic));
        for (int i = 0; i < count && arg == MPI_ROOT; i++)
            CHECK(same(out[i], prod(roff, roff + rsize, i, 5)));
        free(out);
    }
    (void)lsize;
    free(in);
    OK(MPI_Comm_free(&ic));
    OK(MPI_Comm_free(&local));
}

static int inner_rank = -1, inner_finalize = -1;

/* A commutative sum whose function calls MPI. */
static void calls_mpi(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    int *x = in, *y = inout;
    for (int i = 0; i < *len; i++) y[i] += x[i];
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &inner_rank));
    inner_finalize = MPI_Finalize();
}

int main(int argc, char **argv) {
    int n;
    mat_op_init(&argc, &argv, &n);

    MPI_Op matop, gaussop;
    int flag = -1;
    OK(MPI_Op_create(mat_mul, 0, &matop));
    OK(MPI_Op_create(gauss_mul, 1, &gaussop));
    CHECK(matop != gaussop && matop != MPI_SUM && matop != MPI_OP_NULL);
    OK(MPI_Op_commutative(matop, &flag));
    CHECK(flag == 0);
    OK(MPI_Op_commutative(gaussop, &flag));
    CHECK(flag == 1);
    OK(MPI_Op_commutative(MPI_MAX, &flag));
    CHECK(flag == 1);

    /* One matrix, a few, and more than the stack scratch holds. */
    int counts[] = {1, 3, 100};
    for (int k = 0; k < 3; k++) matrices(matop, n, counts[k], k * 10);
    CHECK(n == 1 || mat_calls > 0);
    gaussians(gaussop, n, 5);
    /* Zero items: nothing to reduce, no call of the function. */
    long before = mat_calls;
    OK(MPI_Allreduce(NULL, NULL, 0, mat_type, matop, MPI_COMM_WORLD));
    CHECK(mat_calls == before);
    if (n >= 2) inter(matop, n, 3);

    /* A function that calls MPI. */
    MPI_Op mpiop;
    OK(MPI_Op_create(calls_mpi, 1, &mpiop));
    int one[2] = {me, 1}, sum[2];
    OK(MPI_Allreduce(one, sum, 2, MPI_INT, mpiop, MPI_COMM_WORLD));
    CHECK(sum[0] == n * (n - 1) / 2 && sum[1] == n);
    /* Not every rank combines values (rank 0 of 3 hands its value on), but some do. */
    int called = inner_rank != -1, callers = 0;
    if (called) {
        CHECK(inner_rank == me);
        CHECK(err_class(inner_finalize) == MPI_ERR_OTHER);
    }
    OK(MPI_Allreduce(&called, &callers, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(n == 1 || callers > 0);
    OK(MPI_Op_free(&mpiop));

    /* Freeing. */
    MPI_Op saved = matop;
    OK(MPI_Op_free(&matop));
    CHECK(matop == MPI_OP_NULL);
    mat one_mat = M(me, 0, 0), res;
    CHECK(err_class(MPI_Allreduce(&one_mat, &res, 1, mat_type, saved, MPI_COMM_WORLD)) ==
          MPI_ERR_OP);
    CHECK(err_class(MPI_Reduce(&one_mat, &res, 1, mat_type, saved, 0, MPI_COMM_WORLD)) ==
          MPI_ERR_OP);
    CHECK(err_class(MPI_Scan(&one_mat, &res, 1, mat_type, saved, MPI_COMM_WORLD)) ==
          MPI_ERR_OP);
    CHECK(err_class(MPI_Op_commutative(saved, &flag)) == MPI_ERR_OP);
    CHECK(err_class(MPI_Op_free(&saved)) == MPI_ERR_OP);
    MPI_Op sum_op = MPI_SUM;
    CHECK(err_class(MPI_Op_free(&sum_op)) == MPI_ERR_OP);
    CHECK(sum_op == MPI_SUM);
    MPI_Op null_op = MPI_OP_NULL;
    CHECK(err_class(MPI_Op_free(&null_op)) == MPI_ERR_OP);
    /* MPI defines no maximum of complex numbers; the user operation was one. */
    OK(MPI_Op_free(&gaussop));
    gauss g = G(me, 0), gr;
    CHECK(err_class(MPI_Allreduce(&g, &gr, 1, MPI_C_DOUBLE_COMPLEX, MPI_MAX,
                                  MPI_COMM_WORLD)) == MPI_ERR_OP);
    /* Still in step after the errors. */
    int x = 1, y = 0;
    OK(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(y == n);

    OK(MPI_Type_free(&mat_type));
    printf("rank %d: USER OP OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
