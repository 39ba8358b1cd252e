/*
 * Persistent requests: a ring where every rank starts a persistent receive from its
 * left and a persistent send to its right 100 times (Startall + Waitall, new data each
 * time, every element checked), a synchronous one with a wildcard receive, MPI_Start /
 * MPI_Wait / MPI_Test one by one, the completion calls on inactive requests (complete
 * at once, empty status; Waitany and Testsome pass over them), MPI_PROC_NULL, a start
 * of an active request refused, and MPI_Request_free. Each rank prints
 * "rank R: PERSISTENT OK".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int me = -1;

#include "check.h"

#define LEN 64

int main(int argc, char **argv) {
    int n;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &n));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int right = (me + 1) % n, left = (me + n - 1) % n;
    int out[LEN], in[LEN];
    MPI_Request r[2];
    OK(MPI_Recv_init(in, LEN, MPI_INT, left, 1, MPI_COMM_WORLD, &r[0]));
    OK(MPI_Send_init(out, LEN, MPI_INT, right, 1, MPI_COMM_WORLD, &r[1]));
    /* Inactive: complete at once, with an empty status; the handle stays. */
    MPI_Status st;
    int flag = 0, count = -1;
    OK(MPI_Test(&r[0], &flag, &st));
    CHECK(flag == 1 && r[0] != MPI_REQUEST_NULL);
    OK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == 0);
    CHECK(st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG); /* empty */
    MPI_Request null = MPI_REQUEST_NULL;
    st.MPI_SOURCE = 5;
    OK(MPI_Wait(&null, &st));
    CHECK(st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG);
    OK(MPI_Wait(&r[1], MPI_STATUS_IGNORE));
    CHECK(r[1] != MPI_REQUEST_NULL);
    int index = 7;
    OK(MPI_Waitany(2, r, &index, MPI_STATUS_IGNORE));
    CHECK(index == MPI_UNDEFINED);
    for (int it = 0; it < 100; it++) {
        for (int i = 0; i < LEN; i++) out[i] = me * 100000 + it * 100 + i;
        OK(MPI_Startall(2, r));
        MPI_Status sts[2];
        OK(MPI_Waitall(2, r, sts));
        CHECK(r[0] != MPI_REQUEST_NULL && r[1] != MPI_REQUEST_NULL);
        CHECK(sts[0].MPI_SOURCE == left && sts[0].MPI_TAG == 1);
        for (int i = 0; i < LEN; i++) CHECK(in[i] == left * 100000 + it * 100 + i);
    }
    /* One by one, with MPI_Test until done; a start of an active request is refused. */
    out[0] = me + 1000;
    OK(MPI_Start(&r[0]));
    CHECK(MPI_Start(&r[0]) != MPI_SUCCESS);
    OK(MPI_Start(&r[1]));
    flag = 0;
    while (!flag) {
        OK(MPI_Test(&r[0], &flag, &st));
    }
    CHECK(in[0] == left + 1000 && st.MPI_SOURCE == left);
    OK(MPI_Wait(&r[1], MPI_STATUS_IGNORE));
    /* Waitany over one active request among inactive ones returns the active one. */
    out[0] = me + 2000;
    OK(MPI_Start(&r[1]));
    OK(MPI_Waitany(2, r, &index, MPI_STATUS_IGNORE));
    CHECK(index == 1);
    OK(MPI_Start(&r[0]));
    int outcount = -1, indices[2];
    while (outcount != 1) {
        OK(MPI_Testsome(2, r, &outcount, indices, MPI_STATUSES_IGNORE));
        CHECK(outcount == 0 || outcount == 1);
    }
    CHECK(indices[0] == 0 && in[0] == left + 2000);
    OK(MPI_Testsome(2, r, &outcount, indices, MPI_STATUSES_IGNORE));
    CHECK(outcount == MPI_UNDEFINED);
    OK(MPI_Request_free(&r[0]));
    OK(MPI_Request_free(&r[1]));
    CHECK(r[0] == MPI_REQUEST_NULL && r[1] == MPI_REQUEST_NULL);

    /* Synchronous sends to rank 0 with a wildcard receive there, 20 times. */
    MPI_Request s;
    int v = -1;
    if (me == 0) {
        OK(MPI_Recv_init(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &s));
        for (int it = 0; it < 20 * (n - 1); it++) {
            OK(MPI_Start(&s));
            OK(MPI_Wait(&s, &st));
            CHECK(st.MPI_SOURCE >= 1 && st.MPI_SOURCE < n && st.MPI_TAG == st.MPI_SOURCE);
            CHECK(v == st.MPI_SOURCE * 10);
        }
    } else {
        v = me * 10;
        OK(MPI_Ssend_init(&v, 1, MPI_INT, 0, me, MPI_COMM_WORLD, &s));
        for (int it = 0; it < 20; it++) {
            OK(MPI_Start(&s));
            OK(MPI_Wait(&s, MPI_STATUS_IGNORE));
        }
    }
    OK(MPI_Request_free(&s));

    /* MPI_PROC_NULL: completes at once, every time. */
    OK(MPI_Send_init(out, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &s));
    for (int it = 0; it < 3; it++) {
        OK(MPI_Start(&s));
        OK(MPI_Wait(&s, MPI_STATUS_IGNORE));
    }
    OK(MPI_Request_free(&s));
    OK(MPI_Recv_init(in, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &s));
    OK(MPI_Start(&s));
    OK(MPI_Wait(&s, &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG);
    OK(MPI_Request_free(&s));
    /* Bad arguments are refused when the request is made. */
    CHECK(MPI_Send_init(out, 1, MPI_INT, n, 0, MPI_COMM_WORLD, &s) != MPI_SUCCESS);
    CHECK(MPI_Recv_init(in, 1, MPI_INT, 0, -5, MPI_COMM_WORLD, &s) != MPI_SUCCESS);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    printf("rank %d: PERSISTENT OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
