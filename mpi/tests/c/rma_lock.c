/*
 * Passive target one-sided communication, at any number of ranks:
 * - mutual exclusion: every rank increments a counter of rank 0 by get, add, put under
 *   an exclusive lock, many times (the exact total shows no two held the lock at once);
 * - MPI_SUM accumulates and MPI_Fetch_and_op tickets under MPI_Win_lock_all, with
 *   MPI_Win_flush, while the target computes outside MPI (its agent applies them);
 * - a shared lock and a get of the next rank's value;
 * - MPI_Rput, MPI_Raccumulate, MPI_Rget_accumulate and MPI_Rget on the next rank under
 *   an exclusive lock, each request waited on;
 * - MPI_Win_unlock without a lock: MPI_ERR_RMA_SYNC; a bad lock type: MPI_ERR_LOCKTYPE.
 * Each rank prints "rank R: RMA LOCK OK".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int me = -1;

#include "check.h"

static int class_of(int rc) {
    int cls = -1;
    OK(MPI_Error_class(rc, &cls));
    return cls;
}

enum { COUNTER = 0, SUM = 1, TICKETS = 2, MINE = 3, WORDS = 4 };
#define ROUNDS 30

int main(int argc, char **argv) {
    int n;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &n));
    int *w = NULL;
    MPI_Win win;
    OK(MPI_Win_allocate(WORDS * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w,
                        &win));
    OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    w[MINE] = 100 + me;
    OK(MPI_Barrier(MPI_COMM_WORLD));

    /* Mutual exclusion. */
    for (int i = 0; i < ROUNDS; i++) {
        int v = -1;
        OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        OK(MPI_Get(&v, 1, MPI_INT, 0, COUNTER, 1, MPI_INT, win));
        v++;
        /* A critical section long enough that overlapping holders lose updates. */
        struct timespec pause = {0, 200 * 1000};
        nanosleep(&pause, NULL);
        OK(MPI_Put(&v, 1, MPI_INT, 0, COUNTER, 1, MPI_INT, win));
        OK(MPI_Win_unlock(0, win));
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) CHECK(w[COUNTER] == ROUNDS * n);

    /* Accumulates and tickets while rank 0 computes. */
    if (me == 0) {
        struct timespec t = {0, 200 * 1000 * 1000};
        nanosleep(&t, NULL); /* outside MPI: the agent serves */
    }
    OK(MPI_Win_lock_all(0, win));
    int last = -1;
    for (int i = 0; i < ROUNDS; i++) {
        int add = me + 1, one = 1, ticket = -1;
        OK(MPI_Accumulate(&add, 1, MPI_INT, 0, SUM, 1, MPI_INT, MPI_SUM, win));
        OK(MPI_Fetch_and_op(&one, &ticket, MPI_INT, 0, TICKETS, MPI_SUM, win));
        CHECK(ticket > last && ticket < ROUNDS * n);
        last = ticket;
    }
    OK(MPI_Win_flush(0, win));
    int seen = -1, none = 0;
    OK(MPI_Get_accumulate(&none, 1, MPI_INT, &seen, 1, MPI_INT, 0, SUM, 1, MPI_INT, MPI_NO_OP,
                          win));
    CHECK(seen >= ROUNDS * (me + 1));
    OK(MPI_Win_flush_all(win));
    OK(MPI_Win_flush_local(0, win));
    OK(MPI_Win_flush_local_all(win));
    OK(MPI_Win_sync(win));
    OK(MPI_Win_unlock_all(win));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) {
        CHECK(w[SUM] == ROUNDS * n * (n + 1) / 2);
        CHECK(w[TICKETS] == ROUNDS * n);
    }

    /* A shared lock and a get. */
    int next = (me + 1) % n, v = -1;
    OK(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win));
    OK(MPI_Get(&v, 1, MPI_INT, next, MINE, 1, MPI_INT, win));
    OK(MPI_Win_unlock(next, win));
    CHECK(v == 100 + next);
    OK(MPI_Win_lock(MPI_LOCK_SHARED, MPI_PROC_NULL, 0, win));
    OK(MPI_Win_unlock(MPI_PROC_NULL, win));

    /* The request-based calls in a passive epoch: on the next rank's MINE word. */
    int got = -1, before = -1, two = 2, put_v = 500 + me;
    MPI_Request rq[4];
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, win));
    OK(MPI_Rput(&put_v, 1, MPI_INT, next, MINE, 1, MPI_INT, win, &rq[0]));
    OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
    OK(MPI_Raccumulate(&two, 1, MPI_INT, next, MINE, 1, MPI_INT, MPI_SUM, win, &rq[1]));
    OK(MPI_Rget_accumulate(&two, 1, MPI_INT, &before, 1, MPI_INT, next, MINE, 1, MPI_INT,
                           MPI_SUM, win, &rq[2]));
    OK(MPI_Waitall(2, &rq[1], MPI_STATUSES_IGNORE));
    OK(MPI_Win_flush(next, win));
    OK(MPI_Rget(&got, 1, MPI_INT, next, MINE, 1, MPI_INT, win, &rq[3]));
    OK(MPI_Wait(&rq[3], MPI_STATUS_IGNORE));
    OK(MPI_Win_unlock(next, win));
    CHECK(before == 502 + me && got == 504 + me);

    /* Wrong synchronization. */
    CHECK(class_of(MPI_Win_unlock(0, win)) == MPI_ERR_RMA_SYNC);
    CHECK(class_of(MPI_Win_lock(12345, 0, 0, win)) == MPI_ERR_LOCKTYPE);
    CHECK(class_of(MPI_Win_lock(MPI_LOCK_SHARED, n, 0, win)) == MPI_ERR_RANK);

    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Win_free(&win));
    OK(MPI_Finalize());
    printf("rank %d: RMA LOCK OK\n", me);
    return 0;
}
