/*
 * The Master-Leader-Workers scenario in C over libsteadfast-mpi (the Rust one is
 * examples/master_leader_workers.rs; docs/restart.md). 7 ranks: the master (0) and two
 * groups {1,2,3} and {4,5,6}, each a split of the world saved as "grp" (MPIX_Comm_save),
 * its first rank the leader. The master sends query i to group i % 2's leader and waits
 * for the answer; the leader splits the query's 4096 items between its two workers and
 * adds their parts; the master checks every answer against its own computation.
 *
 * Faults, injected by the program itself so the run is the same every time:
 * - worker 3 SIGKILLs itself on query 10: leader 1 restarts it
 *   (MPIX_Comm_irestart_rank + MPI_Wait), tells worker 2 to readmit, and all three call
 *   MPIX_Comm_rejoin("grp"); the restarted worker gets its part again;
 * - worker 5 SIGKILLs itself on query 21, and its first restarted incarnation exits with
 *   status 3 before MPI_Init: leader 4 cannot restart it and aborts its group
 *   (MPI_Abort on the group: worker 6 is killed, the leader exits with 42). The master
 *   restarts leader 4 (MPIX_Comm_restart_rank on MPI_COMM_WORLD), whose
 *   MPIX_Comm_rejoin("grp") finds no survivor and re-founds the group; it restarts both
 *   workers (MPIX_Comm_get_failed), readmits them with MPIX_Comm_rejoin, and serves the
 *   query again.
 * Every process prints "rank R: MLW-C DONE restored=F" at its end, the master
 * "MLW-C OK answers=N" once every answer is checked (else "MLW-C FAIL ..." and exit 1).
 *
 * Run under steadfast-run -np 7 --no-kill.
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QUERIES 40
#define ITEMS 4096
#define GROUP 3
#define QUERY 1
#define ANSWER 2
#define WORK 3
#define PART 4
#define STOP UINT64_MAX
#define KIND_WORK 0
#define KIND_READMIT 1
#define KIND_STOP 2
#define ABORT_CODE 42

static int rank = -1;

static uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t query(uint64_t i) { return mix(i ^ 0x5eed); }

static uint64_t part(uint64_t q, uint64_t lo, uint64_t hi) {
    uint64_t s = 0;
    for (uint64_t j = lo; j < hi; j++) s += mix(q ^ (j * 0x2545f491ULL));
    return s;
}

static void die(const char *what, int rc) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    msg[0] = 0;
    MPI_Error_string(rc, msg, &len);
    printf("rank %d: MLW-C FAIL %s: %s\n", rank, what, msg);
    fflush(stdout);
    exit(1);
}

static int send_words(const uint64_t *w, int n, int to, int tag, MPI_Comm c) {
    return MPI_Send(w, n * 8, MPI_BYTE, to, tag, c);
}

static int recv_words(uint64_t *w, int n, int from, int tag, MPI_Comm c) {
    return MPI_Recv(w, n * 8, MPI_BYTE, from, tag, c, MPI_STATUS_IGNORE);
}

/* Worker w's half of the items (w = 1 or 2). */
static void range(int w, uint64_t *lo, uint64_t *hi) {
    *lo = (uint64_t)ITEMS * (w - 1) / (GROUP - 1);
    *hi = (uint64_t)ITEMS * w / (GROUP - 1);
}

/* The leader restarts the dead workers in `dead` (group ranks), tells the live ones to
 * readmit and readmits with them; a worker that cannot be restarted aborts the group. */
static void heal(MPI_Comm grp, const int *dead, int ndead) {
    for (int k = 0; k < ndead; k++) {
        MPI_Request req;
        int rc = MPIX_Comm_irestart_rank(grp, dead[k], &req);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            fprintf(stderr, "rank %d: cannot restart worker %d: aborting the group\n", rank,
                    dead[k]);
            MPI_Abort(grp, ABORT_CODE);
            die("the group's abort returned", rc);
        }
    }
    uint64_t readmit[5] = {KIND_READMIT, 0, 0, 0, 0};
    for (int w = 1; w < GROUP; w++) {
        int restarted = 0;
        for (int k = 0; k < ndead; k++) restarted |= dead[k] == w;
        if (!restarted) send_words(readmit, 5, w, WORK, grp);
    }
    MPI_Comm same;
    int rc = MPIX_Comm_rejoin("grp", &same);
    if (rc != MPI_SUCCESS) die("leader's rejoin (readmission)", rc);
    if (same != grp) die("a survivor's rejoin gave another handle", MPI_ERR_OTHER);
}

/* The group ranks failed in `grp` (MPIX_Comm_get_failed), into `out`. */
static int failed_members(MPI_Comm grp, int *out) {
    MPI_Group failed, all;
    int n = 0;
    if (MPIX_Comm_get_failed(grp, &failed) != MPI_SUCCESS) die("get_failed", MPI_ERR_OTHER);
    MPI_Group_size(failed, &n);
    if (n > 0) {
        int idx[GROUP];
        for (int k = 0; k < n; k++) idx[k] = k;
        MPI_Comm_group(grp, &all);
        MPI_Group_translate_ranks(failed, n, idx, all, out);
        MPI_Group_free(&all);
    }
    MPI_Group_free(&failed);
    return n;
}

static uint64_t solve(MPI_Comm grp, uint64_t i, uint64_t q) {
    uint64_t parts[GROUP];
    int have[GROUP] = {0};
    for (;;) {
        int dead[GROUP], ndead = 0;
        for (int w = 1; w < GROUP; w++) {
            if (have[w]) continue;
            uint64_t lo, hi;
            range(w, &lo, &hi);
            uint64_t work[5] = {KIND_WORK, i, q, lo, hi};
            if (send_words(work, 5, w, WORK, grp) != MPI_SUCCESS) dead[ndead++] = w;
        }
        for (int w = 1; w < GROUP; w++) {
            int gone = 0;
            for (int k = 0; k < ndead; k++) gone |= dead[k] == w;
            if (have[w] || gone) continue;
            uint64_t got[3];
            if (recv_words(got, 3, w, PART, grp) != MPI_SUCCESS) {
                dead[ndead++] = w;
                continue;
            }
            uint64_t lo, hi;
            range(w, &lo, &hi);
            if (got[0] == i && got[1] == lo) {
                parts[w] = got[2];
                have[w] = 1;
            }
        }
        if (ndead == 0) {
            uint64_t sum = 0;
            for (int w = 1; w < GROUP; w++) sum += parts[w];
            return sum;
        }
        heal(grp, dead, ndead);
    }
}

static void lead(MPI_Comm grp, int restored) {
    if (restored) {
        int dead[GROUP];
        int n = failed_members(grp, dead);
        if (n > 0) heal(grp, dead, n);
    }
    for (;;) {
        uint64_t m[2];
        int rc = recv_words(m, 2, 0, QUERY, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) die("leader's receive from the master", rc);
        if (m[0] == STOP) {
            uint64_t stop[5] = {KIND_STOP, 0, 0, 0, 0}, bye[3];
            for (int w = 1; w < GROUP; w++) {
                if (send_words(stop, 5, w, WORK, grp) != MPI_SUCCESS ||
                    recv_words(bye, 3, w, PART, grp) != MPI_SUCCESS)
                    die("stopping a worker", MPI_ERR_OTHER);
            }
            send_words(m, 2, 0, ANSWER, MPI_COMM_WORLD);
            return;
        }
        uint64_t a[2] = {m[0], solve(grp, m[0], m[1])};
        send_words(a, 2, 0, ANSWER, MPI_COMM_WORLD);
    }
}

static void work(MPI_Comm grp, int restored) {
    for (;;) {
        uint64_t m[5];
        int rc = recv_words(m, 5, 0, WORK, grp);
        if (rc != MPI_SUCCESS) die("worker's receive from its leader", rc);
        if (m[0] == KIND_STOP) {
            uint64_t bye[3] = {STOP, 0, 0};
            send_words(bye, 3, 0, PART, grp);
            return;
        }
        if (m[0] == KIND_READMIT) {
            MPI_Comm same;
            if ((rc = MPIX_Comm_rejoin("grp", &same)) != MPI_SUCCESS) die("worker's readmission", rc);
            continue;
        }
        if (!restored && ((rank == 3 && m[1] == 10) || (rank == 5 && m[1] == 21))) raise(SIGKILL);
        uint64_t p[3] = {m[1], m[3], part(m[2], m[3], m[4])};
        send_words(p, 3, 0, PART, grp);
    }
}

static void master(void) {
    int restarts = 0;
    for (uint64_t i = 0; i <= QUERIES; i++) {
        for (int g = 0; g < 2; g++) {
            int leader = 1 + GROUP * g;
            if (i == QUERIES ? 0 : (int)(i % 2) != g) continue;
            uint64_t m[2] = {i == QUERIES ? STOP : i, i == QUERIES ? 0 : query(i)}, a[2];
            for (int tries = 0;; tries++) {
                if (send_words(m, 2, leader, QUERY, MPI_COMM_WORLD) == MPI_SUCCESS &&
                    recv_words(a, 2, leader, ANSWER, MPI_COMM_WORLD) == MPI_SUCCESS)
                    break;
                if (tries == 3) die("a leader keeps dying", MPI_ERR_OTHER);
                int rc = MPIX_Comm_restart_rank(MPI_COMM_WORLD, leader);
                if (rc != MPI_SUCCESS) die("restarting a leader", rc);
                restarts++;
            }
            if (a[0] != m[0]) die("an answer to another query", MPI_ERR_OTHER);
            if (i < QUERIES && a[1] != part(query(i), 0, ITEMS)) {
                printf("MLW-C FAIL query %llu: answer %llx\n", (unsigned long long)i,
                       (unsigned long long)a[1]);
                exit(1);
            }
        }
    }
    printf("MLW-C OK answers=%d restarts=%d\n", QUERIES, restarts);
}

int main(int argc, char *argv[]) {
    const char *r = getenv("STEADFAST_RANK"), *gen = getenv("STEADFAST_GENERATION");
    if (r && gen && atoi(r) == 5 && atoi(gen) == 1) return 3; /* its restart fails */
    MPI_Comm grp;
    int restored = 0, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPIX_Is_restored_rank(&restored);
    if (size != 1 + 2 * GROUP) {
        fprintf(stderr, "run with %d ranks\n", 1 + 2 * GROUP);
        return 1;
    }
    int g = rank == 0 ? -1 : (rank - 1) / GROUP;
    if (restored) {
        int rc = MPIX_Comm_rejoin("grp", &grp);
        if (rc != MPI_SUCCESS) die("rejoin", rc);
    } else {
        MPI_Comm_split(MPI_COMM_WORLD, g + 1, rank, &grp);
        if (rank != 0) {
            int rc = MPIX_Comm_save(grp, "grp");
            if (rc != MPI_SUCCESS) die("save", rc);
        }
    }
    MPI_Comm_set_errhandler(grp, MPI_ERRORS_RETURN);
    if (rank == 0) {
        master();
    } else {
        int grank;
        MPI_Comm_rank(grp, &grank);
        if (grank != (rank - 1) % GROUP) die("rank in the group", MPI_ERR_OTHER);
        if (grank == 0) lead(grp, restored);
        else work(grp, restored);
    }
    printf("rank %d: MLW-C DONE restored=%d\n", rank, restored);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
