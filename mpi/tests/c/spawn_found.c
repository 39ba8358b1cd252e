/* What MPICH's spawn tests found (docs/mpi.md, "Spawn sweep").
 *
 * `peer` (`-n 2 --universe 4`, as MPICH's spaiccreate): rank 0 alone spawns 2
 * children from MPI_COMM_SELF; then the parents' MPI_COMM_WORLD and the children's
 * make a new inter-communicator with MPI_Intercomm_create whose peer communicator is
 * the spawn's inter-communicator (significant at the two leaders only: rank 1 passes
 * MPI_COMM_NULL), `remote_leader` 0 being rank 0 of its remote group. Every process
 * sends its world rank to every remote rank and checks what it gets, over the new
 * inter-communicator. Before: MPI_ERR_COMM at the leaders (the peer had to be an
 * intra-communicator).
 *
 * `path` (`-n 1 --universe 4`): the program spawns itself by its bare name, which
 * is not in PATH: with MPI_INFO_NULL that is MPI_ERR_SPAWN; with the info key `path`
 * naming a missing directory and then this program's directory, one child starts
 * (argv[0] the name as given); MPI_Comm_spawn_multiple of the name twice with that
 * info for each command starts 2; a `path` without the program is MPI_ERR_SPAWN.
 * Before: MPI_ERR_SPAWN for every one (`info` was ignored).
 *
 * `wdir` (`-n 1 --universe 4`, as MPICH's spawninfo1): the program spawns itself with
 * the info key `wdir` naming a fresh directory, given absolute and then relative to
 * the parent's working directory; each child reports whether its working directory
 * is that one. A `wdir` that is no directory is MPI_ERR_SPAWN. Before: the children
 * started in the launcher's directory (the key was ignored). */
#define _DEFAULT_SOURCE /* realpath, mkdtemp */
#include <mpi.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int me = -1;
#include "check.h"

/* Every process sends its world rank to every remote rank of `inter` and checks
 * that remote rank r of the other side sent `remote_base + r`. */
static void exchange(MPI_Comm inter, int remote_base) {
    int rsize;
    OK(MPI_Comm_remote_size(inter, &rsize));
    for (int r = 0; r < rsize; r++)
        OK(MPI_Send(&me, 1, MPI_INT, r, 9, inter));
    for (int r = 0; r < rsize; r++) {
        int got = -1;
        OK(MPI_Recv(&got, 1, MPI_INT, r, 9, inter, MPI_STATUS_IGNORE));
        CHECK(got == remote_base + r);
    }
}

static void peer(const char *prog, MPI_Comm parent) {
    int size;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    MPI_Comm spawned = MPI_COMM_NULL, ic = MPI_COMM_NULL;
    if (parent == MPI_COMM_NULL && me == 0) {
        char *args[] = {"peer", NULL};
        int codes[2] = {-1, -1};
        OK(MPI_Comm_spawn(prog, args, 2, MPI_INFO_NULL, 0, MPI_COMM_SELF, &spawned, codes));
        CHECK(codes[0] == MPI_SUCCESS && codes[1] == MPI_SUCCESS);
    }
    int child = parent != MPI_COMM_NULL;
    MPI_Comm bridge = child ? parent : spawned;
    OK(MPI_Intercomm_create(MPI_COMM_WORLD, 0, bridge, 0, 77, &ic));
    int inter, lsize, rsize;
    OK(MPI_Comm_test_inter(ic, &inter));
    OK(MPI_Comm_size(ic, &lsize));
    OK(MPI_Comm_remote_size(ic, &rsize));
    CHECK(inter && size == 2 && lsize == 2 && rsize == 2);
    exchange(ic, 0);
    OK(MPI_Barrier(ic));
    OK(MPI_Comm_free(&ic));
    if (child)
        OK(MPI_Comm_disconnect(&parent));
    else if (spawned != MPI_COMM_NULL)
        OK(MPI_Comm_disconnect(&spawned));
    printf("%s %d: PEER %s OK\n", child ? "child" : "rank", me, child ? "CHILD" : "PARENT");
}

/* The children of `path` tell their parent they run with argv[0] `name`. */
static void path_child(MPI_Comm parent, const char *argv0, const char *name) {
    int ok = strcmp(argv0, name) == 0;
    OK(MPI_Send(&ok, 1, MPI_INT, 0, 3, parent));
    OK(MPI_Comm_disconnect(&parent));
    printf("child %d: PATH CHILD OK\n", me);
}

static void spawned_ok(MPI_Comm inter, int n) {
    int rsize;
    OK(MPI_Comm_remote_size(inter, &rsize));
    CHECK(rsize == n);
    for (int c = 0; c < n; c++) {
        int ok = 0;
        OK(MPI_Recv(&ok, 1, MPI_INT, c, 3, inter, MPI_STATUS_IGNORE));
        CHECK(ok == 1);
    }
    OK(MPI_Comm_disconnect(&inter));
}

static void path(char *name) {
    char dir[4096], search[4200];
    ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
    CHECK(n > 0);
    dir[n] = 0;
    snprintf(search, sizeof search, "/no-such-steadfast-dir:%s", dirname(dir));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    char *args[] = {"path", NULL};
    MPI_Comm inter = MPI_COMM_WORLD;
    /* Not in PATH: nothing starts. */
    CHECK(MPI_Comm_spawn(name, args, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter,
                         MPI_ERRCODES_IGNORE) == MPI_ERR_SPAWN);
    CHECK(inter == MPI_COMM_NULL);
    MPI_Info info;
    OK(MPI_Info_create(&info));
    OK(MPI_Info_set(info, "path", search));
    OK(MPI_Comm_spawn(name, args, 1, info, 0, MPI_COMM_WORLD, &inter, MPI_ERRCODES_IGNORE));
    spawned_ok(inter, 1);
    char *cmds[] = {name, name};
    char **argvs[] = {args, args};
    int np[] = {1, 1}, codes[2] = {-1, -1};
    MPI_Info infos[] = {info, info};
    OK(MPI_Comm_spawn_multiple(2, cmds, argvs, np, infos, 0, MPI_COMM_WORLD, &inter, codes));
    CHECK(codes[0] == MPI_SUCCESS && codes[1] == MPI_SUCCESS);
    spawned_ok(inter, 2);
    /* A path without the program. */
    OK(MPI_Info_set(info, "path", "/no-such-steadfast-dir"));
    CHECK(MPI_Comm_spawn(name, args, 1, info, 0, MPI_COMM_WORLD, &inter,
                         MPI_ERRCODES_IGNORE) == MPI_ERR_SPAWN);
    OK(MPI_Info_free(&info));
    printf("rank %d: PATH PARENT OK\n", me);
}

/* A `wdir` child: is its working directory `want` (its realpath)? */
static void wdir_child(MPI_Comm parent, const char *want) {
    char here[PATH_MAX], there[PATH_MAX];
    int ok = getcwd(here, sizeof here) != NULL && realpath(want, there) != NULL &&
             strcmp(here, there) == 0;
    OK(MPI_Send(&ok, 1, MPI_INT, 0, 3, parent));
    OK(MPI_Comm_disconnect(&parent));
    printf("child %d: WDIR CHILD OK\n", me);
}

static void wdir(const char *prog) {
    char exe[PATH_MAX], dir[PATH_MAX];
    CHECK(realpath(prog, exe) != NULL);
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/sf-wdir-XXXXXX", t && *t ? t : "/tmp");
    CHECK(mkdtemp(dir) != NULL);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_Info info;
    OK(MPI_Info_create(&info));
    OK(MPI_Info_set(info, "wdir", dir));
    /* The child is told the directory's absolute name to compare with. */
    char *args[] = {"wdir", dir, NULL};
    MPI_Comm inter = MPI_COMM_NULL;
    OK(MPI_Comm_spawn(exe, args, 1, info, 0, MPI_COMM_WORLD, &inter, MPI_ERRCODES_IGNORE));
    spawned_ok(inter, 1);
    /* Relative to the parent's working directory: its parent directory, then the name. */
    char parent_dir[PATH_MAX], base[PATH_MAX];
    snprintf(parent_dir, sizeof parent_dir, "%s", dir);
    snprintf(base, sizeof base, "%s", dir);
    CHECK(chdir(dirname(parent_dir)) == 0);
    OK(MPI_Info_set(info, "wdir", basename(base)));
    OK(MPI_Comm_spawn(exe, args, 1, info, 0, MPI_COMM_WORLD, &inter, MPI_ERRCODES_IGNORE));
    spawned_ok(inter, 1);
    OK(MPI_Info_set(info, "wdir", "/no-such-steadfast-dir"));
    CHECK(MPI_Comm_spawn(exe, args, 1, info, 0, MPI_COMM_WORLD, &inter,
                         MPI_ERRCODES_IGNORE) == MPI_ERR_SPAWN);
    OK(MPI_Info_free(&info));
    CHECK(rmdir(dir) == 0);
    printf("rank %d: WDIR PARENT OK\n", me);
}

int main(int argc, char **argv) {
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    MPI_Comm parent;
    OK(MPI_Comm_get_parent(&parent));
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "peer") == 0) {
        peer(argv[0], parent);
    } else if (strcmp(mode, "path") == 0) {
        char *name = basename(argv[0]);
        if (parent != MPI_COMM_NULL)
            path_child(parent, argv[0], name);
        else
            path(name);
    } else if (strcmp(mode, "wdir") == 0) {
        if (parent != MPI_COMM_NULL)
            wdir_child(parent, argc > 2 ? argv[2] : "");
        else
            wdir(argv[0]);
    } else {
        CHECK(!"a mode: peer, path or wdir");
    }
    OK(MPI_Finalize());
    return 0;
}
