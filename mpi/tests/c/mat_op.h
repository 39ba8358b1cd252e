/* The C tests' non-commutative user operation: 2x2 matrix multiplication over 32-bit
 * unsigned integers (wrapping, so associative) on `mat_type`, a contiguous type of 4
 * MPI_UNSIGNED the including program makes. A reduction in any other order than the
 * ranks' gives other matrices, so `prod` checks the order too. Include after check.h
 * and the including file's `me`. */
#ifndef STEADFAST_TEST_MAT_OP_H
#define STEADFAST_TEST_MAT_OP_H

#include <stdlib.h>
#include <string.h>

typedef struct {
    unsigned a, b, c, d; /* [[a b] [c d]] */
} mat;

static MPI_Datatype mat_type;

/* Rank r's input matrix number i in call `salt`: hashed, so that products in another
 * order differ. */
static inline mat M(int r, int i, int salt) {
    unsigned h = 2166136261u ^ (unsigned)(r * 7919 + i * 104729 + salt * 1299709);
    unsigned v[4];
    for (int k = 0; k < 4; k++) {
        h ^= h >> 13;
        h *= 16777619u;
        h ^= (unsigned)k;
        v[k] = h % 1000u;
    }
    mat m = {v[0] + 1, v[1], v[2], v[3] + 1};
    return m;
}

static inline mat mul(mat x, mat y) {
    mat z = {x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d, x.c * y.a + x.d * y.c,
             x.c * y.b + x.d * y.d};
    return z;
}

static inline int same(mat x, mat y) { return x.a == y.a && x.b == y.b && x.c == y.c && x.d == y.d; }

/* The product of ranks lo..hi-1's matrices number i, in rank order. */
static inline mat prod(int lo, int hi, int i, int salt) {
    mat z = {1, 0, 0, 1};
    for (int r = lo; r < hi; r++) z = mul(z, M(r, i, salt));
    return z;
}

static long mat_calls;

/* inout[i] = in[i] * inout[i]. */
static inline void mat_mul(void *in, void *inout, int *len, MPI_Datatype *dt) {
    CHECK(*dt == mat_type);
    CHECK(*len > 0);
    mat *x = in, *y = inout;
    for (int i = 0; i < *len; i++) y[i] = mul(x[i], y[i]);
    mat_calls++;
}

static inline mat *mats(int n, int salt) {
    mat *p = malloc(sizeof(mat) * (n ? n : 1));
    CHECK(p != NULL);
    for (int i = 0; i < n; i++) p[i] = M(me, i, salt);
    return p;
}

static inline mat *blank(int n) {
    mat *p = malloc(sizeof(mat) * (n ? n : 1));
    CHECK(p != NULL);
    for (int i = 0; i < n; i++) p[i] = (mat){7, 7, 7, 7};
    return p;
}

/* The user-operation tests' start: MPI_Init_thread (MPI_THREAD_MULTIPLE when the
 * first argument is "multiple"), `me`, the size in *n, errors returned on
 * MPI_COMM_WORLD, and `mat_type` committed. */
static inline void mat_op_init(int *argc, char ***argv, int *n) {
    int provided;
    int multiple = *argc > 1 && strcmp((*argv)[1], "multiple") == 0;
    OK(MPI_Init_thread(argc, argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE,
                       &provided));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, n));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Type_contiguous(4, MPI_UNSIGNED, &mat_type));
    OK(MPI_Type_commit(&mat_type));
}

static inline int err_class(int code) {
    int c = -1;
    OK(MPI_Error_class(code, &c));
    return c;
}

#endif
