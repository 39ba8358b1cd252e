/*
 * Started without a launcher, MPI_Init makes a job of one process (MPI's singleton
 * init): rank 0 of 1, collectives and messages to itself work. Prints "SINGLETON OK".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OK(call)                                                                       \
    do {                                                                               \
        if ((call) != MPI_SUCCESS) {                                                   \
            fprintf(stderr, "line %d: %s failed\n", __LINE__, #call);                  \
            return 1;                                                                  \
        }                                                                              \
    } while (0)

int main(int argc, char **argv) {
    int rank = -1, size = -1, v = 7, sum = 0, got = 0;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    if (rank != 0 || size != 1) return 1;
    OK(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Sendrecv(&v, 1, MPI_INT, 0, 1, &got, 1, MPI_INT, 0, 1, MPI_COMM_WORLD,
                    MPI_STATUS_IGNORE));
    int flag = 1;
    OK(MPIX_Comm_agree(MPI_COMM_WORLD, &flag));
    if (sum != 7 || got != 7 || flag != 1) return 1;
    /* Ports and names within the job of one (its own store). */
    char port[MPI_MAX_PORT_NAME], found[MPI_MAX_PORT_NAME] = "";
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Open_port(MPI_INFO_NULL, port));
    OK(MPI_Publish_name("singleton-service", MPI_INFO_NULL, port));
    OK(MPI_Lookup_name("singleton-service", MPI_INFO_NULL, found));
    if (strcmp(port, found) != 0) return 1;
    OK(MPI_Unpublish_name("singleton-service", MPI_INFO_NULL, port));
    if (MPI_Lookup_name("singleton-service", MPI_INFO_NULL, found) != MPI_ERR_NAME) return 1;
    OK(MPI_Close_port(port));
    OK(MPI_Finalize());
    printf("SINGLETON OK\n");
    return 0;
}
