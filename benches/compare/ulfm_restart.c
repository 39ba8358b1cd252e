/* Restart in place the Open MPI ULFM way, the counterpart of `steadfast-bench restart`:
 * rank 0 orders the last rank to SIGKILL itself; every survivor sees the failure in a
 * receive from it, revokes and shrinks the communicator, spawns one process
 * (MPI_Comm_spawn on the shrunk communicator), merges the inter-communicator
 * (MPI_Intercomm_merge) and splits the result (MPI_Comm_split, keyed by the old rank)
 * to give the new process the dead one's rank; rank 0 then sends it a message and
 * times its answer from the kill order. ROUNDS rounds, the new process killed in turn.
 *
 *   mpiexec --allow-run-as-root --oversubscribe --with-ft ulfm \
 *       --mca async_mpi_finalize 1 -n N ulfm_restart [ROUNDS]
 *
 * Prints, at rank 0: `restart_round G US (phases)` per round, then
 * `restart_kill_to_answer MEDIAN MIN MAX` (microseconds). A spawned process is started
 * with `ulfm_restart ROUNDS G` and knows itself by MPI_Comm_get_parent. */
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { TAG_KILL = 21, TAG_PING = 22, TAG_PONG = 23, TAG_DONE = 24, TAG_NEVER = 25 };

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void die_on(int rc, const char *what) {
    if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, text, &len);
        fprintf(stderr, "ulfm_restart: %s: %s\n", what, text);
        exit(1);
    }
}

/* The new process's side: merge with the survivors (high: after them) and take the
 * dead rank's place in the split. */
static MPI_Comm rejoin(MPI_Comm parent, int victim) {
    MPI_Comm merged, comm;
    die_on(MPI_Intercomm_merge(parent, 1, &merged), "merge (new process)");
    die_on(MPI_Comm_split(merged, 0, victim, &comm), "split (new process)");
    MPI_Comm_free(&merged);
    MPI_Comm_free(&parent);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    return comm;
}

/* A survivor's side, once the victim is known dead: revoke, shrink, spawn one process,
 * merge, split back into the old rank order. */
static double t_shrunk, t_spawned;

static MPI_Comm replace(MPI_Comm comm, const char *self, int rounds, int generation) {
    int me;
    MPI_Comm_rank(comm, &me);
    MPIX_Comm_revoke(comm);
    MPI_Comm shrunk, inter, merged, next;
    die_on(MPIX_Comm_shrink(comm, &shrunk), "shrink");
    t_shrunk = now_us();
    char r[16], g[16];
    snprintf(r, sizeof r, "%d", rounds);
    snprintf(g, sizeof g, "%d", generation);
    char *args[] = {r, g, NULL};
    int code = MPI_SUCCESS;
    die_on(MPI_Comm_spawn(self, args, 1, MPI_INFO_NULL, 0, shrunk, &inter, &code), "spawn");
    die_on(code, "spawned process");
    t_spawned = now_us();
    die_on(MPI_Intercomm_merge(inter, 0, &merged), "merge");
    die_on(MPI_Comm_split(merged, 0, me, &next), "split");
    MPI_Comm_set_errhandler(next, MPI_ERRORS_RETURN);
    MPI_Comm_free(&merged);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&shrunk);
    if (comm != MPI_COMM_WORLD) MPI_Comm_free(&comm);
    return next;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    if (rounds < 1) rounds = 1;
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) { fprintf(stderr, "ulfm_restart: cannot read /proc/self/exe\n"); return 1; }
    self[n] = '\0';
    MPI_Comm parent, comm = MPI_COMM_WORLD;
    MPI_Comm_get_parent(&parent);
    int generation = 0, size, me;
    if (parent != MPI_COMM_NULL) {
        generation = argc > 2 ? atoi(argv[2]) : 1;
        int survivors;
        MPI_Comm_remote_size(parent, &survivors);
        comm = rejoin(parent, survivors);
    }
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    int victim = size - 1;
    char byte = 'k';
    if (me == victim) {
        if (generation > 0) {
            int g;
            die_on(MPI_Recv(&g, 1, MPI_INT, 0, TAG_PING, comm, MPI_STATUS_IGNORE), "ping");
            die_on(MPI_Send(&g, 1, MPI_INT, 0, TAG_PONG, comm), "pong");
        }
        if (generation < rounds) {
            die_on(MPI_Recv(&byte, 1, MPI_CHAR, 0, TAG_KILL, comm, MPI_STATUS_IGNORE), "kill order");
            raise(SIGKILL);
        }
        die_on(MPI_Recv(&byte, 1, MPI_CHAR, 0, TAG_DONE, comm, MPI_STATUS_IGNORE), "end");
    } else {
        double *times = calloc(rounds, sizeof(double));
        for (int g = 1; g <= rounds; g++) {
            double t0 = now_us();
            if (me == 0) die_on(MPI_Send(&byte, 1, MPI_CHAR, victim, TAG_KILL, comm), "kill order");
            /* Detection: a receive from the victim fails (or is revoked by a faster
             * survivor). */
            int rc = MPI_Recv(&byte, 1, MPI_CHAR, victim, TAG_NEVER, comm, MPI_STATUS_IGNORE);
            if (rc == MPI_SUCCESS) { fprintf(stderr, "ulfm_restart: the victim answered\n"); return 1; }
            double t_detected = now_us();
            comm = replace(comm, self, rounds, g);
            if (me == 0) {
                int got = 0;
                die_on(MPI_Send(&g, 1, MPI_INT, victim, TAG_PING, comm), "ping");
                die_on(MPI_Recv(&got, 1, MPI_INT, victim, TAG_PONG, comm, MPI_STATUS_IGNORE), "pong");
                times[g - 1] = now_us() - t0;
                if (got != g) { fprintf(stderr, "ulfm_restart: answer %d, expected %d\n", got, g); return 1; }
                printf("restart_round %d %.1f (detect %.1f, revoke + shrink %.1f, spawn %.1f, merge + split + answer %.1f)\n",
                       g, times[g - 1], t_detected - t0, t_shrunk - t_detected, t_spawned - t_shrunk,
                       now_us() - t_spawned);
                fflush(stdout);
            }
        }
        if (me == 0) {
            die_on(MPI_Send(&byte, 1, MPI_CHAR, victim, TAG_DONE, comm), "end");
            qsort(times, rounds, sizeof(double), cmp);
            printf("restart_kill_to_answer %.1f %.1f %.1f\n", times[rounds / 2], times[0], times[rounds - 1]);
            fflush(stdout);
        }
        free(times);
    }
    MPI_Barrier(comm);
    MPI_Finalize();
    return 0;
}
