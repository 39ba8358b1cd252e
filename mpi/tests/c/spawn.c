/* MPI_Comm_spawn, MPI_Comm_get_parent, MPI_Comm_disconnect under
 * `steadfast-run --universe U` (docs/spawn.md).
 *
 * `spawn` (-n 2 --universe 4): the 2 parents spawn 2 children (this program, with
 * MPI_ARGV_NULL: the children have no arguments), exchange messages both ways over the
 * inter-communicator, barrier over both groups (MPI_Barrier on the inter-communicator),
 * merge it (parents first) and allreduce over it; a spawn past the
 * universe fails with MPI_ERR_SPAWN without waiting; both sides disconnect.
 * `replace` (-n 4 --universe 5): the ULFM replacement pattern: rank 2 SIGKILLs itself,
 * the survivors shrink, spawn 1 replacement (this program, argument `replace`), merge,
 * split by the old ranks, and an allreduce over the repaired communicator gives the
 * sum of 1..4.
 * `worker PATH` (-n 2 --universe 4): commands that do not exist fail with MPI_ERR_SPAWN
 * per child and the program goes on; then the parents spawn 2 children of another
 * program (PATH, spawn_worker.c) with arguments `alpha` and `two words`, which check
 * them, talk, merge and disconnect.
 * `selfargs` (-n 2 --universe 3, this program's directory in PATH): the parents spawn
 * this program by its name (found through PATH) with the arguments `selfchild x=1`;
 * the child takes its branch from argv. */
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static int me = -1;
#include "check.h"

static void spawn_parent(const char *prog) {
    int size, flag, codes[2] = {-1, -1}, *usize = NULL;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size == 2);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &usize, &flag));
    CHECK(flag == 1 && *usize == 4);
    MPI_Comm inter;
    OK(MPI_Comm_spawn(prog, MPI_ARGV_NULL, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, codes));
    CHECK(codes[0] == MPI_SUCCESS && codes[1] == MPI_SUCCESS);
    OK(MPI_Comm_test_inter(inter, &flag));
    CHECK(flag == 1);
    int rsize, lsize, r;
    OK(MPI_Comm_remote_size(inter, &rsize));
    OK(MPI_Comm_size(inter, &lsize));
    OK(MPI_Comm_rank(inter, &r));
    CHECK(rsize == 2 && lsize == 2 && r == me);
    int v = 100 + me, got = -1;
    OK(MPI_Send(&v, 1, MPI_INT, me, 7, inter));
    OK(MPI_Recv(&got, 1, MPI_INT, me, 8, inter, MPI_STATUS_IGNORE));
    CHECK(got == 200 + me);
    /* A barrier over both groups of the inter-communicator. */
    OK(MPI_Barrier(inter));
    MPI_Comm merged;
    OK(MPI_Intercomm_merge(inter, 0, &merged));
    int mr, ms, sum = 0;
    OK(MPI_Comm_rank(merged, &mr));
    OK(MPI_Comm_size(merged, &ms));
    CHECK(mr == me && ms == 4);
    OK(MPI_Allreduce(&mr, &sum, 1, MPI_INT, MPI_SUM, merged));
    CHECK(sum == 0 + 1 + 2 + 3);
    OK(MPI_Comm_free(&merged));

    /* The universe is full now: an error, no wait. */
    MPI_Comm none = MPI_COMM_WORLD;
    codes[0] = -1;
    CHECK(MPI_Comm_spawn(prog, MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &none, codes) ==
          MPI_ERR_SPAWN);
    CHECK(none == MPI_COMM_NULL && codes[0] == MPI_ERR_SPAWN);
    CHECK(MPI_Comm_spawn("/bin/true", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 1, MPI_COMM_WORLD, &none,
                         MPI_ERRCODES_IGNORE) == MPI_ERR_SPAWN);
    CHECK(none == MPI_COMM_NULL);

    OK(MPI_Comm_disconnect(&inter));
    CHECK(inter == MPI_COMM_NULL);
    printf("rank %d: SPAWN PARENT OK\n", me);
}

static void spawn_child(MPI_Comm parent, int argc) {
    int size, rsize, flag, *usize = NULL;
    CHECK(argc == 1); /* MPI_ARGV_NULL: no arguments */
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    OK(MPI_Comm_remote_size(parent, &rsize));
    CHECK(size == 2 && rsize == 2);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &usize, &flag));
    CHECK(flag == 1 && *usize == 4);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &usize, &flag));
    CHECK(flag == 1 && *usize == 0);
    int got = -1, v = 200 + me;
    OK(MPI_Recv(&got, 1, MPI_INT, me, 7, parent, MPI_STATUS_IGNORE));
    CHECK(got == 100 + me);
    OK(MPI_Send(&v, 1, MPI_INT, me, 8, parent));
    OK(MPI_Barrier(parent));
    MPI_Comm merged;
    OK(MPI_Intercomm_merge(parent, 1, &merged));
    int mr, ms, sum = 0;
    OK(MPI_Comm_rank(merged, &mr));
    OK(MPI_Comm_size(merged, &ms));
    CHECK(mr == 2 + me && ms == 4);
    OK(MPI_Allreduce(&mr, &sum, 1, MPI_INT, MPI_SUM, merged));
    CHECK(sum == 0 + 1 + 2 + 3);
    OK(MPI_Comm_free(&merged));
    /* The children's own world works as any. */
    int one = 1, two = 0;
    OK(MPI_Allreduce(&one, &two, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(two == 2);
    MPI_Comm again;
    OK(MPI_Comm_get_parent(&again));
    CHECK(again == parent);
    OK(MPI_Comm_disconnect(&parent));
    OK(MPI_Comm_get_parent(&again));
    CHECK(again == MPI_COMM_NULL);
    printf("child %d: SPAWN CHILD OK\n", me);
}

/* The replacement: survivors and the replacement end with `repaired`, in which
 * every process has its old rank. */
static MPI_Comm replace_survivor(MPI_Comm world, const char *prog) {
    MPI_Comm shrunk, inter, merged, repaired;
    OK(MPIX_Comm_shrink(world, &shrunk));
    int old_size, new_size, srank;
    OK(MPI_Comm_size(world, &old_size));
    OK(MPI_Comm_size(shrunk, &new_size));
    OK(MPI_Comm_rank(shrunk, &srank));
    CHECK(old_size == 4 && new_size == 3);
    int codes[1] = {-1};
    char *args[] = {"replace", NULL};
    OK(MPI_Comm_spawn(prog, args, old_size - new_size, MPI_INFO_NULL, 0, shrunk, &inter, codes));
    CHECK(codes[0] == MPI_SUCCESS);
    if (srank == 0) {
        /* The dead: in world, not in shrunk. Tell the replacement its old rank. */
        MPI_Group wg, sg, dg;
        OK(MPI_Comm_group(world, &wg));
        OK(MPI_Comm_group(shrunk, &sg));
        OK(MPI_Group_difference(wg, sg, &dg));
        int zero = 0, dead = -1;
        OK(MPI_Group_translate_ranks(dg, 1, &zero, wg, &dead));
        CHECK(dead == 2);
        OK(MPI_Send(&dead, 1, MPI_INT, 0, 1, inter));
        OK(MPI_Group_free(&wg));
        OK(MPI_Group_free(&sg));
        OK(MPI_Group_free(&dg));
    }
    OK(MPI_Intercomm_merge(inter, 0, &merged));
    OK(MPI_Comm_split(merged, 0, me, &repaired));
    OK(MPI_Comm_free(&merged));
    OK(MPI_Comm_free(&inter));
    OK(MPI_Comm_free(&shrunk));
    return repaired;
}

static MPI_Comm replace_child(MPI_Comm parent) {
    MPI_Comm merged, repaired;
    int old = -1;
    OK(MPI_Recv(&old, 1, MPI_INT, 0, 1, parent, MPI_STATUS_IGNORE));
    CHECK(old == 2);
    me = old;
    OK(MPI_Intercomm_merge(parent, 1, &merged));
    OK(MPI_Comm_split(merged, 0, old, &repaired));
    OK(MPI_Comm_free(&merged));
    OK(MPI_Comm_disconnect(&parent));
    return repaired;
}

/* Commands not found, then a different program with arguments (spawn_worker.c). */
static void worker_parent(const char *worker) {
    int codes[2] = {-1, -1}, class = -1, len = 0;
    MPI_Comm inter = MPI_COMM_WORLD;
    int rc = MPI_Comm_spawn("no-such-steadfast-worker", MPI_ARGV_NULL, 2, MPI_INFO_NULL, 0,
                            MPI_COMM_WORLD, &inter, codes);
    CHECK(rc != MPI_SUCCESS && inter == MPI_COMM_NULL);
    OK(MPI_Error_class(rc, &class));
    CHECK(class == MPI_ERR_SPAWN && codes[0] == MPI_ERR_SPAWN && codes[1] == MPI_ERR_SPAWN);
    char text[MPI_MAX_ERROR_STRING];
    OK(MPI_Error_string(rc, text, &len));
    CHECK(len > 0 && strstr(text, "not found") != NULL);
    CHECK(MPI_Comm_spawn("./no-such-dir/worker", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 1,
                         MPI_COMM_WORLD, &inter, MPI_ERRCODES_IGNORE) == MPI_ERR_SPAWN);
    CHECK(inter == MPI_COMM_NULL);
    /* The program goes on. */
    OK(MPI_Barrier(MPI_COMM_WORLD));

    char *args[] = {"alpha", "two words", NULL};
    OK(MPI_Comm_spawn(worker, args, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, codes));
    CHECK(codes[0] == MPI_SUCCESS && codes[1] == MPI_SUCCESS);
    int rsize, v = 300 + me, got = -1;
    OK(MPI_Comm_remote_size(inter, &rsize));
    CHECK(rsize == 2);
    OK(MPI_Send(&v, 1, MPI_INT, me, 7, inter));
    OK(MPI_Recv(&got, 1, MPI_INT, me, 8, inter, MPI_STATUS_IGNORE));
    CHECK(got == 400 + me);
    MPI_Comm merged;
    OK(MPI_Intercomm_merge(inter, 0, &merged));
    int mr, ms, sum = 0;
    OK(MPI_Comm_rank(merged, &mr));
    OK(MPI_Comm_size(merged, &ms));
    CHECK(mr == me && ms == 4);
    OK(MPI_Allreduce(&mr, &sum, 1, MPI_INT, MPI_SUM, merged));
    CHECK(sum == 0 + 1 + 2 + 3);
    OK(MPI_Comm_free(&merged));
    OK(MPI_Comm_disconnect(&inter));
    printf("rank %d: WORKER PARENT OK\n", me);
}

/* This program again, by its name (through PATH), with arguments for the child. */
static void selfargs_parent(const char *self) {
    const char *name = strrchr(self, '/');
    name = name != NULL ? name + 1 : self;
    char *args[] = {"selfchild", "x=1", NULL};
    int codes[1] = {-1}, got = -1;
    MPI_Comm inter;
    OK(MPI_Comm_spawn(name, args, 1, MPI_INFO_NULL, 1, MPI_COMM_WORLD, &inter, codes));
    CHECK(codes[0] == MPI_SUCCESS);
    if (me == 1) {
        OK(MPI_Recv(&got, 1, MPI_INT, 0, 9, inter, MPI_STATUS_IGNORE));
        CHECK(got == 1234);
    }
    OK(MPI_Comm_disconnect(&inter));
    printf("rank %d: SELF PARENT OK\n", me);
}

static void selfargs_child(MPI_Comm parent, int argc, char **argv) {
    int v = 1234, size;
    CHECK(parent != MPI_COMM_NULL);
    CHECK(argc == 3 && strcmp(argv[2], "x=1") == 0);
    CHECK(strchr(argv[0], '/') == NULL); /* argv[0] is the command as given */
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size == 1);
    OK(MPI_Send(&v, 1, MPI_INT, 1, 9, parent));
    OK(MPI_Comm_disconnect(&parent));
    printf("child %d: SELF CHILD OK %s\n", me, argv[0]);
}

int main(int argc, char **argv) {
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    const char *mode = argc > 1 ? argv[1] : "spawn";
    MPI_Comm parent;
    OK(MPI_Comm_get_parent(&parent));
    if (parent != MPI_COMM_NULL) {
        OK(MPI_Comm_set_errhandler(parent, MPI_ERRORS_RETURN));
    }
    if (strcmp(mode, "spawn") == 0) {
        if (parent == MPI_COMM_NULL) {
            spawn_parent(argv[0]);
        } else {
            spawn_child(parent, argc);
        }
    } else if (strcmp(mode, "worker") == 0) {
        CHECK(argc == 3 && parent == MPI_COMM_NULL);
        worker_parent(argv[2]);
    } else if (strcmp(mode, "selfargs") == 0) {
        CHECK(parent == MPI_COMM_NULL);
        selfargs_parent(argv[0]);
    } else if (strcmp(mode, "selfchild") == 0) {
        selfargs_child(parent, argc, argv);
    } else if (strcmp(mode, "replace") == 0) {
        MPI_Comm repaired;
        if (parent == MPI_COMM_NULL) {
            MPI_Comm world;
            OK(MPI_Comm_dup(MPI_COMM_WORLD, &world));
            OK(MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN));
            /* The victim dies only once every survivor holds its dup: a member that
               dies inside MPI_Comm_dup may fail it at the others (ULFM), and the
               victim can leave the dup before they do. */
            int ready = me;
            if (me == 2) {
                for (int i = 0; i < 3; i++)
                    OK(MPI_Recv(&ready, 1, MPI_INT, MPI_ANY_SOURCE, 3, world, MPI_STATUS_IGNORE));
                raise(SIGKILL);
            }
            OK(MPI_Send(&ready, 1, MPI_INT, 2, 3, world));
            /* The victim never comes: the barrier fails at every survivor. */
            CHECK(MPI_Barrier(world) != MPI_SUCCESS);
            OK(MPIX_Comm_revoke(world));
            repaired = replace_survivor(world, argv[0]);
            OK(MPI_Comm_free(&world));
        } else {
            repaired = replace_child(parent);
        }
        int r, s, sum = 0, mine;
        OK(MPI_Comm_rank(repaired, &r));
        OK(MPI_Comm_size(repaired, &s));
        CHECK(r == me && s == 4);
        mine = r + 1;
        OK(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, repaired));
        CHECK(sum == 1 + 2 + 3 + 4);
        OK(MPI_Comm_free(&repaired));
        printf("rank %d: REPLACE OK\n", me);
    }
    OK(MPI_Finalize());
    return 0;
}
