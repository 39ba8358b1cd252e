/* What running MPICH's test suite against the library found missing or wrong, one
 * function per finding (docs/mpi.md, "MPICH's tests"). Each rank prints
 * "MPICH FOUND OK" at the end. */
#include <mpi.h>
#include <string.h>

#include "check.h"

static int me, np;

/* invec[i] * 10 + inoutvec[i]: not commutative, so the operand order shows. */
static void shift_add(void *in, void *inout, int *len, MPI_Datatype *dt) {
    int *a = in, *b = inout;
    CHECK(*dt == MPI_INT);
    for (int i = 0; i < *len; i++) {
        b[i] = a[i] * 10 + b[i];
    }
}

/* MPI_Reduce_local: inoutbuf = inbuf op inoutbuf, inbuf left alone. */
static void reduce_local(void) {
    int in[5] = {1, 2, 3, 4, 5}, io[5] = {10, 20, 30, 40, 50};
    OK(MPI_Reduce_local(in, io, 5, MPI_INT, MPI_SUM));
    for (int i = 0; i < 5; i++) {
        CHECK(in[i] == i + 1 && io[i] == 11 * (i + 1));
    }
    MPI_Op op;
    OK(MPI_Op_create(shift_add, 0, &op));
    int a[2] = {7, 8}, b[2] = {3, 4};
    OK(MPI_Reduce_local(a, b, 2, MPI_INT, op));
    CHECK(a[0] == 7 && a[1] == 8 && b[0] == 73 && b[1] == 84);
    OK(MPI_Reduce_local(a, b, 0, MPI_INT, op));
    OK(MPI_Op_free(&op));
    double x = 2.5, y = 4.0;
    OK(MPI_Reduce_local(&x, &y, 1, MPI_DOUBLE, MPI_MAX));
    CHECK(y == 4.0);
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    int cls;
    MPI_Error_class(MPI_Reduce_local(a, b, 2, MPI_INT, MPI_OP_NULL), &cls);
    CHECK(cls == MPI_ERR_OP);
}

/* MPI_Group_range_incl / excl: triplets in order, negative strides, errors. */
static void group_ranges(void) {
    MPI_Group world, g;
    OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    /* Every other rank from the top down, then rank 0 again unless already named. */
    int r1[2][3] = {{np - 1, 0, -2}, {0, 0, 1}};
    int n1 = (np - 1) % 2 == 1 ? 2 : 1;
    OK(MPI_Group_range_incl(world, n1, r1, &g));
    int size, expect = (np + 1) / 2 + (n1 == 2 ? 1 : 0);
    OK(MPI_Group_size(g, &size));
    CHECK(size == expect);
    int zero = 0, tr;
    OK(MPI_Group_translate_ranks(g, 1, &zero, world, &tr));
    CHECK(tr == np - 1);
    OK(MPI_Group_free(&g));
    int r2[1][3] = {{0, np - 1, 2}};
    OK(MPI_Group_range_excl(world, 1, r2, &g));
    OK(MPI_Group_size(g, &size));
    CHECK(size == np / 2);
    int rank;
    OK(MPI_Group_rank(g, &rank));
    CHECK(rank == (me % 2 == 1 ? me / 2 : MPI_UNDEFINED));
    OK(MPI_Group_free(&g));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int twice[2][3] = {{0, 0, 1}, {0, 0, 1}}, cls;
    MPI_Error_class(MPI_Group_range_incl(world, 2, twice, &g), &cls);
    CHECK(cls == MPI_ERR_RANK);
    int outside[1][3] = {{0, np, 1}};
    MPI_Error_class(MPI_Group_range_excl(world, 1, outside, &g), &cls);
    CHECK(cls == MPI_ERR_RANK);
    int stride0[1][3] = {{0, 0, 0}};
    MPI_Error_class(MPI_Group_range_incl(world, 1, stride0, &g), &cls);
    CHECK(cls == MPI_ERR_ARG);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    OK(MPI_Group_free(&world));
}

/* MPI_Cart_map: the rank Cart_create would give, MPI_UNDEFINED outside the grid. */
static void cart_map(void) {
    int dims[2] = {1, np > 1 ? np - 1 : 1}, periods[2] = {0, 1}, r;
    OK(MPI_Cart_map(MPI_COMM_WORLD, 2, dims, periods, &r));
    CHECK(r == (me < dims[1] ? me : MPI_UNDEFINED));
    OK(MPI_Cart_map(MPI_COMM_WORLD, 0, dims, periods, &r));
    CHECK(r == (me == 0 ? 0 : MPI_UNDEFINED));
}

static int deleted;
static int count_delete(MPI_Comm c, int k, void *v, void *x) {
    (void)c, (void)k, (void)x;
    deleted += *(int *)v;
    return MPI_SUCCESS;
}

/* The deprecated MPI-1 attribute calls. */
static void mpi1_attributes(void) {
    int key, v = 5, *got, flag;
    OK(MPI_Keyval_create(MPI_DUP_FN, count_delete, &key, NULL));
    MPI_Comm dup;
    OK(MPI_Attr_put(MPI_COMM_WORLD, key, &v));
    OK(MPI_Attr_get(MPI_COMM_WORLD, key, &got, &flag));
    CHECK(flag == 1 && got == &v);
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    OK(MPI_Attr_get(dup, key, &got, &flag));
    CHECK(flag == 1 && got == &v);
    OK(MPI_Comm_free(&dup));
    CHECK(deleted == 5);
    OK(MPI_Attr_delete(MPI_COMM_WORLD, key));
    CHECK(deleted == 10);
    OK(MPI_Attr_get(MPI_COMM_WORLD, key, &got, &flag));
    CHECK(flag == 0);
    OK(MPI_Keyval_free(&key));
    CHECK(key == MPI_KEYVAL_INVALID);
    int *ub;
    OK(MPI_Attr_get(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag));
    CHECK(flag == 1 && *ub >= 32767);
}

/* MPI_Type_create_subarray in both orders, hindexed_block, the _x queries. */
static void subarrays(void) {
    int a[4][5], got[6];
    for (int i = 0; i < 4; i++) {
        for (int j = 0; j < 5; j++) {
            a[i][j] = 10 * i + j;
        }
    }
    int sizes[2] = {4, 5}, subs[2] = {2, 3}, starts[2] = {1, 2};
    MPI_Datatype t;
    OK(MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &t));
    OK(MPI_Type_commit(&t));
    MPI_Aint lb, ext;
    OK(MPI_Type_get_extent(t, &lb, &ext));
    CHECK(lb == 0 && ext == (MPI_Aint)sizeof a);
    MPI_Count size_x, lb_x, ext_x, tlb_x, text_x;
    OK(MPI_Type_size_x(t, &size_x));
    CHECK(size_x == 6 * (MPI_Count)sizeof(int));
    OK(MPI_Type_get_extent_x(t, &lb_x, &ext_x));
    CHECK(lb_x == 0 && ext_x == (MPI_Count)sizeof a);
    OK(MPI_Type_get_true_extent_x(t, &tlb_x, &text_x));
    CHECK(tlb_x == (5 + 2) * (MPI_Count)sizeof(int) && text_x == 8 * (MPI_Count)sizeof(int));
    OK(MPI_Sendrecv(a, 1, t, me, 7, got, 6, MPI_INT, me, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int k = 0; k < 6; k++) {
        CHECK(got[k] == 10 * (1 + k / 3) + 2 + k % 3);
    }
    OK(MPI_Type_free(&t));
    /* Fortran order: sizes[0] varies fastest, so a[j][i] in C terms is (i, j). */
    int fsizes[2] = {5, 4}, fsubs[2] = {3, 2}, fstarts[2] = {2, 1};
    OK(MPI_Type_create_subarray(2, fsizes, fsubs, fstarts, MPI_ORDER_FORTRAN, MPI_INT, &t));
    OK(MPI_Type_commit(&t));
    memset(got, 0, sizeof got);
    OK(MPI_Sendrecv(a, 1, t, me, 8, got, 6, MPI_INT, me, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int k = 0; k < 6; k++) {
        CHECK(got[k] == 10 * (1 + k / 3) + 2 + k % 3);
    }
    OK(MPI_Type_free(&t));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int cls, past[2] = {3, 3};
    MPI_Error_class(MPI_Type_create_subarray(2, sizes, subs, past, MPI_ORDER_C, MPI_INT, &t), &cls);
    CHECK(cls == MPI_ERR_ARG);
    MPI_Error_class(MPI_Type_create_subarray(2, sizes, subs, starts, 3, MPI_INT, &t), &cls);
    CHECK(cls == MPI_ERR_ARG);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    /* Two ints at bytes 4 and 12 (a[0][1..2], a[0][3..4]). */
    MPI_Aint displs[2] = {4, 12};
    OK(MPI_Type_create_hindexed_block(2, 2, displs, MPI_INT, &t));
    OK(MPI_Type_commit(&t));
    OK(MPI_Sendrecv(a, 1, t, me, 9, got, 4, MPI_INT, me, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(got[0] == 1 && got[1] == 2 && got[2] == 3 && got[3] == 4);
    OK(MPI_Type_free(&t));
}

/* MPI_Info_get_valuelen: the length without the NUL, flag 0 for a missing key. */
static void info_valuelen(void) {
    MPI_Info info;
    OK(MPI_Info_create(&info));
    OK(MPI_Info_set(info, "host", "node17"));
    int len = -1, flag = -1;
    OK(MPI_Info_get_valuelen(info, "host", &len, &flag));
    CHECK(flag == 1 && len == 6);
    OK(MPI_Info_get_valuelen(info, "wdir", &len, &flag));
    CHECK(flag == 0);
    OK(MPI_Info_free(&info));
}

/* MPI_Comm_split on an inter-communicator (even against odd world ranks). */
static void split_inter(void) {
    if (np < 2) {
        return;
    }
    MPI_Comm half, inter, sub;
    OK(MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half));
    OK(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, me % 2 == 0 ? 1 : 0, 5, &inter));
    int lr, ls, rs;
    OK(MPI_Comm_rank(inter, &lr));
    OK(MPI_Comm_size(inter, &ls));
    OK(MPI_Comm_remote_size(inter, &rs));
    /* Color by local rank parity, keys reversing the order. */
    int color = lr % 2;
    OK(MPI_Comm_split(inter, color, -lr, &sub));
    int nl = (ls + 1 - color) / 2, nr = (rs + 1 - color) / 2;
    if (nr == 0) {
        CHECK(sub == MPI_COMM_NULL);
    } else {
        int flag, srank, ssize, srsize;
        OK(MPI_Comm_test_inter(sub, &flag));
        CHECK(flag);
        MPI_Errhandler eh;
        OK(MPI_Comm_get_errhandler(sub, &eh));
        CHECK(eh == MPI_ERRORS_ARE_FATAL); /* inter's, inherited from MPI_COMM_WORLD */
        OK(MPI_Comm_rank(sub, &srank));
        OK(MPI_Comm_size(sub, &ssize));
        OK(MPI_Comm_remote_size(sub, &srsize));
        CHECK(ssize == nl && srsize == nr);
        CHECK(srank == nl - 1 - lr / 2);
        /* Each sends (its world rank, its new rank) to every remote rank; what comes
         * from remote rank r has new rank r, world parity the other side's and the
         * same local-rank parity. */
        for (int r = 0; r < srsize; r++) {
            int msg[2] = {me, srank};
            OK(MPI_Send(msg, 2, MPI_INT, r, 3, sub));
        }
        for (int r = 0; r < srsize; r++) {
            int msg[2];
            OK(MPI_Recv(msg, 2, MPI_INT, r, 3, sub, MPI_STATUS_IGNORE));
            CHECK(msg[1] == r && msg[0] % 2 != me % 2 && (msg[0] / 2) % 2 == color);
        }
        int sum = 0, one = 1;
        OK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, sub));
        CHECK(sum == nr);
        OK(MPI_Comm_free(&sub));
    }
    /* MPI_UNDEFINED on one side: the other side's color has no partner. */
    OK(MPI_Comm_split(inter, me % 2 == 0 ? 7 : MPI_UNDEFINED, 0, &sub));
    CHECK(sub == MPI_COMM_NULL);
    OK(MPI_Comm_free(&inter));
    OK(MPI_Comm_free(&half));
}

/* The non-blocking v collectives: rank r contributes r + 1 ints; blocks placed in
 * reverse rank order with a gap of one int before each, which must stay untouched. */
static void nbc_v(void) {
    enum { MAXN = 16 };
    CHECK(np <= MAXN);
    int counts[MAXN], displs[MAXN], total = 0;
    for (int r = np - 1; r >= 0; r--) {
        counts[r] = r + 1;
        displs[r] = total + 1;
        total += r + 2;
    }
    int mine[MAXN], out[MAXN * (MAXN + 2)], in_place[MAXN * (MAXN + 2)];
    for (int k = 0; k <= me; k++) {
        mine[k] = 1000 * me + k;
    }
#define FILL(buf) for (int k = 0; k < total; k++) (buf)[k] = -7
#define CHECK_ALL(buf)                                                        \
    for (int r = 0; r < np; r++) {                                            \
        CHECK((buf)[displs[r] - 1] == -7);                                    \
        for (int k = 0; k < counts[r]; k++) CHECK((buf)[displs[r] + k] == 1000 * r + k); \
    }
    for (int root = 0; root < np; root++) {
        MPI_Request q[2];
        FILL(out);
        OK(MPI_Igatherv(mine, me + 1, MPI_INT, out, counts, displs, MPI_INT, root, MPI_COMM_WORLD, &q[0]));
        /* The scatter from the gathered layout back into a fresh block, at once. */
        int back[MAXN];
        for (int k = 0; k < MAXN; k++) back[k] = -1;
        int scatter_src[MAXN * (MAXN + 2)];
        FILL(scatter_src);
        for (int r = 0; r < np; r++) {
            for (int k = 0; k < counts[r]; k++) scatter_src[displs[r] + k] = 1000 * r + k;
        }
        OK(MPI_Iscatterv(scatter_src, counts, displs, MPI_INT, back, me + 1, MPI_INT, root, MPI_COMM_WORLD, &q[1]));
        OK(MPI_Waitall(2, q, MPI_STATUSES_IGNORE));
        if (me == root) {
            CHECK_ALL(out);
        }
        for (int k = 0; k <= me; k++) CHECK(back[k] == 1000 * me + k);
        CHECK(back[me + 1] == -1);
        /* In place at the root. */
        FILL(in_place);
        for (int k = 0; k <= me; k++) in_place[displs[me] + k] = mine[k];
        MPI_Request r1;
        OK(MPI_Igatherv(me == root ? MPI_IN_PLACE : (void *)mine, me + 1, MPI_INT, in_place, counts, displs, MPI_INT, root, MPI_COMM_WORLD, &r1));
        OK(MPI_Wait(&r1, MPI_STATUS_IGNORE));
        if (me == root) {
            CHECK_ALL(in_place);
        }
    }
    MPI_Request r2;
    FILL(out);
    OK(MPI_Iallgatherv(mine, me + 1, MPI_INT, out, counts, displs, MPI_INT, MPI_COMM_WORLD, &r2));
    int flag = 0;
    while (!flag) OK(MPI_Test(&r2, &flag, MPI_STATUS_IGNORE));
    CHECK_ALL(out);
    FILL(in_place);
    for (int k = 0; k <= me; k++) in_place[displs[me] + k] = mine[k];
    OK(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, in_place, counts, displs, MPI_INT, MPI_COMM_WORLD, &r2));
    OK(MPI_Wait(&r2, MPI_STATUS_IGNORE));
    CHECK_ALL(in_place);
    /* Alltoallv: rank s sends s + 1 ints to every rank (value 1000 * s + k); every
     * rank receives counts[s] from s into the layout above. */
    int sc[MAXN], sd[MAXN], sendbuf[MAXN * MAXN];
    for (int r = 0; r < np; r++) {
        sc[r] = me + 1;
        sd[r] = r * (me + 1);
        for (int k = 0; k <= me; k++) sendbuf[sd[r] + k] = 1000 * me + k;
    }
    FILL(out);
    OK(MPI_Ialltoallv(sendbuf, sc, sd, MPI_INT, out, counts, displs, MPI_INT, MPI_COMM_WORLD, &r2));
    OK(MPI_Wait(&r2, MPI_STATUS_IGNORE));
    CHECK_ALL(out);
    /* In place: every rank sends, from the receive layout, the block it receives, so
     * the counts must be symmetric: r + me + 1 ints between me and r. */
    int c2[MAXN], d2[MAXN], t2 = 0;
    for (int r = 0; r < np; r++) {
        c2[r] = r + me + 1;
        d2[r] = t2 + 1;
        t2 += c2[r] + 1;
    }
    int sym[MAXN * (2 * MAXN + 1)];
    for (int k = 0; k < t2; k++) sym[k] = -7;
    for (int r = 0; r < np; r++) {
        for (int k = 0; k < c2[r]; k++) sym[d2[r] + k] = 1000 * me + k;
    }
    OK(MPI_Ialltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, sym, c2, d2, MPI_INT, MPI_COMM_WORLD, &r2));
    OK(MPI_Wait(&r2, MPI_STATUS_IGNORE));
    for (int r = 0; r < np; r++) {
        CHECK(sym[d2[r] - 1] == -7);
        for (int k = 0; k < c2[r]; k++) CHECK(sym[d2[r] + k] == 1000 * r + k);
    }
#undef FILL
#undef CHECK_ALL
}

/* The non-blocking scans and reduce-scatters, all four in flight at once, against the
 * sums and maxima they must give (rank r contributes r + 1 + 10 * k at element k). */
static void nbc_scans(void) {
    enum { N = 300, MAXN = 16 };
    CHECK(np <= MAXN);
    static int in[N], scan[N], exscan[N], blk[N], rs[N], full[MAXN * 3];
    for (int k = 0; k < N; k++) {
        in[k] = me + 1 + 10 * k;
        exscan[k] = -5;
        blk[k] = rs[k] = -5;
    }
    int bcount = 3, counts[MAXN], total = 0;
    for (int r = 0; r < np; r++) {
        counts[r] = r % 3; /* some ranks get nothing */
        total += counts[r];
    }
    for (int k = 0; k < np * bcount; k++) full[k] = me + k;
    MPI_Request q[4];
    OK(MPI_Iscan(in, scan, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[0]));
    OK(MPI_Iexscan(in, exscan, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[1]));
    OK(MPI_Ireduce_scatter_block(full, blk, bcount, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &q[2]));
    OK(MPI_Ireduce_scatter(full, rs, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[3]));
    OK(MPI_Waitall(4, q, MPI_STATUSES_IGNORE));
    for (int k = 0; k < N; k++) {
        int below = me * (me + 1) / 2 + 10 * k * me; /* sum over r < me */
        CHECK(scan[k] == below + me + 1 + 10 * k);
        CHECK(exscan[k] == (me == 0 ? -5 : below));
    }
    for (int k = 0; k < bcount; k++) {
        CHECK(blk[k] == np - 1 + me * bcount + k); /* max over ranks of r + index */
    }
    CHECK(blk[bcount] == -5);
    int start = 0;
    for (int r = 0; r < me; r++) start += counts[r];
    for (int k = 0; k < counts[me]; k++) {
        CHECK(rs[k] == np * (np - 1) / 2 + np * (start + k));
    }
    CHECK(rs[counts[me]] == -5);
    /* In place, doubles, maxima: the scan of r at rank me is me. */
    double d[4];
    for (int k = 0; k < 4; k++) d[k] = me - k;
    MPI_Request r1;
    OK(MPI_Iscan(MPI_IN_PLACE, d, 4, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &r1));
    int flag = 0;
    while (!flag) OK(MPI_Test(&r1, &flag, MPI_STATUS_IGNORE));
    for (int k = 0; k < 4; k++) CHECK(d[k] == me - k);
    (void)total;
}

/* MPI_Alltoallw and MPI_Ialltoallw: to rank r, r + 1 items of int or double (by the
 * parity of me + r, so both ends agree), blocks packed at byte displacements, the
 * receive blocks in reverse rank order. */
static void alltoallw(void) {
    enum { MAXN = 16 };
    CHECK(np <= MAXN);
    int sc[MAXN], sd[MAXN], rc[MAXN], rd[MAXN];
    MPI_Datatype st[MAXN], rt[MAXN];
    static char sbuf[MAXN * (MAXN + 1) * 8], rbuf[MAXN * (MAXN + 1) * 8 + 8];
    int at = 0;
    for (int r = 0; r < np; r++) {
        int dbl = (me + r) % 2;
        st[r] = dbl ? MPI_DOUBLE : MPI_INT;
        sc[r] = me + 1; /* what r receives from me: counts[me] at r */
        sd[r] = at;
        for (int k = 0; k < sc[r]; k++) {
            if (dbl) {
                double v = 1000 * me + 10 * r + k;
                memcpy(sbuf + at + 8 * k, &v, 8);
            } else {
                int v = 1000 * me + 10 * r + k;
                memcpy(sbuf + at + 4 * k, &v, 4);
            }
        }
        at += sc[r] * (dbl ? 8 : 4);
    }
    at = 0;
    for (int r = np - 1; r >= 0; r--) {
        int dbl = (me + r) % 2;
        rt[r] = dbl ? MPI_DOUBLE : MPI_INT;
        rc[r] = r + 1;
        rd[r] = at;
        at += rc[r] * (dbl ? 8 : 4);
    }
    for (int pass = 0; pass < 2; pass++) {
        memset(rbuf, 0x5a, sizeof rbuf);
        if (pass == 0) {
            OK(MPI_Alltoallw(sbuf, sc, sd, st, rbuf, rc, rd, rt, MPI_COMM_WORLD));
        } else {
            MPI_Request q;
            OK(MPI_Ialltoallw(sbuf, sc, sd, st, rbuf, rc, rd, rt, MPI_COMM_WORLD, &q));
            OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
        }
        for (int r = 0; r < np; r++) {
            for (int k = 0; k < rc[r]; k++) {
                double want = 1000 * r + 10 * me + k, got;
                if ((me + r) % 2) {
                    memcpy(&got, rbuf + rd[r] + 8 * k, 8);
                } else {
                    int v;
                    memcpy(&v, rbuf + rd[r] + 4 * k, 4);
                    got = v;
                }
                CHECK(got == want);
            }
        }
        CHECK(rbuf[at] == 0x5a);
    }
}

/* MPI_Type_get_name / set_name: the header's names by default, a name set replaces
 * it (on a predefined type too), a derived type starts unnamed. */
static void type_names(void) {
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    struct { MPI_Datatype t; const char *n; } known[] = {
        {MPI_INT, "MPI_INT"}, {MPI_DOUBLE, "MPI_DOUBLE"}, {MPI_CHAR, "MPI_CHAR"},
        {MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG"}, {MPI_2INT, "MPI_2INT"},
        {MPI_DOUBLE_INT, "MPI_DOUBLE_INT"}, {MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX"},
        {MPI_UINT64_T, "MPI_UINT64_T"}, {MPI_BYTE, "MPI_BYTE"}, {MPI_PACKED, "MPI_PACKED"},
    };
    for (unsigned i = 0; i < sizeof known / sizeof known[0]; i++) {
        OK(MPI_Type_get_name(known[i].t, name, &len));
        CHECK(strcmp(name, known[i].n) == 0 && len == (int)strlen(known[i].n));
    }
    MPI_Datatype t;
    OK(MPI_Type_contiguous(3, MPI_INT, &t));
    OK(MPI_Type_get_name(t, name, &len));
    CHECK(len == 0 && name[0] == 0);
    OK(MPI_Type_set_name(t, "three ints"));
    OK(MPI_Type_get_name(t, name, &len));
    CHECK(strcmp(name, "three ints") == 0 && len == 10);
    OK(MPI_Type_free(&t));
    OK(MPI_Type_set_name(MPI_FLOAT, "float"));
    OK(MPI_Type_get_name(MPI_FLOAT, name, &len));
    CHECK(strcmp(name, "float") == 0);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int cls;
    MPI_Error_class(MPI_Type_get_name(MPI_DATATYPE_NULL, name, &len), &cls);
    CHECK(cls == MPI_ERR_TYPE);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

int main(int argc, char **argv) {
    (void)argc, (void)argv;
    OK(MPI_Init(NULL, NULL));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &np));
    reduce_local();
    group_ranges();
    cart_map();
    mpi1_attributes();
    subarrays();
    info_valuelen();
    split_inter();
    nbc_v();
    nbc_scans();
    alltoallw();
    type_names();
    OK(MPI_Barrier(MPI_COMM_WORLD));
    printf("rank %d: MPICH FOUND OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
