/*
 * MPI_Ssend / MPI_Issend at N >= 2 ranks, in the shape of MPICH's pt2pt tests
 * (sendself, the ssend tests of the MPI conformance suites): a synchronous send must
 * not complete before the matching receive has started (MPI 4.1, 3.4). Checked by
 * causality, not by clocks: the sender reports completion with a plain message, and
 * the receiver checks that no report came before it posted the receive.
 * The argument "fabric" names a run whose ranks are reached through libfabric: the
 * same checks (the synchronous mark travels beside the fabric's tag).
 * The argument "multiple" initialises with MPI_THREAD_MULTIPLE.
 * Each rank prints "rank R: SSEND OK" at the end.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me = -1;

#include "check.h"

enum { DONE = 90, GO = 91 };

/* Rank 1 ssends rank 0 a small, a medium and a large message, each followed by a
 * plain DONE message; rank 0 posts each receive 0.3 s late and checks that no DONE
 * arrived meanwhile. */
static void ssend_waits_for_the_receiver(int rank) {
    const int counts[3] = {2, 1024, 1 << 18};
    if (rank == 1) {
        for (int k = 0; k < 3; k++) {
            int *buf = malloc(sizeof(int) * (size_t)counts[k]);
            for (int i = 0; i < counts[k]; i++) buf[i] = k + i;
            OK(MPI_Ssend(buf, counts[k], MPI_INT, 0, k, MPI_COMM_WORLD));
            OK(MPI_Send(&k, 1, MPI_INT, 0, DONE, MPI_COMM_WORLD));
            free(buf);
        }
    } else if (rank == 0) {
        for (int k = 0; k < 3; k++) {
            double until = MPI_Wtime() + 0.3;
            int flag = 0;
            while (MPI_Wtime() < until) {
                OK(MPI_Iprobe(1, DONE, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
                CHECK(flag == 0); /* the ssend returned before its receive was posted */
            }
            int *buf = malloc(sizeof(int) * (size_t)counts[k]);
            MPI_Status st;
            OK(MPI_Recv(buf, counts[k], MPI_INT, 1, k, MPI_COMM_WORLD, &st));
            int count = -1;
            OK(MPI_Get_count(&st, MPI_INT, &count));
            CHECK(count == counts[k] && buf[counts[k] - 1] == k + counts[k] - 1);
            int done = -1;
            OK(MPI_Recv(&done, 1, MPI_INT, 1, DONE, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(done == k);
            free(buf);
        }
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));
}

/* MPI_Issend: MPI_Test stays false while the receiver (which waits for GO) has not
 * posted the receive; then MPI_Wait completes. */
static void issend_test_stays_false(int rank) {
    int v = 1234, got = -1, flag = -1, go = 1;
    if (rank == 0) {
        MPI_Request r;
        OK(MPI_Issend(&v, 1, MPI_INT, 1, 11, MPI_COMM_WORLD, &r));
        for (int i = 0; i < 200; i++) {
            OK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
            CHECK(flag == 0);
        }
        OK(MPI_Send(&go, 1, MPI_INT, 1, GO, MPI_COMM_WORLD));
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        CHECK(r == MPI_REQUEST_NULL);
    } else if (rank == 1) {
        OK(MPI_Recv(&go, 1, MPI_INT, 0, GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        OK(MPI_Recv(&got, 1, MPI_INT, 0, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(got == 1234);
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));
}

/* Every rank issends every other one; receives in reverse rank order; Waitall. */
static void all_pairs(int rank, int size) {
    int *out = malloc(sizeof(int) * (size_t)size), *in = malloc(sizeof(int) * (size_t)size);
    MPI_Request *rq = malloc(sizeof(MPI_Request) * (size_t)size);
    for (int r = 0; r < size; r++) {
        out[r] = rank * 100 + r;
        OK(MPI_Issend(&out[r], 1, MPI_INT, r, 12, MPI_COMM_WORLD, &rq[r]));
    }
    for (int r = size - 1; r >= 0; r--) {
        OK(MPI_Recv(&in[r], 1, MPI_INT, r, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(in[r] == r * 100 + rank);
    }
    OK(MPI_Waitall(size, rq, MPI_STATUSES_IGNORE));
    free(rq);
    free(in);
    free(out);
}

/* To oneself (MPICH's sendself shape), and MPI_PROC_NULL. */
static void self_and_null(void) {
    int v = 5, got = -1, flag = -1;
    MPI_Request r;
    OK(MPI_Issend(&v, 1, MPI_INT, 0, 13, MPI_COMM_SELF, &r));
    OK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
    CHECK(flag == 0);
    OK(MPI_Recv(&got, 1, MPI_INT, 0, 13, MPI_COMM_SELF, MPI_STATUS_IGNORE));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(got == 5);
    OK(MPI_Ssend(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD));
    OK(MPI_Issend(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(MPI_Ssend(&v, 1, MPI_INT, 0, -1, MPI_COMM_WORLD) == MPI_ERR_TAG);
}

int main(int argc, char **argv) {
    int size, provided = -1;
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "multiple") == 0) {
        OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
        CHECK(provided == MPI_THREAD_MULTIPLE);
    } else {
        OK(MPI_Init(&argc, &argv));
    }
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size >= 2);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    self_and_null();
    ssend_waits_for_the_receiver(me);
    issend_test_stays_false(me);
    all_pairs(me, size);
    OK(MPI_Finalize());
    printf("rank %d: SSEND OK\n", me);
    return 0;
}
