/*
 * Every non-failure function of libsteadfast-mpi, at any number of ranks >= 2: the
 * environment, communicators, groups, error handlers and classes, point to point with
 * requests, collectives on basic and contiguous types, info objects and attributes.
 * Each rank prints "rank R: BASIC OK" at the end; any failed check prints the line and
 * exits 1.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me = -1;
/* MPI_THREAD_MULTIPLE, or MPI_THREAD_SINGLE with the argument "single" (blocking calls
 * then take the runtime's blocking path instead of the lock-releasing test loop). */
static int level = MPI_THREAD_MULTIPLE;

#include "check.h"

static int handler_calls = 0;
static int handler_code = 0;
static void count_errors(MPI_Comm *comm, int *code, ...) {
    (void)comm;
    handler_calls++;
    handler_code = *code;
}

/* A call from a thread other than the main one: refused under MPI_THREAD_SINGLE (the
 * main thread owns the library's state without a lock), served under
 * MPI_THREAD_MULTIPLE; MPI_Initialized is callable from any thread. */
static void *other_thread(void *out) {
    int rank = -1, flag = -1;
    int *rc = out;
    rc[0] = MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    rc[1] = rank;
    rc[2] = MPI_Initialized(&flag) == MPI_SUCCESS && flag == 1;
    return NULL;
}

static void threads(void) {
    int rc[3] = {-1, -1, 0};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, other_thread, rc) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(rc[2] == 1);
    if (level == MPI_THREAD_MULTIPLE)
        CHECK(rc[0] == MPI_SUCCESS && rc[1] == me);
    else
        CHECK(rc[0] == MPI_ERR_OTHER && rc[1] == -1);
    /* The main thread is served as before. */
    int rank = -1;
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK(rank == me);
}

static void environment(void) {
    int flag = -1, provided = -1, v = 0, sv = 0, len = 0;
    OK(MPI_Initialized(&flag));
    CHECK(flag == 1);
    OK(MPI_Finalized(&flag));
    CHECK(flag == 0);
    OK(MPI_Query_thread(&provided));
    CHECK(provided == level);
    OK(MPI_Is_thread_main(&flag));
    CHECK(flag == 1);
    OK(MPI_Get_version(&v, &sv));
    CHECK(v == 4 && sv == 1);
    char name[MPI_MAX_PROCESSOR_NAME];
    OK(MPI_Get_processor_name(name, &len));
    CHECK(len > 0 && (int)strlen(name) == len);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    OK(MPI_Get_library_version(lib, &len));
    CHECK(strstr(lib, "steadfast") != NULL);
    double t0 = MPI_Wtime();
    CHECK(MPI_Wtime() >= t0 && MPI_Wtick() > 0.0 && MPI_Wtick() < 1.0);
    CHECK(PMPI_Wtime() >= t0);
}

static void errors(void) {
    int cls = -1, len = 0;
    char text[MPI_MAX_ERROR_STRING];
    OK(MPI_Error_class(MPI_ERR_TRUNCATE, &cls));
    CHECK(cls == MPI_ERR_TRUNCATE);
    OK(MPI_Error_string(MPIX_ERR_REVOKED, text, &len));
    CHECK(strstr(text, "revoked") != NULL && len == (int)strlen(text));
    CHECK(MPI_Error_class(123456, &cls) == MPI_ERR_ARG);

    MPI_Errhandler eh = MPI_ERRHANDLER_NULL, got = MPI_ERRHANDLER_NULL;
    OK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &got));
    CHECK(got == MPI_ERRORS_RETURN); /* the test runs with -initial-errhandler */
    OK(MPI_Comm_create_errhandler(count_errors, &eh));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh));
    OK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &got));
    CHECK(got == eh);
    /* Bad arguments reach the handler with their class, and are returned. */
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int x = 0;
    CHECK(MPI_Send(&x, 1, MPI_INT, size, 0, MPI_COMM_WORLD) == MPI_ERR_RANK);
    CHECK(handler_calls == 1 && handler_code == MPI_ERR_RANK);
    CHECK(MPI_Send(&x, 1, MPI_INT, 0, -5, MPI_COMM_WORLD) == MPI_ERR_TAG);
    CHECK(MPI_Send(&x, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD) == MPI_ERR_TYPE);
    CHECK(MPI_Send(&x, -1, MPI_INT, 0, 0, MPI_COMM_WORLD) == MPI_ERR_COUNT);
    CHECK(MPI_Comm_rank(MPI_COMM_NULL, &x) == MPI_ERR_COMM);
    CHECK(handler_calls == 5);
    OK(MPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_OTHER));
    CHECK(handler_calls == 6 && handler_code == MPI_ERR_OTHER);
    /* Runtime errors of MPI_Send / MPI_Recv on MPI_COMM_WORLD (their fast path below
       MPI_THREAD_SERIALIZED) reach the handler as well: a truncated receive, whose
       status says what arrived and which takes the message, and null buffers. */
    int me, two[2] = {1, 2}, one = 0, n = -1, flag = 1;
    MPI_Status tst;
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Send(two, 2, MPI_INT, me, 7, MPI_COMM_WORLD));
    CHECK(MPI_Recv(&one, 1, MPI_INT, me, 7, MPI_COMM_WORLD, &tst) == MPI_ERR_TRUNCATE);
    CHECK(handler_calls == 7 && handler_code == MPI_ERR_TRUNCATE);
    OK(MPI_Get_count(&tst, MPI_INT, &n));
    CHECK(n == 1);
    OK(MPI_Iprobe(me, 7, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
    CHECK(flag == 0);
    CHECK(MPI_Send(NULL, 1, MPI_INT, me, 7, MPI_COMM_WORLD) == MPI_ERR_BUFFER);
    CHECK(MPI_Recv(NULL, 1, MPI_INT, me, 7, MPI_COMM_WORLD, &tst) == MPI_ERR_BUFFER);
    CHECK(handler_calls == 9 && handler_code == MPI_ERR_BUFFER);
    /* MPI_Isend / MPI_Irecv on MPI_COMM_WORLD likewise: a request on success; on an
       error the handler, and MPI_REQUEST_NULL in place of what the handle held. */
    MPI_Request rr = MPI_REQUEST_NULL, sr = MPI_REQUEST_NULL, kept;
    int five = 5;
    one = 0;
    OK(MPI_Irecv(&one, 1, MPI_INT, me, 9001, MPI_COMM_WORLD, &rr));
    OK(MPI_Isend(&five, 1, MPI_INT, me, 9001, MPI_COMM_WORLD, &sr));
    CHECK(rr != MPI_REQUEST_NULL && sr != MPI_REQUEST_NULL);
    kept = sr;
    OK(MPI_Wait(&sr, MPI_STATUS_IGNORE));
    OK(MPI_Wait(&rr, &tst));
    CHECK(one == 5 && tst.MPI_SOURCE == me && tst.MPI_TAG == 9001 && rr == MPI_REQUEST_NULL);
    sr = kept;
    rr = kept;
    CHECK(MPI_Isend(&five, 1, MPI_INT, size, 9001, MPI_COMM_WORLD, &sr) == MPI_ERR_RANK);
    CHECK(MPI_Irecv(&one, 1, MPI_INT, me, -3, MPI_COMM_WORLD, &rr) == MPI_ERR_TAG);
    CHECK(sr == MPI_REQUEST_NULL && rr == MPI_REQUEST_NULL);
    CHECK(handler_calls == 11 && handler_code == MPI_ERR_TAG);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Errhandler_free(&eh));
    CHECK(eh == MPI_ERRHANDLER_NULL);
}

/* MPI_Comm_create_group: the even ranks (in reverse order) and the odd ranks each
 * create theirs at the same time, with the same tag, calling it alone; twice, so two
 * live communicators of one group and tag exist; outside the group: MPI_COMM_NULL. */
static void create_group(int rank, int size) {
    MPI_Group world, mine;
    OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    int n = 0, *ranks = malloc(sizeof(int) * (size_t)size);
    for (int r = size - 1; r >= 0; r--)
        if (r % 2 == rank % 2) ranks[n++] = r;
    OK(MPI_Group_incl(world, n, ranks, &mine));
    MPI_Comm a = MPI_COMM_NULL, b = MPI_COMM_NULL;
    OK(MPI_Comm_create_group(MPI_COMM_WORLD, mine, 9, &a));
    OK(MPI_Comm_create_group(MPI_COMM_WORLD, mine, 9, &b));
    int r = -1, s = -1, cmp = -1;
    OK(MPI_Comm_size(a, &s));
    OK(MPI_Comm_rank(a, &r));
    CHECK(s == n && ranks[r] == rank);
    OK(MPI_Comm_compare(a, b, &cmp));
    CHECK(cmp == MPI_CONGRUENT);
    int sum = 0, all = 0;
    OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, a));
    for (int k = 0; k < n; k++) all += ranks[k];
    CHECK(sum == all);
    /* The two have their own contexts: a message on b is not received on a. */
    if (n > 1) {
        int to = (r + 1) % n, from = (r + n - 1) % n, got = -1, flag = -1;
        OK(MPI_Send(&rank, 1, MPI_INT, to, 1, b));
        OK(MPI_Barrier(b));
        OK(MPI_Iprobe(from, 1, a, &flag, MPI_STATUS_IGNORE));
        CHECK(flag == 0);
        OK(MPI_Recv(&got, 1, MPI_INT, from, 1, b, MPI_STATUS_IGNORE));
        CHECK(got == ranks[from]);
    }
    OK(MPI_Comm_free(&b));
    OK(MPI_Comm_free(&a));
    MPI_Comm none = MPI_COMM_WORLD;
    OK(MPI_Comm_create_group(MPI_COMM_WORLD, MPI_GROUP_EMPTY, 9, &none));
    CHECK(none == MPI_COMM_NULL);
    CHECK(MPI_Comm_create_group(MPI_COMM_WORLD, mine, -1, &none) == MPI_ERR_TAG);
    OK(MPI_Group_free(&mine));
    OK(MPI_Group_free(&world));
    free(ranks);
}

static void communicators(int rank, int size) {
    int r = -1, s = -1, cmp = -1, flag = -1;
    OK(MPI_Comm_rank(MPI_COMM_SELF, &r));
    OK(MPI_Comm_size(MPI_COMM_SELF, &s));
    CHECK(r == 0 && s == 1);

    MPI_Comm dup;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    OK(MPI_Comm_compare(MPI_COMM_WORLD, dup, &cmp));
    CHECK(cmp == MPI_CONGRUENT);
    OK(MPI_Comm_compare(dup, dup, &cmp));
    CHECK(cmp == MPI_IDENT);
    OK(MPI_Comm_test_inter(dup, &flag));
    CHECK(flag == 0);
    OK(MPI_Comm_set_name(dup, "the dup"));
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    OK(MPI_Comm_get_name(dup, name, &len));
    CHECK(strcmp(name, "the dup") == 0 && len == 7);
    OK(MPI_Comm_get_name(MPI_COMM_WORLD, name, &len));
    CHECK(strcmp(name, "MPI_COMM_WORLD") == 0);

    /* Reversed order by key: similar, not congruent. */
    MPI_Comm rev;
    OK(MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev));
    OK(MPI_Comm_rank(rev, &r));
    CHECK(r == size - 1 - rank);
    OK(MPI_Comm_compare(MPI_COMM_WORLD, rev, &cmp));
    CHECK(cmp == MPI_SIMILAR);

    /* MPI_Comm_split_type: one host, so SHARED holds every rank (ordered by key);
     * rank 1 passes MPI_UNDEFINED; the hardware-guided types have no level below. */
    MPI_Comm node;
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, rank == 1 ? MPI_UNDEFINED : MPI_COMM_TYPE_SHARED,
                           -rank, MPI_INFO_NULL, &node));
    if (rank == 1) {
        CHECK(node == MPI_COMM_NULL);
    } else {
        OK(MPI_Comm_size(node, &s));
        CHECK(s == size - 1);
        OK(MPI_Comm_rank(node, &r));
        CHECK(r == size - 1 - rank - (rank == 0 ? 1 : 0));
        OK(MPI_Comm_free(&node));
    }
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, rank, MPI_INFO_NULL, &node));
    CHECK(node == MPI_COMM_NULL);

    /* Even and odd ranks; MPI_UNDEFINED for rank 1. */
    MPI_Comm half;
    OK(MPI_Comm_split(MPI_COMM_WORLD, rank == 1 ? MPI_UNDEFINED : rank % 2, rank, &half));
    if (rank == 1) {
        CHECK(half == MPI_COMM_NULL);
    } else {
        OK(MPI_Comm_size(half, &s));
        CHECK(s == (rank % 2 == 0 ? (size + 1) / 2 : size / 2 - 1));
        OK(MPI_Comm_compare(MPI_COMM_WORLD, half, &cmp));
        CHECK(cmp == MPI_UNEQUAL);
        int sum = 0, one = 1;
        OK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, half));
        CHECK(sum == s);
        OK(MPI_Comm_free(&half));
        CHECK(half == MPI_COMM_NULL);
    }

    /* Groups and MPI_Comm_create with the reversed group of ranks >= 1. */
    MPI_Group world, tail, rtail, both, none;
    OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    OK(MPI_Group_size(world, &s));
    CHECK(s == size);
    OK(MPI_Group_rank(world, &r));
    CHECK(r == rank);
    int zero = 0;
    OK(MPI_Group_excl(world, 1, &zero, &tail));
    OK(MPI_Group_size(tail, &s));
    CHECK(s == size - 1);
    int order[64];
    for (int i = 0; i < size - 1; i++) order[i] = size - 2 - i;
    OK(MPI_Group_incl(tail, size - 1, order, &rtail));
    OK(MPI_Group_compare(tail, rtail, &cmp));
    CHECK(cmp == (size > 2 ? MPI_SIMILAR : MPI_IDENT));
    int from[2] = {0, MPI_PROC_NULL}, to[2];
    OK(MPI_Group_translate_ranks(rtail, 2, from, world, to));
    CHECK(to[0] == size - 1 && to[1] == MPI_PROC_NULL);
    OK(MPI_Group_translate_ranks(world, 1, &zero, tail, to));
    CHECK(to[0] == MPI_UNDEFINED);
    OK(MPI_Group_union(tail, world, &both));
    OK(MPI_Group_size(both, &s));
    CHECK(s == size);
    OK(MPI_Group_difference(tail, world, &none));
    CHECK(none == MPI_GROUP_EMPTY);
    OK(MPI_Group_intersection(tail, rtail, &none));
    OK(MPI_Group_size(none, &s));
    CHECK(s == size - 1);
    OK(MPI_Group_free(&none));
    MPI_Comm created;
    OK(MPI_Comm_create(MPI_COMM_WORLD, rtail, &created));
    if (rank == 0) {
        CHECK(created == MPI_COMM_NULL);
    } else {
        OK(MPI_Comm_rank(created, &r));
        CHECK(r == size - 1 - rank);
        OK(MPI_Comm_free(&created));
    }
    OK(MPI_Group_free(&world));
    OK(MPI_Group_free(&tail));
    OK(MPI_Group_free(&rtail));
    OK(MPI_Group_free(&both));
    CHECK(world == MPI_GROUP_NULL);

    /* Inter-communicator between the even and the odd ranks. */
    MPI_Comm side, inter;
    OK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &side));
    OK(MPI_Intercomm_create(side, 0, MPI_COMM_WORLD, rank % 2 == 0 ? 1 : 0, 77, &inter));
    OK(MPI_Comm_test_inter(inter, &flag));
    CHECK(flag == 1);
    OK(MPI_Comm_remote_size(inter, &s));
    CHECK(s == (rank % 2 == 0 ? size / 2 : (size + 1) / 2));
    OK(MPI_Comm_rank(inter, &r));
    CHECK(r == rank / 2);
    if (r == 0) {
        int v = rank, got = -1;
        MPI_Status st;
        if (rank % 2 == 0) {
            OK(MPI_Send(&v, 1, MPI_INT, 0, 5, inter));
            OK(MPI_Recv(&got, 1, MPI_INT, 0, 6, inter, &st));
            CHECK(got == 1 && st.MPI_SOURCE == 0);
        } else {
            OK(MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 5, inter, &st));
            CHECK(got == 0);
            OK(MPI_Send(&v, 1, MPI_INT, 0, 6, inter));
        }
    }
    /* MPI_Intercomm_merge: the group passing high = 0 first; equal flags: the same
     * order at every rank (here the group of rank 0 first). */
    int evens = (size + 1) / 2;
    for (int variant = 0; variant < 3; variant++) {
        int high = variant == 0 ? rank % 2 : variant == 1 ? 1 - rank % 2 : 1;
        int odd_first = variant == 1;
        MPI_Comm merged = MPI_COMM_NULL;
        OK(MPI_Intercomm_merge(inter, high, &merged));
        OK(MPI_Comm_test_inter(merged, &flag));
        CHECK(flag == 0);
        OK(MPI_Comm_size(merged, &s));
        CHECK(s == size);
        OK(MPI_Comm_rank(merged, &r));
        int want = rank % 2 == 0 ? (odd_first ? size / 2 : 0) + rank / 2
                                 : (odd_first ? 0 : evens) + rank / 2;
        CHECK(r == want);
        int mine = rank, all = 0, first = -1;
        OK(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, merged));
        CHECK(all == size * (size - 1) / 2);
        if (r == 0) first = rank;
        OK(MPI_Bcast(&first, 1, MPI_INT, 0, merged));
        CHECK(first == (odd_first ? 1 : 0));
        /* A fresh context: a message on the merged communicator is not received on
         * the inter-communicator's union or on the world. */
        int right = (r + 1) % size, left = (r + size - 1) % size, got = -1;
        OK(MPI_Sendrecv(&r, 1, MPI_INT, right, 5, &got, 1, MPI_INT, left, 5, merged,
                        MPI_STATUS_IGNORE));
        CHECK(got == left);
        OK(MPI_Comm_free(&merged));
    }
    MPI_Comm merged_null = MPI_COMM_WORLD;
    CHECK(MPI_Intercomm_merge(side, 0, &merged_null) == MPI_ERR_COMM);
    OK(MPI_Comm_free(&inter));
    OK(MPI_Comm_free(&side));
    OK(MPI_Comm_free(&rev));
    OK(MPI_Comm_free(&dup));
    CHECK(MPI_Comm_free(&dup) == MPI_ERR_COMM);

    MPI_Comm parent;
    OK(MPI_Comm_get_parent(&parent));
    CHECK(parent == MPI_COMM_NULL);
    MPI_Comm nocomm = MPI_COMM_WORLD;
    int codes[2] = {0, 0};
    /* No such program, and no spare slot in the universe: an error, never a wait. */
    CHECK(MPI_Comm_spawn("x", MPI_ARGV_NULL, 2, MPI_INFO_NULL, 0, MPI_COMM_SELF, &nocomm, codes) ==
          MPI_ERR_SPAWN);
    CHECK(nocomm == MPI_COMM_NULL && codes[1] == MPI_ERR_SPAWN);
    MPI_Group g0;
    OK(MPI_Comm_group(MPI_COMM_SELF, &g0));
    OK(MPI_Comm_create_group(MPI_COMM_SELF, g0, 0, &nocomm));
    OK(MPI_Comm_size(nocomm, &s));
    CHECK(s == 1);
    OK(MPI_Comm_free(&nocomm));
    OK(MPI_Group_free(&g0));
    create_group(rank, size);

    int *val = NULL;
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &val, &flag));
    CHECK(flag == 1 && *val >= 32767);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &val, &flag));
    CHECK(flag == 1 && *val == size);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &val, &flag));
    CHECK(flag == 1 && *val == 0);
}

static void point_to_point(int rank, int size) {
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Status st;
    int count = -1;

    /* A ring of blocking messages, small and large (a 4 MiB rendezvous). */
    int v = rank, got = -1;
    OK(MPI_Sendrecv(&v, 1, MPI_INT, right, 1, &got, 1, MPI_INT, left, 1, MPI_COMM_WORLD, &st));
    CHECK(got == left && st.MPI_SOURCE == left && st.MPI_TAG == 1);
    OK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == 1);
    OK(MPI_Get_count(&st, MPI_DOUBLE, &count));
    CHECK(count == MPI_UNDEFINED);
    size_t big = 1 << 20;
    int *out = malloc(big * sizeof(int)), *in = malloc(big * sizeof(int));
    for (size_t i = 0; i < big; i++) out[i] = (int)i ^ rank;
    MPI_Request rq[2];
    OK(MPI_Irecv(in, (int)big, MPI_INT, left, 2, MPI_COMM_WORLD, &rq[0]));
    OK(MPI_Isend(out, (int)big, MPI_INT, right, 2, MPI_COMM_WORLD, &rq[1]));
    MPI_Status sts[2];
    OK(MPI_Waitall(2, rq, sts));
    CHECK(rq[0] == MPI_REQUEST_NULL && rq[1] == MPI_REQUEST_NULL);
    for (size_t i = 0; i < big; i += 4099) CHECK(in[i] == ((int)i ^ left));
    OK(MPI_Get_count(&sts[0], MPI_INT, &count));
    CHECK(count == (int)big && sts[0].MPI_SOURCE == left);

    /* Blocking send/recv with wildcards, truncation, MPI_PROC_NULL, Rsend. */
    if (rank == 0) {
        for (int r = 1; r < size; r++) {
            OK(MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            CHECK(got == st.MPI_SOURCE * 10 && st.MPI_TAG == st.MPI_SOURCE);
        }
        /* Only now may rank 1 send a message the wildcards above would truncate. */
        OK(MPI_Send(&v, 0, MPI_INT, 1, 4, MPI_COMM_WORLD));
        char small[2];
        CHECK(MPI_Recv(small, 2, MPI_CHAR, 1, 3, MPI_COMM_WORLD, &st) == MPI_ERR_TRUNCATE);
    } else {
        v = rank * 10;
        OK(MPI_Rsend(&v, 1, MPI_INT, 0, rank, MPI_COMM_WORLD));
        if (rank == 1) {
            OK(MPI_Recv(&got, 0, MPI_INT, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            OK(MPI_Send("hello", 6, MPI_CHAR, 0, 3, MPI_COMM_WORLD));
        }
    }
    OK(MPI_Send(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD));
    OK(MPI_Recv(&got, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG);
    OK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == 0);

    /* Waitany / Waitsome / Test / Testany / Testall / Testsome over four receives. */
    int vals[4] = {-1, -1, -1, -1}, mine[4];
    MPI_Request r4[4], s4[4];
    for (int k = 0; k < 4; k++) {
        OK(MPI_Irecv(&vals[k], 1, MPI_INT, left, 10 + k, MPI_COMM_WORLD, &r4[k]));
    }
    int flag = -1, index = -1, outcount = -1, idx[4];
    OK(MPI_Test(&r4[0], &flag, &st));
    /* No send yet from the left: nothing can have arrived. */
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < 4; k++) {
        mine[k] = rank * 100 + k;
        OK(MPI_Isend(&mine[k], 1, MPI_INT, right, 10 + k, MPI_COMM_WORLD, &s4[k]));
    }
    if (!flag) {
        OK(MPI_Waitany(4, r4, &index, &st));
        CHECK(index >= 0 && index < 4 && r4[index] == MPI_REQUEST_NULL);
        CHECK(st.MPI_TAG == 10 + index);
    }
    int done = 1;
    while (done < 4) {
        OK(MPI_Waitsome(4, r4, &outcount, idx, sts));
        CHECK(outcount != MPI_UNDEFINED && outcount >= 1);
        done += outcount;
    }
    OK(MPI_Waitsome(4, r4, &outcount, idx, sts));
    CHECK(outcount == MPI_UNDEFINED);
    OK(MPI_Testany(4, r4, &index, &flag, &st));
    CHECK(flag == 1 && index == MPI_UNDEFINED);
    for (int k = 0; k < 4; k++) CHECK(vals[k] == left * 100 + k);
    do {
        OK(MPI_Testall(4, s4, &flag, MPI_STATUSES_IGNORE));
    } while (!flag);
    CHECK(s4[3] == MPI_REQUEST_NULL);
    OK(MPI_Testsome(4, s4, &outcount, idx, MPI_STATUSES_IGNORE));
    CHECK(outcount == MPI_UNDEFINED);
    OK(MPI_Wait(&s4[0], MPI_STATUS_IGNORE));

    /* Cancel a receive nobody sends to; free a send request before it is received. */
    MPI_Request c;
    OK(MPI_Irecv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &c));
    OK(MPI_Cancel(&c));
    OK(MPI_Wait(&c, &st));
    OK(MPI_Test_cancelled(&st, &flag));
    CHECK(flag == 1);
    v = 4242;
    MPI_Request f;
    OK(MPI_Isend(&v, 1, MPI_INT, right, 20, MPI_COMM_WORLD, &f));
    OK(MPI_Request_free(&f));
    CHECK(f == MPI_REQUEST_NULL);
    OK(MPI_Recv(&got, 1, MPI_INT, left, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(got == 4242);
    OK(MPI_Irsend(&v, 1, MPI_INT, right, 21, MPI_COMM_WORLD, &f));
    OK(MPI_Recv(&got, 1, MPI_INT, left, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    OK(MPI_Wait(&f, MPI_STATUS_IGNORE));
    CHECK(MPI_Wait(&f, MPI_STATUS_IGNORE) == MPI_SUCCESS); /* MPI_REQUEST_NULL */
    free(out);
    free(in);
}

static void collectives(int rank, int size) {
    OK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Request b;
    OK(MPI_Ibarrier(MPI_COMM_WORLD, &b));
    OK(MPI_Wait(&b, MPI_STATUS_IGNORE));

    double d[3] = {0, 0, 0};
    if (rank == size - 1) {
        d[0] = 1.5;
        d[1] = -2.0;
        d[2] = 1e10;
    }
    OK(MPI_Bcast(d, 3, MPI_DOUBLE, size - 1, MPI_COMM_WORLD));
    CHECK(d[0] == 1.5 && d[1] == -2.0 && d[2] == 1e10);

    long long v = rank + 1, sum = 0;
    OK(MPI_Reduce(&v, &sum, 1, MPI_LONG_LONG, MPI_SUM, 1, MPI_COMM_WORLD));
    if (rank == 1) CHECK(sum == (long long)size * (size + 1) / 2);
    int mx[2] = {rank, -rank}, res[2];
    OK(MPI_Allreduce(mx, res, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    CHECK(res[0] == size - 1 && res[1] == 0);
    OK(MPI_Allreduce(MPI_IN_PLACE, mx, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    CHECK(mx[0] == 0 && mx[1] == -(size - 1));
    unsigned char bits = (unsigned char)(1u << (rank % 8)), all = 0;
    OK(MPI_Allreduce(&bits, &all, 1, MPI_UNSIGNED_CHAR, MPI_BOR, MPI_COMM_WORLD));
    CHECK(all == (unsigned char)((1u << (size < 8 ? size : 8)) - 1));
    float f = (float)rank, fp = 0;
    OK(MPI_Allreduce(&f, &fp, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(fp == (float)(size * (size - 1) / 2));
    /* Fortran's named types work from C: INTEGER is an int, DOUBLE PRECISION a double. */
    int fi = rank + 1, fimin = 0, fsize = 0;
    OK(MPI_Allreduce(&fi, &fimin, 1, MPI_INTEGER, MPI_MIN, MPI_COMM_WORLD));
    CHECK(fimin == 1);
    OK(MPI_Type_size(MPI_DOUBLE_PRECISION, &fsize));
    CHECK(fsize == 8);
    double fd = 0.5, fdsum = 0;
    OK(MPI_Allreduce(&fd, &fdsum, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD));
    CHECK(fdsum == 0.5 * size);
    struct { double v; int i; } loc = {(double)(rank % 2), rank}, best;
    OK(MPI_Allreduce(&loc, &best, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD));
    CHECK(best.v == 1.0 && best.i == 1);
    CHECK(MPI_Allreduce(&f, &fp, 1, MPI_FLOAT, MPI_BAND, MPI_COMM_WORLD) == MPI_ERR_OP);
    /* Every rank ends with the same bits, whatever order the float additions take. */
    double odd = (rank % 2 ? 1e16 : 1.0) + rank * 0.1, oddsum = 0;
    OK(MPI_Allreduce(&odd, &oddsum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    double *sums = malloc(size * sizeof(double));
    OK(MPI_Allgather(&oddsum, 1, MPI_DOUBLE, sums, 1, MPI_DOUBLE, MPI_COMM_WORLD));
    for (int i = 0; i < size; i++) CHECK(memcmp(&sums[i], &oddsum, sizeof(double)) == 0);
    free(sums);
    /* A long vector, exact integer sums. */
    long big[1000], bigsum[1000];
    for (int i = 0; i < 1000; i++) big[i] = (long)i * (rank + 1);
    OK(MPI_Allreduce(big, bigsum, 1000, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < 1000; i++) CHECK(bigsum[i] == (long)i * size * (size + 1) / 2);

    /* A contiguous type of 3 ints. */
    MPI_Datatype tri;
    int tsize = 0;
    OK(MPI_Type_contiguous(3, MPI_INT, &tri));
    CHECK(MPI_Send(&v, 1, tri, 0, 0, MPI_COMM_WORLD) == MPI_ERR_TYPE); /* not committed */
    OK(MPI_Type_commit(&tri));
    OK(MPI_Type_size(tri, &tsize));
    CHECK(tsize == 12);
    MPI_Aint lb, extent;
    OK(MPI_Type_get_extent(tri, &lb, &extent));
    CHECK(lb == 0 && extent == 12);
    int trip[3] = {rank, 2 * rank, 3 * rank}, tsum[3];
    OK(MPI_Allreduce(trip, tsum, 1, tri, MPI_SUM, MPI_COMM_WORLD));
    int tri_sum = size * (size - 1) / 2;
    CHECK(tsum[0] == tri_sum && tsum[1] == 2 * tri_sum && tsum[2] == 3 * tri_sum);

    int *gathered = malloc(sizeof(int) * 3 * size);
    OK(MPI_Gather(trip, 1, tri, gathered, 3, MPI_INT, 0, MPI_COMM_WORLD));
    if (rank == 0)
        for (int r = 0; r < size; r++) CHECK(gathered[3 * r + 2] == 3 * r);
    OK(MPI_Allgather(trip, 3, MPI_INT, gathered, 1, tri, MPI_COMM_WORLD));
    for (int r = 0; r < size; r++) CHECK(gathered[3 * r + 1] == 2 * r);
    int piece[3] = {-1, -1, -1};
    OK(MPI_Scatter(gathered, 3, MPI_INT, piece, 3, MPI_INT, size - 1, MPI_COMM_WORLD));
    CHECK(piece[0] == rank && piece[2] == 3 * rank);
    int *to = malloc(sizeof(int) * size), *from = malloc(sizeof(int) * size);
    for (int r = 0; r < size; r++) to[r] = rank * 1000 + r;
    OK(MPI_Alltoall(to, 1, MPI_INT, from, 1, MPI_INT, MPI_COMM_WORLD));
    for (int r = 0; r < size; r++) CHECK(from[r] == r * 1000 + rank);
    /* The v forms: rank r contributes r + 1 ints, placed in reverse rank order. */
    int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
    int total = size * (size + 1) / 2, at = total;
    for (int r = 0; r < size; r++) {
        counts[r] = r + 1;
        at -= r + 1;
        displs[r] = at;
    }
    int *mine = malloc(sizeof(int) * size), *everything = malloc(sizeof(int) * total);
    for (int k = 0; k <= rank; k++) mine[k] = rank * 10 + k;
    OK(MPI_Allgatherv(mine, rank + 1, MPI_INT, everything, counts, displs, MPI_INT, MPI_COMM_WORLD));
    for (int r = 0; r < size; r++)
        for (int k = 0; k <= r; k++) CHECK(everything[displs[r] + k] == r * 10 + k);
    int *atroot = malloc(sizeof(int) * total);
    OK(MPI_Gatherv(mine, rank + 1, MPI_INT, atroot, counts, displs, MPI_INT, 0, MPI_COMM_WORLD));
    if (rank == 0)
        for (int r = 0; r < size; r++) CHECK(atroot[displs[r] + r] == r * 10 + r);
    int back[64];
    OK(MPI_Scatterv(everything, counts, displs, MPI_INT, back, rank + 1, MPI_INT, size - 1,
                    MPI_COMM_WORLD));
    for (int k = 0; k <= rank; k++) CHECK(back[k] == rank * 10 + k);
    /* Alltoallv: rank r sends r + 1 ints to everyone. */
    int *scounts = malloc(sizeof(int) * size), *sdispls = malloc(sizeof(int) * size);
    int *rcounts = malloc(sizeof(int) * size), *rdispls = malloc(sizeof(int) * size);
    int *sbuf = malloc(sizeof(int) * size * (rank + 1)), *rbuf = malloc(sizeof(int) * total);
    for (int r = 0; r < size; r++) {
        scounts[r] = rank + 1;
        sdispls[r] = r * (rank + 1);
        rcounts[r] = r + 1;
        rdispls[r] = r * (r + 1) / 2;
        for (int k = 0; k <= rank; k++) sbuf[sdispls[r] + k] = rank * 1000 + r * 10 + k;
    }
    OK(MPI_Alltoallv(sbuf, scounts, sdispls, MPI_INT, rbuf, rcounts, rdispls, MPI_INT,
                     MPI_COMM_WORLD));
    for (int r = 0; r < size; r++)
        for (int k = 0; k <= r; k++) CHECK(rbuf[rdispls[r] + k] == r * 1000 + rank * 10 + k);
    /* MPI_IN_PLACE: at the root (gather, scatter, gatherv) and everywhere (allgather,
     * alltoall, allgatherv, alltoallv); blocks of 80 KB take the single-copy path
     * straight into the receive buffers. */
    {
        const int big = 20000;
        const int root = size - 1;
        int *all = malloc(sizeof(int) * big * size), *blk = malloc(sizeof(int) * big);
        for (int r = 0; r < size; r++)
            for (int k = 0; k < big; k++) all[r * big + k] = r == rank ? rank * 7 + k : -1;
        OK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, big, MPI_INT, MPI_COMM_WORLD));
        for (int r = 0; r < size; r++)
            for (int k = 0; k < big; k++) CHECK(all[r * big + k] == r * 7 + k);
        for (int k = 0; k < big; k++) blk[k] = rank * 3 + k;
        if (rank == root) {
            for (int r = 0; r < size; r++)
                for (int k = 0; k < big; k++) all[r * big + k] = r == root ? root * 3 + k : -1;
            OK(MPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, big, MPI_INT, root,
                          MPI_COMM_WORLD));
            for (int r = 0; r < size; r++)
                for (int k = 0; k < big; k++) CHECK(all[r * big + k] == r * 3 + k);
        } else {
            OK(MPI_Gather(blk, big, MPI_INT, NULL, 0, MPI_DATATYPE_NULL, root, MPI_COMM_WORLD));
        }
        if (rank == 0) {
            for (int r = 0; r < size; r++)
                for (int k = 0; k < big; k++) all[r * big + k] = r * 5 + k;
            OK(MPI_Scatter(all, big, MPI_INT, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, 0,
                           MPI_COMM_WORLD));
            for (int k = 0; k < big; k++) CHECK(all[k] == k);
        } else {
            OK(MPI_Scatter(NULL, 0, MPI_DATATYPE_NULL, blk, big, MPI_INT, 0, MPI_COMM_WORLD));
            for (int k = 0; k < big; k++) CHECK(blk[k] == rank * 5 + k);
        }
        for (int r = 0; r < size; r++)
            for (int k = 0; k < big; k++) all[r * big + k] = rank * 100000 + r * 10 + k % 10;
        OK(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, big, MPI_INT, MPI_COMM_WORLD));
        for (int r = 0; r < size; r++)
            for (int k = 0; k < big; k++) CHECK(all[r * big + k] == r * 100000 + rank * 10 + k % 10);
        /* The v forms in place, with the reversed displacements above. */
        for (int i = 0; i < total; i++) everything[i] = -1;
        for (int k = 0; k <= rank; k++) everything[displs[rank] + k] = rank * 10 + k;
        OK(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, everything, counts, displs,
                          MPI_INT, MPI_COMM_WORLD));
        for (int r = 0; r < size; r++)
            for (int k = 0; k <= r; k++) CHECK(everything[displs[r] + k] == r * 10 + k);
        if (rank == 0) {
            for (int i = 0; i < total; i++) atroot[i] = -1;
            atroot[displs[0]] = 0;
            OK(MPI_Gatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, atroot, counts, displs, MPI_INT,
                           0, MPI_COMM_WORLD));
            for (int r = 0; r < size; r++)
                for (int k = 0; k <= r; k++) CHECK(atroot[displs[r] + k] == r * 10 + k);
        } else {
            OK(MPI_Gatherv(mine, rank + 1, MPI_INT, NULL, NULL, NULL, MPI_INT, 0, MPI_COMM_WORLD));
        }
        /* Alltoallv in place: ranks a and b exchange a + b + 1 ints (the counts must be
         * symmetric, since one layout serves both directions). */
        int *c2 = malloc(sizeof(int) * size), *d2 = malloc(sizeof(int) * size), span = 0;
        for (int r = 0; r < size; r++) {
            c2[r] = rank + r + 1;
            d2[r] = span;
            span += c2[r];
        }
        int *x = malloc(sizeof(int) * span);
        for (int r = 0; r < size; r++)
            for (int k = 0; k < c2[r]; k++) x[d2[r] + k] = rank * 1000 + r * 10 + k;
        OK(MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, x, c2, d2, MPI_INT,
                         MPI_COMM_WORLD));
        for (int r = 0; r < size; r++)
            for (int k = 0; k < c2[r]; k++) CHECK(x[d2[r] + k] == r * 1000 + rank * 10 + k);
        free(c2); free(d2); free(x); free(all); free(blk);
    }
    free(counts); free(displs); free(mine); free(everything); free(atroot);
    free(scounts); free(sdispls); free(rcounts); free(rdispls); free(sbuf); free(rbuf);

    OK(MPI_Type_free(&tri));
    CHECK(tri == MPI_DATATYPE_NULL);
    free(gathered);
    free(to);
    free(from);
}

static void infos(void) {
    MPI_Info info, copy;
    int flag = -1, n = -1, len;
    char value[64], key[MPI_MAX_INFO_KEY];
    OK(MPI_Info_create(&info));
    OK(MPI_Info_set(info, "color", "blue"));
    OK(MPI_Info_set(info, "size", "7"));
    OK(MPI_Info_set(info, "color", "red"));
    OK(MPI_Info_get_nkeys(info, &n));
    CHECK(n == 2);
    OK(MPI_Info_get_nthkey(info, 1, key));
    CHECK(strcmp(key, "size") == 0);
    len = sizeof value;
    OK(MPI_Info_get_string(info, "color", &len, value, &flag));
    CHECK(flag == 1 && strcmp(value, "red") == 0 && len == 4);
    OK(MPI_Info_get(info, "missing", 63, value, &flag));
    CHECK(flag == 0);
    OK(MPI_Info_dup(info, &copy));
    OK(MPI_Info_delete(info, "color"));
    CHECK(MPI_Info_delete(info, "color") == MPI_ERR_INFO_NOKEY);
    OK(MPI_Info_get(copy, "color", 63, value, &flag));
    CHECK(flag == 1 && strcmp(value, "red") == 0);
    OK(MPI_Info_free(&info));
    OK(MPI_Info_free(&copy));
    CHECK(info == MPI_INFO_NULL);
    len = sizeof value;
    OK(MPI_Info_get_string(MPI_INFO_ENV, "mpi_initial_errhandler", &len, value, &flag));
    CHECK(flag == 1 && strcmp(value, "mpi_errors_return") == 0);
    len = sizeof value;
    OK(MPI_Info_get_string(MPI_INFO_ENV, "thread_level", &len, value, &flag));
    CHECK(flag == 1 &&
          strcmp(value, level == MPI_THREAD_SINGLE ? "MPI_THREAD_SINGLE" : "MPI_THREAD_MULTIPLE") == 0);
}

int main(int argc, char **argv) {
    int provided = -1, size;
    int flag = -1;
    MPI_Initialized(&flag);
    CHECK(flag == 0);
    if (argc > 1 && strcmp(argv[1], "single") == 0) {
        level = MPI_THREAD_SINGLE;
        OK(MPI_Init(&argc, &argv));
    } else {
        OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
        CHECK(provided == MPI_THREAD_MULTIPLE);
    }
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size >= 2);
    environment();
    threads();
    errors();
    communicators(me, size);
    point_to_point(me, size);
    collectives(me, size);
    infos();
    OK(MPI_Finalize());
    OK(MPI_Finalized(&flag));
    CHECK(flag == 1);
    CHECK(MPI_Init(&argc, &argv) != MPI_SUCCESS);
    printf("rank %d: BASIC OK\n", me);
    return 0;
}
