/*
 * Generalized requests: MPI_Grequest_start with query, free and cancel callbacks
 * that call MPI themselves (MPI_Status_set_elements, MPI_Status_set_cancelled,
 * MPI_Comm_rank), MPI_Grequest_complete, and the completion calls.
 * - Not complete: MPI_Test says so; after MPI_Grequest_complete, MPI_Wait completes it
 *   with the status query_fn wrote (count, source, tag) and free_fn has run when it
 *   returns; query_fn ran once.
 * - MPI_Cancel before completion calls cancel_fn with complete = 0, after with 1.
 * - A query_fn that fails: the completion returns its code.
 * - MPI_Waitall over a generalized request and a message exchange.
 * The argument "multiple": MPI_THREAD_MULTIPLE, and another thread completes a request
 * the main thread waits on. Each rank prints "rank R: GREQ OK".
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static int me = -1;

#include "check.h"

struct state {
    int queries, frees, cancels, last_complete, fail;
};

static int query(void *extra, MPI_Status *st) {
    struct state *s = extra;
    s->queries++;
    int r = -1;
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &r));
    OK(MPI_Status_set_elements(st, MPI_BYTE, 5));
    OK(MPI_Status_set_cancelled(st, 0));
    st->MPI_SOURCE = r;
    st->MPI_TAG = 77;
    return s->fail ? MPI_ERR_OTHER : MPI_SUCCESS;
}

static int release(void *extra) {
    ((struct state *)extra)->frees++;
    return MPI_SUCCESS;
}

static int cancel(void *extra, int complete) {
    struct state *s = extra;
    s->cancels++;
    s->last_complete = complete;
    return MPI_SUCCESS;
}

static void *completer(void *arg) {
    MPI_Request *r = arg;
    OK(MPI_Grequest_complete(*r));
    return NULL;
}

int main(int argc, char **argv) {
    int provided, multiple = argc > 1 && strcmp(argv[1], "multiple") == 0;
    OK(MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE,
                       &provided));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));

    struct state s = {0, 0, 0, -1, 0};
    MPI_Request r;
    MPI_Status st;
    int flag = -1, n = -1;
    OK(MPI_Grequest_start(query, release, cancel, &s, &r));
    OK(MPI_Test(&r, &flag, &st));
    CHECK(flag == 0 && r != MPI_REQUEST_NULL && s.queries == 0);
    OK(MPI_Cancel(&r));
    CHECK(s.cancels == 1 && s.last_complete == 0);
    OK(MPI_Grequest_complete(r));
    CHECK(s.queries == 1 && s.frees == 0);
    OK(MPI_Cancel(&r));
    CHECK(s.cancels == 2 && s.last_complete == 1);
    OK(MPI_Wait(&r, &st));
    CHECK(r == MPI_REQUEST_NULL && s.frees == 1 && s.queries == 1);
    OK(MPI_Get_count(&st, MPI_BYTE, &n));
    CHECK(n == 5 && st.MPI_SOURCE == me && st.MPI_TAG == 77);

    /* A failing query_fn: the completion's error. */
    struct state f = {0, 0, 0, -1, 1};
    OK(MPI_Grequest_start(query, release, cancel, &f, &r));
    OK(MPI_Grequest_complete(r));
    int rc = MPI_Wait(&r, &st), cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_OTHER && f.frees == 1);

    /* In MPI_Waitall beside a ring exchange. */
    int np, x = me, y = -1;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &np));
    struct state w = {0, 0, 0, -1, 0};
    MPI_Request rs[3];
    OK(MPI_Grequest_start(query, release, NULL, &w, &rs[0]));
    OK(MPI_Irecv(&y, 1, MPI_INT, (me + np - 1) % np, 5, MPI_COMM_WORLD, &rs[1]));
    OK(MPI_Isend(&x, 1, MPI_INT, (me + 1) % np, 5, MPI_COMM_WORLD, &rs[2]));
    OK(MPI_Grequest_complete(rs[0]));
    MPI_Status sts[3];
    OK(MPI_Waitall(3, rs, sts));
    CHECK(y == (me + np - 1) % np && w.frees == 1 && sts[0].MPI_TAG == 77);

    if (multiple) {
        struct state t = {0, 0, 0, -1, 0};
        pthread_t th;
        OK(MPI_Grequest_start(query, release, NULL, &t, &r));
        CHECK(pthread_create(&th, NULL, completer, &r) == 0);
        OK(MPI_Wait(&r, &st));
        CHECK(pthread_join(th, NULL) == 0);
        CHECK(t.queries == 1 && t.frees == 1);
    }
    printf("rank %d: GREQ OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
