/*
 * Cartesian topologies: MPI_Dims_create, a periodic x non-periodic grid over all ranks
 * (coordinates, ranks, shifts both ways checked against values computed here), a halo
 * exchange with MPI_Sendrecv along each dimension using MPI_Cart_shift's neighbours,
 * MPI_Cart_sub into rows and columns (sizes, coordinates and an allreduce on each), a
 * grid smaller than the communicator (the others get MPI_COMM_NULL), MPI_Comm_dup
 * keeping the grid, MPI_Topo_test, and errors. Each rank prints "rank R: CART OK".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int me = -1;

#include "check.h"

int main(int argc, char **argv) {
    int n;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &n));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    int dims[2] = {0, 0};
    OK(MPI_Dims_create(n, 2, dims));
    CHECK(dims[0] * dims[1] == n && dims[0] >= dims[1]);
    int periods[2] = {1, 0};
    MPI_Comm grid;
    OK(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 1, &grid));
    OK(MPI_Comm_set_errhandler(grid, MPI_ERRORS_RETURN));
    int t, nd, r;
    OK(MPI_Topo_test(grid, &t));
    CHECK(t == MPI_CART);
    OK(MPI_Topo_test(MPI_COMM_WORLD, &t));
    CHECK(t == MPI_UNDEFINED);
    OK(MPI_Cartdim_get(grid, &nd));
    CHECK(nd == 2);
    OK(MPI_Comm_rank(grid, &r));
    CHECK(r == me); /* not reordered */
    int gd[2], gp[2], gc[2];
    OK(MPI_Cart_get(grid, 2, gd, gp, gc));
    CHECK(gd[0] == dims[0] && gd[1] == dims[1] && gp[0] == 1 && gp[1] == 0);
    CHECK(gc[0] == me / dims[1] && gc[1] == me % dims[1]); /* row-major */
    for (int q = 0; q < n; q++) {
        int c[2], back;
        OK(MPI_Cart_coords(grid, q, 2, c));
        CHECK(c[0] == q / dims[1] && c[1] == q % dims[1]);
        OK(MPI_Cart_rank(grid, c, &back));
        CHECK(back == q);
    }
    /* Wrapping in the periodic dimension; outside the other one is an error. */
    int c[2] = {gc[0] + dims[0], gc[1]}, w;
    OK(MPI_Cart_rank(grid, c, &w));
    CHECK(w == me);
    c[0] = gc[0];
    c[1] = dims[1];
    CHECK(MPI_Cart_rank(grid, c, &w) != MPI_SUCCESS);
    /* Shifts. */
    int src, dst;
    OK(MPI_Cart_shift(grid, 0, 1, &src, &dst));
    CHECK(dst == ((gc[0] + 1) % dims[0]) * dims[1] + gc[1]);
    CHECK(src == ((gc[0] + dims[0] - 1) % dims[0]) * dims[1] + gc[1]);
    OK(MPI_Cart_shift(grid, 1, 1, &src, &dst));
    CHECK(dst == (gc[1] + 1 < dims[1] ? me + 1 : MPI_PROC_NULL));
    CHECK(src == (gc[1] > 0 ? me - 1 : MPI_PROC_NULL));
    CHECK(MPI_Cart_shift(grid, 2, 1, &src, &dst) != MPI_SUCCESS);
    /* A halo exchange along each dimension. */
    for (int dim = 0; dim < 2; dim++) {
        OK(MPI_Cart_shift(grid, dim, 1, &src, &dst));
        int out = me * 10 + dim, in = -1;
        MPI_Status st;
        OK(MPI_Sendrecv(&out, 1, MPI_INT, dst, dim, &in, 1, MPI_INT, src, dim, grid, &st));
        if (src == MPI_PROC_NULL) {
            CHECK(in == -1);
        } else {
            CHECK(in == src * 10 + dim && st.MPI_SOURCE == src);
        }
    }
    /* Rows and columns. */
    int keep_row[2] = {0, 1}, keep_col[2] = {1, 0};
    MPI_Comm row, col;
    OK(MPI_Cart_sub(grid, keep_row, &row));
    OK(MPI_Cart_sub(grid, keep_col, &col));
    int rs, cs, rr, cr, sum;
    OK(MPI_Comm_size(row, &rs));
    OK(MPI_Comm_size(col, &cs));
    OK(MPI_Comm_rank(row, &rr));
    OK(MPI_Comm_rank(col, &cr));
    CHECK(rs == dims[1] && cs == dims[0] && rr == gc[1] && cr == gc[0]);
    OK(MPI_Cartdim_get(row, &nd));
    CHECK(nd == 1);
    OK(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, row));
    CHECK(sum == gc[0] * dims[1] * dims[1] + dims[1] * (dims[1] - 1) / 2);
    OK(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, col));
    CHECK(sum == dims[1] * dims[0] * (dims[0] - 1) / 2 + gc[1] * dims[0]);
    int cd[1], cp[1], cc[1];
    OK(MPI_Cart_get(col, 1, cd, cp, cc));
    CHECK(cd[0] == dims[0] && cp[0] == 1 && cc[0] == gc[0]);
    OK(MPI_Comm_free(&row));
    OK(MPI_Comm_free(&col));
    /* A dup keeps the grid. */
    MPI_Comm d;
    OK(MPI_Comm_dup(grid, &d));
    OK(MPI_Topo_test(d, &t));
    CHECK(t == MPI_CART);
    OK(MPI_Cart_shift(d, 0, 1, &src, &dst));
    CHECK(dst == ((gc[0] + 1) % dims[0]) * dims[1] + gc[1]);
    OK(MPI_Comm_free(&d));
    OK(MPI_Comm_free(&grid));
    /* A 1-D grid of n - 1 ranks: the last gets MPI_COMM_NULL. */
    int one[1] = {n - 1}, per[1] = {0};
    if (n > 1) {
        MPI_Comm small;
        OK(MPI_Cart_create(MPI_COMM_WORLD, 1, one, per, 0, &small));
        if (me == n - 1) {
            CHECK(small == MPI_COMM_NULL);
        } else {
            CHECK(small != MPI_COMM_NULL);
            OK(MPI_Cart_shift(small, 0, 2, &src, &dst));
            CHECK(dst == (me + 2 < n - 1 ? me + 2 : MPI_PROC_NULL));
            OK(MPI_Comm_free(&small));
        }
    }
    /* Errors: a grid larger than the communicator, a topology query on a plain one,
     * dimensions that cannot be filled. */
    int big[1] = {n + 1};
    MPI_Comm none;
    CHECK(MPI_Cart_create(MPI_COMM_WORLD, 1, big, per, 0, &none) != MPI_SUCCESS);
    CHECK(MPI_Cartdim_get(MPI_COMM_WORLD, &nd) != MPI_SUCCESS);
    int bad[2] = {n + 1, 0};
    CHECK(MPI_Dims_create(n, 2, bad) != MPI_SUCCESS);
    int three[3] = {0, 0, 0};
    OK(MPI_Dims_create(24, 3, three));
    CHECK(three[0] == 4 && three[1] == 3 && three[2] == 2);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    printf("rank %d: CART OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
