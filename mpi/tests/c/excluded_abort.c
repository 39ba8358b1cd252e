/*
 * A process the others exclude while it is alive (stopped: it sends no heartbeat),
 * then calls MPI_Abort when it resumes and meets MPI_ERR_OTHER, ends alone: the others,
 * which declared it dead and shrank it away, finish.
 * 3 ranks, run with a short detection timeout. Rank 2 stops itself (SIGSTOP); ranks 0
 * and 1 agree on a dup until the failure shows, shrink, and rank 0 resumes rank 2
 * (SIGCONT, its pid gathered first). Rank 2's next agreement fails (it was excluded)
 * and it calls MPI_Abort(MPI_COMM_WORLD, 5). Ranks 0 and 1 then wait 2 s, run a barrier
 * on the shrunk communicator and print "rank R: SURVIVED".
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "check.h"

static int me = -1;

int main(int argc, char **argv) {
    OK(MPI_Init(&argc, &argv));
    int n;
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &n));
    CHECK(n == 3);
    int pid = (int)getpid(), pids[3];
    OK(MPI_Allgather(&pid, 1, MPI_INT, pids, 1, MPI_INT, MPI_COMM_WORLD));
    MPI_Comm dup;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    OK(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    if (me == 2) {
        raise(SIGSTOP);
        int flag = 1, rc = MPIX_Comm_agree(dup, &flag);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        fprintf(stderr, "rank 2: resumed, agree class %d\n", cls);
        MPI_Abort(MPI_COMM_WORLD, 5);
        return 1;
    }
    int rc, flag;
    do {
        flag = 1;
        rc = MPIX_Comm_agree(dup, &flag);
    } while (rc == MPI_SUCCESS);
    MPI_Comm small;
    OK(MPIX_Comm_revoke(dup));
    OK(MPIX_Comm_shrink(dup, &small));
    int size = -1;
    OK(MPI_Comm_size(small, &size));
    CHECK(size == 2);
    if (me == 0) CHECK(kill(pids[2], SIGCONT) == 0);
    sleep(2);
    OK(MPI_Barrier(small));
    printf("rank %d: SURVIVED\n", me);
    OK(MPI_Comm_free(&small));
    OK(MPI_Comm_free(&dup));
    OK(MPI_Finalize());
    return 0;
}
