/*
 * MPI_Pack_external / MPI_Unpack_external / MPI_Pack_external_size and their _c forms,
 * "external32" (MPI 4.1 §5.2.3, §14.5.2), at 1 or 2 ranks: the exact big-endian bytes
 * of an int, a long (4 bytes, 8 natively), an unsigned long, a short, a double, a
 * wchar_t (2 bytes), a C bool, a long double (IEEE quad; x86_64), an MPI_DOUBLE_INT
 * pair (12 bytes, no padding) and a float complex; the sizes; the position advancing
 * over values of several types in one buffer; round trips through a vector, a struct
 * of C structs (padding untouched), a resized type and a dup, the gaps left as they
 * were; a buffer too small (MPI_ERR_TRUNCATE, the position unchanged), a negative
 * position and a datarep other than "external32" (MPI_ERR_ARG). At 2 ranks rank 0
 * packs and sends the bytes as MPI_BYTE, rank 1 checks some of them and unpacks.
 * Each rank prints "rank R: PACK EXTERNAL OK".
 */
#include <complex.h>
#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <wchar.h>

static int me = -1;

#include "check.h"

static const char *E32 = "external32";

/* Packs one value of `type` at `v` alone and checks its bytes are `want` (`n`). */
static void packs_to(const void *v, MPI_Datatype type, const unsigned char *want, int n) {
    unsigned char buf[64];
    MPI_Aint pos = 0, size = -1;
    memset(buf, 0xee, sizeof buf);
    OK(MPI_Pack_external_size(E32, 1, type, &size));
    CHECK(size == n);
    OK(MPI_Pack_external(E32, v, 1, type, buf, sizeof buf, &pos));
    CHECK(pos == n);
    CHECK(memcmp(buf, want, (size_t)n) == 0);
    CHECK(buf[n] == 0xee);
}

/* Unpacks the `n` bytes `ext` as one value of `type` into `v`. */
static void unpacks(const unsigned char *ext, int n, MPI_Datatype type, void *v) {
    MPI_Aint pos = 0;
    OK(MPI_Unpack_external(E32, ext, n, &pos, v, 1, type));
    CHECK(pos == n);
}

static void basic_values(void) {
    int i = 0x01020304;
    packs_to(&i, MPI_INT, (const unsigned char[]){1, 2, 3, 4}, 4);
    long l = -2;
    packs_to(&l, MPI_LONG, (const unsigned char[]){0xff, 0xff, 0xff, 0xfe}, 4);
    long lback = 0;
    unpacks((const unsigned char[]){0xff, 0xff, 0xff, 0xfe}, 4, MPI_LONG, &lback);
    CHECK(lback == -2);
    unsigned long ul = 0xfffffffeUL, ulback = 0;
    packs_to(&ul, MPI_UNSIGNED_LONG, (const unsigned char[]){0xff, 0xff, 0xff, 0xfe}, 4);
    unpacks((const unsigned char[]){0xff, 0xff, 0xff, 0xfe}, 4, MPI_UNSIGNED_LONG, &ulback);
    CHECK(ulback == 0xfffffffeUL);
    short s = 0x0102;
    packs_to(&s, MPI_SHORT, (const unsigned char[]){1, 2}, 2);
    double d = 1.0, dback = 0;
    const unsigned char one[8] = {0x3f, 0xf0, 0, 0, 0, 0, 0, 0};
    packs_to(&d, MPI_DOUBLE, one, 8);
    unpacks(one, 8, MPI_DOUBLE, &dback);
    CHECK(dback == 1.0);
    wchar_t w = 0x20ac, wback = 0;
    packs_to(&w, MPI_WCHAR, (const unsigned char[]){0x20, 0xac}, 2);
    unpacks((const unsigned char[]){0x20, 0xac}, 2, MPI_WCHAR, &wback);
    CHECK(wback == 0x20ac);
    bool b = true;
    packs_to(&b, MPI_C_BOOL, (const unsigned char[]){1}, 1);
    int64_t big = 0x0102030405060708LL;
    packs_to(&big, MPI_INT64_T, (const unsigned char[]){1, 2, 3, 4, 5, 6, 7, 8}, 8);
    MPI_Aint a = 0x0a0b0c0d;
    packs_to(&a, MPI_AINT, (const unsigned char[]){0, 0, 0, 0, 0x0a, 0x0b, 0x0c, 0x0d}, 8);
    float complex z = 1.0f - 2.0f * I;
    packs_to(&z, MPI_C_FLOAT_COMPLEX,
             (const unsigned char[]){0x3f, 0x80, 0, 0, 0xc0, 0, 0, 0}, 8);
    struct {
        double v;
        int i;
    } di = {2.5, 7}, diback = {0, 0};
    const unsigned char di_ext[12] = {0x40, 0x04, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7};
    packs_to(&di, MPI_DOUBLE_INT, di_ext, 12);
    unpacks(di_ext, 12, MPI_DOUBLE_INT, &diback);
    CHECK(diback.v == 2.5 && diback.i == 7);
#if defined(__x86_64__)
    long double ld = 1.0L, ldback = 0;
    const unsigned char ld_ext[16] = {0x3f, 0xff};
    packs_to(&ld, MPI_LONG_DOUBLE, ld_ext, 16);
    ld = -2.5L;
    const unsigned char m25[16] = {0xc0, 0x00, 0x40};
    packs_to(&ld, MPI_LONG_DOUBLE, m25, 16);
    unpacks(m25, 16, MPI_LONG_DOUBLE, &ldback);
    CHECK(ldback == -2.5L);
#endif
}

/* Several values in one buffer: the position advances by their external32 sizes. */
static void positions(void) {
    unsigned char buf[32];
    int i = 5, iback = 0;
    long l[2] = {-1, 1L << 20}, lback[2] = {0, 0};
    double d = -0.5, dback = 0;
    MPI_Aint pos = 0;
    OK(MPI_Pack_external(E32, &i, 1, MPI_INT, buf, sizeof buf, &pos));
    CHECK(pos == 4);
    OK(MPI_Pack_external(E32, l, 2, MPI_LONG, buf, sizeof buf, &pos));
    CHECK(pos == 12);
    OK(MPI_Pack_external(E32, &d, 1, MPI_DOUBLE, buf, sizeof buf, &pos));
    CHECK(pos == 20);
    CHECK(buf[8] == 0x00 && buf[9] == 0x10 && buf[10] == 0 && buf[11] == 0);
    CHECK(buf[12] == 0xbf && buf[13] == 0xe0);
    pos = 0;
    OK(MPI_Unpack_external(E32, buf, 20, &pos, &iback, 1, MPI_INT));
    OK(MPI_Unpack_external(E32, buf, 20, &pos, lback, 2, MPI_LONG));
    OK(MPI_Unpack_external(E32, buf, 20, &pos, &dback, 1, MPI_DOUBLE));
    CHECK(pos == 20 && iback == 5 && lback[0] == -1 && lback[1] == 1L << 20 && dback == -0.5);
    /* The _c forms, MPI_Count positions. */
    MPI_Count cpos = 0, csize = 0;
    OK(MPI_Pack_external_size_c(E32, 3, MPI_LONG, &csize));
    CHECK(csize == 12);
    OK(MPI_Pack_external_c(E32, l, 2, MPI_LONG, buf, sizeof buf, &cpos));
    CHECK(cpos == 8 && buf[0] == 0xff && buf[3] == 0xff && buf[5] == 0x10 && buf[6] == 0);
    cpos = 0;
    lback[0] = lback[1] = 0;
    OK(MPI_Unpack_external_c(E32, buf, 8, &cpos, lback, 2, MPI_LONG));
    CHECK(cpos == 8 && lback[0] == -1 && lback[1] == 1L << 20);
}

/* What is refused: too small a buffer, a negative position, another datarep. */
static void refusals(void) {
    unsigned char buf[8];
    long l[3] = {1, 2, 3};
    int cls = 0;
    MPI_Aint pos = 0, size = 0;
    int rc = MPI_Pack_external(E32, l, 3, MPI_LONG, buf, 8, &pos);
    OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_TRUNCATE && pos == 0);
    pos = 6;
    rc = MPI_Pack_external(E32, l, 1, MPI_LONG, buf, 8, &pos);
    OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_TRUNCATE && pos == 6);
    pos = 0;
    rc = MPI_Unpack_external(E32, buf, 8, &pos, l, 3, MPI_LONG);
    OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_TRUNCATE && pos == 0);
    pos = -1;
    rc = MPI_Pack_external(E32, l, 1, MPI_LONG, buf, 8, &pos);
    OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_ARG);
    pos = 0;
    rc = MPI_Pack_external("native", l, 1, MPI_LONG, buf, 8, &pos);
    OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_ARG && pos == 0);
    rc = MPI_Pack_external_size("internal", 1, MPI_INT, &size);
    OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_ARG);
}

struct item {
    int a;
    double b;
    char c[3];
};

/* A struct type for `struct item` (extent: sizeof). */
static MPI_Datatype item_type(void) {
    static struct item it;
    MPI_Aint base, disp[3];
    int lens[3] = {1, 1, 3};
    MPI_Datatype types[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR}, t, r;
    OK(MPI_Get_address(&it, &base));
    OK(MPI_Get_address(&it.a, &disp[0]));
    OK(MPI_Get_address(&it.b, &disp[1]));
    OK(MPI_Get_address(&it.c, &disp[2]));
    for (int i = 0; i < 3; i++)
        disp[i] -= base;
    OK(MPI_Type_create_struct(3, lens, disp, types, &t));
    OK(MPI_Type_create_resized(t, 0, sizeof(struct item), &r));
    OK(MPI_Type_free(&t));
    OK(MPI_Type_commit(&r));
    return r;
}

static void fill_items(struct item *it, int n) {
    memset(it, 0x5a, sizeof(struct item) * (size_t)n);
    for (int i = 0; i < n; i++) {
        it[i].a = 0x10203 + i;
        it[i].b = 0.25 * i;
        memcpy(it[i].c, "xyz", 3);
        it[i].c[2] = (char)('0' + i);
    }
}

/* The external32 bytes of two items, and of every other long of a[6] (a vector), and
 * of longs picked by a resized type and its dup. */
static MPI_Aint pack_derived(unsigned char *buf, MPI_Aint cap) {
    struct item it[2];
    long a[6] = {10, -11, 12, -13, 14, -15};
    MPI_Datatype item = item_type(), vec, rs, dup;
    MPI_Aint pos = 0, size = 0;
    fill_items(it, 2);
    OK(MPI_Pack_external_size(E32, 2, item, &size));
    CHECK(size == 2 * (4 + 8 + 3));
    OK(MPI_Pack_external(E32, it, 2, item, buf, cap, &pos));
    CHECK(pos == 30);
    OK(MPI_Type_vector(3, 1, 2, MPI_LONG, &vec));
    OK(MPI_Type_commit(&vec));
    OK(MPI_Pack_external_size(E32, 1, vec, &size));
    CHECK(size == 12);
    OK(MPI_Pack_external(E32, a, 1, vec, buf, cap, &pos));
    CHECK(pos == 42);
    OK(MPI_Type_create_resized(MPI_LONG, 0, 3 * sizeof(long), &rs));
    OK(MPI_Type_commit(&rs));
    OK(MPI_Type_dup(rs, &dup));
    OK(MPI_Pack_external(E32, a + 1, 2, dup, buf, cap, &pos));
    CHECK(pos == 50);
    OK(MPI_Type_free(&item));
    OK(MPI_Type_free(&vec));
    OK(MPI_Type_free(&rs));
    OK(MPI_Type_free(&dup));
    return pos;
}

/* Checks the bytes `pack_derived` made, unpacks them and checks the values and gaps. */
static void unpack_derived(const unsigned char *buf, MPI_Aint n) {
    CHECK(n == 50);
    /* Item 0: int 0x10203, double 0.0, "xy0"; item 1 at 15: int 0x10204, double 0.25. */
    CHECK(memcmp(buf, (const unsigned char[]){0, 1, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0}, 12) == 0);
    CHECK(buf[12] == 'x' && buf[13] == 'y' && buf[14] == '0');
    CHECK(memcmp(buf + 15, (const unsigned char[]){0, 1, 2, 4, 0x3f, 0xd0}, 6) == 0);
    /* The vector's longs 10, 12, 14; the resized type's -11, 14. */
    CHECK(memcmp(buf + 30, (const unsigned char[]){0, 0, 0, 10, 0, 0, 0, 12, 0, 0, 0, 14}, 12) ==
          0);
    CHECK(memcmp(buf + 42, (const unsigned char[]){0xff, 0xff, 0xff, 0xf5, 0, 0, 0, 14},
                 8) == 0);
    struct item it[2], want[2];
    long a[6], r[6];
    MPI_Datatype item = item_type(), vec, rs;
    MPI_Aint pos = 0;
    fill_items(want, 2);
    memset(it, 0x5a, sizeof it);
    OK(MPI_Unpack_external(E32, buf, n, &pos, it, 2, item));
    CHECK(pos == 30);
    CHECK(memcmp(it, want, sizeof it) == 0); /* the values, and the padding untouched */
    for (int i = 0; i < 6; i++)
        a[i] = r[i] = 99;
    OK(MPI_Type_vector(3, 1, 2, MPI_LONG, &vec));
    OK(MPI_Type_commit(&vec));
    OK(MPI_Unpack_external(E32, buf, n, &pos, a, 1, vec));
    CHECK(a[0] == 10 && a[2] == 12 && a[4] == 14);
    CHECK(a[1] == 99 && a[3] == 99 && a[5] == 99);
    OK(MPI_Type_create_resized(MPI_LONG, 0, 3 * sizeof(long), &rs));
    OK(MPI_Type_commit(&rs));
    OK(MPI_Unpack_external(E32, buf, n, &pos, r, 2, rs));
    CHECK(pos == 50 && r[0] == -11 && r[3] == 14);
    CHECK(r[1] == 99 && r[2] == 99 && r[4] == 99 && r[5] == 99);
    OK(MPI_Type_free(&item));
    OK(MPI_Type_free(&vec));
    OK(MPI_Type_free(&rs));
}

int main(int argc, char **argv) {
    int n;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &n));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    basic_values();
    positions();
    refusals();
    unsigned char buf[64];
    if (n == 1) {
        unpack_derived(buf, pack_derived(buf, sizeof buf));
    } else if (me == 0) {
        MPI_Aint len = pack_derived(buf, sizeof buf);
        OK(MPI_Send(buf, (int)len, MPI_BYTE, 1, 7, MPI_COMM_WORLD));
    } else if (me == 1) {
        MPI_Status st;
        int got = 0;
        memset(buf, 0, sizeof buf);
        OK(MPI_Recv(buf, sizeof buf, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &st));
        OK(MPI_Get_count(&st, MPI_BYTE, &got));
        unpack_derived(buf, got);
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));
    printf("rank %d: PACK EXTERNAL OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
