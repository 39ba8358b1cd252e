/* MPI_Comm_spawn_multiple under `steadfast-run -n 2 --universe 6` (docs/spawn.md).
 *
 * The 2 parents first spawn two commands of which the second does not exist: nothing
 * starts, MPI_ERR_SPAWN at both parents and in every errcode. Then they spawn this
 * program twice in one call: 2 children with the arguments `child zero` and 1 with
 * `child one`. The 3 children form one MPI_COMM_WORLD (command order: the `zero`
 * ones are ranks 0 and 1), their MPI_APPNUM is their command's index (checked
 * against their argv), and messages go both ways between every parent and every
 * child. Then a spawn of two commands with MPI_ARGVS_NULL and maxprocs {0, 1} (the
 * first command, asked for no process, is not looked for): the one child is of
 * command 1 (MPI_APPNUM 1) and has no arguments. Last, a spawn past the universe
 * fails with MPI_ERR_SPAWN at once. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int me = -1;
#include "check.h"

static int appnum(void) {
    int flag = 0, *v = NULL;
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &v, &flag));
    CHECK(flag == 1);
    return *v;
}

/* Every parent sends every child 1000 * parent + child and gets back
 * 2000 + 100 * child + 10 * parent + appnum. */
static void talk_as_parent(MPI_Comm inter, int children, const int *appnums) {
    for (int c = 0; c < children; c++) {
        int v = 1000 * me + c;
        OK(MPI_Send(&v, 1, MPI_INT, c, 5, inter));
    }
    for (int c = 0; c < children; c++) {
        int got = -1;
        OK(MPI_Recv(&got, 1, MPI_INT, c, 6, inter, MPI_STATUS_IGNORE));
        CHECK(got == 2000 + 100 * c + 10 * me + appnums[c]);
    }
}

static void parent(const char *prog) {
    int size;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size == 2 && appnum() == 0);
    MPI_Comm inter = MPI_COMM_WORLD;

    /* One command not found: the whole spawn is refused, at once. */
    char *cmds_bad[] = {(char *)prog, "no-such-steadfast-command"};
    int np_bad[] = {1, 1}, codes[3] = {-1, -1, -1};
    CHECK(MPI_Comm_spawn_multiple(2, cmds_bad, MPI_ARGVS_NULL, np_bad, NULL, 0, MPI_COMM_WORLD,
                                  &inter, codes) == MPI_ERR_SPAWN);
    CHECK(inter == MPI_COMM_NULL && codes[0] == MPI_ERR_SPAWN && codes[1] == MPI_ERR_SPAWN);

    char *zero[] = {"child", "zero", NULL}, *one[] = {"child", "one", NULL};
    char **argvs[] = {zero, one};
    char *cmds[] = {(char *)prog, (char *)prog};
    int np[] = {2, 1};
    MPI_Info infos[] = {MPI_INFO_NULL, MPI_INFO_NULL};
    codes[0] = codes[1] = codes[2] = -1;
    OK(MPI_Comm_spawn_multiple(2, cmds, argvs, np, infos, 1, MPI_COMM_WORLD, &inter, codes));
    CHECK(codes[0] == MPI_SUCCESS && codes[1] == MPI_SUCCESS && codes[2] == MPI_SUCCESS);
    int rsize, lsize, r;
    OK(MPI_Comm_remote_size(inter, &rsize));
    OK(MPI_Comm_size(inter, &lsize));
    OK(MPI_Comm_rank(inter, &r));
    CHECK(rsize == 3 && lsize == 2 && r == me);
    int appnums[] = {0, 0, 1};
    talk_as_parent(inter, 3, appnums);
    OK(MPI_Barrier(inter));
    OK(MPI_Comm_disconnect(&inter));

    /* MPI_ARGVS_NULL and a command asked for no process. */
    char *cmds2[] = {"no-such-steadfast-command-either", (char *)prog};
    int np2[] = {0, 1};
    OK(MPI_Comm_spawn_multiple(2, cmds2, MPI_ARGVS_NULL, np2, NULL, 0, MPI_COMM_WORLD, &inter,
                               MPI_ERRCODES_IGNORE));
    OK(MPI_Comm_remote_size(inter, &rsize));
    CHECK(rsize == 1);
    OK(MPI_Comm_disconnect(&inter));
    /* The universe is full: an error at every parent, never a wait. */
    CHECK(MPI_Comm_spawn_multiple(2, cmds, argvs, np, infos, 0, MPI_COMM_WORLD, &inter, codes) ==
          MPI_ERR_SPAWN);
    CHECK(inter == MPI_COMM_NULL && codes[0] == MPI_ERR_SPAWN && codes[2] == MPI_ERR_SPAWN);
    printf("rank %d: MULTIPLE PARENT OK\n", me);
}

static void child(MPI_Comm parent, int argc, char **argv) {
    int size, rsize;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    OK(MPI_Comm_remote_size(parent, &rsize));
    CHECK(rsize == 2);
    if (argc == 1) {
        /* The last spawn's only child: command 1 of two, no arguments. */
        CHECK(size == 1 && me == 0 && appnum() == 1);
        OK(MPI_Comm_disconnect(&parent));
        printf("child %d: ARGVS NULL CHILD OK\n", me);
        return;
    }
    CHECK(argc == 3 && strcmp(argv[1], "child") == 0 && size == 3);
    int app = appnum();
    CHECK(app == (strcmp(argv[2], "one") == 0));
    CHECK(app == (me == 2));
    for (int p = 0; p < 2; p++) {
        int got = -1;
        OK(MPI_Recv(&got, 1, MPI_INT, p, 5, parent, MPI_STATUS_IGNORE));
        CHECK(got == 1000 * p + me);
    }
    for (int p = 0; p < 2; p++) {
        int v = 2000 + 100 * me + 10 * p + app;
        OK(MPI_Send(&v, 1, MPI_INT, p, 6, parent));
    }
    OK(MPI_Barrier(parent));
    int sum = 0;
    OK(MPI_Allreduce(&app, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == 1);
    OK(MPI_Comm_disconnect(&parent));
    printf("child %d: MULTIPLE CHILD OK %s\n", me, argv[2]);
}

int main(int argc, char **argv) {
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_Comm p;
    OK(MPI_Comm_get_parent(&p));
    if (p == MPI_COMM_NULL) {
        parent(argv[0]);
    } else {
        OK(MPI_Comm_set_errhandler(p, MPI_ERRORS_RETURN));
        child(p, argc, argv);
    }
    OK(MPI_Finalize());
    return 0;
}
