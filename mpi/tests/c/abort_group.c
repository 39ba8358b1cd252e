/*
 * MPI_Abort on a communicator under ULFM ends that communicator's processes only: 4
 * ranks split in pairs {0,1} and {2,3}; rank 2 aborts its pair with code 7 (rank 3,
 * waiting in a barrier of the pair, is killed); ranks 0 and 1 see the failure on a
 * duplicate of the world, acknowledge it, shrink to 2 and agree.
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <stdio.h>

int main(int argc, char *argv[]) {
    MPI_Comm world, pair, shrunk;
    int rank, size, rc, eclass;

    MPI_Init(&argc, &argv);
    MPI_Comm_dup(MPI_COMM_WORLD, &world);
    MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    if (size != 4) {
        fprintf(stderr, "run with 4 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_split(world, rank / 2, rank, &pair);
    MPI_Comm_set_errhandler(pair, MPI_ERRORS_RETURN);
    rc = MPI_Barrier(world);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: the first barrier failed\n", rank);
        return 1;
    }
    /* Ranks 2 and 3 meet once more first: rank 2 then knows that rank 3 is past the
     * world's barrier (its last message to rank 1 sent), so the abort cannot kill it
     * before rank 1's barrier completes. */
    if (rank >= 2 && MPI_Barrier(pair) != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: the pair's barrier failed\n", rank);
        return 1;
    }
    if (rank == 2) {
        MPI_Abort(pair, 7);
        fprintf(stderr, "rank 2: MPI_Abort returned\n");
        return 1;
    }
    if (rank == 3) {
        MPI_Barrier(pair); /* killed by rank 2's abort */
        fprintf(stderr, "rank 3: outlived its pair's abort\n");
        return 1;
    }
    /* Ranks 0 and 1: the next barrier on the world fails once 2 and 3 are gone. */
    rc = MPI_Barrier(world);
    if (rc == MPI_SUCCESS) {
        fprintf(stderr, "rank %d: a barrier with ranks 2 and 3 aborted succeeded\n", rank);
        return 1;
    }
    MPI_Error_class(rc, &eclass);
    if (eclass != MPIX_ERR_PROC_FAILED && eclass != MPIX_ERR_REVOKED) {
        fprintf(stderr, "rank %d: barrier failed with class %d\n", rank, eclass);
        return 1;
    }
    MPIX_Comm_revoke(world);
    rc = MPIX_Comm_shrink(world, &shrunk);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: shrink failed\n", rank);
        return 1;
    }
    int n, flag = 1;
    MPI_Comm_size(shrunk, &n);
    rc = MPIX_Comm_agree(shrunk, &flag);
    if (n != 2 || rc != MPI_SUCCESS || flag != 1) {
        fprintf(stderr, "rank %d: shrunk to %d, agree rc %d flag %d\n", rank, n, rc, flag);
        return 1;
    }
    printf("rank %d: ABORT GROUP OK\n", rank);
    MPI_Comm_free(&shrunk);
    MPI_Comm_free(&pair);
    MPI_Comm_free(&world);
    MPI_Finalize();
    return 0;
}
