/*
 * Persistent collectives (MPI 4.0): each request made once and started several times,
 * the buffers changed between starts (each start reads them afresh).
 * - MPI_Bcast_init from a root that moves with nothing but its argument fixed: root 0
 *   only, three starts with new data; MPI_Allreduce_init with MPI_SUM and with a
 *   non-commutative user operation (2x2 matrix products in rank order);
 *   MPI_Barrier_init; MPI_Alltoallv_init; MPI_Scan_init; MPI_Reduce_scatter_block_init;
 *   MPI_Neighbor_allgather_init on a periodic ring.
 * - Started one by one (MPI_Start + MPI_Wait) and all at once (MPI_Startall +
 *   MPI_Waitall), blocking collectives interleaved; an inactive request completes at
 *   once; MPI_Request_free at the end.
 * - A start on a revoked communicator fails at MPI_Start (ULFM), not later.
 * The argument "multiple" asks for MPI_THREAD_MULTIPLE. Each rank prints
 * "rank R: COLL PERSISTENT OK".
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me = -1;

#include "check.h"
#include "mat_op.h"

enum { BCAST, SUM, MAT, BARRIER, A2AV, SCAN, RSB, NEIGH, NREQ };

int main(int argc, char **argv) {
    int n;
    mat_op_init(&argc, &argv, &n);
    MPI_Op matop;
    OK(MPI_Op_create(mat_mul, 0, &matop));
    int dims[1] = {n}, periods[1] = {1};
    MPI_Comm ring;
    OK(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring));

    int bc[4], sum_in[2], sum_out[2], scan_out = -1, nb[2];
    mat min[2], mout[2];
    int *a2a_out = malloc(sizeof(int) * 2 * n), *a2a_in = malloc(sizeof(int) * 2 * n);
    int *scounts = malloc(sizeof(int) * n), *sdispls = malloc(sizeof(int) * n);
    int *rsb_in = malloc(sizeof(int) * n), rsb_out = -1;
    for (int r = 0; r < n; r++) {
        scounts[r] = 2;
        sdispls[r] = 2 * r;
    }
    MPI_Request reqs[NREQ];
    OK(MPI_Bcast_init(bc, 4, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[BCAST]));
    OK(MPI_Allreduce_init(sum_in, sum_out, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                          &reqs[SUM]));
    OK(MPI_Allreduce_init(min, mout, 2, mat_type, matop, MPI_COMM_WORLD, MPI_INFO_NULL,
                          &reqs[MAT]));
    OK(MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[BARRIER]));
    OK(MPI_Alltoallv_init(a2a_out, scounts, sdispls, MPI_INT, a2a_in, scounts, sdispls,
                          MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[A2AV]));
    OK(MPI_Scan_init(&me, &scan_out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                     &reqs[SCAN]));
    OK(MPI_Reduce_scatter_block_init(rsb_in, &rsb_out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                     MPI_INFO_NULL, &reqs[RSB]));
    OK(MPI_Neighbor_allgather_init(&me, 1, MPI_INT, nb, 1, MPI_INT, ring, MPI_INFO_NULL,
                                   &reqs[NEIGH]));
    /* Inactive: completes at once, the handle stays. */
    MPI_Status st;
    OK(MPI_Wait(&reqs[SUM], &st));
    CHECK(reqs[SUM] != MPI_REQUEST_NULL);

    for (int round = 0; round < 6; round++) {
        for (int i = 0; i < 4; i++) bc[i] = me == 0 ? round * 100 + i : -1;
        sum_in[0] = me + round;
        sum_in[1] = 1;
        for (int i = 0; i < 2; i++) min[i] = M(me, i, round);
        for (int r = 0; r < n; r++) {
            a2a_out[2 * r] = me * 1000 + r * 10 + round;
            a2a_out[2 * r + 1] = -round;
            rsb_in[r] = r + me + round;
        }
        nb[0] = nb[1] = -1;
        if (round % 2 == 0) {
            /* One by one, a blocking allreduce between two of them. */
            for (int k = 0; k < NREQ; k++) {
                OK(MPI_Start(&reqs[k]));
                if (k == SCAN) {
                    int x = 1, y = 0;
                    OK(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
                    CHECK(y == n);
                }
                OK(MPI_Wait(&reqs[k], MPI_STATUS_IGNORE));
                CHECK(reqs[k] != MPI_REQUEST_NULL);
            }
        } else {
            OK(MPI_Startall(NREQ, reqs));
            OK(MPI_Waitall(NREQ, reqs, MPI_STATUSES_IGNORE));
        }
        for (int i = 0; i < 4; i++) CHECK(bc[i] == round * 100 + i);
        CHECK(sum_out[0] == n * (n - 1) / 2 + n * round && sum_out[1] == n);
        for (int i = 0; i < 2; i++) CHECK(same(mout[i], prod(0, n, i, round)));
        for (int r = 0; r < n; r++)
            CHECK(a2a_in[2 * r] == r * 1000 + me * 10 + round && a2a_in[2 * r + 1] == -round);
        CHECK(scan_out == me * (me + 1) / 2);
        CHECK(rsb_out == n * me + n * (n - 1) / 2 + n * round);
        CHECK(nb[0] == (me + n - 1) % n && nb[1] == (me + 1) % n);
    }
    for (int k = 0; k < NREQ; k++) {
        OK(MPI_Request_free(&reqs[k]));
        CHECK(reqs[k] == MPI_REQUEST_NULL);
    }

    /* A start on a revoked communicator fails there. */
    MPI_Comm dup;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    OK(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN));
    MPI_Request r;
    OK(MPI_Barrier_init(dup, MPI_INFO_NULL, &r));
    OK(MPI_Start(&r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPIX_Comm_revoke(dup));
    CHECK(err_class(MPI_Start(&r)) == MPIX_ERR_REVOKED);
    OK(MPI_Request_free(&r));
    OK(MPI_Comm_free(&dup));

    OK(MPI_Op_free(&matop));
    OK(MPI_Comm_free(&ring));
    free(a2a_out);
    free(a2a_in);
    free(scounts);
    free(sdispls);
    free(rsb_in);
    OK(MPI_Type_free(&mat_type));
    printf("rank %d: COLL PERSISTENT OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
