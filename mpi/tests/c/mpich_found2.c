/* What the second sweep of MPICH's test suite found missing or wrong (docs/mpi.md,
 * "MPICH's test suite"), one part per finding. `mpich_found2 [part]` runs one part
 * (`spin`, `ops`, `sizes`, `contents`, `fint`, `inter`, `mrecv`, `create`, `graph`,
 * `errors`), or all of them; each rank prints "MPICH FOUND2 OK" at the end. `mpich_found2 fatal_user_code` ends the job through
 * MPI_ERRORS_ARE_FATAL with an error class the program added. */
#include <complex.h>
#include <mpi.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "check.h"

static int me, np;

static int error_class(int rc) {
    int cls = -1;
    MPI_Error_class(rc, &cls);
    return cls;
}

/* A rank that computes for longer than the runtime's failure-detection timeout (2 s)
 * without calling MPI is not taken for dead: the others' barrier and messages with it
 * succeed. */
static void spin(void) {
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    if (me == 1) {
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        do {
            clock_gettime(CLOCK_MONOTONIC, &t);
        } while ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) * 1e-9 < 3.5);
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));
    int right = (me + 1) % np, left = (me + np - 1) % np, got = -1;
    OK(MPI_Sendrecv(&me, 1, MPI_INT, right, 5, &got, 1, MPI_INT, left, 5, MPI_COMM_WORLD,
                    MPI_STATUS_IGNORE));
    CHECK(got == left);
    int sum = 0;
    OK(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == np * (np - 1) / 2);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

/* The value each rank contributes at position i: small integers, so that sums and
 * products are exact in every type. */
static int val(int rank, int i) { return (rank + i) % 3 + 1 + (i % 2 ? rank : 0); }

struct ldi { long double v; int loc; };

/* Reductions on long double, the complex types and MPI_LONG_DOUBLE_INT, by
 * MPI_Allreduce and MPI_Reduce to the last rank, against the same arithmetic done
 * here in rank order. */
static void ops(void) {
    enum { N = 5 };
    long double ld[N], ld_sum[N], ld_prod[N], ld_min[N], ld_max[N], out[N];
    double complex dc[N], dc_sum[N], dc_prod[N], dout[N];
    float complex fc[N], fc_sum[N], fc_prod[N], fout[N];
    long double complex lc[N], lc_sum[N], lc_prod[N], lout[N];
    for (int i = 0; i < N; i++) {
        ld_sum[i] = 0;
        ld_prod[i] = 1;
        ld_min[i] = 1e30L;
        ld_max[i] = -1e30L;
        dc_sum[i] = fc_sum[i] = lc_sum[i] = 0;
        dc_prod[i] = fc_prod[i] = lc_prod[i] = 1;
        for (int r = 0; r < np; r++) {
            /* 2^-55 beside a small whole number: exact in a long double (sums too),
             * lost in a double, so a result that went through double precision shows.
             * Products take halves (exact in any bracketing). */
            long double x = val(r, i) + 0x1p-55L;
            ld_sum[i] += x;
            ld_prod[i] *= val(r, i) + 0.5L;
            ld_min[i] = x < ld_min[i] ? x : ld_min[i];
            ld_max[i] = x > ld_max[i] ? x : ld_max[i];
            double complex z = val(r, i) - (double)(r - i) * I;
            dc_sum[i] += z;
            dc_prod[i] *= z;
            fc_sum[i] += (float complex)z;
            fc_prod[i] *= (float complex)z;
            lc_sum[i] += (long double complex)z;
            lc_prod[i] *= (long double complex)z;
        }
        ld[i] = val(me, i) + 0x1p-55L;
        dc[i] = val(me, i) - (double)(me - i) * I;
        fc[i] = (float complex)dc[i];
        lc[i] = (long double complex)dc[i];
    }
    OK(MPI_Allreduce(ld, out, N, MPI_LONG_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < N; i++) CHECK(out[i] == ld_sum[i]);
    for (int i = 0; i < N; i++) CHECK(out[i] != (double)out[i]);
    long double halves[N];
    for (int i = 0; i < N; i++) halves[i] = val(me, i) + 0.5L;
    OK(MPI_Allreduce(halves, out, N, MPI_LONG_DOUBLE, MPI_PROD, MPI_COMM_WORLD));
    for (int i = 0; i < N; i++) CHECK(out[i] == ld_prod[i]);
    OK(MPI_Allreduce(ld, out, N, MPI_LONG_DOUBLE, MPI_MIN, MPI_COMM_WORLD));
    for (int i = 0; i < N; i++) CHECK(out[i] == ld_min[i]);
    OK(MPI_Reduce(ld, out, N, MPI_LONG_DOUBLE, MPI_MAX, np - 1, MPI_COMM_WORLD));
    if (me == np - 1)
        for (int i = 0; i < N; i++) CHECK(out[i] == ld_max[i]);
    OK(MPI_Allreduce(dc, dout, N, MPI_C_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < N; i++) CHECK(dout[i] == dc_sum[i]);
    OK(MPI_Allreduce(dc, dout, N, MPI_DOUBLE_COMPLEX, MPI_PROD, MPI_COMM_WORLD));
    for (int i = 0; i < N; i++) CHECK(dout[i] == dc_prod[i]);
    OK(MPI_Allreduce(fc, fout, N, MPI_C_FLOAT_COMPLEX, MPI_PROD, MPI_COMM_WORLD));
    for (int i = 0; i < N; i++) CHECK(fout[i] == fc_prod[i]);
    OK(MPI_Reduce(fc, fout, N, MPI_COMPLEX, MPI_SUM, np - 1, MPI_COMM_WORLD));
    if (me == np - 1)
        for (int i = 0; i < N; i++) CHECK(fout[i] == fc_sum[i]);
    OK(MPI_Allreduce(lc, lout, N, MPI_C_LONG_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < N; i++) CHECK(lout[i] == lc_sum[i]);
    OK(MPI_Allreduce(lc, lout, N, MPI_C_LONG_DOUBLE_COMPLEX, MPI_PROD, MPI_COMM_WORLD));
    for (int i = 0; i < N; i++) CHECK(lout[i] == lc_prod[i]);
    /* MAXLOC and MINLOC on long double-int pairs: position 0 ties everywhere (the
     * smallest rank wins), position 1 has its maximum at the last rank and its
     * minimum at rank 0, position 2 the reverse. */
    struct ldi in[3], res[3];
    memset(in, 0, sizeof in);
    memset(res, 0, sizeof res);
    in[0].v = 7.25L;
    in[1].v = me + 0.5L;
    in[2].v = -(long double)me / 3.0L;
    for (int i = 0; i < 3; i++) in[i].loc = 10 * me + i;
    OK(MPI_Allreduce(in, res, 3, MPI_LONG_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD));
    CHECK(res[0].v == 7.25L && res[0].loc == 0);
    CHECK(res[1].v == np - 1 + 0.5L && res[1].loc == 10 * (np - 1) + 1);
    CHECK(res[2].v == 0 && res[2].loc == 2);
    OK(MPI_Allreduce(in, res, 3, MPI_LONG_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD));
    CHECK(res[0].v == 7.25L && res[0].loc == 0);
    CHECK(res[1].v == 0.5L && res[1].loc == 1);
    CHECK(res[2].v == -(long double)(np - 1) / 3.0L && res[2].loc == 10 * (np - 1) + 2);
    /* Still refused where MPI defines nothing: a logical operation on a complex type. */
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK(error_class(MPI_Allreduce(dc, dout, N, MPI_C_DOUBLE_COMPLEX, MPI_LAND,
                                    MPI_COMM_WORLD)) == MPI_ERR_OP);
    CHECK(error_class(MPI_Allreduce(ld, out, N, MPI_LONG_DOUBLE, MPI_BOR, MPI_COMM_WORLD)) ==
          MPI_ERR_OP);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

/* Sizes and extents: a pair type's size is its data (its C struct's padding is in
 * its extent); C structs holding a long double or a float complex have C's extent;
 * the sized Fortran and the C++ types exist, reduce and have their names. */
static void sizes(void) {
    int size;
    MPI_Aint lb, extent;
    struct { MPI_Datatype t; int size; MPI_Aint extent; } pairs[] = {
        {MPI_FLOAT_INT, sizeof(float) + sizeof(int), sizeof(struct { float a; int b; })},
        {MPI_DOUBLE_INT, sizeof(double) + sizeof(int), sizeof(struct { double a; int b; })},
        {MPI_LONG_INT, sizeof(long) + sizeof(int), sizeof(struct { long a; int b; })},
        {MPI_SHORT_INT, sizeof(short) + sizeof(int), sizeof(struct { short a; int b; })},
        {MPI_2INT, 2 * sizeof(int), 2 * sizeof(int)},
        {MPI_LONG_DOUBLE_INT, sizeof(long double) + sizeof(int),
         sizeof(struct { long double a; int b; })},
    };
    for (unsigned i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        OK(MPI_Type_size(pairs[i].t, &size));
        CHECK(size == pairs[i].size);
        MPI_Count xs;
        OK(MPI_Type_size_x(pairs[i].t, &xs));
        CHECK(xs == pairs[i].size);
        OK(MPI_Type_get_extent(pairs[i].t, &lb, &extent));
        CHECK(lb == 0 && extent == pairs[i].extent);
    }
    struct ldc { long double v; int i; };
    struct fcc { float complex z; char c; };
    int blocks[2] = {1, 1};
    MPI_Aint d1[2] = {0, offsetof(struct ldc, i)}, d2[2] = {0, offsetof(struct fcc, c)};
    MPI_Datatype t1[2] = {MPI_LONG_DOUBLE, MPI_INT}, t2[2] = {MPI_C_FLOAT_COMPLEX, MPI_CHAR};
    MPI_Datatype s1, s2;
    OK(MPI_Type_create_struct(2, blocks, d1, t1, &s1));
    OK(MPI_Type_create_struct(2, blocks, d2, t2, &s2));
    OK(MPI_Type_get_extent(s1, &lb, &extent));
    CHECK(extent == sizeof(struct ldc));
    OK(MPI_Type_get_extent(s2, &lb, &extent));
    CHECK(extent == sizeof(struct fcc));
    OK(MPI_Type_free(&s1));
    OK(MPI_Type_free(&s2));
    struct { MPI_Datatype t; int size; const char *name; } named[] = {
        {MPI_INTEGER1, 1, "MPI_INTEGER1"}, {MPI_INTEGER2, 2, "MPI_INTEGER2"},
        {MPI_INTEGER4, 4, "MPI_INTEGER4"}, {MPI_INTEGER8, 8, "MPI_INTEGER8"},
        {MPI_REAL4, 4, "MPI_REAL4"}, {MPI_REAL8, 8, "MPI_REAL8"},
        {MPI_COMPLEX8, 8, "MPI_COMPLEX8"}, {MPI_COMPLEX16, 16, "MPI_COMPLEX16"},
        {MPI_REAL16, 16, "MPI_REAL16"}, {MPI_COMPLEX32, 32, "MPI_COMPLEX32"},
        {MPI_INTEGER16, 16, "MPI_INTEGER16"}, {MPI_CHARACTER, 1, "MPI_CHARACTER"},
        {MPI_CXX_BOOL, 1, "MPI_CXX_BOOL"}, {MPI_CXX_FLOAT_COMPLEX, 8, "MPI_CXX_FLOAT_COMPLEX"},
        {MPI_CXX_DOUBLE_COMPLEX, 16, "MPI_CXX_DOUBLE_COMPLEX"},
        {MPI_CXX_LONG_DOUBLE_COMPLEX, (int)sizeof(long double complex),
         "MPI_CXX_LONG_DOUBLE_COMPLEX"},
    };
    for (unsigned i = 0; i < sizeof named / sizeof named[0]; i++) {
        char name[MPI_MAX_OBJECT_NAME];
        int len;
        OK(MPI_Type_size(named[i].t, &size));
        CHECK(size == named[i].size);
        OK(MPI_Type_get_name(named[i].t, name, &len));
        CHECK(strcmp(name, named[i].name) == 0);
    }
    long long i8 = me + 1, i8s;
    double r8 = me + 0.5, r8s;
    double complex c16 = me + 1.0 * I, c16s, c16e = 0;
    for (int r = 0; r < np; r++) c16e += r + 1.0 * I;
    OK(MPI_Allreduce(&i8, &i8s, 1, MPI_INTEGER8, MPI_SUM, MPI_COMM_WORLD));
    CHECK(i8s == (long long)np * (np + 1) / 2);
    OK(MPI_Allreduce(&r8, &r8s, 1, MPI_REAL8, MPI_MAX, MPI_COMM_WORLD));
    CHECK(r8s == np - 0.5);
    OK(MPI_Allreduce(&c16, &c16s, 1, MPI_COMPLEX16, MPI_SUM, MPI_COMM_WORLD));
    CHECK(c16s == c16e);
    OK(MPI_Allreduce(&c16, &c16s, 1, MPI_CXX_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD));
    CHECK(c16s == c16e);
}

/* Every member of `comm` sends its rank to every remote rank and checks what each
 * remote rank sent it. */
static void talk(MPI_Comm comm) {
    int rsize, rank;
    OK(MPI_Comm_remote_size(comm, &rsize));
    OK(MPI_Comm_rank(comm, &rank));
    for (int r = 0; r < rsize; r++) {
        int got = -1;
        OK(MPI_Sendrecv(&rank, 1, MPI_INT, r, 3, &got, 1, MPI_INT, r, 3, comm,
                        MPI_STATUS_IGNORE));
        CHECK(got == r);
    }
}

/* Groups of an inter-communicator (MPI_Comm_group: the local group;
 * MPI_Comm_remote_group), MPI_Comm_compare on inter-communicators, MPI_Comm_create on
 * one (subgroups of both sides; an empty side gives MPI_COMM_NULL everywhere), and
 * MPI_Comm_split of the same inter-communicator twice by the same colors. */
static void inter(void) {
    int even = me % 2 == 0, nlocal = even ? (np + 1) / 2 : np / 2, nremote = np - nlocal;
    MPI_Comm half, ic, dup, made, again;
    OK(MPI_Comm_split(MPI_COMM_WORLD, even, me, &half));
    OK(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, even ? 1 : 0, 41, &ic));
    MPI_Group world, local, remote;
    OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    OK(MPI_Comm_group(ic, &local));
    OK(MPI_Comm_remote_group(ic, &remote));
    int size, rank, lrank;
    OK(MPI_Group_size(local, &size));
    CHECK(size == nlocal);
    OK(MPI_Group_rank(local, &rank));
    OK(MPI_Comm_rank(ic, &lrank));
    CHECK(rank == lrank && rank == me / 2);
    OK(MPI_Group_size(remote, &size));
    CHECK(size == nremote);
    OK(MPI_Group_rank(remote, &rank));
    CHECK(rank == MPI_UNDEFINED);
    for (int r = 0; r < nremote; r++) {
        int w;
        OK(MPI_Group_translate_ranks(remote, 1, &r, world, &w));
        CHECK(w == 2 * r + (even ? 1 : 0));
    }
    int cmp;
    OK(MPI_Comm_dup(ic, &dup));
    OK(MPI_Comm_compare(ic, dup, &cmp));
    CHECK(cmp == MPI_CONGRUENT);
    OK(MPI_Comm_compare(ic, half, &cmp));
    CHECK(cmp == MPI_UNEQUAL);
    OK(MPI_Comm_compare(ic, ic, &cmp));
    CHECK(cmp == MPI_IDENT);
    /* Each side's first and last ranks, the last first. */
    int pick[2] = {nlocal - 1, 0}, npick = nlocal > 1 ? 2 : 1;
    MPI_Group sub;
    OK(MPI_Group_incl(local, npick, pick, &sub));
    OK(MPI_Comm_create(ic, sub, &made));
    int lr = me / 2;
    if (lr == 0 || lr == nlocal - 1) {
        CHECK(made != MPI_COMM_NULL);
        int inter_flag;
        OK(MPI_Comm_test_inter(made, &inter_flag));
        CHECK(inter_flag);
        OK(MPI_Comm_size(made, &size));
        CHECK(size == npick);
        OK(MPI_Comm_remote_size(made, &size));
        CHECK(size == (nremote > 1 ? 2 : 1));
        OK(MPI_Comm_rank(made, &rank));
        CHECK(rank == (lr == nlocal - 1 ? 0 : 1));
        talk(made);
        OK(MPI_Comm_free(&made));
    } else {
        CHECK(made == MPI_COMM_NULL);
    }
    /* The whole local group on one side, the empty group on the other. */
    OK(MPI_Comm_create(ic, even ? local : MPI_GROUP_EMPTY, &made));
    CHECK(made == MPI_COMM_NULL);
    /* A group that is not inside the local group is refused. */
    OK(MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN));
    CHECK(error_class(MPI_Comm_create(ic, remote, &made)) == MPI_ERR_GROUP);
    OK(MPI_Comm_set_errhandler(ic, MPI_ERRORS_ARE_FATAL));
    OK(MPI_Comm_create(dup, local, &made));
    OK(MPI_Comm_compare(ic, made, &cmp));
    CHECK(cmp == MPI_CONGRUENT);
    talk(made);
    /* Two splits of one inter-communicator by the same colors, both alive, then a
     * third after freeing them: each its own communicator. */
    OK(MPI_Comm_split(ic, 0, 0, &again));
    OK(MPI_Comm_free(&made));
    OK(MPI_Comm_split(ic, 0, 0, &made));
    talk(again);
    talk(made);
    OK(MPI_Comm_free(&made));
    OK(MPI_Comm_free(&again));
    OK(MPI_Comm_split(ic, 0, 0, &made));
    talk(made);
    OK(MPI_Comm_free(&made));
    OK(MPI_Group_free(&sub));
    OK(MPI_Group_free(&remote));
    OK(MPI_Group_free(&local));
    OK(MPI_Group_free(&world));
    OK(MPI_Comm_free(&dup));
    OK(MPI_Comm_free(&ic));
    OK(MPI_Comm_free(&half));
}

/* MPI_Mrecv and MPI_Imrecv into a type with gaps (every other int, three of them):
 * the values in their places, the gaps untouched. Rank 0 sends to rank 1. */
static void mrecv(void) {
    MPI_Datatype every_other;
    OK(MPI_Type_vector(3, 1, 2, MPI_INT, &every_other));
    OK(MPI_Type_commit(&every_other));
    if (me == 0) {
        int a[3] = {11, 12, 13}, b[3] = {21, 22, 23};
        OK(MPI_Send(a, 3, MPI_INT, 1, 8, MPI_COMM_WORLD));
        OK(MPI_Send(b, 3, MPI_INT, 1, 9, MPI_COMM_WORLD));
    } else if (me == 1) {
        for (int tag = 8; tag <= 9; tag++) {
            int buf[6] = {-1, -1, -1, -1, -1, -1}, count = -1, found = 0;
            MPI_Message msg = MPI_MESSAGE_NULL;
            MPI_Status st;
            if (tag == 8) {
                OK(MPI_Mprobe(0, tag, MPI_COMM_WORLD, &msg, &st));
            } else {
                while (!found) OK(MPI_Improbe(0, tag, MPI_COMM_WORLD, &found, &msg, &st));
            }
            OK(MPI_Get_count(&st, every_other, &count));
            CHECK(count == 1);
            if (tag == 8) {
                OK(MPI_Mrecv(buf, 1, every_other, &msg, &st));
            } else {
                MPI_Request req;
                OK(MPI_Imrecv(buf, 1, every_other, &msg, &req));
                OK(MPI_Wait(&req, &st));
            }
            CHECK(msg == MPI_MESSAGE_NULL && st.MPI_SOURCE == 0 && st.MPI_TAG == tag);
            int base = tag == 8 ? 11 : 21;
            for (int i = 0; i < 6; i++) CHECK(buf[i] == (i % 2 ? -1 : base + i / 2));
        }
    }
    OK(MPI_Type_free(&every_other));
}

/* A graph over all ranks but the last (all of them alone): node i linked to i + 1
 * and i + 2 (mod n), node 0 to itself too. MPI_Graph_create and its queries, messages
 * along the edges, a dup keeping the graph, MPI_Graph_map, the errors; MPI_Pcontrol. */
static void graph(void) {
    int n = np > 1 ? np - 1 : 1, index[64], edges[192], m = 0;
    CHECK(n <= 64);
    for (int i = 0; i < n; i++) {
        if (i == 0) edges[m++] = 0;
        edges[m++] = (i + 1) % n;
        edges[m++] = (i + 2) % n;
        index[i] = m;
    }
    MPI_Comm gc, dup;
    OK(MPI_Graph_create(MPI_COMM_WORLD, n, index, edges, 1, &gc));
    int newrank;
    OK(MPI_Graph_map(MPI_COMM_WORLD, n, index, edges, &newrank));
    if (me >= n) {
        CHECK(gc == MPI_COMM_NULL && newrank == MPI_UNDEFINED);
    } else {
        CHECK(gc != MPI_COMM_NULL && newrank == me);
        OK(MPI_Comm_dup(gc, &dup));
        int topo, nn, ne, rank, cnt, nb[3], outi[64], oute[192];
        OK(MPI_Topo_test(dup, &topo));
        CHECK(topo == MPI_GRAPH);
        OK(MPI_Graphdims_get(dup, &nn, &ne));
        CHECK(nn == n && ne == m);
        OK(MPI_Graph_get(dup, n, m, outi, oute));
        for (int i = 0; i < n; i++) CHECK(outi[i] == index[i]);
        for (int i = 0; i < m; i++) CHECK(oute[i] == edges[i]);
        OK(MPI_Comm_rank(gc, &rank));
        CHECK(rank == me);
        for (int node = 0; node < n; node++) {
            OK(MPI_Graph_neighbors_count(gc, node, &cnt));
            CHECK(cnt == (node == 0 ? 3 : 2));
        }
        OK(MPI_Graph_neighbors_count(gc, me, &cnt));
        OK(MPI_Graph_neighbors(gc, me, 3, nb));
        CHECK(nb[cnt - 2] == (me + 1) % n && nb[cnt - 1] == (me + 2) % n);
        /* Along each edge i -> j, i sends j its rank; j receives from its in-edges. */
        MPI_Request reqs[8];
        int got[8], nreq = 0, expect = 0;
        for (int k = 0; k < cnt; k++)
            OK(MPI_Isend(&me, 1, MPI_INT, nb[k], 6, gc, &reqs[nreq++]));
        for (int src = 0; src < n; src++) {
            int sn[3], sc;
            OK(MPI_Graph_neighbors_count(gc, src, &sc));
            OK(MPI_Graph_neighbors(gc, src, 3, sn));
            for (int k = 0; k < sc; k++)
                if (sn[k] == me) {
                    CHECK(nreq < 8);
                    OK(MPI_Irecv(&got[nreq], 1, MPI_INT, src, 6, gc, &reqs[nreq]));
                    nreq++;
                    expect += src;
                }
        }
        OK(MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE));
        int sum = 0;
        for (int k = cnt; k < nreq; k++) sum += got[k];
        CHECK(sum == expect);
        OK(MPI_Comm_set_errhandler(gc, MPI_ERRORS_RETURN));
        int dims[1];
        CHECK(error_class(MPI_Cartdim_get(gc, dims)) == MPI_ERR_TOPOLOGY);
        CHECK(error_class(MPI_Graph_neighbors_count(gc, n, &cnt)) == MPI_ERR_RANK);
        OK(MPI_Comm_free(&dup));
        OK(MPI_Comm_free(&gc));
    }
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int topo;
    OK(MPI_Topo_test(MPI_COMM_WORLD, &topo));
    CHECK(topo == MPI_UNDEFINED);
    CHECK(error_class(MPI_Graphdims_get(MPI_COMM_WORLD, &n, &m)) == MPI_ERR_TOPOLOGY);
    int bad_index[2] = {2, 1}, bad_edges[2] = {0, 5};
    CHECK(error_class(MPI_Graph_map(MPI_COMM_WORLD, 2 <= np ? 2 : 1, bad_index, bad_edges,
                                    &topo)) != MPI_SUCCESS);
    int one_index[1] = {1}, one_edge[1] = {1};
    CHECK(error_class(MPI_Graph_map(MPI_COMM_WORLD, 1, one_index, one_edge, &topo)) ==
          MPI_ERR_RANK);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    MPI_Comm none;
    OK(MPI_Graph_create(MPI_COMM_WORLD, 0, NULL, NULL, 0, &none));
    CHECK(none == MPI_COMM_NULL);
    OK(MPI_Pcontrol(2));
    OK(MPI_Pcontrol(0, "a tool's", 3));
}

/* `t`'s envelope is (ni, na, nt, combiner); its contents go to the arrays. */
static void envelope(MPI_Datatype t, int ni, int na, int nt, int comb, int *ints,
                     MPI_Aint *aints, MPI_Datatype *types) {
    int a, b, c, k;
    OK(MPI_Type_get_envelope(t, &a, &b, &c, &k));
    CHECK(a == ni && b == na && c == nt && k == comb);
    OK(MPI_Type_get_contents(t, 16, 16, 4, ints, aints, types));
}

/* MPI_Type_get_envelope and MPI_Type_get_contents for every constructor; a derived
 * argument comes back as a new type that still works after the original was freed. */
static void contents(void) {
    int ints[16], a, b, c, k, size;
    MPI_Aint aints[16], lb, ext;
    MPI_Datatype types[4], vec, t, back;
    OK(MPI_Type_get_envelope(MPI_DOUBLE, &a, &b, &c, &k));
    CHECK(a == 0 && b == 0 && c == 0 && k == MPI_COMBINER_NAMED);
    OK(MPI_Type_vector(3, 2, 5, MPI_INT, &vec));
    envelope(vec, 3, 0, 1, MPI_COMBINER_VECTOR, ints, aints, types);
    CHECK(ints[0] == 3 && ints[1] == 2 && ints[2] == 5 && types[0] == MPI_INT);
    OK(MPI_Type_contiguous(4, vec, &t));
    OK(MPI_Type_free(&vec));
    envelope(t, 1, 0, 1, MPI_COMBINER_CONTIGUOUS, ints, aints, types);
    CHECK(ints[0] == 4);
    back = types[0];
    envelope(back, 3, 0, 1, MPI_COMBINER_VECTOR, ints, aints, types);
    CHECK(ints[0] == 3 && ints[1] == 2 && ints[2] == 5);
    OK(MPI_Type_size(back, &size));
    OK(MPI_Type_get_extent(back, &lb, &ext));
    CHECK(size == 6 * (int)sizeof(int) && ext == 12 * (MPI_Aint)sizeof(int));
    OK(MPI_Type_commit(&back));
    int src[12], dst[12];
    for (int i = 0; i < 12; i++) src[i] = i, dst[i] = -1;
    OK(MPI_Sendrecv(src, 1, back, 0, 4, dst, 1, back, 0, 4, MPI_COMM_SELF, MPI_STATUS_IGNORE));
    for (int i = 0; i < 12; i++) CHECK(dst[i] == (i % 5 < 2 ? i : -1));
    OK(MPI_Type_free(&back));
    OK(MPI_Type_free(&t));
    OK(MPI_Type_create_hvector(2, 3, 40, MPI_SHORT, &t));
    envelope(t, 2, 1, 1, MPI_COMBINER_HVECTOR, ints, aints, types);
    CHECK(ints[0] == 2 && ints[1] == 3 && aints[0] == 40 && types[0] == MPI_SHORT);
    OK(MPI_Type_free(&t));
    int bl[3] = {1, 2, 3}, d[3] = {9, 0, 4};
    MPI_Aint ad[3] = {16, 0, 64};
    OK(MPI_Type_indexed(3, bl, d, MPI_FLOAT, &t));
    envelope(t, 7, 0, 1, MPI_COMBINER_INDEXED, ints, aints, types);
    CHECK(ints[0] == 3 && ints[3] == 3 && ints[4] == 9 && ints[6] == 4);
    OK(MPI_Type_free(&t));
    OK(MPI_Type_create_hindexed(3, bl, ad, MPI_FLOAT, &t));
    envelope(t, 4, 3, 1, MPI_COMBINER_HINDEXED, ints, aints, types);
    CHECK(ints[2] == 2 && aints[0] == 16 && aints[2] == 64);
    OK(MPI_Type_free(&t));
    OK(MPI_Type_create_indexed_block(3, 2, d, MPI_CHAR, &t));
    envelope(t, 5, 0, 1, MPI_COMBINER_INDEXED_BLOCK, ints, aints, types);
    CHECK(ints[0] == 3 && ints[1] == 2 && ints[2] == 9 && ints[4] == 4);
    OK(MPI_Type_free(&t));
    OK(MPI_Type_create_hindexed_block(3, 2, ad, MPI_CHAR, &t));
    envelope(t, 2, 3, 1, MPI_COMBINER_HINDEXED_BLOCK, ints, aints, types);
    CHECK(ints[1] == 2 && aints[1] == 0 && aints[2] == 64);
    OK(MPI_Type_free(&t));
    MPI_Datatype ts[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
    OK(MPI_Type_create_struct(3, bl, ad, ts, &t));
    envelope(t, 4, 3, 3, MPI_COMBINER_STRUCT, ints, aints, types);
    CHECK(ints[0] == 3 && ints[3] == 3 && aints[2] == 64 && types[1] == MPI_DOUBLE);
    OK(MPI_Type_free(&t));
    int sizes[2] = {4, 6}, subs[2] = {2, 3}, starts[2] = {1, 2};
    OK(MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_FORTRAN, MPI_INT, &t));
    envelope(t, 8, 0, 1, MPI_COMBINER_SUBARRAY, ints, aints, types);
    CHECK(ints[0] == 2 && ints[2] == 6 && ints[3] == 2 && ints[6] == 2 &&
          ints[7] == MPI_ORDER_FORTRAN);
    OK(MPI_Type_free(&t));
    OK(MPI_Type_create_resized(MPI_INT, -4, 12, &t));
    envelope(t, 0, 2, 1, MPI_COMBINER_RESIZED, ints, aints, types);
    CHECK(aints[0] == -4 && aints[1] == 12 && types[0] == MPI_INT);
    OK(MPI_Type_dup(t, &vec));
    envelope(vec, 0, 0, 1, MPI_COMBINER_DUP, ints, aints, types);
    OK(MPI_Type_get_extent(types[0], &lb, &ext));
    CHECK(lb == -4 && ext == 12);
    OK(MPI_Type_free(&types[0]));
    OK(MPI_Type_free(&vec));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK(error_class(MPI_Type_get_contents(MPI_INT, 1, 1, 1, ints, aints, types)) ==
          MPI_ERR_TYPE);
    CHECK(error_class(MPI_Type_get_contents(t, 0, 1, 1, ints, aints, types)) == MPI_ERR_ARG);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    OK(MPI_Type_free(&t));
}

/* Handles to Fortran integers and back: the same objects, usable in calls; a request
 * converted while pending completes through its converted handle; statuses. */
static void fint(void) {
    MPI_Comm dup;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    CHECK(MPI_Comm_f2c(MPI_Comm_c2f(MPI_COMM_WORLD)) == MPI_COMM_WORLD);
    CHECK(MPI_Comm_f2c(MPI_Comm_c2f(MPI_COMM_NULL)) == MPI_COMM_NULL);
    MPI_Fint fd = MPI_Comm_c2f(dup);
    CHECK(fd != MPI_Comm_c2f(MPI_COMM_WORLD));
    int size;
    OK(MPI_Comm_size(MPI_Comm_f2c(fd), &size));
    CHECK(size == np);
    MPI_Datatype vec;
    OK(MPI_Type_vector(2, 1, 3, MPI_INT, &vec));
    CHECK(MPI_Type_f2c(MPI_Type_c2f(vec)) == vec && MPI_Type_f2c(MPI_Type_c2f(MPI_INT)) == MPI_INT);
    MPI_Group grp;
    OK(MPI_Comm_group(dup, &grp));
    CHECK(MPI_Group_f2c(MPI_Group_c2f(grp)) == grp);
    CHECK(MPI_Op_f2c(MPI_Op_c2f(MPI_SUM)) == MPI_SUM);
    MPI_Info info;
    OK(MPI_Info_create(&info));
    CHECK(MPI_Info_f2c(MPI_Info_c2f(info)) == info);
    CHECK(MPI_Errhandler_f2c(MPI_Errhandler_c2f(MPI_ERRORS_RETURN)) == MPI_ERRORS_RETURN);
    CHECK(MPI_Message_f2c(MPI_Message_c2f(MPI_MESSAGE_NO_PROC)) == MPI_MESSAGE_NO_PROC);
    CHECK(MPI_Request_f2c(MPI_Request_c2f(MPI_REQUEST_NULL)) == MPI_REQUEST_NULL);
    int got = -1, mine = 100 + me;
    MPI_Request rq;
    OK(MPI_Irecv(&got, 1, MPI_INT, me, 7, MPI_Comm_f2c(fd), &rq));
    MPI_Fint frq = MPI_Request_c2f(rq);
    MPI_Request back = MPI_Request_f2c(frq);
    CHECK(back == rq);
    OK(MPI_Send(&mine, 1, MPI_INT, me, 7, dup));
    MPI_Status st;
    OK(MPI_Wait(&back, &st));
    CHECK(back == MPI_REQUEST_NULL && got == mine);
    /* The integer of a completed request names a freed one now. */
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_Request stale = MPI_Request_f2c(frq);
    CHECK(error_class(MPI_Wait(&stale, MPI_STATUS_IGNORE)) == MPI_ERR_REQUEST);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    MPI_Fint fs[MPI_F_STATUS_SIZE];
    MPI_Status st2;
    OK(MPI_Status_c2f(&st, fs));
    CHECK(fs[MPI_F_SOURCE] == me && fs[MPI_F_TAG] == 7);
    OK(MPI_Status_f2c(fs, &st2));
    int count = -1;
    OK(MPI_Get_count(&st2, MPI_INT, &count));
    CHECK(count == 1 && st2.MPI_SOURCE == me && st2.MPI_TAG == 7);
    OK(MPI_Info_free(&info));
    OK(MPI_Group_free(&grp));
    OK(MPI_Type_free(&vec));
    OK(MPI_Comm_free(&dup));
}

/* MPI_Comm_create with disjoint groups in one call (MPI 2.2): the even ranks pass the
 * group of the even ranks in reverse order, the odd ranks that of the odd ones; each
 * gets a communicator of its own group, ordered as the group. */
static void create(void) {
    MPI_Group world, mine;
    MPI_Comm c;
    OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    int parity = me % 2, n = (np - parity + 1) / 2, ranks[64];
    CHECK(n <= 64);
    for (int i = 0; i < n; i++) ranks[i] = parity + 2 * (n - 1 - i);
    OK(MPI_Group_incl(world, n, ranks, &mine));
    OK(MPI_Comm_create(MPI_COMM_WORLD, mine, &c));
    CHECK(c != MPI_COMM_NULL);
    int size, rank, sum = 0;
    OK(MPI_Comm_size(c, &size));
    OK(MPI_Comm_rank(c, &rank));
    CHECK(size == n && rank == n - 1 - me / 2);
    OK(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, c));
    int expect = 0;
    for (int i = 0; i < n; i++) expect += ranks[i];
    CHECK(sum == expect);
    OK(MPI_Comm_free(&c));
    OK(MPI_Group_free(&mine));
    OK(MPI_Group_free(&world));
}

static int handler_calls, handler_code;

static void record(MPI_Comm *comm, int *code, ...) {
    (void)comm;
    handler_calls++;
    handler_code = *code;
}

/* Every error class has a string; classes, codes and strings the program adds. */
static void errors(void) {
    char s[MPI_MAX_ERROR_STRING];
    int len, cls;
    for (int c = MPI_SUCCESS; c <= MPI_ERR_ERRHANDLER; c++) {
        OK(MPI_Error_string(c, s, &len));
        CHECK(len > 0 && (int)strlen(s) == len);
        OK(MPI_Error_class(c, &cls));
        CHECK(cls == c);
    }
    OK(MPI_Error_string(MPI_ERR_TOPOLOGY, s, &len));
    CHECK(strstr(s, "MPI_ERR_TOPOLOGY") != NULL);
    OK(MPI_Error_string(MPI_ERR_DIMS, s, &len));
    CHECK(strstr(s, "MPI_ERR_DIMS") != NULL);
    int c1, c2, k1, k2, k3;
    OK(MPI_Add_error_class(&c1));
    OK(MPI_Add_error_class(&c2));
    OK(MPI_Add_error_code(c1, &k1));
    OK(MPI_Add_error_code(c1, &k2));
    OK(MPI_Add_error_code(MPI_ERR_ARG, &k3));
    int v[5] = {c1, c2, k1, k2, k3};
    for (int i = 0; i < 5; i++) {
        CHECK(v[i] > MPI_ERR_LASTCODE);
        for (int j = 0; j < i; j++) CHECK(v[i] != v[j]);
    }
    OK(MPI_Error_class(c1, &cls));
    CHECK(cls == c1);
    OK(MPI_Error_class(k2, &cls));
    CHECK(cls == c1);
    OK(MPI_Error_class(k3, &cls));
    CHECK(cls == MPI_ERR_ARG);
    OK(MPI_Error_string(k1, s, &len));
    CHECK(len == 0 && s[0] == 0);
    OK(MPI_Add_error_string(k1, "first"));
    OK(MPI_Add_error_string(k1, "the disk is full"));
    OK(MPI_Add_error_string(c2, "a class of its own"));
    OK(MPI_Error_string(k1, s, &len));
    CHECK(strcmp(s, "the disk is full") == 0 && len == 16);
    OK(MPI_Error_string(c2, s, &len));
    CHECK(strcmp(s, "a class of its own") == 0);
    int *last, flag;
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag));
    CHECK(flag);
    for (int i = 0; i < 5; i++) CHECK(*last >= v[i]);
    /* A user handler gets the added code. */
    MPI_Errhandler eh;
    OK(MPI_Comm_create_errhandler(record, &eh));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, eh));
    OK(MPI_Comm_call_errhandler(MPI_COMM_SELF, k2));
    CHECK(handler_calls == 1 && handler_code == k2);
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    OK(MPI_Errhandler_free(&eh));
    /* Predefined values cannot take strings; a class goes only after its codes, a code
     * only after its string. (The library raises errors of calls without a
     * communicator on MPI_COMM_WORLD.) */
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK(error_class(MPI_Add_error_string(MPI_ERR_ARG, "mine")) == MPI_ERR_ARG);
    CHECK(error_class(MPI_Add_error_code(k1, &k3)) == MPI_ERR_ARG);
    CHECK(error_class(MPI_Remove_error_class(c1)) == MPI_ERR_ARG);
    CHECK(error_class(MPI_Remove_error_code(k1)) == MPI_ERR_ARG);
    CHECK(error_class(MPI_Remove_error_string(k2)) == MPI_ERR_ARG);
    OK(MPI_Remove_error_string(k1));
    OK(MPI_Remove_error_code(k1));
    OK(MPI_Remove_error_code(k2));
    OK(MPI_Remove_error_class(c1));
    CHECK(error_class(MPI_Error_class(k1, &cls)) == MPI_ERR_ARG);
    OK(MPI_Remove_error_string(c2));
    OK(MPI_Remove_error_class(c2));
    OK(MPI_Remove_error_code(k3));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

int main(int argc, char **argv) {
    const char *part = argc > 1 ? argv[1] : "all";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    if (strcmp(part, "fatal_user_code") == 0) {
        /* The first value added: 0x4000, whose low byte is 0. */
        int c;
        OK(MPI_Add_error_class(&c));
        MPI_Comm_call_errhandler(MPI_COMM_WORLD, c);
        printf("rank %d: still alive\n", me);
        return 0;
    }
    int all = strcmp(part, "all") == 0;
    if ((all || strcmp(part, "spin") == 0) && np > 1) spin();
    if (all || strcmp(part, "ops") == 0) ops();
    if (all || strcmp(part, "sizes") == 0) sizes();
    if (all || strcmp(part, "contents") == 0) contents();
    if (all || strcmp(part, "fint") == 0) fint();
    if ((all || strcmp(part, "inter") == 0) && np > 1) inter();
    if ((all || strcmp(part, "mrecv") == 0) && np > 1) mrecv();
    if (all || strcmp(part, "create") == 0) create();
    if (all || strcmp(part, "graph") == 0) graph();
    if (all || strcmp(part, "errors") == 0) errors();
    OK(MPI_Finalize());
    printf("rank %d: MPICH FOUND2 OK\n", me);
    return 0;
}
