/*
 * User reduction operations in the non-blocking reductions: MPI_Ireduce (every root),
 * MPI_Iallreduce (also in place), MPI_Iscan, MPI_Iexscan, MPI_Ireduce_scatter_block and
 * MPI_Ireduce_scatter with the non-commutative matrix product of mat_op.h, declared
 * non-commutative: each result must be the product in rank order, checked element by
 * element. Every call of a round is in flight at once; a round completes them with
 * MPI_Waitall, the next with MPI_Test loops in reverse order, the next with
 * MPI_Waitany; and MPI_Iallreduce on an inter-communicator. Then an operation whose
 * function calls MPI (MPI_Type_size on the datatype it is given and MPI_Comm_rank
 * work, MPI_Finalize is refused): its requests complete, with no deadlock on the
 * library's lock, whatever the thread level. The argument "multiple" asks for
 * MPI_THREAD_MULTIPLE. Each rank prints "rank R: USER OP NBC OK".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me = -1;

#include "check.h"
#include "mat_op.h"

enum { WAITALL, TEST_REVERSE, WAITANY };

static void complete(MPI_Request *reqs, int nreq, int how) {
    if (how == WAITALL) {
        OK(MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE));
    } else if (how == TEST_REVERSE) {
        for (int i = nreq - 1; i >= 0; i--) {
            int flag = 0;
            while (!flag) OK(MPI_Test(&reqs[i], &flag, MPI_STATUS_IGNORE));
            CHECK(reqs[i] == MPI_REQUEST_NULL);
        }
    } else {
        for (int k = 0; k < nreq; k++) {
            int idx = -1;
            OK(MPI_Waitany(nreq, reqs, &idx, MPI_STATUS_IGNORE));
            CHECK(idx >= 0 && idx < nreq && reqs[idx] == MPI_REQUEST_NULL);
        }
    }
}

/* One round: every non-blocking reduction of `count` matrices in flight at once. */
static void round_of(MPI_Op op, int n, int count, int salt, int how) {
    int nreq = n + 6, r = 0;
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * nreq);
    mat *in = mats(count, salt);
    mat **rooted = malloc(sizeof(mat *) * n);
    for (int root = 0; root < n; root++) {
        rooted[root] = blank(count);
        OK(MPI_Ireduce(in, rooted[root], count, mat_type, op, root, MPI_COMM_WORLD,
                       &reqs[r++]));
    }
    mat *all = blank(count), *inplace = mats(count, salt), *scan = blank(count),
        *exscan = blank(count);
    OK(MPI_Iallreduce(in, all, count, mat_type, op, MPI_COMM_WORLD, &reqs[r++]));
    OK(MPI_Iallreduce(MPI_IN_PLACE, inplace, count, mat_type, op, MPI_COMM_WORLD,
                      &reqs[r++]));
    OK(MPI_Iscan(in, scan, count, mat_type, op, MPI_COMM_WORLD, &reqs[r++]));
    OK(MPI_Iexscan(in, exscan, count, mat_type, op, MPI_COMM_WORLD, &reqs[r++]));
    /* Reduce-scatter: block r of `count` matrices to rank r; then blocks of
     * different lengths, rank r getting r + 1 (rank 1 none). */
    mat *rs_in = mats(count * n, salt + 1), *rs_out = blank(count);
    OK(MPI_Ireduce_scatter_block(rs_in, rs_out, count, mat_type, op, MPI_COMM_WORLD,
                                 &reqs[r++]));
    int *counts = malloc(sizeof(int) * n), total = 0, first = 0;
    for (int q = 0; q < n; q++) {
        counts[q] = q == 1 ? 0 : q + 1;
        if (q < me) first += counts[q];
        total += counts[q];
    }
    mat *rv_in = mats(total, salt + 2), *rv_out = blank(total);
    OK(MPI_Ireduce_scatter(rv_in, rv_out, counts, mat_type, op, MPI_COMM_WORLD, &reqs[r++]));
    CHECK(r == nreq);

    complete(reqs, nreq, how);

    for (int i = 0; i < count; i++) {
        mat whole = prod(0, n, i, salt);
        CHECK(same(rooted[me][i], whole));
        for (int root = 0; root < n; root++)
            if (root != me) CHECK(same(rooted[root][i], (mat){7, 7, 7, 7}));
        CHECK(same(all[i], whole));
        CHECK(same(inplace[i], whole));
        CHECK(same(scan[i], prod(0, me + 1, i, salt)));
        if (me == 0)
            CHECK(same(exscan[i], (mat){7, 7, 7, 7})); /* not written at rank 0 */
        else
            CHECK(same(exscan[i], prod(0, me, i, salt)));
        CHECK(same(rs_out[i], prod(0, n, me * count + i, salt + 1)));
    }
    for (int i = 0; i < counts[me]; i++) CHECK(same(rv_out[i], prod(0, n, first + i, salt + 2)));
    CHECK(counts[me] > 0 || same(rv_out[0], (mat){7, 7, 7, 7}));

    for (int root = 0; root < n; root++) free(rooted[root]);
    free(rooted);
    free(reqs);
    free(in);
    free(all);
    free(inplace);
    free(scan);
    free(exscan);
    free(rs_in);
    free(rs_out);
    free(counts);
    free(rv_in);
    free(rv_out);
}

/* On an inter-communicator of the low and the high half (n >= 2): each side gets the
 * product of the other side's matrices in its rank order. */
static void inter(MPI_Op op, int n) {
    int half = n / 2, side = me < half ? 0 : 1;
    int rsize = side ? half : n - half, roff = side ? 0 : half;
    MPI_Comm local, ic;
    OK(MPI_Comm_split(MPI_COMM_WORLD, side, me, &local));
    OK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, side ? 0 : half, 78, &ic));
    mat *in = mats(3, 6), *out = blank(3);
    MPI_Request r;
    OK(MPI_Iallreduce(in, out, 3, mat_type, op, ic, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int i = 0; i < 3; i++) CHECK(same(out[i], prod(roff, roff + rsize, i, 6)));
    free(in);
    free(out);
    OK(MPI_Comm_free(&ic));
    OK(MPI_Comm_free(&local));
}

static int inner_rank = -1, inner_finalize = -1, inner_size = -1;

/* A commutative sum of ints whose function calls MPI. */
static void calls_mpi(void *in, void *inout, int *len, MPI_Datatype *dt) {
    int *x = in, *y = inout;
    for (int i = 0; i < *len; i++) y[i] += x[i];
    OK(MPI_Type_size(*dt, &inner_size));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &inner_rank));
    inner_finalize = MPI_Finalize();
}

int main(int argc, char **argv) {
    int n;
    mat_op_init(&argc, &argv, &n);

    MPI_Op matop;
    OK(MPI_Op_create(mat_mul, 0, &matop));
    /* One matrix, a few, many; each with each way of completing. */
    int counts[] = {1, 3, 100};
    for (int k = 0; k < 3; k++)
        for (int how = 0; how < 3; how++) round_of(matop, n, counts[k], k * 10 + how, how);
    CHECK(n == 1 || mat_calls > 0);
    /* Zero items: nothing to reduce, no call of the function. */
    long before = mat_calls;
    MPI_Request req;
    OK(MPI_Iallreduce(NULL, NULL, 0, mat_type, matop, MPI_COMM_WORLD, &req));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK(mat_calls == before);
    if (n >= 2) inter(matop, n);

    /* A function that calls MPI, completed by MPI_Wait and by an MPI_Test loop. */
    MPI_Op mpiop;
    OK(MPI_Op_create(calls_mpi, 1, &mpiop));
    for (int how = 0; how < 2; how++) {
        int one[2] = {me, 1}, sum[2] = {-1, -1};
        OK(MPI_Iallreduce(one, sum, 2, MPI_INT, mpiop, MPI_COMM_WORLD, &req));
        if (how == 0) {
            OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        } else {
            int flag = 0;
            while (!flag) OK(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
        }
        CHECK(sum[0] == n * (n - 1) / 2 && sum[1] == n);
    }
    /* Rank 0 combines values in every reduction to it (n >= 2). */
    CHECK(n == 1 || me != 0 || inner_rank == 0);
    if (inner_rank != -1) {
        CHECK(inner_rank == me && inner_size == 4);
        CHECK(err_class(inner_finalize) == MPI_ERR_OTHER);
    }
    OK(MPI_Op_free(&mpiop));

    /* A freed operation is refused at the call, before any message. */
    MPI_Op saved = matop;
    OK(MPI_Op_free(&matop));
    mat one_mat = M(me, 0, 0), res;
    CHECK(err_class(MPI_Iallreduce(&one_mat, &res, 1, mat_type, saved, MPI_COMM_WORLD,
                                   &req)) == MPI_ERR_OP);
    CHECK(req == MPI_REQUEST_NULL);
    /* Still in step after the error. */
    int x = 1, y = 0;
    OK(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(y == n);

    OK(MPI_Type_free(&mat_type));
    printf("rank %d: USER OP NBC OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
