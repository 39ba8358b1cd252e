/*
 * One-sided communication with post / start / complete / wait, at any number of ranks:
 * - a ring over 3 epochs: each rank exposes its window to the previous rank and
 *   accesses the next one's: a put, an MPI_SUM accumulate, a fetch-and-op ticket;
 * - everyone (rank 0 too) accumulates into rank 0, 20 times per epoch, rank 0 ending
 *   its exposure with an MPI_Win_test loop; the exact total;
 * - a fence epoch on the same window afterwards;
 * - MPI_Win_complete without start, MPI_Win_wait / MPI_Win_test without post:
 *   MPI_ERR_RMA_SYNC.
 * Each rank prints "rank R: RMA PSCW OK".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int me = -1;

#include "check.h"

static int class_of(int rc) {
    int cls = -1;
    OK(MPI_Error_class(rc, &cls));
    return cls;
}

enum { SLOT = 0, SUM = 1, TICKET = 2, TOTAL = 3, WORDS = 4 };

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
    MPI_Group world, prev_g, next_g, zero_g;
    OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    int prev = (me + n - 1) % n, next = (me + 1) % n, zero = 0;
    OK(MPI_Group_incl(world, 1, &prev, &prev_g));
    OK(MPI_Group_incl(world, 1, &next, &next_g));
    OK(MPI_Group_incl(world, 1, &zero, &zero_g));

    /* The ring. */
    for (int e = 0; e < 3; e++) {
        OK(MPI_Win_post(prev_g, 0, win));
        OK(MPI_Win_start(next_g, 0, win));
        int v = 10 * me + e, add = me + 1, one = 1, ticket = -1;
        OK(MPI_Put(&v, 1, MPI_INT, next, SLOT, 1, MPI_INT, win));
        OK(MPI_Accumulate(&add, 1, MPI_INT, next, SUM, 1, MPI_INT, MPI_SUM, win));
        OK(MPI_Fetch_and_op(&one, &ticket, MPI_INT, next, TICKET, MPI_SUM, win));
        OK(MPI_Win_complete(win));
        CHECK(ticket == e);
        OK(MPI_Win_wait(win));
        CHECK(w[SLOT] == 10 * prev + e);
        CHECK(w[SUM] == (e + 1) * (prev + 1));
        CHECK(w[TICKET] == e + 1);
    }

    /* Everyone into rank 0. */
    for (int e = 0; e < 2; e++) {
        if (me == 0) OK(MPI_Win_post(world, 0, win));
        OK(MPI_Win_start(zero_g, 0, win));
        for (int i = 0; i < 20; i++) {
            int add = me + 1;
            OK(MPI_Accumulate(&add, 1, MPI_INT, 0, TOTAL, 1, MPI_INT, MPI_SUM, win));
        }
        OK(MPI_Win_complete(win));
        if (me == 0) {
            int flag = 0;
            double start = MPI_Wtime();
            while (!flag) {
                OK(MPI_Win_test(win, &flag));
                CHECK(MPI_Wtime() - start < 30);
            }
            CHECK(w[TOTAL] == (e + 1) * 20 * n * (n + 1) / 2);
        }
    }

    /* A fence epoch on the same window. */
    OK(MPI_Win_fence(0, win));
    int add = 1;
    OK(MPI_Accumulate(&add, 1, MPI_INT, 0, TOTAL, 1, MPI_INT, MPI_SUM, win));
    OK(MPI_Win_fence(0, win));
    if (me == 0) CHECK(w[TOTAL] == 2 * 20 * n * (n + 1) / 2 + n);

    /* Wrong synchronization. */
    CHECK(class_of(MPI_Win_complete(win)) == MPI_ERR_RMA_SYNC);
    CHECK(class_of(MPI_Win_wait(win)) == MPI_ERR_RMA_SYNC);
    int flag = 0;
    CHECK(class_of(MPI_Win_test(win, &flag)) == MPI_ERR_RMA_SYNC);

    OK(MPI_Group_free(&prev_g));
    OK(MPI_Group_free(&next_g));
    OK(MPI_Group_free(&zero_g));
    OK(MPI_Group_free(&world));
    OK(MPI_Win_free(&win));
    OK(MPI_Finalize());
    printf("rank %d: RMA PSCW OK\n", me);
    return 0;
}
