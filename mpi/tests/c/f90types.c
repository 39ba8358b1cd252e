/*
 * MPI_Type_create_f90_real, _complex and _integer at 1 rank: for each (p, r) the type
 * has the size of the Fortran kind SELECTED_REAL_KIND(p, r) / SELECTED_INT_KIND(r)
 * selects (4, 8, 16 bytes; complex twice that), decodes as MPI says (combiner
 * MPI_COMBINER_F90_*, the integers given, no datatypes), moves through MPI_COMM_SELF,
 * reduces with MPI_SUM as its sized type (MPI_Reduce_local), and packs in external32
 * at its size; a precision no kind holds is MPI_ERR_ARG.
 * Prints "rank 0: F90 TYPES OK".
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int me = 0;
#include "check.h"

static void check_type(MPI_Datatype t, int combiner, int p, int r, int size) {
    int nints = -1, naddrs = -1, ntypes = -1, comb = -1;
    OK(MPI_Type_get_envelope(t, &nints, &naddrs, &ntypes, &comb));
    CHECK(comb == combiner);
    CHECK(naddrs == 0 && ntypes == 0);
    int ints[2] = {0, 0};
    MPI_Aint addrs[1];
    MPI_Datatype types[1];
    OK(MPI_Type_get_contents(t, 2, 0, 0, ints, addrs, types));
    if (combiner == MPI_COMBINER_F90_INTEGER) {
        CHECK(nints == 1 && ints[0] == r);
    } else {
        CHECK(nints == 2 && ints[0] == p && ints[1] == r);
    }
    int s = -1;
    OK(MPI_Type_size(t, &s));
    CHECK(s == size);
    MPI_Aint ext32 = -1;
    OK(MPI_Pack_external_size("external32", 1, t, &ext32));
    CHECK(ext32 == size);
    /* Through MPI_COMM_SELF. */
    unsigned char a[32], b[32];
    for (int i = 0; i < 32; i++) a[i] = (unsigned char)(i + 1), b[i] = 0;
    MPI_Request rq[2];
    OK(MPI_Irecv(b, 1, t, 0, 5, MPI_COMM_SELF, &rq[0]));
    OK(MPI_Isend(a, 1, t, 0, 5, MPI_COMM_SELF, &rq[1]));
    OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    CHECK(memcmp(a, b, (size_t)size) == 0);
    CHECK(b[size] == 0);
}

int main(int argc, char **argv) {
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    MPI_Datatype t;
    /* Reals: 3 digits (range 10) fit a 4-byte real, 7 digits or range 30 with 7 need 8. */
    int cases[6][3] = {{3, 10, 4}, {3, MPI_UNDEFINED, 4}, {MPI_UNDEFINED, 10, 4},
                       {7, 30, 8}, {7, MPI_UNDEFINED, 8}, {MPI_UNDEFINED, 300, 8}};
    for (int i = 0; i < 6; i++) {
        int p = cases[i][0], r = cases[i][1], size = cases[i][2];
        OK(MPI_Type_create_f90_real(p, r, &t));
        check_type(t, MPI_COMBINER_F90_REAL, p, r, size);
        OK(MPI_Type_create_f90_complex(p, r, &t));
        check_type(t, MPI_COMBINER_F90_COMPLEX, p, r, 2 * size);
    }
    OK(MPI_Type_create_f90_real(30, MPI_UNDEFINED, &t));
    check_type(t, MPI_COMBINER_F90_REAL, 30, MPI_UNDEFINED, 16);
    int ranges[5][2] = {{2, 1}, {4, 2}, {9, 4}, {10, 8}, {18, 8}};
    for (int i = 0; i < 5; i++) {
        OK(MPI_Type_create_f90_integer(ranges[i][0], &t));
        check_type(t, MPI_COMBINER_F90_INTEGER, 0, ranges[i][0], ranges[i][1]);
    }
    /* Reduces as its sized type. */
    OK(MPI_Type_create_f90_real(7, 30, &t));
    double x[2] = {1.5, -2.0}, y[2] = {0.25, 4.0};
    OK(MPI_Reduce_local(x, y, 2, t, MPI_SUM));
    CHECK(y[0] == 1.75 && y[1] == 2.0);
    OK(MPI_Type_create_f90_integer(9, &t));
    int u[2] = {3, 4}, v[2] = {10, 20};
    OK(MPI_Reduce_local(u, v, 2, t, MPI_PROD));
    CHECK(v[0] == 30 && v[1] == 80);
    /* No kind holds these. */
    int cls = -1;
    MPI_Error_class(MPI_Type_create_f90_real(40, MPI_UNDEFINED, &t), &cls);
    CHECK(cls == MPI_ERR_ARG);
    MPI_Error_class(MPI_Type_create_f90_real(MPI_UNDEFINED, MPI_UNDEFINED, &t), &cls);
    CHECK(cls == MPI_ERR_ARG);
    MPI_Error_class(MPI_Type_create_f90_integer(40, &t), &cls);
    CHECK(cls == MPI_ERR_ARG);
    OK(MPI_Finalize());
    printf("rank 0: F90 TYPES OK\n");
    return 0;
}
