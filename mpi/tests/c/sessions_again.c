/*
 * Sessions made and ended again and again (MPI 4.1 §11.3.1: "multiple sessions can be
 * created and destroyed during the lifetime of an MPI process"), at N ranks (N is the
 * argument; run with -initial-errhandler mpi_errors_return). Three rounds, each a
 * session alone (so the runtime goes down at its end and comes up at the next), a
 * communicator from mpi://WORLD with the same string tag every round, a ring exchange
 * and an allreduce on it. Then MPI_Init (the world model never started: it comes up
 * again), a session beside it, MPI_Finalize, and a session after MPI_Finalize, with
 * its own communicator. MPI_Initialized / MPI_Finalized follow the world model only.
 * Each rank prints "rank R: SESSIONS AGAIN OK".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int me = -1;

#include "check.h"

/* A session, a communicator of all its WORLD, a ring and an allreduce on it, all freed;
 * `n` ranks expected. */
static void one_session(int n, int round) {
    MPI_Session s = MPI_SESSION_NULL;
    OK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s));
    CHECK(s != MPI_SESSION_NULL);
    MPI_Group g;
    OK(MPI_Group_from_session_pset(s, "mpi://WORLD", &g));
    MPI_Comm c;
    OK(MPI_Comm_create_from_group(g, "org.steadfast.sessions-again", MPI_INFO_NULL,
                                  MPI_ERRORS_RETURN, &c));
    int size, rank;
    OK(MPI_Comm_size(c, &size));
    OK(MPI_Comm_rank(c, &rank));
    CHECK(size == n);
    me = rank;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int out = 1000 * round + rank, in = -1;
    OK(MPI_Sendrecv(&out, 1, MPI_INT, right, round, &in, 1, MPI_INT, left, round, c,
                    MPI_STATUS_IGNORE));
    CHECK(in == 1000 * round + left);
    int sum = 0;
    OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, c));
    CHECK(sum == n * (n - 1) / 2);
    OK(MPI_Comm_free(&c));
    OK(MPI_Group_free(&g));
    OK(MPI_Session_finalize(&s));
    CHECK(s == MPI_SESSION_NULL);
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 0;
    int flag = -1;
    for (int round = 0; round < 3; round++) {
        one_session(n, round);
        OK(MPI_Initialized(&flag));
        CHECK(flag == 0);
    }
    /* The world model never started: MPI_Init brings the runtime up again. */
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Initialized(&flag));
    CHECK(flag == 1);
    int size = -1;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size == n);
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    int sum = 0;
    OK(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == n * (n - 1) / 2);
    one_session(n, 3);
    OK(MPI_Finalize());
    OK(MPI_Finalized(&flag));
    CHECK(flag == 1);
    /* After MPI_Finalize, sessions still come and go. */
    one_session(n, 4);
    one_session(n, 5);
    OK(MPI_Finalized(&flag));
    CHECK(flag == 1);
    printf("rank %d: SESSIONS AGAIN OK\n", me);
    return 0;
}
