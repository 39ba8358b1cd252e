/*
 * The status of a truncated receive (MPICH's errors/pt2pt/errinstat* programs) at 2
 * ranks: rank 1 sends 10 ints with tag 0 and 11 ints with tag 10 twice, then 11 ints with tag 11.
 * Rank 0 receives each into 10 ints: MPI_Irecv of both first ones completed by
 * MPI_Waitall, MPI_Waitsome and MPI_Testall in turn (MPI_ERR_IN_STATUS; the first
 * status MPI_SUCCESS with tag 0, the truncated one MPI_ERR_TRUNCATE naming source 1
 * and tag 10, 10 ints received), then a blocking MPI_Recv of the tag 11 one
 * (MPI_ERR_TRUNCATE, its status naming source 1 and tag 11).
 * Then wildcards, whose truncated status must name the message's source and tag, not
 * the wildcard: 11 ints with tag 12 received from rank 1 with MPI_ANY_TAG, 11 ints
 * with tag 13 with MPI_ANY_SOURCE and MPI_ANY_TAG, and 100000 ints (a rendezvous
 * message) with tag 14 by MPI_Irecv with both wildcards and MPI_Wait.
 * Each rank prints "rank R: TRUNC STATUS OK".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int me = -1;

#include "check.h"

static int class_of(int rc) {
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}

static void check_pair(MPI_Status *s) {
    int n = -1;
    CHECK(s[0].MPI_ERROR == MPI_SUCCESS && s[0].MPI_TAG == 0 && s[0].MPI_SOURCE == 1);
    CHECK(s[1].MPI_ERROR == MPI_ERR_TRUNCATE && s[1].MPI_TAG == 10 && s[1].MPI_SOURCE == 1);
    OK(MPI_Get_count(&s[1], MPI_INT, &n));
    CHECK(n == 10);
}

int main(int argc, char **argv) {
    int size, a[11] = {0}, b[11] = {0};
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size == 2);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    if (me == 1) {
        for (int round = 0; round < 3; round++) {
            OK(MPI_Send(a, 10, MPI_INT, 0, 0, MPI_COMM_WORLD));
            OK(MPI_Send(b, 11, MPI_INT, 0, 10, MPI_COMM_WORLD));
            OK(MPI_Ssend(NULL, 0, MPI_INT, 0, 20, MPI_COMM_WORLD));
        }
        OK(MPI_Send(b, 11, MPI_INT, 0, 11, MPI_COMM_WORLD));
        OK(MPI_Send(b, 11, MPI_INT, 0, 12, MPI_COMM_WORLD));
        OK(MPI_Send(b, 11, MPI_INT, 0, 13, MPI_COMM_WORLD));
        int *big = calloc(100000, sizeof(int));
        CHECK(big != NULL);
        OK(MPI_Send(big, 100000, MPI_INT, 0, 14, MPI_COMM_WORLD));
        free(big);
    } else {
        for (int round = 0; round < 3; round++) {
            MPI_Request r[2];
            MPI_Status s[2];
            s[0].MPI_ERROR = s[1].MPI_ERROR = -1;
            OK(MPI_Irecv(a, 10, MPI_INT, 1, 0, MPI_COMM_WORLD, &r[0]));
            OK(MPI_Irecv(b, 10, MPI_INT, 1, 10, MPI_COMM_WORLD, &r[1]));
            /* Both sends have begun once this synchronous one is received. */
            OK(MPI_Recv(NULL, 0, MPI_INT, 1, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            if (round == 0) {
                CHECK(class_of(MPI_Waitall(2, r, s)) == MPI_ERR_IN_STATUS);
            } else if (round == 1) {
                int done = 0, idx[2], k;
                while (done < 2) {
                    int rc = MPI_Waitsome(2, r, &k, idx, s + done);
                    CHECK(rc == MPI_SUCCESS || class_of(rc) == MPI_ERR_IN_STATUS);
                    for (int i = 0; i < k; i++) {
                        MPI_Status t = s[done + i];
                        if (rc == MPI_SUCCESS) t.MPI_ERROR = MPI_SUCCESS;
                        s[done + i] = t;
                    }
                    done += k;
                }
                if (s[0].MPI_TAG != 0) {
                    MPI_Status t = s[0];
                    s[0] = s[1];
                    s[1] = t;
                }
            } else {
                int flag = 0, rc;
                do {
                    rc = MPI_Testall(2, r, &flag, s);
                } while (!flag && rc == MPI_SUCCESS);
                CHECK(class_of(rc) == MPI_ERR_IN_STATUS);
            }
            check_pair(s);
        }
        MPI_Status st;
        int n = -1;
        CHECK(class_of(MPI_Recv(b, 10, MPI_INT, 1, 11, MPI_COMM_WORLD, &st)) == MPI_ERR_TRUNCATE);
        CHECK(st.MPI_SOURCE == 1 && st.MPI_TAG == 11);
        OK(MPI_Get_count(&st, MPI_INT, &n));
        CHECK(n == 10);
        CHECK(class_of(MPI_Recv(b, 10, MPI_INT, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st)) ==
              MPI_ERR_TRUNCATE);
        CHECK(st.MPI_SOURCE == 1 && st.MPI_TAG == 12);
        CHECK(class_of(MPI_Recv(b, 10, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
                                &st)) == MPI_ERR_TRUNCATE);
        CHECK(st.MPI_SOURCE == 1 && st.MPI_TAG == 13);
        MPI_Request r;
        OK(MPI_Irecv(b, 10, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &r));
        CHECK(class_of(MPI_Wait(&r, &st)) == MPI_ERR_TRUNCATE);
        CHECK(st.MPI_SOURCE == 1 && st.MPI_TAG == 14);
    }
    printf("rank %d: TRUNC STATUS OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
