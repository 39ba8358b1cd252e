/* Communicator creation from several threads at once (MPI_THREAD_MULTIPLE): what two
 * of MPICH's multithreaded programs found hanging (docs/mpi.md, "MPICH's test suite").
 * `mt_comms [part]` runs one part (`inter_idup`, `group_tags`), or both; each rank
 * prints "MT COMMS OK" at the end. Needs at least 2 ranks. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "check.h"

#define THREADS 3
#define IDUPS 3

static int me, np;

static void nap_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* Checks that `ic` is an inter-communicator between the lower and the upper half of
 * the world (this rank's side given by `low`): an allreduce of the world ranks across
 * gets the other side's sum. */
static void check_inter(MPI_Comm ic, int low) {
    int half = np / 2, sum = 0, want = 0;
    for (int r = low ? half : 0; r < (low ? np : half); r++) want += r;
    OK(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, ic));
    CHECK(sum == want);
    int remote = -1;
    OK(MPI_Comm_remote_size(ic, &remote));
    CHECK(remote == (low ? np - half : half));
}

/* Each thread dups an inter-communicator of its own IDUPS times without blocking, then
 * waits for the first dup alone (MPI_Wait) and uses it before completing the others.
 * The thread whose number is this rank's modulo THREADS starts 100 ms late, so the
 * threads of different ranks reach their waits in different orders. The library made
 * an inter-communicator dup's collective half inside the MPI_Wait that saw its first
 * half done, by agreements that waited for every other member holding the library's
 * lock: the other threads of the rank, whose dups the other ranks' waits needed, could
 * not get in (MPICH's idup_nb hung so). */
static MPI_Comm inter_of[THREADS];
static int low_side;

static void *inter_idup_thread(void *arg) {
    int t = (int)(long)arg;
    if (t == me % THREADS) nap_ms(100);
    for (int round = 0; round < 2; round++) {
        MPI_Comm dups[IDUPS];
        MPI_Request reqs[IDUPS];
        for (int i = 0; i < IDUPS; i++) OK(MPI_Comm_idup(inter_of[t], &dups[i], &reqs[i]));
        OK(MPI_Wait(&reqs[0], MPI_STATUS_IGNORE));
        CHECK(reqs[0] == MPI_REQUEST_NULL);
        check_inter(dups[0], low_side);
        OK(MPI_Waitall(IDUPS - 1, &reqs[1], MPI_STATUSES_IGNORE));
        for (int i = 0; i < IDUPS; i++) {
            check_inter(dups[i], low_side);
            OK(MPI_Comm_free(&dups[i]));
        }
    }
    return NULL;
}

static void inter_idup(void) {
    int half = np / 2;
    low_side = me < half;
    MPI_Comm local, ic;
    OK(MPI_Comm_split(MPI_COMM_WORLD, low_side, me, &local));
    OK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, low_side ? half : 0, 7, &ic));
    for (int t = 0; t < THREADS; t++) OK(MPI_Comm_dup(ic, &inter_of[t]));
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++)
        CHECK(pthread_create(&th[t], NULL, inter_idup_thread, (void *)t) == 0);
    for (int t = 0; t < THREADS; t++) CHECK(pthread_join(th[t], NULL) == 0);
    for (int t = 0; t < THREADS; t++) OK(MPI_Comm_free(&inter_of[t]));
    OK(MPI_Comm_free(&ic));
    OK(MPI_Comm_free(&local));
}

#define GROUP_THREADS 4
#define GROUP_ROUNDS 10

/* Checks that `c` holds the world ranks `0..n` in order: an allreduce of them. */
static void check_prefix(MPI_Comm c, int n) {
    int size = -1, rank = -1, sum = 0;
    OK(MPI_Comm_size(c, &size));
    OK(MPI_Comm_rank(c, &rank));
    CHECK(size == n && rank == me);
    OK(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, c));
    CHECK(sum == n * (n - 1) / 2);
}

/* GROUP_THREADS threads per rank, each with its own tag (its number), create
 * communicators on MPI_COMM_WORLD at once with MPI_Comm_create_group, GROUP_ROUNDS
 * times over the lower half and the middle rank (those ranks only), then over
 * everyone; then, as a session's processes would, with MPI_Comm_create_from_group and
 * a string tag per thread. MPI allows concurrent creations on one parent with
 * different tags (MPI 4.1, 7.4.2); the library ran every creation's exchanges on one
 * message tag per parent, so they took each other's messages and hung (MPICH's
 * comm_create_group_threads2). */
static MPI_Group world_group, lower_group;
static int lower_n;

static void *group_tags_thread(void *arg) {
    int t = (int)(long)arg;
    if (t == me % GROUP_THREADS) nap_ms(20);
    for (int round = 0; round < GROUP_ROUNDS; round++) {
        MPI_Comm c;
        if (me < lower_n) {
            OK(MPI_Comm_create_group(MPI_COMM_WORLD, lower_group, t, &c));
            check_prefix(c, lower_n);
            OK(MPI_Comm_free(&c));
        }
        OK(MPI_Comm_create_group(MPI_COMM_WORLD, world_group, t, &c));
        check_prefix(c, np);
        OK(MPI_Comm_free(&c));
    }
    char tag[64];
    snprintf(tag, sizeof tag, "org.steadfast.mt_comms.%d", t);
    for (int round = 0; round < 2; round++) {
        MPI_Comm c;
        OK(MPI_Comm_create_from_group(world_group, tag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &c));
        check_prefix(c, np);
        OK(MPI_Comm_free(&c));
    }
    return NULL;
}

static void group_tags(void) {
    lower_n = np / 2 + 1;
    int range[1][3] = {{0, lower_n - 1, 1}};
    OK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
    OK(MPI_Group_range_incl(world_group, 1, range, &lower_group));
    pthread_t th[GROUP_THREADS];
    for (long t = 0; t < GROUP_THREADS; t++)
        CHECK(pthread_create(&th[t], NULL, group_tags_thread, (void *)t) == 0);
    for (int t = 0; t < GROUP_THREADS; t++) CHECK(pthread_join(th[t], NULL) == 0);
    OK(MPI_Group_free(&lower_group));
    OK(MPI_Group_free(&world_group));
}

int main(int argc, char **argv) {
    int provided = -1;
    OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    CHECK(provided == MPI_THREAD_MULTIPLE);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    CHECK(np >= 2);
    const char *part = argc > 1 ? argv[1] : "all";
    int all = strcmp(part, "all") == 0;
    if (all || strcmp(part, "inter_idup") == 0) inter_idup();
    if (all || strcmp(part, "group_tags") == 0) group_tags();
    OK(MPI_Barrier(MPI_COMM_WORLD));
    printf("rank %d: MT COMMS OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
