/*
 * MPI 4.1's large-count (_c) datatype constructors, MPI-IO calls and user operations.
 *
 * Types: each _c constructor builds a type that is compared with the same type built
 * by its int constructor: size, extent and true extent (MPI_Count queries), the bytes
 * MPI_Pack makes of a buffer through each, and a send/receive on MPI_COMM_SELF
 * through the _c type, unpacked and compared. Their decoding (MPI 4.1 §5.1.13):
 * MPI_Type_get_envelope_c/contents_c report the MPI_Count arguments as large counts
 * (int arguments as integers, no addresses), the int MPI_Type_get_envelope/contents
 * refuse such a type with MPI_ERR_TYPE, and the _c queries describe int-built and
 * predefined types too. Counts beyond INT_MAX are refused with MPI_ERR_COUNT.
 *
 * Files (in a directory rank 0 makes with mkdtemp under $TMPDIR or /tmp, removed at
 * the end): every _c read and write, at explicit offsets, at the individual and the
 * shared pointer, blocking, non-blocking and split collective, each block written by
 * one form and read back by another (a neighbour's block, after sync-barrier-sync),
 * the statuses counting the items; counts beyond INT_MAX are MPI_ERR_COUNT on the
 * file's handler; MPI_File_get_type_extent_c.
 *
 * Operations: MPI_Op_create_c functions (an MPI_Count length) in MPI_Reduce_local (the
 * length and datatype they get checked), MPI_Allreduce, MPI_Reduce, MPI_Scan and the
 * non-blocking MPI_Iallreduce/MPI_Ireduce, one commutative on ints, one not on a type
 * with a gap (affine maps composed in rank order); MPI_Op_commutative; MPI_Op_free.
 * Each rank prints "rank R: LARGE TYPES OK".
 */
#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int me = -1;
static int np;

#include "check.h"

static int class_of(int rc) {
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}

#define WORDS 1024
static int src[WORDS];

/* `c` (made by a _c constructor) and `i` (by the int one) are the same type: the same
 * sizes and bounds, the same packed bytes of `src`, and a message sent through `c`
 * lands where `i` says. Both are freed. */
static void same(MPI_Datatype c, MPI_Datatype i, const char *what) {
    OK(MPI_Type_commit(&c));
    OK(MPI_Type_commit(&i));
    MPI_Count sc, si, lbc, lbi, exc, exi;
    OK(MPI_Type_size_x(c, &sc));
    OK(MPI_Type_size_x(i, &si));
    CHECK(sc == si && sc > 0);
    OK(MPI_Type_get_extent_x(c, &lbc, &exc));
    OK(MPI_Type_get_extent_x(i, &lbi, &exi));
    CHECK(lbc == lbi && exc == exi);
    OK(MPI_Type_get_true_extent_x(c, &lbc, &exc));
    OK(MPI_Type_get_true_extent_x(i, &lbi, &exi));
    CHECK(lbc == lbi && exc == exi);
    CHECK(lbc >= 0 && 2 * (exc + lbc) <= (MPI_Count)sizeof src);
    static char pc[2 * sizeof src], pi[2 * sizeof src];
    int posc = 0, posi = 0;
    OK(MPI_Pack(src, 2, c, pc, sizeof pc, &posc, MPI_COMM_SELF));
    OK(MPI_Pack(src, 2, i, pi, sizeof pi, &posi, MPI_COMM_SELF));
    CHECK(posc == posi && posc == 2 * sc);
    if (memcmp(pc, pi, (size_t)posc) != 0) {
        fprintf(stderr, "rank %d: %s packs differently\n", me, what);
        exit(1);
    }
    static int dst[WORDS];
    memset(dst, 0, sizeof dst);
    OK(MPI_Sendrecv(src, 2, c, 0, 7, dst, 2, c, 0, 7, MPI_COMM_SELF, MPI_STATUS_IGNORE));
    posi = 0;
    OK(MPI_Pack(dst, 2, i, pi, sizeof pi, &posi, MPI_COMM_SELF));
    CHECK(memcmp(pc, pi, (size_t)posc) == 0);
    OK(MPI_Type_free(&c));
    OK(MPI_Type_free(&i));
}

/* The envelope of `t` by MPI_Type_get_envelope_c. */
static void envelope(MPI_Datatype t, MPI_Count ni, MPI_Count na, MPI_Count nc, MPI_Count nd,
                     int combiner) {
    MPI_Count a = -1, b = -1, c = -1, d = -1;
    int k = -1;
    OK(MPI_Type_get_envelope_c(t, &a, &b, &c, &d, &k));
    CHECK(a == ni && b == na && c == nc && d == nd && k == combiner);
}

/* The contents of `t` (made by a _c constructor): its large counts `lc`, integers
 * `ints`, and type arguments; the int queries refuse it. */
static void contents(MPI_Datatype t, int ni, const int *ints, int nc, const MPI_Count *lc,
                     int nd, const MPI_Datatype *types) {
    int ia[32];
    MPI_Aint aa[4];
    MPI_Count ca[32];
    MPI_Datatype ta[4];
    CHECK(ni <= 32 && nc <= 32 && nd <= 4);
    OK(MPI_Type_get_contents_c(t, 32, 4, 32, 4, ia, aa, ca, ta));
    for (int k = 0; k < ni; k++) CHECK(ia[k] == ints[k]);
    for (int k = 0; k < nc; k++) CHECK(ca[k] == lc[k]);
    for (int k = 0; k < nd; k++) {
        /* Predefined types come back as they are; derived ones as new handles. */
        CHECK(ta[k] == types[k]);
    }
    int x = -1, y = -1, z = -1, w = -1;
    CHECK(class_of(MPI_Type_get_envelope(t, &x, &y, &z, &w)) == MPI_ERR_TYPE);
    CHECK(class_of(MPI_Type_get_contents(t, 32, 4, 4, ia, aa, ta)) == MPI_ERR_TYPE);
    /* Arrays too short. */
    if (nc > 0) CHECK(MPI_Type_get_contents_c(t, 32, 4, nc - 1, 4, ia, aa, ca, ta) != MPI_SUCCESS);
}

static void constructors(void) {
    MPI_Datatype c, i;

    OK(MPI_Type_contiguous_c(5, MPI_INT, &c));
    OK(MPI_Type_contiguous(5, MPI_INT, &i));
    envelope(c, 0, 0, 1, 1, MPI_COMBINER_CONTIGUOUS);
    const MPI_Count contig[] = {5};
    contents(c, 0, NULL, 1, contig, 1, (MPI_Datatype[]){MPI_INT});
    same(c, i, "contiguous");

    OK(MPI_Type_vector_c(3, 2, 4, MPI_INT, &c));
    OK(MPI_Type_vector(3, 2, 4, MPI_INT, &i));
    envelope(c, 0, 0, 3, 1, MPI_COMBINER_VECTOR);
    envelope(i, 3, 0, 0, 1, MPI_COMBINER_VECTOR); /* an int-built type, by the _c query */
    const MPI_Count vec[] = {3, 2, 4};
    contents(c, 0, NULL, 3, vec, 1, (MPI_Datatype[]){MPI_INT});
    same(c, i, "vector");

    OK(MPI_Type_create_hvector_c(3, 2, 20, MPI_INT, &c));
    OK(MPI_Type_create_hvector(3, 2, 20, MPI_INT, &i));
    envelope(c, 0, 0, 3, 1, MPI_COMBINER_HVECTOR);
    const MPI_Count hvec[] = {3, 2, 20};
    contents(c, 0, NULL, 3, hvec, 1, (MPI_Datatype[]){MPI_INT});
    same(c, i, "hvector");

    const MPI_Count bl_c[] = {1, 2, 3}, d_c[] = {0, 3, 7};
    const int bl_i[] = {1, 2, 3}, d_i[] = {0, 3, 7};
    OK(MPI_Type_indexed_c(3, bl_c, d_c, MPI_INT, &c));
    OK(MPI_Type_indexed(3, bl_i, d_i, MPI_INT, &i));
    envelope(c, 0, 0, 7, 1, MPI_COMBINER_INDEXED);
    const MPI_Count idx[] = {3, 1, 2, 3, 0, 3, 7};
    contents(c, 0, NULL, 7, idx, 1, (MPI_Datatype[]){MPI_INT});
    same(c, i, "indexed");

    const MPI_Count hd_c[] = {0, 12, 40};
    const MPI_Aint hd_i[] = {0, 12, 40};
    OK(MPI_Type_create_hindexed_c(3, bl_c, hd_c, MPI_INT, &c));
    OK(MPI_Type_create_hindexed(3, bl_i, hd_i, MPI_INT, &i));
    envelope(c, 0, 0, 7, 1, MPI_COMBINER_HINDEXED);
    const MPI_Count hidx[] = {3, 1, 2, 3, 0, 12, 40};
    contents(c, 0, NULL, 7, hidx, 1, (MPI_Datatype[]){MPI_INT});
    same(c, i, "hindexed");

    const MPI_Count bd_c[] = {0, 4, 9};
    const int bd_i[] = {0, 4, 9};
    OK(MPI_Type_create_indexed_block_c(3, 2, bd_c, MPI_INT, &c));
    OK(MPI_Type_create_indexed_block(3, 2, bd_i, MPI_INT, &i));
    envelope(c, 0, 0, 5, 1, MPI_COMBINER_INDEXED_BLOCK);
    const MPI_Count ib[] = {3, 2, 0, 4, 9};
    contents(c, 0, NULL, 5, ib, 1, (MPI_Datatype[]){MPI_INT});
    same(c, i, "indexed_block");

    const MPI_Count hbd_c[] = {0, 16, 40};
    const MPI_Aint hbd_i[] = {0, 16, 40};
    OK(MPI_Type_create_hindexed_block_c(3, 2, hbd_c, MPI_INT, &c));
    OK(MPI_Type_create_hindexed_block(3, 2, hbd_i, MPI_INT, &i));
    envelope(c, 0, 0, 5, 1, MPI_COMBINER_HINDEXED_BLOCK);
    const MPI_Count hib[] = {3, 2, 0, 16, 40};
    contents(c, 0, NULL, 5, hib, 1, (MPI_Datatype[]){MPI_INT});
    same(c, i, "hindexed_block");

    /* A struct whose second member is a derived (int-built) vector. */
    MPI_Datatype v;
    OK(MPI_Type_vector(2, 1, 3, MPI_SHORT, &v));
    const MPI_Count sbl_c[] = {2, 1}, sd_c[] = {0, 16};
    const int sbl_i[] = {2, 1};
    const MPI_Aint sd_i[] = {0, 16};
    const MPI_Datatype st[] = {MPI_INT, v};
    OK(MPI_Type_create_struct_c(2, sbl_c, sd_c, st, &c));
    OK(MPI_Type_create_struct(2, sbl_i, sd_i, st, &i));
    envelope(c, 0, 0, 5, 2, MPI_COMBINER_STRUCT);
    {
        MPI_Count ca[5];
        int ia[1];
        MPI_Aint aa[1];
        MPI_Datatype ta[2];
        OK(MPI_Type_get_contents_c(c, 0, 0, 5, 2, ia, aa, ca, ta));
        const MPI_Count want[] = {2, 2, 1, 0, 16};
        for (int k = 0; k < 5; k++) CHECK(ca[k] == want[k]);
        CHECK(ta[0] == MPI_INT);
        envelope(ta[1], 3, 0, 0, 1, MPI_COMBINER_VECTOR); /* the vector, a new handle */
        OK(MPI_Type_free(&ta[1]));
    }
    OK(MPI_Type_free(&v));
    same(c, i, "struct");

    const MPI_Count sz_c[] = {6, 8}, sub_c[] = {2, 3}, at_c[] = {1, 2};
    const int sz_i[] = {6, 8}, sub_i[] = {2, 3}, at_i[] = {1, 2};
    OK(MPI_Type_create_subarray_c(2, sz_c, sub_c, at_c, MPI_ORDER_C, MPI_INT, &c));
    OK(MPI_Type_create_subarray(2, sz_i, sub_i, at_i, MPI_ORDER_C, MPI_INT, &i));
    envelope(c, 2, 0, 6, 1, MPI_COMBINER_SUBARRAY);
    const int sa_ints[] = {2, MPI_ORDER_C};
    const MPI_Count sa[] = {6, 8, 2, 3, 1, 2};
    contents(c, 2, sa_ints, 6, sa, 1, (MPI_Datatype[]){MPI_INT});
    same(c, i, "subarray");

    const MPI_Count gs_c[] = {8, 6};
    const int gs_i[] = {8, 6};
    const int dist[] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC};
    const int darg[] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, ps[] = {2, 2};
    OK(MPI_Type_create_darray_c(4, 1, 2, gs_c, dist, darg, ps, MPI_ORDER_C, MPI_INT, &c));
    OK(MPI_Type_create_darray(4, 1, 2, gs_i, dist, darg, ps, MPI_ORDER_C, MPI_INT, &i));
    envelope(c, 3 * 2 + 4, 0, 2, 1, MPI_COMBINER_DARRAY);
    const int da_ints[] = {4, 1, 2, dist[0], dist[1], darg[0], darg[1], 2, 2, MPI_ORDER_C};
    contents(c, 10, da_ints, 2, gs_c, 1, (MPI_Datatype[]){MPI_INT});
    same(c, i, "darray");

    OK(MPI_Type_create_resized_c(MPI_INT, 0, 12, &c));
    OK(MPI_Type_create_resized(MPI_INT, 0, 12, &i));
    envelope(c, 0, 0, 2, 1, MPI_COMBINER_RESIZED);
    const MPI_Count rs[] = {0, 12};
    contents(c, 0, NULL, 2, rs, 1, (MPI_Datatype[]){MPI_INT});
    same(c, i, "resized");

    /* A predefined type, by the _c envelope; and no contents. */
    envelope(MPI_DOUBLE, 0, 0, 0, 0, MPI_COMBINER_NAMED);
}

/* Counts beyond an int are MPI_ERR_COUNT (MPI_ERRORS_RETURN is set on the world). */
static void beyond_int(void) {
    MPI_Datatype t = MPI_DATATYPE_NULL;
    const MPI_Count big = (MPI_Count)INT_MAX + 1;
    CHECK(class_of(MPI_Type_contiguous_c(big, MPI_INT, &t)) == MPI_ERR_COUNT);
    CHECK(class_of(MPI_Type_vector_c(2, 1, big, MPI_INT, &t)) == MPI_ERR_COUNT);
    const MPI_Count bl[] = {1, big}, d[] = {0, 4};
    CHECK(class_of(MPI_Type_indexed_c(2, bl, d, MPI_INT, &t)) == MPI_ERR_COUNT);
    const MPI_Count sz[] = {big, 2}, sub[] = {1, 1}, at[] = {0, 0};
    CHECK(class_of(MPI_Type_create_subarray_c(2, sz, sub, at, MPI_ORDER_C, MPI_INT, &t)) ==
          MPI_ERR_COUNT);
    CHECK(t == MPI_DATATYPE_NULL);
    /* A negative count is refused by the int form as always. */
    CHECK(MPI_Type_contiguous_c(-1, MPI_INT, &t) != MPI_SUCCESS);
}

/* ---- MPI-IO ---- */

#define N 16 /* ints per block */
static char dir[512];

static void path(char *out, const char *name) { snprintf(out, 600, "%s/%s", dir, name); }

/* Block `r` of region `g`: N ints that say which they are. */
static void fill(int *b, int g, int r) {
    for (int k = 0; k < N; k++) b[k] = (g * 64 + r) * 100 + k;
}

/* Which rank's block of region `g` `b` is (-1: none). */
static int whose(const int *b, int g) {
    int r = b[0] / 100 - g * 64;
    if (r < 0 || r >= np) return -1;
    for (int k = 0; k < N; k++)
        if (b[k] != (g * 64 + r) * 100 + k) return -1;
    return r;
}

static MPI_Offset at(int g, int r) { return ((MPI_Offset)g * np + r) * N * (MPI_Offset)sizeof(int); }

/* What the others wrote is visible (MPI 4.1 §14.6.1: sync, barrier, sync). */
static void visible(MPI_File fh) {
    OK(MPI_File_sync(fh));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_File_sync(fh));
}

static void got(MPI_Status *st, int n) {
    int c = -1;
    OK(MPI_Get_count(st, MPI_INT, &c));
    CHECK(c == n);
}

/* Region g's block of rank `r` reads back as written. */
static void read_back(MPI_File fh, int g, int r) {
    int b[N];
    MPI_Status st;
    memset(b, 0, sizeof b);
    OK(MPI_File_read_at_c(fh, at(g, r), b, N, MPI_INT, &st));
    got(&st, N);
    CHECK(whose(b, g) == r);
}

/* Explicit offsets and the individual pointer, blocking, non-blocking and split. */
static void private_pointers(MPI_File fh) {
    int w[N], b[N];
    MPI_Status st;
    MPI_Request rq;
    const int right = (me + 1) % np;

    fill(w, 0, me);
    OK(MPI_File_write_at_c(fh, at(0, me), w, N, MPI_INT, &st));
    got(&st, N);
    fill(w, 1, me);
    OK(MPI_File_write_at_all_c(fh, at(1, me), w, N, MPI_INT, &st));
    fill(w, 2, me);
    OK(MPI_File_seek(fh, at(2, me), MPI_SEEK_SET));
    OK(MPI_File_write_c(fh, w, N, MPI_INT, &st));
    got(&st, N);
    fill(w, 3, me);
    OK(MPI_File_seek(fh, at(3, me), MPI_SEEK_SET));
    OK(MPI_File_write_all_c(fh, w, N, MPI_INT, &st));
    fill(w, 4, me);
    OK(MPI_File_iwrite_at_c(fh, at(4, me), w, N, MPI_INT, &rq));
    OK(MPI_Wait(&rq, &st));
    got(&st, N);
    fill(w, 5, me);
    OK(MPI_File_iwrite_at_all_c(fh, at(5, me), w, N, MPI_INT, &rq));
    OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    fill(w, 6, me);
    OK(MPI_File_seek(fh, at(6, me), MPI_SEEK_SET));
    OK(MPI_File_iwrite_c(fh, w, N, MPI_INT, &rq));
    OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    fill(w, 7, me);
    OK(MPI_File_seek(fh, at(7, me), MPI_SEEK_SET));
    OK(MPI_File_iwrite_all_c(fh, w, N, MPI_INT, &rq));
    OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    fill(w, 8, me);
    OK(MPI_File_write_at_all_begin_c(fh, at(8, me), w, N, MPI_INT));
    OK(MPI_File_write_at_all_end(fh, w, &st));
    got(&st, N);
    fill(w, 9, me);
    OK(MPI_File_seek(fh, at(9, me), MPI_SEEK_SET));
    OK(MPI_File_write_all_begin_c(fh, w, N, MPI_INT));
    OK(MPI_File_write_all_end(fh, w, &st));
    got(&st, N);
    visible(fh);

    /* Each region read back through the other forms, the right neighbour's block. */
    for (int g = 0; g < 10; g++) read_back(fh, g, right);
    OK(MPI_File_read_at_all_c(fh, at(1, right), b, N, MPI_INT, &st));
    got(&st, N);
    CHECK(whose(b, 1) == right);
    OK(MPI_File_seek(fh, at(2, right), MPI_SEEK_SET));
    OK(MPI_File_read_c(fh, b, N, MPI_INT, &st));
    got(&st, N);
    CHECK(whose(b, 2) == right);
    OK(MPI_File_seek(fh, at(3, right), MPI_SEEK_SET));
    OK(MPI_File_read_all_c(fh, b, N, MPI_INT, &st));
    CHECK(whose(b, 3) == right);
    OK(MPI_File_iread_at_c(fh, at(4, right), b, N, MPI_INT, &rq));
    OK(MPI_Wait(&rq, &st));
    got(&st, N);
    CHECK(whose(b, 4) == right);
    OK(MPI_File_iread_at_all_c(fh, at(5, right), b, N, MPI_INT, &rq));
    OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    CHECK(whose(b, 5) == right);
    OK(MPI_File_seek(fh, at(6, right), MPI_SEEK_SET));
    OK(MPI_File_iread_c(fh, b, N, MPI_INT, &rq));
    OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    CHECK(whose(b, 6) == right);
    OK(MPI_File_seek(fh, at(7, right), MPI_SEEK_SET));
    OK(MPI_File_iread_all_c(fh, b, N, MPI_INT, &rq));
    OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    CHECK(whose(b, 7) == right);
    OK(MPI_File_read_at_all_begin_c(fh, at(8, right), b, N, MPI_INT));
    OK(MPI_File_read_at_all_end(fh, b, &st));
    got(&st, N);
    CHECK(whose(b, 8) == right);
    OK(MPI_File_seek(fh, at(9, right), MPI_SEEK_SET));
    OK(MPI_File_read_all_begin_c(fh, b, N, MPI_INT));
    OK(MPI_File_read_all_end(fh, b, &st));
    got(&st, N);
    CHECK(whose(b, 9) == right);

    /* A count beyond an int: MPI_ERR_COUNT on the file's handler (MPI_ERRORS_RETURN,
     * the default for files); nothing moves. */
    const MPI_Count big = (MPI_Count)INT_MAX + 1;
    CHECK(class_of(MPI_File_read_at_c(fh, 0, b, big, MPI_INT, &st)) == MPI_ERR_COUNT);
    CHECK(class_of(MPI_File_write_c(fh, b, big, MPI_INT, &st)) == MPI_ERR_COUNT);
    CHECK(class_of(MPI_File_iread_c(fh, b, big, MPI_INT, &rq)) == MPI_ERR_COUNT);
    CHECK(class_of(MPI_File_read_all_begin_c(fh, b, big, MPI_INT)) == MPI_ERR_COUNT);

    /* The type extent, as the MPI_Count it is. */
    MPI_Datatype v;
    OK(MPI_Type_vector(3, 1, 5, MPI_DOUBLE, &v));
    MPI_Count ext = -1, lb, want;
    OK(MPI_File_get_type_extent_c(fh, v, &ext));
    OK(MPI_Type_get_extent_x(v, &lb, &want));
    CHECK(ext == want && ext == 11 * 8);
    OK(MPI_Type_free(&v));
}

/* Each rank's block of region `g` appears exactly once in it. */
static void each_once(MPI_File fh, int g) {
    int seen[64] = {0};
    for (int r = 0; r < np; r++) {
        int b[N];
        OK(MPI_File_read_at(fh, at(g, r), b, N, MPI_INT, MPI_STATUS_IGNORE));
        int who = whose(b, g);
        CHECK(who >= 0 && !seen[who]);
        seen[who] = 1;
    }
}

/* One block read at the shared pointer (from region `g`'s start) by each rank: the
 * ranks together read every block once. */
static void each_read_once(int g, const int *b) {
    int who = whose(b, g), all[64];
    CHECK(who >= 0);
    OK(MPI_Allgather(&who, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD));
    int seen[64] = {0};
    for (int r = 0; r < np; r++) {
        CHECK(!seen[all[r]]);
        seen[all[r]] = 1;
    }
}

/* The shared pointer: ordered (rank order), plain, non-blocking and split. */
static void shared_pointer(MPI_File fh) {
    int w[N], b[N];
    MPI_Status st;
    MPI_Request rq;
    fill(w, 0, me);
    OK(MPI_File_write_ordered_c(fh, w, N, MPI_INT, &st));
    got(&st, N);
    fill(w, 1, me);
    OK(MPI_File_write_ordered_begin_c(fh, w, N, MPI_INT));
    OK(MPI_File_write_ordered_end(fh, w, &st));
    got(&st, N);
    visible(fh);
    for (int g = 0; g < 2; g++)
        for (int r = 0; r < np; r++) read_back(fh, g, r);
    OK(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
    OK(MPI_File_read_ordered_c(fh, b, N, MPI_INT, &st));
    got(&st, N);
    CHECK(whose(b, 0) == me);
    OK(MPI_File_read_ordered_begin_c(fh, b, N, MPI_INT));
    OK(MPI_File_read_ordered_end(fh, b, &st));
    got(&st, N);
    CHECK(whose(b, 1) == me);
    OK(MPI_Barrier(MPI_COMM_WORLD));

    /* The shared pointer is at region 2: plain, then non-blocking. */
    fill(w, 2, me);
    OK(MPI_File_write_shared_c(fh, w, N, MPI_INT, &st));
    got(&st, N);
    visible(fh);
    fill(w, 3, me);
    OK(MPI_File_iwrite_shared_c(fh, w, N, MPI_INT, &rq));
    OK(MPI_Wait(&rq, &st));
    got(&st, N);
    visible(fh);
    each_once(fh, 2);
    each_once(fh, 3);
    OK(MPI_File_seek_shared(fh, at(2, 0), MPI_SEEK_SET));
    OK(MPI_File_read_shared_c(fh, b, N, MPI_INT, &st));
    got(&st, N);
    each_read_once(2, b);
    OK(MPI_File_seek_shared(fh, at(3, 0), MPI_SEEK_SET));
    OK(MPI_File_iread_shared_c(fh, b, N, MPI_INT, &rq));
    OK(MPI_Wait(&rq, &st));
    got(&st, N);
    each_read_once(3, b);
}

static void files(void) {
    if (me == 0) {
        const char *t = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/sf-large-types-XXXXXX", t && *t ? t : "/tmp");
        CHECK(mkdtemp(dir) != NULL);
    }
    OK(MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD));
    char p[600], q[600];
    MPI_File fh;
    path(p, "private");
    OK(MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    private_pointers(fh);
    OK(MPI_File_close(&fh));
    path(q, "shared");
    OK(MPI_File_open(MPI_COMM_WORLD, q, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    shared_pointer(fh);
    OK(MPI_File_close(&fh));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) {
        OK(MPI_File_delete(p, MPI_INFO_NULL));
        OK(MPI_File_delete(q, MPI_INFO_NULL));
        CHECK(rmdir(dir) == 0);
    }
}

/* ---- User operations made by MPI_Op_create_c ---- */

static MPI_Count last_len;
static MPI_Datatype last_dt;

/* inoutvec += invec on ints; remembers the length and type it was given. */
static void add_c(void *in, void *inout, MPI_Count *len, MPI_Datatype *dt) {
    last_len = *len;
    last_dt = *dt;
    const int *a = in;
    int *b = inout;
    for (MPI_Count k = 0; k < *len; k++) b[k] += a[k];
}

/* Items are affine maps x -> m x + c on unsigned ints (m at 0, c at 8: a type with a
 * gap); inoutvec = inoutvec after invec (invec: the lower ranks'), not commutative. */
static void affine_c(void *in, void *inout, MPI_Count *len, MPI_Datatype *dt) {
    last_len = *len;
    last_dt = *dt;
    const unsigned *a = in;
    unsigned *b = inout;
    for (MPI_Count k = 0; k < *len; k++) {
        const unsigned *x = a + 3 * k;
        unsigned *y = b + 3 * k;
        y[2] = y[0] * x[2] + y[2];
        y[0] = y[0] * x[0];
    }
}

/* Rank r's i-th map. */
static void map_of(unsigned *it, int r, int i) {
    it[0] = (unsigned)(r + 2 + i);
    it[1] = 0xdeadu;
    it[2] = (unsigned)(3 * r + 1 + i);
}

/* The composition of ranks 0..last's i-th maps, in rank order. */
static void fold(unsigned *it, int last, int i) {
    map_of(it, 0, i);
    for (int r = 1; r <= last; r++) {
        unsigned m[3];
        map_of(m, r, i);
        it[2] = m[0] * it[2] + m[2];
        it[0] = m[0] * it[0];
    }
}

static void operations(void) {
    MPI_Op add, aff;
    int commute = -1;
    OK(MPI_Op_create_c(add_c, 1, &add));
    OK(MPI_Op_create_c(affine_c, 0, &aff));
    OK(MPI_Op_commutative(add, &commute));
    CHECK(commute == 1);
    OK(MPI_Op_commutative(aff, &commute));
    CHECK(commute == 0);

    /* Reduce_local: the length and type the function gets. */
    int in[5], io[5];
    for (int k = 0; k < 5; k++) {
        in[k] = k;
        io[k] = 100 * k;
    }
    last_len = -1;
    OK(MPI_Reduce_local(in, io, 5, MPI_INT, add));
    CHECK(last_len == 5 && last_dt == MPI_INT);
    for (int k = 0; k < 5; k++) CHECK(io[k] == 101 * k);

    /* Allreduce, Reduce, Scan and Iallreduce of ints. */
    int v[7], r[7];
    for (int k = 0; k < 7; k++) v[k] = me * 10 + k;
    last_len = 0;
    OK(MPI_Allreduce(v, r, 7, MPI_INT, add, MPI_COMM_WORLD));
    CHECK(last_len == 0 || (last_len == 7 && last_dt == MPI_INT));
    for (int k = 0; k < 7; k++) CHECK(r[k] == 10 * np * (np - 1) / 2 + np * k);
    memset(r, 0, sizeof r);
    OK(MPI_Reduce(v, r, 7, MPI_INT, add, np - 1, MPI_COMM_WORLD));
    if (me == np - 1)
        for (int k = 0; k < 7; k++) CHECK(r[k] == 10 * np * (np - 1) / 2 + np * k);
    OK(MPI_Scan(v, r, 7, MPI_INT, add, MPI_COMM_WORLD));
    for (int k = 0; k < 7; k++) CHECK(r[k] == 10 * me * (me + 1) / 2 + (me + 1) * k);
    MPI_Request rq;
    memset(r, 0, sizeof r);
    OK(MPI_Iallreduce(v, r, 7, MPI_INT, add, MPI_COMM_WORLD, &rq));
    OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    for (int k = 0; k < 7; k++) CHECK(r[k] == 10 * np * (np - 1) / 2 + np * k);

    /* A non-commutative operation on a type with a gap: rank order kept. */
    MPI_Datatype pair;
    OK(MPI_Type_vector(2, 1, 2, MPI_UNSIGNED, &pair));
    OK(MPI_Type_commit(&pair));
    enum { M = 3 };
    unsigned mine[3 * M], out[3 * M], want[3];
    for (int i = 0; i < M; i++) map_of(mine + 3 * i, me, i);
    unsigned a1[3] = {2, 0xdeadu, 3}, a2[3] = {5, 0xdeadu, 7};
    last_len = -1;
    OK(MPI_Reduce_local(a1, a2, 1, pair, aff));
    CHECK(last_len == 1 && last_dt == pair);
    CHECK(a2[0] == 10 && a2[2] == 5 * 3 + 7);
    OK(MPI_Allreduce(mine, out, M, pair, aff, MPI_COMM_WORLD));
    for (int i = 0; i < M; i++) {
        fold(want, np - 1, i);
        CHECK(out[3 * i] == want[0] && out[3 * i + 2] == want[2]);
    }
    OK(MPI_Scan(mine, out, M, pair, aff, MPI_COMM_WORLD));
    for (int i = 0; i < M; i++) {
        fold(want, me, i);
        CHECK(out[3 * i] == want[0] && out[3 * i + 2] == want[2]);
    }
    OK(MPI_Ireduce(mine, out, M, pair, aff, 0, MPI_COMM_WORLD, &rq));
    OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    if (me == 0)
        for (int i = 0; i < M; i++) {
            fold(want, np - 1, i);
            CHECK(out[3 * i] == want[0] && out[3 * i + 2] == want[2]);
        }
    OK(MPI_Type_free(&pair));
    OK(MPI_Op_free(&add));
    OK(MPI_Op_free(&aff));
    CHECK(add == MPI_OP_NULL && aff == MPI_OP_NULL);
}

int main(int argc, char **argv) {
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &np));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    for (int k = 0; k < WORDS; k++) src[k] = k * 7 + me;
    constructors();
    beyond_int();
    files();
    operations();
    printf("rank %d: LARGE TYPES OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
