/* MPI_Comm_free returns without waiting for the other members: ranks free two
 * communicators in opposite orders (MPICH's comm_idup_overlap does; a free that waits
 * for the others deadlocks here), and a loop of dups freed in alternating orders
 * makes more communicators than there are contexts (65 534), so every free must give
 * its contexts back once the others have freed too. Then inter-communicators made
 * again over the same groups and tag. Each rank prints "FREE ORDER OK". */
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
    /* An inter-communicator made again over the same groups with the same tag, after
     * the last one was merged and freed (the runtime named it by its groups and tag,
     * so the next one took the freed one's identity and hung), and two alive at once. */
    MPI_Comm half;
    OK(MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half));
    int leader = me % 2 == 0 ? 1 : 0;
    for (int k = 0; k < 3; k++) {
        MPI_Comm ic, merged;
        int sum = 0;
        OK(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, leader, 55, &ic));
        OK(MPI_Intercomm_merge(ic, me % 2, &merged));
        OK(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, merged));
        CHECK(sum == np * (np - 1) / 2);
        OK(MPI_Comm_free(&merged));
        OK(MPI_Comm_free(&ic));
    }
    MPI_Comm ic[2];
    for (int k = 0; k < 2; k++) {
        OK(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, leader, 56, &ic[k]));
    }
    for (int k = 0; k < 2; k++) {
        int lr, got = -1, v = 100 * k + me;
        OK(MPI_Comm_rank(ic[k], &lr));
        if (lr == 0) {
            /* The two leaders swap their world ranks. */
            OK(MPI_Sendrecv(&v, 1, MPI_INT, 0, k, &got, 1, MPI_INT, 0, k, ic[k],
                            MPI_STATUS_IGNORE));
            CHECK(got == 100 * k + leader);
        }
        OK(MPI_Barrier(ic[k]));
    }
    for (int k = 0; k < 2; k++) {
        OK(MPI_Comm_free(&ic[k]));
    }
    OK(MPI_Comm_free(&half));
    printf("rank %d: FREE ORDER OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
