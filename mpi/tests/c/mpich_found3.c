/* What the third sweep of MPICH's test suite found wrong (docs/mpi.md, "MPICH's test
 * suite"), one part per finding. `mpich_found3 [part]` runs one part (`freeing`), or
 * all of them; each rank prints "MPICH FOUND3 OK" at the end. */
#include <mpi.h>
#include <string.h>

#include "check.h"

static int me, np;

/* A target that takes no part in a passive epoch may free its window at once: the other
 * members' locks, accumulates, puts and unlocks of it still complete (its agent serves
 * them until every member is in MPI_Win_free), and after the free its memory holds
 * what they wrote. */
static void freeing(void) {
    int buf[64];
    for (int i = 0; i < 64; i++) buf[i] = -1;
    buf[0] = 0;
    MPI_Win win;
    OK(MPI_Win_create(me == 0 ? buf : NULL, me == 0 ? (MPI_Aint)sizeof buf : 0, sizeof(int),
                      MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    if (me != 0) {
        int one = 1, old = -2;
        for (int round = 0; round < 5; round++) {
            OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
            OK(MPI_Accumulate(&one, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, win));
            OK(MPI_Put(&me, 1, MPI_INT, 0, me, 1, MPI_INT, win));
            OK(MPI_Fetch_and_op(&one, &old, MPI_INT, 0, 63, MPI_SUM, win));
            OK(MPI_Win_unlock(0, win));
            CHECK(old >= -1);
        }
    }
    OK(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL);
    if (me == 0) {
        CHECK(buf[0] == 5 * (np - 1));
        CHECK(buf[63] == -1 + 5 * (np - 1));
        for (int r = 1; r < np && r < 63; r++) CHECK(buf[r] == r);
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));
}


int main(int argc, char **argv) {
    const char *part = argc > 1 ? argv[1] : "all";
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &np));
    int all = strcmp(part, "all") == 0;
    if (all || strcmp(part, "freeing") == 0) freeing();
    printf("rank %d: MPICH FOUND3 OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
