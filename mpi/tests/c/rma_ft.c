/*
 * ULFM rules of one-sided communication, at N >= 3 ranks: the last rank SIGKILLs itself
 * after a first epoch. Survivors check that
 * - a put to the dead rank fails with MPIX_ERR_PROC_FAILED once it is gone (no hang);
 * - a put to a live rank still works; an exclusive lock of the dead rank fails with
 *   MPIX_ERR_PROC_FAILED, one of a live rank works (an accumulate under it too);
 * - MPI_Win_fence, with accumulates queued for the dead rank or not, fails with
 *   MPIX_ERR_PROC_FAILED (no hang), on the window's error handler;
 * - MPI_Win_free returns (success or MPIX_ERR_PROC_FAILED) and gives MPI_WIN_NULL.
 * Each survivor prints "rank R: RMA FT OK".
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static int me = -1;

#include "check.h"

static int class_of(int rc) {
    int cls = -1;
    OK(MPI_Error_class(rc, &cls));
    return cls;
}

int main(int argc, char **argv) {
    int n;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &n));
    CHECK(n >= 3);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int victim = n - 1;
    int *base = NULL;
    MPI_Win win;
    OK(MPI_Win_allocate(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                        &win));
    OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    OK(MPI_Win_fence(0, win));
    int v = me;
    OK(MPI_Put(&v, 1, MPI_INT, (me + 1) % n, 0, 1, MPI_INT, win));
    OK(MPI_Win_fence(0, win));
    CHECK(base[0] == (me + n - 1) % n);
    int b = MPI_Barrier(MPI_COMM_WORLD);
    CHECK(b == MPI_SUCCESS || class_of(b) == MPIX_ERR_PROC_FAILED);
    if (me == victim) raise(SIGKILL);

    /* Puts to the victim until its death is seen (at most 30 s). */
    double start = MPI_Wtime();
    int rc;
    do {
        rc = MPI_Put(&v, 1, MPI_INT, victim, 1, 1, MPI_INT, win);
        CHECK(MPI_Wtime() - start < 30);
    } while (rc == MPI_SUCCESS);
    CHECK(class_of(rc) == MPIX_ERR_PROC_FAILED);
    /* A live target still works. */
    int next = (me + 1) % victim;
    OK(MPI_Put(&v, 1, MPI_INT, next, 2, 1, MPI_INT, win));
    /* Passive target: a lock of the dead rank fails; a live rank's still works. */
    rc = MPI_Win_lock(MPI_LOCK_EXCLUSIVE, victim, 0, win);
    CHECK(class_of(rc) == MPIX_ERR_PROC_FAILED);
    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, win));
    OK(MPI_Accumulate(&v, 1, MPI_INT, next, 2, 1, MPI_INT, MPI_SUM, win));
    OK(MPI_Win_unlock(next, win));
    /* An accumulate toward the dead rank is queued; the fence fails. */
    OK(MPI_Accumulate(&v, 1, MPI_INT, victim, 3, 1, MPI_INT, MPI_SUM, win));
    rc = MPI_Win_fence(0, win);
    CHECK(class_of(rc) == MPIX_ERR_PROC_FAILED);
    /* And again without any accumulate. */
    rc = MPI_Win_fence(0, win);
    CHECK(class_of(rc) == MPIX_ERR_PROC_FAILED);
    /* Survivors reach this point at different times (each fence fails as soon as that
       rank learns of the death): a rank that frees its window closes its fabric
       registration, so the survivors meet before freeing. */
    MPI_Comm alive;
    OK(MPIX_Comm_shrink(MPI_COMM_WORLD, &alive));
    OK(MPI_Barrier(alive));
    rc = MPI_Win_free(&win);
    CHECK(rc == MPI_SUCCESS || class_of(rc) == MPIX_ERR_PROC_FAILED);
    CHECK(win == MPI_WIN_NULL);
    OK(MPI_Comm_free(&alive));
    printf("rank %d: RMA FT OK\n", me);
    MPI_Finalize();
    return 0;
}
