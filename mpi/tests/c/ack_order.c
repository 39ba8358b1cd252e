/*
 * ULFM's count-based acknowledgement at 4 ranks (run with --with-ft ulfm): rank 3 dies,
 * then rank 1, once both survivors (0 and 2) know of rank 3's death. Then at ranks 0
 * and 2:
 * - MPIX_Comm_get_failed lists 3 before 1 (the order the failures were learnt, not
 *   rank order);
 * - MPIX_Comm_ack_failed(comm, 0) acknowledges nothing and says 0; with 1 it
 *   acknowledges rank 3 alone (MPIX_Comm_failure_get_acked: {3}), and a blocking
 *   MPI_ANY_SOURCE receive still fails with MPIX_ERR_PROC_FAILED (rank 1 is not
 *   acknowledged); with 5 it acknowledges both and says 2;
 * - then a wildcard receive between the survivors succeeds.
 * Each survivor prints "rank R: ACK ORDER OK".
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>

static int me = -1;

#include "check.h"
#include "past.h"

static int failed_count(MPI_Comm comm) {
    MPI_Group g;
    int n = -1;
    OK(MPIX_Comm_get_failed(comm, &g));
    OK(MPI_Group_size(g, &n));
    if (g != MPI_GROUP_EMPTY) OK(MPI_Group_free(&g));
    return n;
}

/* Waits until `comm` knows `n` failures (each probe progresses the library). */
static void await_failed(MPI_Comm comm, int n) {
    while (failed_count(comm) < n) {
        int flag;
        (void)MPI_Iprobe(MPI_ANY_SOURCE, 999, comm, &flag, MPI_STATUS_IGNORE);
        struct timespec t = {0, 1000000};
        nanosleep(&t, NULL);
    }
}

/* The world ranks of group `g` (of MPI_COMM_WORLD's members), at most 4. */
static int ranks_of(MPI_Group g, int *out) {
    MPI_Group world;
    int n, idx[4] = {0, 1, 2, 3};
    OK(MPI_Group_size(g, &n));
    CHECK(n <= 4);
    OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    OK(MPI_Group_translate_ranks(g, n, idx, world, out));
    OK(MPI_Group_free(&world));
    return n;
}

static int class_of(int rc) {
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}

int main(int argc, char **argv) {
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    int size;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size == 4);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(others_past(MPI_COMM_WORLD, 3));
    if (me == 3) raise(SIGKILL);
    await_failed(MPI_COMM_WORLD, 1);
    if (me == 1) {
        /* Dies once both survivors know of rank 3. */
        for (int i = 0; i < 2; i++)
            OK(MPI_Recv(NULL, 0, MPI_INT, i == 0 ? 0 : 2, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        raise(SIGKILL);
    }
    OK(MPI_Send(NULL, 0, MPI_INT, 1, 77, MPI_COMM_WORLD));
    await_failed(MPI_COMM_WORLD, 2);

    MPI_Group g;
    int r[4], n, acked = -1;
    OK(MPIX_Comm_get_failed(MPI_COMM_WORLD, &g));
    n = ranks_of(g, r);
    OK(MPI_Group_free(&g));
    CHECK(n == 2 && r[0] == 3 && r[1] == 1);

    OK(MPIX_Comm_ack_failed(MPI_COMM_WORLD, 0, &acked));
    CHECK(acked == 0);
    OK(MPIX_Comm_ack_failed(MPI_COMM_WORLD, 1, &acked));
    CHECK(acked == 1);
    OK(MPIX_Comm_failure_get_acked(MPI_COMM_WORLD, &g));
    n = ranks_of(g, r);
    OK(MPI_Group_free(&g));
    CHECK(n == 1 && r[0] == 3);
    int x = 0;
    CHECK(class_of(MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD,
                            MPI_STATUS_IGNORE)) == MPIX_ERR_PROC_FAILED);
    OK(MPIX_Comm_ack_failed(MPI_COMM_WORLD, 5, &acked));
    CHECK(acked == 2);
    OK(MPIX_Comm_ack_failed(MPI_COMM_WORLD, 1, &acked));
    CHECK(acked == 2);

    int other = me == 0 ? 2 : 0, y = me + 100;
    MPI_Request sr;
    MPI_Status st;
    OK(MPI_Isend(&y, 1, MPI_INT, other, 6, MPI_COMM_WORLD, &sr));
    OK(MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 6, MPI_COMM_WORLD, &st));
    CHECK(x == other + 100 && st.MPI_SOURCE == other);
    OK(MPI_Wait(&sr, MPI_STATUS_IGNORE));
    printf("rank %d: ACK ORDER OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
