/*
 * MPI_Intercomm_create_from_groups (MPI 4.1 §7.6.2) at N ranks (N >= 2, the
 * argument; run with -initial-errhandler mpi_errors_return), in a session without
 * MPI_Init. mpi://WORLD is cut into a lower part of N/2 ranks and an upper part of the
 * rest. Two inter-communicators between them live at once: one led by each part's
 * first rank, one by each part's last, its groups given in reverse order. On each:
 * MPI_Comm_test_inter, the local and remote sizes and ranks (group order), an
 * allreduce (every rank gets the sum of the other part's world ranks), a message from
 * every rank to the remote rank of the same index (wrapped) checked by its sender,
 * and a broadcast from the first part's leader. Bad input fails before any message,
 * through the handler given: overlapping groups, a caller outside its local group
 * (MPI_ERR_GROUP), a leader out of range (MPI_ERR_RANK). Each rank prints
 * "rank R: INTERCOMM GROUPS OK".
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

/* Checks the inter-communicator `ic` whose local part holds world ranks
 * [lo, lo + nl) and remote part [ro, ro + nr), in order, or in reverse when `rev`. */
static void exercise(MPI_Comm ic, int lo, int nl, int ro, int nr, int rev, int round) {
    int flag = 0, lsize, rsize, rank;
    OK(MPI_Comm_test_inter(ic, &flag));
    CHECK(flag);
    OK(MPI_Comm_size(ic, &lsize));
    OK(MPI_Comm_remote_size(ic, &rsize));
    OK(MPI_Comm_rank(ic, &rank));
    CHECK(lsize == nl && rsize == nr);
    CHECK(rank == (rev ? lo + nl - 1 - me : me - lo));
    int sum = -1, want = 0;
    for (int r = ro; r < ro + nr; r++) want += r;
    OK(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, ic));
    CHECK(sum == want);
    /* Rank i of each part sends to remote rank i % nr, and receives from every remote
     * rank j with j % nl == i. */
    int out = 1000 * round + me;
    MPI_Request req;
    OK(MPI_Isend(&out, 1, MPI_INT, rank % nr, round, ic, &req));
    for (int j = 0; j < nr; j++) {
        if (j % nl != rank) continue;
        int in = -1;
        MPI_Status st;
        OK(MPI_Recv(&in, 1, MPI_INT, j, round, ic, &st));
        int from = rev ? ro + nr - 1 - j : ro + j;
        CHECK(st.MPI_SOURCE == j && in == 1000 * round + from);
    }
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    /* The first part's leader broadcasts to the other part. */
    int lower = lo == 0, leader = rev ? nl - 1 : 0, v = lower ? 77 + round : -1;
    int root = lower ? (rank == leader ? MPI_ROOT : MPI_PROC_NULL) : (rev ? nr - 1 : 0);
    OK(MPI_Bcast(&v, 1, MPI_INT, root, ic));
    if (!lower) CHECK(v == 77 + round);
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 0;
    MPI_Session s;
    OK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s));
    MPI_Group world;
    OK(MPI_Group_from_session_pset(s, "mpi://WORLD", &world));
    int size;
    OK(MPI_Group_size(world, &size));
    OK(MPI_Group_rank(world, &me));
    CHECK(size == n && n >= 2);
    int n1 = n / 2, n2 = n - n1;
    int lower = me < n1;
    int *ranks = malloc(n * sizeof(int));
    for (int i = 0; i < n; i++) ranks[i] = i;
    int *rev = malloc(n * sizeof(int));
    for (int i = 0; i < n; i++) rev[i] = n - 1 - i;
    MPI_Group low, up, low_rev, up_rev;
    OK(MPI_Group_incl(world, n1, ranks, &low));
    OK(MPI_Group_incl(world, n2, ranks + n1, &up));
    /* The parts in reverse order: the lower part is rev[n2 .. n), the upper rev[0 .. n2). */
    OK(MPI_Group_incl(world, n1, rev + n2, &low_rev));
    OK(MPI_Group_incl(world, n2, rev, &up_rev));

    /* Bad input, through the handler given, before any message. */
    MPI_Comm bad = MPI_COMM_WORLD;
    CHECK(class_of(MPI_Intercomm_create_from_groups(world, 0, lower ? up : low, 0, "bad",
                                                    MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                                    &bad)) == MPI_ERR_GROUP);
    CHECK(bad == MPI_COMM_NULL);
    CHECK(class_of(MPI_Intercomm_create_from_groups(lower ? up : low, 0, lower ? low : up, 0,
                                                    "bad", MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                                    &bad)) == MPI_ERR_GROUP);
    CHECK(class_of(MPI_Intercomm_create_from_groups(lower ? low : up, n, lower ? up : low, 0,
                                                    "bad", MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                                    &bad)) == MPI_ERR_RANK);

    MPI_Comm first, last;
    OK(MPI_Intercomm_create_from_groups(lower ? low : up, 0, lower ? up : low, 0,
                                        "org.steadfast.first", MPI_INFO_NULL,
                                        MPI_ERRORS_RETURN, &first));
    OK(MPI_Intercomm_create_from_groups(lower ? low_rev : up_rev, lower ? n1 - 1 : n2 - 1,
                                        lower ? up_rev : low_rev, lower ? n2 - 1 : n1 - 1,
                                        "org.steadfast.last", MPI_INFO_NULL,
                                        MPI_ERRORS_RETURN, &last));
    for (int round = 0; round < 2; round++) {
        exercise(first, lower ? 0 : n1, lower ? n1 : n2, lower ? n1 : 0, lower ? n2 : n1, 0,
                 2 * round);
        exercise(last, lower ? 0 : n1, lower ? n1 : n2, lower ? n1 : 0, lower ? n2 : n1, 1,
                 2 * round + 1);
    }
    OK(MPI_Comm_free(&first));
    OK(MPI_Comm_free(&last));
    MPI_Group *gs[] = {&world, &low, &up, &low_rev, &up_rev};
    for (int i = 0; i < 5; i++) OK(MPI_Group_free(gs[i]));
    OK(MPI_Session_finalize(&s));
    free(ranks);
    free(rev);
    printf("rank %d: INTERCOMM GROUPS OK\n", me);
    return 0;
}
