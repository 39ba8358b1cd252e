/*
 * MPI_Probe / MPI_Iprobe at N >= 2 ranks, in the shape of MPICH's pt2pt probe tests
 * (probe-unexp, probenull, sendself): probe a message of unknown size, allocate by
 * MPI_Get_count, receive it; wildcards; a message larger than the eager limit; the
 * earlier of two messages with the same tag; MPI_PROC_NULL; a message to oneself;
 * matched probes (MPI_Mprobe, MPI_Improbe, MPI_Mrecv, MPI_Imrecv).
 * The argument "fabric" names a run whose ranks are reached through libfabric: the
 * same checks (fabric messages are matched by the runtime's one matcher).
 * The argument "multiple" initialises with MPI_THREAD_MULTIPLE.
 * Each rank prints "rank R: PROBE OK" at the end.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me = -1;

#include "check.h"

/* Rank r sends its right neighbour (r + 1) * 1000 + 7 ints with tag 100 + r, the k-th
 * being r * k; the receiver learns size, source and tag from the probe alone. */
static void unknown_size(int rank, int size, int big) {
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int n = (rank + 1) * (big ? 100000 : 1000) + 7;
    int *out = malloc(sizeof(int) * (size_t)n);
    for (int k = 0; k < n; k++) out[k] = rank * k;
    MPI_Request s;
    OK(MPI_Isend(out, n, MPI_INT, right, 100 + rank, MPI_COMM_WORLD, &s));
    MPI_Status st;
    OK(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 100 + left);
    int count = -1;
    OK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == (left + 1) * (big ? 100000 : 1000) + 7);
    /* Probing again finds the same message: a probe receives nothing. */
    MPI_Status again;
    OK(MPI_Probe(left, 100 + left, MPI_COMM_WORLD, &again));
    int count2 = -1;
    OK(MPI_Get_count(&again, MPI_INT, &count2));
    CHECK(again.MPI_SOURCE == left && count2 == count);
    int *in = malloc(sizeof(int) * (size_t)count);
    OK(MPI_Recv(in, count, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st));
    for (int k = 0; k < count; k++) CHECK(in[k] == left * k);
    OK(MPI_Wait(&s, MPI_STATUS_IGNORE));
    free(in);
    free(out);
    OK(MPI_Barrier(MPI_COMM_WORLD));
}

/* Iprobe: nothing for a tag nobody sends; then a loop until the message is there; two
 * messages with the same tag: the probe reports the first one sent (MPI's order). */
static void iprobe_order(int rank, int size) {
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int flag = -1;
    MPI_Status st;
    OK(MPI_Iprobe(MPI_ANY_SOURCE, 4242, MPI_COMM_WORLD, &flag, &st));
    CHECK(flag == 0);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    char first[3] = "ab", second[9] = "abcdefgh";
    OK(MPI_Send(first, 3, MPI_CHAR, right, 7, MPI_COMM_WORLD));
    OK(MPI_Send(second, 9, MPI_CHAR, right, 7, MPI_COMM_WORLD));
    int polls = 0;
    do {
        OK(MPI_Iprobe(left, 7, MPI_COMM_WORLD, &flag, &st));
        polls++;
    } while (!flag);
    int count = -1;
    OK(MPI_Get_count(&st, MPI_CHAR, &count));
    CHECK(count == 3 && st.MPI_SOURCE == left && st.MPI_TAG == 7);
    char buf[16];
    OK(MPI_Recv(buf, 16, MPI_CHAR, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(strcmp(buf, "ab") == 0);
    OK(MPI_Iprobe(left, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
    if (flag) {
        OK(MPI_Probe(left, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        OK(MPI_Get_count(&st, MPI_CHAR, &count));
        CHECK(count == 9);
    }
    OK(MPI_Recv(buf, 16, MPI_CHAR, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(strcmp(buf, "abcdefgh") == 0);
    (void)polls;
    OK(MPI_Barrier(MPI_COMM_WORLD));
}

/* Matched probes (MPICH's mprobe test shape): a taken message is out of the queue,
 * so a receive posted after the MPI_Mprobe gets the next message; MPI_Improbe and
 * MPI_Imrecv; MPI_PROC_NULL gives MPI_MESSAGE_NO_PROC. */
static void matched_probe(int rank, int size) {
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int a[3] = {rank, 1, 2}, b[5] = {rank, 1, 2, 3, 4}, c = rank;
    OK(MPI_Send(a, 3, MPI_INT, right, 20, MPI_COMM_WORLD));
    OK(MPI_Send(b, 5, MPI_INT, right, 20, MPI_COMM_WORLD));
    OK(MPI_Send(&c, 1, MPI_INT, right, 21, MPI_COMM_WORLD));
    MPI_Message m = MPI_MESSAGE_NULL;
    MPI_Status st;
    int count = -1, got[5] = {-1, -1, -1, -1, -1};
    OK(MPI_Mprobe(left, 20, MPI_COMM_WORLD, &m, &st));
    CHECK(m != MPI_MESSAGE_NULL && st.MPI_SOURCE == left);
    OK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == 3);
    OK(MPI_Recv(got, 5, MPI_INT, left, 20, MPI_COMM_WORLD, &st));
    OK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == 5 && got[4] == 4); /* the second message: the first was taken */
    OK(MPI_Mrecv(got, 3, MPI_INT, &m, &st));
    CHECK(m == MPI_MESSAGE_NULL && got[0] == left && st.MPI_TAG == 20);
    int flag = 0;
    while (!flag) OK(MPI_Improbe(MPI_ANY_SOURCE, 21, MPI_COMM_WORLD, &flag, &m, &st));
    CHECK(st.MPI_SOURCE == left);
    MPI_Request r;
    OK(MPI_Imrecv(got, 1, MPI_INT, &m, &r));
    OK(MPI_Wait(&r, &st));
    CHECK(got[0] == left && st.MPI_TAG == 21);
    OK(MPI_Improbe(left, 21, MPI_COMM_WORLD, &flag, &m, &st));
    CHECK(flag == 0);
    OK(MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &m, &st));
    CHECK(m == MPI_MESSAGE_NO_PROC && st.MPI_SOURCE == MPI_PROC_NULL);
    OK(MPI_Mrecv(got, 1, MPI_INT, &m, &st));
    CHECK(m == MPI_MESSAGE_NULL && st.MPI_SOURCE == MPI_PROC_NULL);
    CHECK(MPI_Mrecv(got, 1, MPI_INT, &m, &st) == MPI_ERR_REQUEST);
    OK(MPI_Barrier(MPI_COMM_WORLD));
}

/* MPI_PROC_NULL and bad arguments; a message to oneself. */
static void null_and_self(void) {
    MPI_Status st;
    int flag = -1, count = -1;
    OK(MPI_Probe(MPI_PROC_NULL, 3, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG);
    OK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == 0);
    OK(MPI_Iprobe(MPI_PROC_NULL, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
    CHECK(flag == 1 && st.MPI_SOURCE == MPI_PROC_NULL);
    int size;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(MPI_Probe(size, 0, MPI_COMM_WORLD, &st) == MPI_ERR_RANK);
    CHECK(MPI_Iprobe(0, -7, MPI_COMM_WORLD, &flag, &st) == MPI_ERR_TAG);
    CHECK(MPI_Probe(0, 0, MPI_COMM_NULL, &st) == MPI_ERR_COMM);

    double d[5] = {1, 2, 3, 4, 5};
    MPI_Request r;
    OK(MPI_Isend(d, 5, MPI_DOUBLE, 0, 9, MPI_COMM_SELF, &r));
    OK(MPI_Probe(MPI_ANY_SOURCE, 9, MPI_COMM_SELF, &st));
    OK(MPI_Get_count(&st, MPI_DOUBLE, &count));
    CHECK(count == 5 && st.MPI_SOURCE == 0 && st.MPI_TAG == 9);
    double got[5];
    OK(MPI_Recv(got, 5, MPI_DOUBLE, 0, 9, MPI_COMM_SELF, MPI_STATUS_IGNORE));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(got[4] == 5.0);
    OK(MPI_Iprobe(0, 9, MPI_COMM_SELF, &flag, &st));
    CHECK(flag == 0);
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
    null_and_self();
    unknown_size(me, size, 0);
    unknown_size(me, size, 1);
    iprobe_order(me, size);
    matched_probe(me, size);
    OK(MPI_Finalize());
    printf("rank %d: PROBE OK\n", me);
    return 0;
}
