/* MPI_Comm_free returns without waiting for the other members: ranks free two
 * communicators in opposite orders (MPICH's comm_idup_overlap does; a free that waits
 * for the others deadlocks here), and a loop of dups freed in alternating orders
 * makes more communicators than there are contexts (65 534), so every free must give
 * its contexts back once the others have freed too. Each rank prints "FREE ORDER OK". */
#include <mpi.h>

#include "check.h"

static int me, np;

/* A message around the ring of `c`, received by a wildcard. */
static void ring(MPI_Comm c, int stamp) {
    int got = -1;
    OK(MPI_Send(&stamp, 1, MPI_INT, (me + 1) % np, 0, c));
    OK(MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, c, MPI_STATUS_IGNORE));
    CHECK(got == stamp);
}

int main(int argc, char **argv) {
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &np));
    int rounds = argc > 1 && argv[1][0] ? atoi(argv[1]) : 40000;
    for (int i = 0; i < rounds; i++) {
        MPI_Comm a, b;
        OK(MPI_Comm_dup(MPI_COMM_WORLD, &a));
        OK(MPI_Comm_dup(MPI_COMM_WORLD, &b));
        if (i % 1000 == 0) {
            ring(a, 2 * i);
            ring(b, 2 * i + 1);
        }
        if ((me + i) % 2 == 0) {
            OK(MPI_Comm_free(&a));
            OK(MPI_Comm_free(&b));
        } else {
            OK(MPI_Comm_free(&b));
            OK(MPI_Comm_free(&a));
        }
        CHECK(a == MPI_COMM_NULL && b == MPI_COMM_NULL);
    }
    printf("rank %d: FREE ORDER OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
