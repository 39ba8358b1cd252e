/*
 * Restart in place of MPI_COMM_WORLD itself: 3 ranks save MPI_COMM_WORLD as "world";
 * rank 2 is SIGKILLed, rank 0 restarts it (MPIX_Comm_irestart_rank + MPI_Wait) and
 * every process calls MPIX_Comm_rejoin("world"): the survivors readmit, the new
 * incarnation (whose MPIX_Comm_agree on MPI_COMM_WORLD fails before) rejoins, and every
 * one gets MPI_COMM_WORLD itself back. Then a ring, an allreduce and an agreement on
 * MPI_COMM_WORLD. Twice (the restarted rank is killed again), then MPI_Finalize, whose
 * agreement counts the restarted one.
 *
 * Run under steadfast-run -np 3 --no-kill.
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "past.h"

#define ROUNDS 2

static int rank = -1;

static int fail(const char *what, int rc) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    msg[0] = 0;
    MPI_Error_string(rc, msg, &len);
    fprintf(stderr, "rank %d: %s: %s\n", rank, what, msg);
    return 1;
}

/* MPIX_Comm_rejoin("world") must give MPI_COMM_WORLD back, in every process. */
static int rejoin(void) {
    MPI_Comm w = MPI_COMM_NULL;
    int rc = MPIX_Comm_rejoin("world", &w);
    if (rc != MPI_SUCCESS) return fail("rejoin", rc);
    if (w != MPI_COMM_WORLD) return fail("the rejoin gave another handle", MPI_ERR_OTHER);
    return 0;
}

/* A ring, an allreduce and an agreement over MPI_COMM_WORLD in round `round`. */
static int check(int round) {
    int mine = rank * 10 + round, got = -1, rc;
    rc = MPI_Sendrecv(&mine, 1, MPI_INT, (rank + 1) % 3, 7, &got, 1, MPI_INT, (rank + 2) % 3,
                      7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return fail("sendrecv", rc);
    if (got != ((rank + 2) % 3) * 10 + round) return fail("the ring's message", MPI_ERR_OTHER);
    int one = rank + 1, sum = 0;
    if ((rc = MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD)) != MPI_SUCCESS)
        return fail("allreduce", rc);
    if (sum != 6) return fail("the allreduce's sum", MPI_ERR_OTHER);
    int flag = ~(1 << rank);
    if ((rc = MPIX_Comm_agree(MPI_COMM_WORLD, &flag)) != MPI_SUCCESS) return fail("agree", rc);
    if (flag != ~7) return fail("the agreed value", MPI_ERR_OTHER);
    printf("rank %d: WORLD ROUND %d OK\n", rank, round);
    fflush(stdout);
    return 0;
}

int main(int argc, char *argv[]) {
    int restored = -1, size, rc, generation = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPIX_Is_restored_rank(&restored);
    if (size != 3) {
        fprintf(stderr, "run with 3 ranks\n");
        return 1;
    }
    if (restored) {
        const char *g = getenv("STEADFAST_GENERATION");
        generation = g ? atoi(g) : -1;
        if (rank != 2 || generation < 1)
            return fail("the restarted process has another rank or no generation", MPI_ERR_OTHER);
        /* Not rejoined yet: the world's agreement is not available. */
        int flag = 1;
        if (MPIX_Comm_agree(MPI_COMM_WORLD, &flag) == MPI_SUCCESS)
            return fail("an agreement on the world before the rejoin succeeded", MPI_ERR_OTHER);
        if (rejoin()) return 1;
        if (check(generation)) return 1;
    } else if ((rc = MPIX_Comm_save(MPI_COMM_WORLD, "world")) != MPI_SUCCESS) {
        return fail("save", rc);
    }
    for (int round = generation + 1; round <= ROUNDS; round++) {
        if ((rc = MPI_Barrier(MPI_COMM_WORLD)) != MPI_SUCCESS) return fail("barrier", rc);
        if ((rc = others_past(MPI_COMM_WORLD, 2)) != MPI_SUCCESS) return fail("past", rc);
        if (rank == 2) raise(SIGKILL);
        /* The survivors see the failure. */
        rc = MPI_Barrier(MPI_COMM_WORLD);
        if (rc == MPI_SUCCESS) return fail("a barrier with rank 2 dead succeeded", rc);
        if (rank == 0) {
            MPI_Request req;
            if ((rc = MPIX_Comm_irestart_rank(MPI_COMM_WORLD, 2, &req)) != MPI_SUCCESS)
                return fail("irestart_rank", rc);
            if ((rc = MPI_Wait(&req, MPI_STATUS_IGNORE)) != MPI_SUCCESS)
                return fail("wait for the restart", rc);
        }
        if (rejoin()) return 1;
        if (check(round)) return 1;
    }
    int flag = 5;
    if ((rc = MPIX_Comm_agree(MPI_COMM_WORLD, &flag)) != MPI_SUCCESS || flag != 5)
        return fail("the last agreement", rc);
    printf("rank %d: RESTART WORLD OK generation=%d\n", rank, generation);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
