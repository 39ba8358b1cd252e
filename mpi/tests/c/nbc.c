/*
 * Non-blocking collectives: MPI_Ibcast, Ireduce, Iallreduce, Igather, Iscatter,
 * Iallgather, Ialltoall from every root, small and large (100 000 ints: past the eager
 * sizes), MPI_IN_PLACE where MPI allows it, several in flight at once completed in
 * reverse order, point-to-point traffic and a blocking collective on another
 * communicator while they are in flight, completion by MPI_Test loops and by
 * MPI_Wait/Waitall. Every element is checked against values computed here. Each rank
 * prints "rank R: NBC OK".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me = -1;

#include "check.h"

static int val(int r, int i) { return r * 1000 + i % 997; }

static void wait_by_test(MPI_Request *r) {
    int flag = 0;
    while (!flag) {
        OK(MPI_Test(r, &flag, MPI_STATUS_IGNORE));
    }
    CHECK(*r == MPI_REQUEST_NULL);
}

static void bcasts(int n, int len) {
    int *buf = malloc(sizeof(int) * len);
    for (int root = 0; root < n; root++) {
        for (int i = 0; i < len; i++) buf[i] = me == root ? val(root, i) : -1;
        MPI_Request r;
        OK(MPI_Ibcast(buf, len, MPI_INT, root, MPI_COMM_WORLD, &r));
        /* Point to point around the ring meanwhile. */
        int out = me, in = -1;
        OK(MPI_Sendrecv(&out, 1, MPI_INT, (me + 1) % n, 9, &in, 1, MPI_INT, (me + n - 1) % n, 9,
                        MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(in == (me + n - 1) % n);
        if (root % 2) {
            wait_by_test(&r);
        } else {
            OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        }
        for (int i = 0; i < len; i++) CHECK(buf[i] == val(root, i));
    }
    free(buf);
}

static void reductions(int n, int len) {
    int *in = malloc(sizeof(int) * len), *out = malloc(sizeof(int) * len);
    for (int i = 0; i < len; i++) in[i] = val(me, i);
    for (int root = 0; root < n; root++) {
        MPI_Request r;
        for (int i = 0; i < len; i++) out[i] = -1;
        if (me == root && root % 2) {
            memcpy(out, in, sizeof(int) * len);
            OK(MPI_Ireduce(MPI_IN_PLACE, out, len, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD, &r));
        } else {
            OK(MPI_Ireduce(in, out, len, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD, &r));
        }
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        for (int i = 0; i < len && me == root; i++) {
            int want = 0;
            for (int q = 0; q < n; q++) want += val(q, i);
            CHECK(out[i] == want);
        }
        for (int i = 0; i < len && me != root; i++) CHECK(out[i] == -1);
    }
    /* Three allreduces in flight, completed in reverse order; one in place. */
    int *a = malloc(sizeof(int) * len), *b = malloc(sizeof(int) * len),
        *c = malloc(sizeof(int) * len);
    for (int i = 0; i < len; i++) c[i] = val(me, i);
    MPI_Request rs[3];
    OK(MPI_Iallreduce(in, a, len, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rs[0]));
    OK(MPI_Iallreduce(in, b, len, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &rs[1]));
    OK(MPI_Iallreduce(MPI_IN_PLACE, c, len, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &rs[2]));
    /* A blocking collective on another communicator meanwhile. */
    MPI_Comm d;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    int one = 1, sum = 0;
    OK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, d));
    CHECK(sum == n);
    OK(MPI_Comm_free(&d));
    for (int k = 2; k >= 0; k--) OK(MPI_Wait(&rs[k], MPI_STATUS_IGNORE));
    for (int i = 0; i < len; i++) {
        int s = 0, mx = val(0, i), mn = val(0, i);
        for (int q = 0; q < n; q++) {
            s += val(q, i);
            mx = val(q, i) > mx ? val(q, i) : mx;
            mn = val(q, i) < mn ? val(q, i) : mn;
        }
        CHECK(a[i] == s && b[i] == mx && c[i] == mn);
    }
    free(a);
    free(b);
    free(c);
    free(in);
    free(out);
}

static void blocks(int n, int len) {
    int *mine = malloc(sizeof(int) * len), *all = malloc(sizeof(int) * len * n),
        *all2 = malloc(sizeof(int) * len * n);
    for (int i = 0; i < len; i++) mine[i] = val(me, i);
    for (int root = 0; root < n; root++) {
        MPI_Request r;
        for (int i = 0; i < len * n; i++) all[i] = -1;
        OK(MPI_Igather(mine, len, MPI_INT, all, len, MPI_INT, root, MPI_COMM_WORLD, &r));
        wait_by_test(&r);
        for (int q = 0; q < n && me == root; q++)
            for (int i = 0; i < len; i++) CHECK(all[q * len + i] == val(q, i));
        /* Scatter: block q of the root's buffer to rank q. */
        for (int q = 0; q < n; q++)
            for (int i = 0; i < len; i++) all[q * len + i] = val(root * 10 + q, i);
        int *got = malloc(sizeof(int) * len);
        OK(MPI_Iscatter(all, len, MPI_INT, got, len, MPI_INT, root, MPI_COMM_WORLD, &r));
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        for (int i = 0; i < len; i++) CHECK(got[i] == val(root * 10 + me, i));
        free(got);
    }
    MPI_Request r[2];
    for (int i = 0; i < len * n; i++) all[i] = -1;
    OK(MPI_Iallgather(mine, len, MPI_INT, all, len, MPI_INT, MPI_COMM_WORLD, &r[0]));
    /* All to all: block q goes to rank q. */
    int *to = malloc(sizeof(int) * len * n);
    for (int q = 0; q < n; q++)
        for (int i = 0; i < len; i++) to[q * len + i] = val(me * 10 + q, i);
    OK(MPI_Ialltoall(to, len, MPI_INT, all2, len, MPI_INT, MPI_COMM_WORLD, &r[1]));
    OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
    for (int q = 0; q < n; q++)
        for (int i = 0; i < len; i++) {
            CHECK(all[q * len + i] == val(q, i));
            CHECK(all2[q * len + i] == val(q * 10 + me, i));
        }
    /* In place: allgather with the own block already there, alltoall from recvbuf. */
    for (int i = 0; i < len * n; i++) all[i] = -1;
    for (int i = 0; i < len; i++) all[me * len + i] = val(me, i);
    OK(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, len, MPI_INT, MPI_COMM_WORLD, &r[0]));
    OK(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
    for (int q = 0; q < n; q++)
        for (int i = 0; i < len; i++) CHECK(all[q * len + i] == val(q, i));
    memcpy(all2, to, sizeof(int) * len * n);
    OK(MPI_Ialltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all2, len, MPI_INT, MPI_COMM_WORLD, &r[1]));
    OK(MPI_Wait(&r[1], MPI_STATUS_IGNORE));
    for (int q = 0; q < n; q++)
        for (int i = 0; i < len; i++) CHECK(all2[q * len + i] == val(q * 10 + me, i));
    free(to);
    free(mine);
    free(all);
    free(all2);
}

int main(int argc, char **argv) {
    int n;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &n));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int sizes[3] = {1, 300, 100000};
    for (int k = 0; k < 3; k++) {
        bcasts(n, sizes[k]);
        reductions(n, sizes[k]);
        blocks(n, k == 2 ? 20000 : sizes[k]);
    }
    /* A bad operation is refused at the call. */
    double x = 1, y;
    MPI_Request r;
    CHECK(MPI_Iallreduce(&x, &y, 1, MPI_DOUBLE, MPI_BXOR, MPI_COMM_WORLD, &r) != MPI_SUCCESS);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    printf("rank %d: NBC OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
