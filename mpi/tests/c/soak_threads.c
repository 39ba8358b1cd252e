/*
 * A soak of MPI_THREAD_MULTIPLE under ULFM: 4 threads per rank, each on a duplicate of
 * the world of its own, run ITERATIONS iterations of a verified ring exchange (a
 * message of 1 to WORDS ints to the right neighbour, each int a function of thread,
 * iteration, sender and index) and an allreduce of the members' world ranks, then agree
 * on whether the iteration counts (the ULFM idiom: a failure may reach some ranks in an
 * iteration and not others). One rank, picked by SEED, is SIGKILLed by one of its
 * threads at an iteration and at a point in it (before the ring, before the allreduce,
 * before the agreement) picked by SEED; its other threads stop at that iteration, so
 * that no survivor can finish without meeting the failure. Every survivor thread, on
 * an error, revokes its communicator; on a failed agreement it shrinks it, frees the
 * old one and redoes the iteration on a duplicate of the survivors' communicator. At
 * the end each survivor thread checks: one recovery, N-1 members, a final agreement,
 * no victim among the members. Threads run agreements,
 * shrinks, dups and frees on their own communicators at the same time, which MPI's
 * MPI_THREAD_MULTIPLE allows: a blocked call blocks only its thread.
 *
 *   soak_threads SEED ITERATIONS [2]
 *
 * With "2" a second rank picked by SEED dies in the recovery, right after its killer
 * thread's first shrink (its other threads stop before the final agreement): the
 * survivors' dup of the shrunk communicator fails, they agree so, and shrink again, or
 * meet the failure later and recover a second time (N-2 members at the end).
 *
 * Each survivor prints "rank R: SOAK OK ..." once; any wrong byte, sum, size or error
 * class prints the reason and exits 4; a hang is caught by the test's time limit.
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define THREADS 4
#define WORDS 64

static int me = -1;

#include "check.h"

static int world_size, victim, victim2 = -1, killer, kill_at, kill_phase, iterations;

struct worker {
    int t;
    MPI_Comm comm;
    int wranks[64]; /* world rank of each member of comm */
    int size, rank, recoveries;
};

static void die(const struct worker *w, int i, const char *what, int rc) {
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    s[0] = 0;
    if (rc != MPI_SUCCESS) MPI_Error_string(rc, s, &len);
    fprintf(stderr, "rank %d thread %d iteration %d: %s %s\n", me, w->t, i, what, s);
    fflush(stderr);
    _exit(4);
}

/* A failure ULFM allows here; anything else ends the rank. */
static void expect_ft(const struct worker *w, int i, const char *what, int rc) {
    int cls = -1;
    MPI_Error_class(rc, &cls);
    if (cls != MPIX_ERR_PROC_FAILED && cls != MPIX_ERR_REVOKED) die(w, i, what, rc);
}

static int word(int t, int i, int wrank, int k) {
    unsigned x = (unsigned)t * 0x9e3779b9u ^ (unsigned)i * 0x85ebca6bu ^
                 (unsigned)wrank * 0xc2b2ae35u ^ (unsigned)k * 0x27d4eb2fu;
    return (int)(x ^ (x >> 15));
}

static void members(struct worker *w) {
    MPI_Group g, wg;
    int idx[64];
    OK(MPI_Comm_size(w->comm, &w->size));
    OK(MPI_Comm_rank(w->comm, &w->rank));
    CHECK(w->size <= 64);
    OK(MPI_Comm_group(w->comm, &g));
    OK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    for (int k = 0; k < w->size; k++) idx[k] = k;
    OK(MPI_Group_translate_ranks(g, w->size, idx, wg, w->wranks));
    OK(MPI_Group_free(&g));
    OK(MPI_Group_free(&wg));
    CHECK(w->wranks[w->rank] == me);
}

/* The victim's point of death: its killer thread dies, its others stop there. */
static void maybe_die(const struct worker *w, int i, int phase) {
    if (me != victim || i != kill_at || phase != kill_phase) return;
    if (w->t == killer) raise(SIGKILL);
    for (;;) pause();
}

/* One iteration; MPI_SUCCESS, or the first ULFM error (after revoking). */
static int iteration(struct worker *w, int i) {
    int out[WORDS], in[WORDS], n = 1 + (i * 13 + w->t * 5) % WORDS, rc, count = -1;
    int right = (w->rank + 1) % w->size, left = (w->rank + w->size - 1) % w->size;
    for (int k = 0; k < WORDS; k++) {
        out[k] = word(w->t, i, me, k);
        in[k] = -1;
    }
    maybe_die(w, i, 0);
    MPI_Request r;
    MPI_Status st;
    rc = MPI_Irecv(in, WORDS, MPI_INT, left, i, w->comm, &r);
    if (rc != MPI_SUCCESS) {
        expect_ft(w, i, "irecv", rc);
        return rc;
    }
    rc = MPI_Send(out, n, MPI_INT, right, i, w->comm);
    if (rc != MPI_SUCCESS) {
        expect_ft(w, i, "send", rc);
        /* The revoke ends the receive too. */
        MPIX_Comm_revoke(w->comm);
        int rc2 = MPI_Wait(&r, MPI_STATUS_IGNORE);
        if (rc2 != MPI_SUCCESS) expect_ft(w, i, "wait after a failed send", rc2);
        return rc;
    }
    rc = MPI_Wait(&r, &st);
    if (rc != MPI_SUCCESS) {
        expect_ft(w, i, "wait", rc);
        MPIX_Comm_revoke(w->comm);
        return rc;
    }
    OK(MPI_Get_count(&st, MPI_INT, &count));
    if (count != n || st.MPI_SOURCE != left || st.MPI_TAG != i) die(w, i, "ring: count, source or tag", 0);
    for (int k = 0; k < n; k++) {
        if (in[k] != word(w->t, i, w->wranks[left], k)) die(w, i, "ring: a wrong word", 0);
    }
    for (int k = n; k < WORDS; k++) {
        if (in[k] != -1) die(w, i, "ring: a word past the message", 0);
    }
    maybe_die(w, i, 1);
    long mine[2] = {me + 1, (long)(i + 1) * (w->t + 1)}, sum[2] = {-1, -1}, expect = 0;
    rc = MPI_Allreduce(mine, sum, 2, MPI_LONG, MPI_SUM, w->comm);
    if (rc != MPI_SUCCESS) {
        expect_ft(w, i, "allreduce", rc);
        MPIX_Comm_revoke(w->comm);
        return rc;
    }
    for (int k = 0; k < w->size; k++) expect += w->wranks[k] + 1;
    if (sum[0] != expect || sum[1] != (long)w->size * (i + 1) * (w->t + 1)) {
        die(w, i, "allreduce: a wrong sum", 0);
    }
    maybe_die(w, i, 2);
    return MPI_SUCCESS;
}

/* Replaces w->comm by a duplicate of its survivors' communicator. A dup that fails
 * (the second victim dies in it) fails somewhere: the survivors agree on it and shrink
 * again. */
static void recover(struct worker *w, int i) {
    MPI_Comm broken = w->comm, shrunk, dup;
    for (int round = 0; round < 64; round++) {
        MPIX_Comm_revoke(broken);
        int rc = MPIX_Comm_shrink(broken, &shrunk);
        if (rc != MPI_SUCCESS) die(w, i, "shrink", rc);
        rc = MPI_Comm_free(&broken);
        if (rc != MPI_SUCCESS) die(w, i, "free", rc);
        if (me == victim2 && w->t == killer && round == 0) raise(SIGKILL);
        /* Every thread dups its own communicator at once. */
        rc = MPI_Comm_dup(shrunk, &dup);
        if (rc != MPI_SUCCESS) expect_ft(w, i, "dup", rc);
        int ok = rc == MPI_SUCCESS;
        int rc2 = MPIX_Comm_agree(shrunk, &ok);
        if (rc2 != MPI_SUCCESS) expect_ft(w, i, "agree on the dup", rc2);
        if (rc2 == MPI_SUCCESS && ok) {
            rc = MPI_Comm_free(&shrunk);
            if (rc != MPI_SUCCESS) die(w, i, "free of the shrunk", rc);
            w->comm = dup;
            return;
        }
        if (rc == MPI_SUCCESS) {
            MPIX_Comm_revoke(dup);
            MPI_Comm_free(&dup);
        }
        broken = shrunk;
    }
    die(w, i, "recovery: members kept failing", 0);
}

static void *work(void *arg) {
    struct worker *w = arg;
    members(w);
    for (int i = 0; i < iterations; i++) {
        int ok = iteration(w, i) == MPI_SUCCESS;
        int rc = MPIX_Comm_agree(w->comm, &ok);
        if (rc != MPI_SUCCESS) expect_ft(w, i, "agree", rc);
        if (rc == MPI_SUCCESS && ok) continue;
        /* Every survivor of this communicator gets here together: rebuild, redo. */
        recover(w, i);
        members(w);
        w->recoveries++;
        i--;
    }
    /* The second victim's other threads stop before the end (not before: a thread
     * that stops in the middle of a recovery is a hung rank, for which a survivor's
     * dup may wait as long as it lives): every survivor meets its death. */
    if (me == victim2) {
        for (;;) pause();
    }
    /* The final agreement meets the second victim's death when its killer thread was
     * the last to get there: then every survivor recovers and agrees again. */
    for (;;) {
        int done = 1;
        int rc = MPIX_Comm_agree(w->comm, &done);
        if (rc == MPI_SUCCESS && done == 1) break;
        if (rc == MPI_SUCCESS || w->recoveries >= 2) die(w, iterations, "final agree", rc);
        expect_ft(w, iterations, "final agree", rc);
        recover(w, iterations);
        members(w);
        w->recoveries++;
    }
    /* Two recoveries when the second victim's thread had finished the first. */
    int most = victim2 < 0 ? 1 : 2;
    if (w->recoveries < 1 || w->recoveries > most || w->size != world_size - most) {
        fprintf(stderr, "rank %d thread %d: %d recoveries, %d members\n", me, w->t,
                w->recoveries, w->size);
        _exit(4);
    }
    for (int k = 0; k < w->size; k++) {
        if (w->wranks[k] == victim || w->wranks[k] == victim2) {
            die(w, iterations, "a victim is still a member", 0);
        }
    }
    OK(MPI_Comm_free(&w->comm));
    return NULL;
}

int main(int argc, char **argv) {
    int provided;
    OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    CHECK(provided == MPI_THREAD_MULTIPLE);
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &world_size));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK((argc == 3 || argc == 4) && world_size >= 3 && world_size <= 64);
    unsigned long seed = strtoul(argv[1], NULL, 10);
    iterations = atoi(argv[2]);
    CHECK(iterations >= 3);
    victim = (int)(seed % (unsigned long)world_size);
    killer = (int)(seed / 64 % THREADS);
    kill_at = 1 + (int)(seed / 256 % (unsigned long)(iterations - 2));
    kill_phase = (int)(seed / 65536 % 3);
    if (argc == 4 && atoi(argv[3]) == 2) {
        CHECK(world_size >= 4);
        victim2 = (victim + 1 + (int)(seed / 4096 % (unsigned long)(world_size - 1))) % world_size;
    }
    if (me == 0) {
        printf("soak: seed %lu: rank %d's thread %d dies in iteration %d at point %d; "
               "second victim %d\n",
               seed, victim, killer, kill_at, kill_phase, victim2);
        fflush(stdout);
    }

    struct worker w[THREADS];
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++) {
        w[t].t = t;
        w[t].recoveries = 0;
        OK(MPI_Comm_dup(MPI_COMM_WORLD, &w[t].comm));
        OK(MPI_Comm_set_errhandler(w[t].comm, MPI_ERRORS_RETURN));
    }
    for (int t = 0; t < THREADS; t++) CHECK(pthread_create(&th[t], NULL, work, &w[t]) == 0);
    for (int t = 0; t < THREADS; t++) CHECK(pthread_join(th[t], NULL) == 0);
    printf("rank %d: SOAK OK, %d threads, %d iterations\n", me, THREADS, iterations);
    fflush(stdout);
    OK(MPI_Finalize());
    return 0;
}
