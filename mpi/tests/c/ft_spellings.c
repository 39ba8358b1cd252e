/*
 * The launcher's Open MPI spellings of the fault-tolerance mode: rank 0 prints
 * `FT <MPI_FT attribute>` (1: failures are tolerated, 0: they are fatal). With the
 * argument `kill`, the last rank SIGKILLs itself past a barrier and every survivor
 * prints `SURVIVED` once its next barrier has failed. Run: steadfast-run -am
 * ft-enable-mpi -np 3 ft_spellings kill (ICLDisco/ulfm-testing's benchmarks/Makefile
 * runs its programs so: `mpirun -am ft-enable-mpi -np 8`), or with `--mca
 * mpi_ft_enable 0`.
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <string.h>

#include "check.h"
#include "past.h"

static int me = -1;

int main(int argc, char **argv) {
    int size, flag = 0, *ft = NULL;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_FT, &ft, &flag));
    CHECK(flag && ft != NULL);
    if (me == 0)
        printf("FT %d\n", *ft);
    if (argc > 1 && strcmp(argv[1], "kill") == 0) {
        OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
        OK(MPI_Barrier(MPI_COMM_WORLD));
        OK(others_past(MPI_COMM_WORLD, size - 1));
        if (me == size - 1)
            raise(SIGKILL);
        CHECK(MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS);
        printf("rank %d: SURVIVED\n", me);
    }
    MPI_Finalize();
    return 0;
}
