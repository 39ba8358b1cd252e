/* MPI_Info_create_env, before MPI_Init and after MPI_Finalize, and MPI_INFO_ENV after
 * MPI_Init: the same keys, the command and arguments the program got, the job's size,
 * the working directory. Run with arguments "alpha beta". Prints INFO ENV OK on every
 * rank. */
#include <mpi.h>
#include <string.h>
#include <unistd.h>

static int me = -1;

#include "check.h"

/* Checks `info` against this process: `level` the thread level it should say. */
static void check_env(MPI_Info info, const char *command, int np, const char *level) {
    char v[MPI_MAX_INFO_VAL + 1];
    int len, flag;
    len = sizeof v;
    OK(MPI_Info_get_string(info, "command", &len, v, &flag));
    CHECK(flag && strcmp(v, command) == 0);
    len = sizeof v;
    OK(MPI_Info_get_string(info, "argv", &len, v, &flag));
    CHECK(flag && strcmp(v, "alpha beta") == 0);
    len = sizeof v;
    OK(MPI_Info_get_string(info, "maxprocs", &len, v, &flag));
    CHECK(flag && atoi(v) == np);
    len = sizeof v;
    OK(MPI_Info_get_string(info, "thread_level", &len, v, &flag));
    CHECK(flag && strcmp(v, level) == 0);
    char cwd[4096];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    len = sizeof v;
    OK(MPI_Info_get_string(info, "wdir", &len, v, &flag));
    CHECK(flag && strcmp(v, cwd) == 0);
    len = sizeof v;
    OK(MPI_Info_get_string(info, "host", &len, v, &flag));
    CHECK(flag && len > 1);
    len = sizeof v;
    OK(MPI_Info_get_string(info, "mpi_initial_errhandler", &len, v, &flag));
    CHECK(flag && strcmp(v, "mpi_errors_are_fatal") == 0);
}

int main(int argc, char **argv) {
    CHECK(argc == 3 && strcmp(argv[1], "alpha") == 0);
    MPI_Info before;
    OK(MPI_Info_create_env(argc, argv, &before));
    OK(MPI_Init(&argc, &argv));
    int np;
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &np));
    check_env(before, argv[0], np, "MPI_THREAD_SINGLE");
    check_env(MPI_INFO_ENV, argv[0], np, "MPI_THREAD_SINGLE");
    OK(MPI_Info_free(&before));
    /* No arguments: no "argv" key. */
    MPI_Info bare;
    OK(MPI_Info_create_env(1, argv, &bare));
    char v[MPI_MAX_INFO_VAL + 1];
    int len = sizeof v, flag = 1;
    OK(MPI_Info_get_string(bare, "argv", &len, v, &flag));
    CHECK(!flag);
    OK(MPI_Info_free(&bare));
    printf("rank %d: INFO ENV OK (%d)\n", me, np);
    OK(MPI_Finalize());
    MPI_Info after;
    OK(MPI_Info_create_env(argc, argv, &after));
    check_env(after, argv[0], np, "MPI_THREAD_SINGLE");
    OK(MPI_Info_free(&after));
    return 0;
}
