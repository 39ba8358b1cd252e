/*
 * A spawn that fails at its parents: one of MPI_COMM_WORLD's four ranks has died, so
 * MPI_Comm_spawn over MPI_COMM_WORLD fails at the three survivors, while the children
 * it started cannot join them and their MPI_Init fails. Under the default initial
 * error handler (MPI_ERRORS_ARE_FATAL) a child must not return from MPI_Init (it ends,
 * the error class its exit status) instead of running on as if it were one of the
 * job's first ranks; under `-initial-errhandler mpi_errors_return` it gets the error
 * and prints `CHILD INIT RETURNED <class>`. The pattern of ICLDisco/ulfm-testing's
 * stress/spawn.c. Run: steadfast-run -np 4 --universe 6 --with-ft ulfm spawn_orphan
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <string.h>

#include "check.h"
#include "past.h"

static int me = -1;

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        int rc = MPI_Init(&argc, &argv);
        int cls = rc;
        MPI_Error_class(rc, &cls);
        printf("CHILD INIT RETURNED %d\n", cls);
        if (rc == MPI_SUCCESS)
            MPI_Finalize();
        return 0;
    }
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(others_past(MPI_COMM_WORLD, 3));
    if (me == 3)
        raise(SIGKILL);
    /* Rank 3 never enters it: it fails at every survivor, which knows of the death. */
    CHECK(MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS);
    char *args[] = {"child", NULL};
    int codes[2] = {-1, -1};
    MPI_Comm inter = MPI_COMM_NULL;
    int rc = MPI_Comm_spawn(argv[0], args, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, codes);
    CHECK(rc != MPI_SUCCESS && inter == MPI_COMM_NULL);
    printf("rank %d: PARENT SPAWN FAILED\n", me);
    MPI_Finalize();
    return 0;
}
