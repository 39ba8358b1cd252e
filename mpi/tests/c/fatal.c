/*
 * What a failure does without ULFM handling: the last rank SIGKILLs itself, the others
 * receive from it. With the default handler (MPI_ERRORS_ARE_FATAL) the first survivor to
 * see the failure aborts the job; with the argument "return" the program asks for
 * MPI_ERRORS_RETURN, which `steadfast-run --with-ft no` overrides (the failure is fatal).
 * A survivor that gets an error code back prints "rank R: SURVIVED".
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, size, x = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1 && strcmp(argv[1], "return") == 0) {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == size - 1) raise(SIGKILL);
    int rc = MPI_Recv(&x, 1, MPI_INT, size - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("rank %d: SURVIVED with %d\n", rank, rc);
    fflush(stdout);
    /* Stay long enough for the launcher to end the job. */
    sleep(30);
    MPI_Finalize();
    return 0;
}
