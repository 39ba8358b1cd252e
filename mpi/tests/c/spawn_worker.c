/* The worker program `spawn.c worker` spawns (docs/spawn.md): not the job's program.
 * It checks that it got exactly the command and arguments of MPI_Comm_spawn (argv[0]
 * the command as given, then `alpha` and `two words`) and that it has a parent, then
 * exchanges messages with its parent over the inter-communicator, merges it (children
 * last), allreduces over the merged and its own world, and disconnects. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int me = -1;
#include "check.h"

int main(int argc, char **argv) {
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    MPI_Comm parent;
    OK(MPI_Comm_get_parent(&parent));
    CHECK(parent != MPI_COMM_NULL);
    OK(MPI_Comm_set_errhandler(parent, MPI_ERRORS_RETURN));
    CHECK(argc == 3);
    CHECK(strcmp(argv[1], "alpha") == 0 && strcmp(argv[2], "two words") == 0);
    const char *base = strrchr(argv[0], '/');
    CHECK(base != NULL && strcmp(base + 1, "mpi-spawn_worker") == 0);
    int size, rsize;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    OK(MPI_Comm_remote_size(parent, &rsize));
    CHECK(size == 2 && rsize == 2);
    int got = -1, v = 400 + me;
    OK(MPI_Recv(&got, 1, MPI_INT, me, 7, parent, MPI_STATUS_IGNORE));
    CHECK(got == 300 + me);
    OK(MPI_Send(&v, 1, MPI_INT, me, 8, parent));
    MPI_Comm merged;
    OK(MPI_Intercomm_merge(parent, 1, &merged));
    int mr, ms, sum = 0;
    OK(MPI_Comm_rank(merged, &mr));
    OK(MPI_Comm_size(merged, &ms));
    CHECK(mr == 2 + me && ms == 4);
    OK(MPI_Allreduce(&mr, &sum, 1, MPI_INT, MPI_SUM, merged));
    CHECK(sum == 0 + 1 + 2 + 3);
    OK(MPI_Comm_free(&merged));
    int one = 1, two = 0;
    OK(MPI_Allreduce(&one, &two, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(two == 2);
    OK(MPI_Comm_disconnect(&parent));
    printf("worker %d: WORKER CHILD OK argv0=%s\n", me, argv[0]);
    OK(MPI_Finalize());
    return 0;
}
