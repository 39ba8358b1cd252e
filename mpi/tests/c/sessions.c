/*
 * The Sessions model without MPI_Init (MPI 4.1 §11.3), at N ranks (N is the argument;
 * run with -initial-errhandler mpi_errors_return). An info asking for
 * MPI_THREAD_MULTIPLE and a session error handler are made before MPI is up; the
 * session is initialised with them while MPI_Initialized stays 0; its process sets are listed (mpi://WORLD and mpi://SELF,
 * lengths asked with pset_len 0, a name cut to a short buffer), mpi_size read from
 * their infos; groups are made from both; communicators are created from the world's
 * group with two string tags one after the other, from each half of the world with
 * one tag (different groups, the same tag), and from SELF. On each: a ring exchange
 * whose every word names its sender and communicator, sends on two communicators
 * received in the other order (each message arrives on its own communicator), and an
 * allreduce of the world ranks. Bad input: an unknown process set and an
 * out-of-range index fail with MPI_ERR_ARG through the session's handler (a
 * recording one), MPI_Session_call_errhandler reaches it, MPI_SESSION_NULL fails with
 * MPI_ERR_SESSION without it, a process outside the group and a string tag past
 * MPI_MAX_STRINGTAG_LEN fail through the handler given to
 * MPI_Comm_create_from_group; members passing two string tags whose runtime tags
 * collide all get MPI_ERR_ARG, and the next creation works. All freed, the session finalised (MPI_SESSION_NULL),
 * MPI_Initialized and MPI_Finalized still 0; the handler is freed and an info object
 * made and used after MPI went down. Each rank prints "rank R: SESSIONS OK".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me = -1;

#include "check.h"

static int session_calls, session_code;
static MPI_Session session_seen = MPI_SESSION_NULL;
static int comm_calls, comm_code;

static void on_session(MPI_Session *s, int *code, ...) {
    session_calls++;
    session_code = *code;
    session_seen = *s;
}

static void on_comm(MPI_Comm *c, int *code, ...) {
    (void)c;
    comm_calls++;
    comm_code = *code;
}

static int class_of(int rc) {
    int cls = -1;
    MPI_Error_class(rc, &cls);
    return cls;
}

/* The value of `key` in info `info`, as an int (-1 when absent). */
static int info_int(MPI_Info info, const char *key) {
    char v[64];
    int flag = 0;
    OK(MPI_Info_get(info, key, sizeof v - 1, v, &flag));
    return flag ? atoi(v) : -1;
}

/* A ring exchange on `c` (words naming the sender and `id`), then an allreduce of the
 * world ranks of its members, which must be `sum`. */
static void exercise(MPI_Comm c, int id, int sum) {
    int n = 0, r = -1;
    OK(MPI_Comm_size(c, &n));
    OK(MPI_Comm_rank(c, &r));
    int out[4], in[4] = {-1, -1, -1, -1};
    for (int i = 0; i < 4; i++)
        out[i] = id * 1000000 + me * 100 + i;
    int right = (r + 1) % n, left = (r + n - 1) % n;
    int left_world = -1;
    OK(MPI_Sendrecv(&me, 1, MPI_INT, right, 1, &left_world, 1, MPI_INT, left, 1, c,
                    MPI_STATUS_IGNORE));
    OK(MPI_Sendrecv(out, 4, MPI_INT, right, 7, in, 4, MPI_INT, left, 7, c,
                    MPI_STATUS_IGNORE));
    for (int i = 0; i < 4; i++)
        CHECK(in[i] == id * 1000000 + left_world * 100 + i);
    int total = -1;
    OK(MPI_Allreduce(&me, &total, 1, MPI_INT, MPI_SUM, c));
    CHECK(total == sum);
}

/* Sends on `a` then `b` with one tag to this rank, receives from `b` first: each
 * message arrives on its own communicator. */
static void isolated(MPI_Comm a, MPI_Comm b) {
    int ra = -1, rb = -1, x = 11, y = 22, got = 0;
    OK(MPI_Comm_rank(a, &ra));
    OK(MPI_Comm_rank(b, &rb));
    MPI_Request q[2];
    OK(MPI_Isend(&x, 1, MPI_INT, ra, 3, a, &q[0]));
    OK(MPI_Isend(&y, 1, MPI_INT, rb, 3, b, &q[1]));
    OK(MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, b, MPI_STATUS_IGNORE));
    CHECK(got == 22);
    OK(MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, a, MPI_STATUS_IGNORE));
    CHECK(got == 11);
    OK(MPI_Waitall(2, q, MPI_STATUSES_IGNORE));
}

/* The checks of bad input; `world` is mpi://WORLD's group, `np` its size. */
static void bad_input(MPI_Session s, MPI_Group world, int np) {
    MPI_Errhandler eh, ch;
    OK(MPI_Session_create_errhandler(on_session, &eh));
    OK(MPI_Session_set_errhandler(s, eh));
    MPI_Errhandler back = MPI_ERRHANDLER_NULL;
    OK(MPI_Session_get_errhandler(s, &back));
    CHECK(back == eh);
    MPI_Group g = MPI_GROUP_NULL;
    int rc = MPI_Group_from_session_pset(s, "mpi://NOWHERE", &g);
    CHECK(class_of(rc) == MPI_ERR_ARG);
    CHECK(session_calls == 1 && session_code == rc && session_seen == s);
    int len = 64;
    char name[64];
    rc = MPI_Session_get_nth_pset(s, MPI_INFO_NULL, 2, &len, name);
    CHECK(class_of(rc) == MPI_ERR_ARG);
    CHECK(session_calls == 2);
    OK(MPI_Session_call_errhandler(s, MPI_ERR_OTHER));
    CHECK(session_calls == 3 && session_code == MPI_ERR_OTHER);
    int n = 0;
    rc = MPI_Session_get_num_psets(MPI_SESSION_NULL, MPI_INFO_NULL, &n);
    CHECK(class_of(rc) == MPI_ERR_SESSION);
    MPI_Session none = MPI_SESSION_NULL;
    CHECK(class_of(MPI_Session_finalize(&none)) == MPI_ERR_SESSION);
    CHECK(session_calls == 3);
    OK(MPI_Session_set_errhandler(s, MPI_ERRORS_RETURN));
    OK(MPI_Errhandler_free(&eh));

    OK(MPI_Comm_create_errhandler(on_comm, &ch));
    MPI_Comm c = MPI_COMM_NULL;
    char tag[MPI_MAX_STRINGTAG_LEN + 8];
    memset(tag, 'x', sizeof tag - 1);
    tag[sizeof tag - 1] = 0;
    rc = MPI_Comm_create_from_group(world, tag, MPI_INFO_NULL, ch, &c);
    CHECK(class_of(rc) == MPI_ERR_ARG && c == MPI_COMM_NULL);
    CHECK(comm_calls == 1 && comm_code == rc);
    if (np > 1) {
        /* A group without this process. */
        MPI_Group others;
        int mine[1] = {me};
        OK(MPI_Group_excl(world, 1, mine, &others));
        rc = MPI_Comm_create_from_group(others, "org.steadfast.test.others", MPI_INFO_NULL,
                                        ch, &c);
        CHECK(class_of(rc) == MPI_ERR_GROUP && c == MPI_COMM_NULL);
        CHECK(comm_calls == 2);
        OK(MPI_Group_free(&others));
    }
    OK(MPI_Comm_create_from_group(MPI_GROUP_EMPTY, "org.steadfast.test.empty", MPI_INFO_NULL,
                                  ch, &c));
    CHECK(c == MPI_COMM_NULL);
    if (np > 1) {
        /* Two string tags whose runtime tags collide (the library's unit tests check
         * the pair): the members' check refuses the communicator everywhere, and the
         * next creation works. */
        const char *t = me == 0 ? "collide.5799" : "collide.26206";
        int before = comm_calls;
        rc = MPI_Comm_create_from_group(world, t, MPI_INFO_NULL, ch, &c);
        CHECK(class_of(rc) == MPI_ERR_ARG && c == MPI_COMM_NULL);
        CHECK(comm_calls == before + 1);
        OK(MPI_Comm_create_from_group(world, "org.steadfast.test.after", MPI_INFO_NULL, ch,
                                      &c));
        exercise(c, 5, np * (np - 1) / 2);
        OK(MPI_Comm_free(&c));
    }
    OK(MPI_Errhandler_free(&ch));
}

/* The process sets: names, lengths, a cut name, mpi_size. */
static void psets(MPI_Session s, int np) {
    int n = 0, seen_world = 0, seen_self = 0;
    OK(MPI_Session_get_num_psets(s, MPI_INFO_NULL, &n));
    CHECK(n >= 2);
    for (int i = 0; i < n; i++) {
        int len = 0;
        char name[MPI_MAX_PSET_NAME_LEN];
        OK(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, name));
        CHECK(len > 1 && len <= MPI_MAX_PSET_NAME_LEN);
        OK(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, name));
        CHECK((int)strlen(name) == len - 1);
        MPI_Info info;
        OK(MPI_Session_get_pset_info(s, name, &info));
        int size = info_int(info, "mpi_size");
        OK(MPI_Info_free(&info));
        if (strcmp(name, "mpi://WORLD") == 0) {
            seen_world++;
            CHECK(size == np);
        } else if (strcmp(name, "mpi://SELF") == 0) {
            seen_self++;
            CHECK(size == 1);
        }
    }
    CHECK(seen_world == 1 && seen_self == 1);
    char cut[4] = {'?', '?', '?', '?'};
    int len = 4;
    OK(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, 0, &len, cut));
    CHECK(cut[3] == 0 && strlen(cut) == 3 && strncmp(cut, "mpi", 3) == 0);
    MPI_Info used;
    char level[64];
    int flag = 0;
    OK(MPI_Session_get_info(s, &used));
    OK(MPI_Info_get(used, "thread_level", sizeof level - 1, level, &flag));
    CHECK(flag && strcmp(level, "MPI_THREAD_MULTIPLE") == 0);
    OK(MPI_Info_free(&used));
}

int main(int argc, char **argv) {
    CHECK(argc == 2);
    int np = atoi(argv[1]), flag = -1;
    OK(MPI_Initialized(&flag));
    CHECK(flag == 0);
    /* The info and the handler are made before MPI is (MPI 4.1 §11.4.1). */
    MPI_Info hints;
    MPI_Errhandler early, eh = MPI_ERRHANDLER_NULL;
    OK(MPI_Info_create(&hints));
    OK(MPI_Info_set(hints, "thread_level", "MPI_THREAD_MULTIPLE"));
    OK(MPI_Session_create_errhandler(on_session, &early));
    MPI_Session s = MPI_SESSION_NULL;
    OK(MPI_Session_init(hints, early, &s));
    CHECK(s != MPI_SESSION_NULL);
    OK(MPI_Info_free(&hints));
    OK(MPI_Session_get_errhandler(s, &eh));
    CHECK(eh == early);
    CHECK(MPI_Session_f2c(MPI_Session_c2f(s)) == s);
    OK(MPI_Initialized(&flag));
    CHECK(flag == 0);
    psets(s, np);

    MPI_Group world, self;
    OK(MPI_Group_from_session_pset(s, "mpi://WORLD", &world));
    OK(MPI_Group_from_session_pset(s, "mpi://SELF", &self));
    int n = 0, r = -1;
    OK(MPI_Group_size(world, &n));
    OK(MPI_Group_rank(world, &me));
    CHECK(n == np && me >= 0 && me < np);
    OK(MPI_Group_size(self, &n));
    OK(MPI_Group_rank(self, &r));
    CHECK(n == 1 && r == 0);

    MPI_Comm a, b, half, solo;
    OK(MPI_Comm_create_from_group(world, "org.steadfast.test.a", MPI_INFO_NULL,
                                  MPI_ERRORS_RETURN, &a));
    OK(MPI_Comm_create_from_group(world, "org.steadfast.test.b", MPI_INFO_NULL,
                                  MPI_ERRORS_RETURN, &b));
    CHECK(a != b);
    OK(MPI_Comm_size(a, &n));
    OK(MPI_Comm_rank(a, &r));
    CHECK(n == np && r == me);
    int all = np * (np - 1) / 2;
    exercise(a, 1, all);
    exercise(b, 2, all);
    isolated(a, b);

    /* One half of the world each: different groups, the same tag. */
    int lo = np / 2, range[1][3];
    if (me < lo) {
        range[0][0] = 0, range[0][1] = lo - 1;
    } else {
        range[0][0] = lo, range[0][1] = np - 1;
    }
    range[0][2] = 1;
    MPI_Group hg;
    OK(MPI_Group_range_incl(world, 1, range, &hg));
    OK(MPI_Comm_create_from_group(hg, "org.steadfast.test.half", MPI_INFO_NULL,
                                  MPI_ERRORS_RETURN, &half));
    OK(MPI_Comm_size(half, &n));
    CHECK(n == range[0][1] - range[0][0] + 1);
    int hsum = 0;
    for (int i = range[0][0]; i <= range[0][1]; i++)
        hsum += i;
    exercise(half, 3, hsum);
    isolated(half, a);

    OK(MPI_Comm_create_from_group(self, "org.steadfast.test.self", MPI_INFO_NULL,
                                  MPI_ERRORS_RETURN, &solo));
    OK(MPI_Comm_size(solo, &n));
    CHECK(n == 1);
    exercise(solo, 4, me);

    bad_input(s, world, np);

    OK(MPI_Comm_free(&solo));
    OK(MPI_Comm_free(&half));
    OK(MPI_Comm_free(&b));
    OK(MPI_Comm_free(&a));
    OK(MPI_Group_free(&hg));
    OK(MPI_Group_free(&self));
    OK(MPI_Group_free(&world));
    OK(MPI_Session_finalize(&s));
    CHECK(s == MPI_SESSION_NULL);
    OK(MPI_Initialized(&flag));
    CHECK(flag == 0);
    OK(MPI_Finalized(&flag));
    CHECK(flag == 0);
    /* Info objects and error handlers outlive MPI. */
    OK(MPI_Errhandler_free(&early));
    CHECK(early == MPI_ERRHANDLER_NULL && session_calls == 3);
    MPI_Info after;
    int nkeys = -1;
    OK(MPI_Info_create(&after));
    OK(MPI_Info_set(after, "k", "v"));
    OK(MPI_Info_get_nkeys(after, &nkeys));
    CHECK(nkeys == 1);
    OK(MPI_Info_free(&after));
    printf("rank %d: SESSIONS OK\n", me);
    return 0;
}
