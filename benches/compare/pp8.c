/* 8-byte ping-pong with blocking MPI_Send/MPI_Recv between ranks 0 and 1: 200 000 round
 * trips, 5 repetitions, prints "pingpong8 <best one-way latency in us>". The same source
 * is built with steadfast-cc and with Open MPI's mpicc, so the C layers are compared on
 * the calls a latency-bound MPI program makes (docs/mpi.md, "Speed"). */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char b[8] = {0};
    double best = 1e9;
    for (int rep = 0; rep < 5; rep++) {
        const int n = 200000;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < n; i++) {
            if (rank == 0) {
                MPI_Send(b, 8, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(b, 8, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(b, 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(b, 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
            }
        }
        double t = (MPI_Wtime() - t0) * 1e6 / n / 2;
        if (t < best) best = t;
    }
    if (rank == 0) printf("pingpong8 %.3f\n", best);
    MPI_Finalize();
    return 0;
}
