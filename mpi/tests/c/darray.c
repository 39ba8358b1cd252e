/* MPI_Type_create_darray. For grids of every shape below, each process's type is
 * checked against an owner function written out here: packing the global array (each
 * element holding its own index) with process r's type gives exactly the elements r
 * owns, in the array's memory order; across a grid every element is owned once; the
 * extent is the whole array's. C and Fortran orders, block (default and given),
 * cyclic (1 and given) and undistributed dimensions, 2 and 3 dimensions. Then over the
 * job's own grid: rank 0 sends each rank its part with one send of that rank's darray
 * type. Bad arguments give MPI_ERR_ARG. Prints DARRAY OK on every rank. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

static int me = -1;

#include "check.h"

/* The grid coordinate of global index i of a dimension of g under distribution d
 * (argument a) over p processes. */
static int owner_coord(int i, int g, int d, int a, int p) {
    if (d == MPI_DISTRIBUTE_NONE) return 0;
    if (d == MPI_DISTRIBUTE_BLOCK) {
        int b = a == MPI_DISTRIBUTE_DFLT_DARG ? (g + p - 1) / p : a;
        return i / b;
    }
    int b = a == MPI_DISTRIBUTE_DFLT_DARG ? 1 : a;
    return (i / b) % p;
}

/* The rank (row-major grid) owning the element at multi-index idx. */
static int owner(int n, const int *idx, const int *gs, const int *ds, const int *as,
                 const int *ps) {
    int r = 0;
    for (int k = 0; k < n; k++) r = r * ps[k] + owner_coord(idx[k], gs[k], ds[k], as[k], ps[k]);
    return r;
}

/* Checks every process's type of one darray layout. */
static void check_layout(int n, const int *gs, const int *ds, const int *as, const int *ps,
                         int order) {
    int total = 1, procs = 1;
    for (int k = 0; k < n; k++) total *= gs[k], procs *= ps[k];
    int *global = malloc(total * sizeof(int));
    int *packed = malloc(total * sizeof(int));
    int *expect = malloc(total * sizeof(int));
    int *seen = calloc(total, sizeof(int));
    for (int x = 0; x < total; x++) global[x] = x;
    for (int r = 0; r < procs; r++) {
        MPI_Datatype t;
        OK(MPI_Type_create_darray(procs, r, n, gs, ds, as, ps, order, MPI_INT, &t));
        OK(MPI_Type_commit(&t));
        MPI_Aint lb, extent;
        OK(MPI_Type_get_extent(t, &lb, &extent));
        CHECK(lb == 0 && extent == (MPI_Aint)(total * sizeof(int)));
        /* What r owns, in memory order: walk memory offsets, recover the multi-index. */
        int count = 0;
        for (int x = 0; x < total; x++) {
            int idx[3], rest = x;
            if (order == MPI_ORDER_C)
                for (int k = n - 1; k >= 0; k--) idx[k] = rest % gs[k], rest /= gs[k];
            else
                for (int k = 0; k < n; k++) idx[k] = rest % gs[k], rest /= gs[k];
            if (owner(n, idx, gs, ds, as, ps) == r) expect[count++] = x;
        }
        int size;
        OK(MPI_Type_size(t, &size));
        CHECK(size == count * (int)sizeof(int));
        int pos = 0;
        OK(MPI_Pack(global, 1, t, packed, total * sizeof(int), &pos, MPI_COMM_SELF));
        CHECK(pos == count * (int)sizeof(int));
        for (int k = 0; k < count; k++) {
            CHECK(packed[k] == expect[k]);
            seen[packed[k]]++;
        }
        int ni, na, nd, comb;
        OK(MPI_Type_get_envelope(t, &ni, &na, &nd, &comb));
        CHECK(comb == MPI_COMBINER_DARRAY && ni == 4 * n + 4 && na == 0 && nd == 1);
        OK(MPI_Type_free(&t));
    }
    for (int x = 0; x < total; x++) CHECK(seen[x] == 1);
    free(global);
    free(packed);
    free(expect);
    free(seen);
}

int main(int argc, char **argv) {
    int np;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &np));
    const int B = MPI_DISTRIBUTE_BLOCK, C = MPI_DISTRIBUTE_CYCLIC, N = MPI_DISTRIBUTE_NONE,
              D = MPI_DISTRIBUTE_DFLT_DARG;

    for (int o = 0; o < 2; o++) {
        int order = o ? MPI_ORDER_FORTRAN : MPI_ORDER_C;
        {
            int gs[] = {7, 5}, ds[] = {C, B}, as[] = {2, D}, ps[] = {2, 3};
            check_layout(2, gs, ds, as, ps, order);
        }
        {
            int gs[] = {6, 9}, ds[] = {B, C}, as[] = {4, D}, ps[] = {2, 2};
            check_layout(2, gs, ds, as, ps, order);
        }
        {
            int gs[] = {4, 3, 5}, ds[] = {N, C, B}, as[] = {D, 1, 2}, ps[] = {1, 2, 3};
            check_layout(3, gs, ds, as, ps, order);
        }
        {
            int gs[] = {5}, ds[] = {C}, as[] = {3}, ps[] = {4};
            check_layout(1, gs, ds, as, ps, order);
        }
    }

    /* Bad arguments. */
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_Datatype t;
    int cls;
    {
        int gs[] = {6, 6}, ds[] = {B, B}, as[] = {D, D}, ps[] = {2, 2};
        OK(MPI_Error_class(MPI_Type_create_darray(3, 0, 2, gs, ds, as, ps, MPI_ORDER_C, MPI_INT, &t), &cls));
        CHECK(cls == MPI_ERR_ARG);
        int dn[] = {N, B};
        OK(MPI_Error_class(MPI_Type_create_darray(4, 0, 2, gs, dn, as, ps, MPI_ORDER_C, MPI_INT, &t), &cls));
        CHECK(cls == MPI_ERR_ARG);
        int small[] = {2, D};
        OK(MPI_Error_class(MPI_Type_create_darray(4, 0, 2, gs, ds, small, ps, MPI_ORDER_C, MPI_INT, &t), &cls));
        CHECK(cls == MPI_ERR_ARG);
    }

    /* The job's own grid: rank 0 sends each rank its part of a 2-d array. */
    int dims[2] = {0, 0};
    OK(MPI_Dims_create(np, 2, dims));
    int gs[] = {5, 7}, ds[] = {B, C}, as[] = {D, 2};
    int total = gs[0] * gs[1];
    MPI_Datatype mine;
    OK(MPI_Type_create_darray(np, me, 2, gs, ds, as, dims, MPI_ORDER_C, MPI_INT, &mine));
    OK(MPI_Type_commit(&mine));
    int size;
    OK(MPI_Type_size(mine, &size));
    int count = size / (int)sizeof(int);
    int *got = malloc((count + 1) * sizeof(int));
    MPI_Request req;
    OK(MPI_Irecv(got, count, MPI_INT, 0, 5, MPI_COMM_WORLD, &req));
    if (me == 0) {
        int *global = malloc(total * sizeof(int));
        for (int x = 0; x < total; x++) global[x] = 100 + x;
        for (int r = 0; r < np; r++) {
            MPI_Datatype tr;
            OK(MPI_Type_create_darray(np, r, 2, gs, ds, as, dims, MPI_ORDER_C, MPI_INT, &tr));
            OK(MPI_Type_commit(&tr));
            OK(MPI_Send(global, 1, tr, r, 5, MPI_COMM_WORLD));
            OK(MPI_Type_free(&tr));
        }
        free(global);
    }
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    int k = 0;
    for (int i = 0; i < gs[0]; i++)
        for (int j = 0; j < gs[1]; j++) {
            int idx[2] = {i, j};
            if (owner(2, idx, gs, ds, as, dims) == me) {
                CHECK(k < count && got[k] == 100 + i * gs[1] + j);
                k++;
            }
        }
    CHECK(k == count);
    free(got);
    OK(MPI_Type_free(&mine));
    printf("rank %d: DARRAY OK (%d)\n", me, np);
    OK(MPI_Finalize());
    return 0;
}
