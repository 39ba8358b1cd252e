/*
 * A partitioned receive whose sender dies before readying all its partitions: the
 * last rank (the victim) starts a partitioned send of 4 partitions to rank 0, readies
 * one and SIGKILLs itself, once every survivor has told it (a message each) that it
 * is past the barrier they share. Rank 0's MPI_Wait on its started partitioned receive
 * returns MPIX_ERR_PROC_FAILED (not a hang), its MPI_Parrived says true (the transfer
 * is over) before that, and the request is inactive after: it can be freed. Each
 * survivor prints "rank R: PARTITIONED FT OK".
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static int me = -1;

#include "check.h"

int main(int argc, char **argv) {
    int size, buf[8] = {0};
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    int victim = size - 1;
    MPI_Request req;
    if (me == victim) {
        OK(MPI_Psend_init(buf, 4, 2, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
        OK(MPI_Start(&req));
    } else if (me == 0) {
        OK(MPI_Precv_init(buf, 4, 2, MPI_INT, victim, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
        OK(MPI_Start(&req));
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == victim) {
        OK(MPI_Pready(1, req));
        for (int r = 0; r < size - 1; r++) {
            int past;
            OK(MPI_Recv(&past, 1, MPI_INT, r, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        }
        raise(SIGKILL);
    }
    OK(MPI_Send(&me, 1, MPI_INT, victim, 4, MPI_COMM_WORLD));
    if (me == 0) {
        int flag = 0;
        while (!flag)
            OK(MPI_Parrived(req, 0, &flag));
        int rc = MPI_Wait(&req, MPI_STATUS_IGNORE), cls;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPIX_ERR_PROC_FAILED);
        CHECK(req != MPI_REQUEST_NULL);
        OK(MPI_Request_free(&req));
    }
    printf("rank %d: PARTITIONED FT OK\n", me);
    MPI_Finalize();
    return 0;
}
