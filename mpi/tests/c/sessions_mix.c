/*
 * The Sessions model beside the world model (run with -initial-errhandler
 * mpi_errors_return). The argument is the order:
 * - "session-first": a session, then MPI_Init (MPI_Initialized turns 1 only then), a
 *   second session alongside; communicators from both sessions and a dup of
 *   MPI_COMM_WORLD all work; the first session ends and MPI goes on; MPI_Finalize
 *   (MPI_Finalized 1) leaves the second session's communicator working; the last
 *   MPI_Session_finalize brings MPI down; MPI_Init then fails (the world model
 *   starts once), a new session brings MPI up again and its communicator works.
 * - "init-first": MPI_Init, two sessions at once, both finalised while MPI_COMM_WORLD
 *   still works, a third session started after them, MPI_Finalize, the third
 *   session's communicator still works, then it ends.
 * On every communicator a ring exchange checked word by word and an allreduce. Each
 * rank prints "rank R: SESSIONS MIX OK".
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int me = -1;

#include "check.h"

static int class_of(int rc) {
    int cls = -1;
    MPI_Error_class(rc, &cls);
    return cls;
}

static int stage(void) {
    int init = -1, fin = -1;
    OK(MPI_Initialized(&init));
    OK(MPI_Finalized(&fin));
    return init + 2 * fin;
}

/* A ring exchange of words naming the sender and `id`, then an allreduce. */
static void exercise(MPI_Comm c, int id) {
    int n = 0, r = -1;
    OK(MPI_Comm_size(c, &n));
    OK(MPI_Comm_rank(c, &r));
    int out[3], in[3];
    for (int i = 0; i < 3; i++)
        out[i] = id * 10000 + r * 10 + i;
    int left = (r + n - 1) % n;
    OK(MPI_Sendrecv(out, 3, MPI_INT, (r + 1) % n, 5, in, 3, MPI_INT, left, 5, c,
                    MPI_STATUS_IGNORE));
    for (int i = 0; i < 3; i++)
        CHECK(in[i] == id * 10000 + left * 10 + i);
    int one = 1, total = 0;
    OK(MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, c));
    CHECK(total == n);
}

/* A communicator over mpi://WORLD of session `s`, with string tag `tag`. */
static MPI_Comm world_of(MPI_Session s, const char *tag) {
    MPI_Group g;
    MPI_Comm c = MPI_COMM_NULL;
    OK(MPI_Group_from_session_pset(s, "mpi://WORLD", &g));
    OK(MPI_Group_rank(g, &me));
    OK(MPI_Comm_create_from_group(g, tag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &c));
    OK(MPI_Group_free(&g));
    return c;
}

static void session_first(int *argc, char ***argv) {
    MPI_Session s1, s2;
    OK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s1));
    CHECK(stage() == 0);
    MPI_Comm a = world_of(s1, "mix.a");
    exercise(a, 1);
    OK(MPI_Init(argc, argv));
    CHECK(stage() == 1);
    int wr = -1;
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &wr));
    CHECK(wr == me);
    OK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s2));
    CHECK(s2 != s1);
    MPI_Comm b = world_of(s2, "mix.b"), d;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    exercise(a, 2);
    exercise(b, 3);
    exercise(d, 4);
    OK(MPI_Comm_free(&a));
    OK(MPI_Session_finalize(&s1));
    exercise(d, 5);
    exercise(MPI_COMM_WORLD, 6);
    exercise(b, 7);
    OK(MPI_Comm_free(&d));
    OK(MPI_Finalize());
    CHECK(stage() == 3);
    exercise(b, 8);
    OK(MPI_Comm_free(&b));
    OK(MPI_Session_finalize(&s2));
    CHECK(stage() == 3);
    /* MPI went down with its last user. The world model starts at most once; a new
     * session brings MPI up again. */
    CHECK(class_of(MPI_Init(NULL, NULL)) == MPI_ERR_OTHER);
    MPI_Session s3 = MPI_SESSION_NULL;
    OK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s3));
    CHECK(class_of(MPI_Init(NULL, NULL)) == MPI_ERR_OTHER);
    MPI_Comm c = world_of(s3, "mix.c");
    exercise(c, 9);
    OK(MPI_Comm_free(&c));
    OK(MPI_Session_finalize(&s3));
    CHECK(stage() == 3);
}

static void init_first(int *argc, char ***argv) {
    MPI_Session s1, s2, s3;
    OK(MPI_Init(argc, argv));
    CHECK(stage() == 1);
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s1));
    OK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s2));
    MPI_Comm a = world_of(s1, "mix.a"), b = world_of(s2, "mix.b");
    exercise(a, 1);
    exercise(b, 2);
    exercise(MPI_COMM_WORLD, 3);
    OK(MPI_Comm_free(&a));
    OK(MPI_Comm_free(&b));
    OK(MPI_Session_finalize(&s2));
    OK(MPI_Session_finalize(&s1));
    CHECK(stage() == 1);
    exercise(MPI_COMM_WORLD, 4);
    OK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s3));
    MPI_Comm c = world_of(s3, "mix.c");
    exercise(c, 5);
    OK(MPI_Finalize());
    CHECK(stage() == 3);
    exercise(c, 6);
    OK(MPI_Comm_free(&c));
    OK(MPI_Session_finalize(&s3));
    CHECK(stage() == 3);
}

int main(int argc, char **argv) {
    CHECK(argc == 2);
    if (strcmp(argv[1], "session-first") == 0) {
        session_first(&argc, &argv);
    } else {
        CHECK(strcmp(argv[1], "init-first") == 0);
        init_first(&argc, &argv);
    }
    printf("rank %d: SESSIONS MIX OK\n", me);
    return 0;
}
