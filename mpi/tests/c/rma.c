/*
 * One-sided communication with MPI_Win_fence, at any number of ranks (1 too):
 * - puts and gets in a ring over several epochs, on an MPI_Win_allocate window;
 * - MPI_Win_create over the program's buffer with a disp_unit that differs between
 *   ranks (8 on even ranks, 1 on odd ones), a zero-size window on the last rank;
 * - MPI_Accumulate with MPI_SUM from every rank, many times, to one int and one double
 *   of rank 0 (the exact totals show no update was lost), MPI_MAX, MPI_REPLACE;
 * - MPI_Fetch_and_op counters (the fetched values are a permutation), MPI_Get_accumulate
 *   with MPI_NO_OP, MPI_Compare_and_swap (exactly one winner);
 * - attributes, name, group, MPI_PROC_NULL targets;
 * - errors: a bad rank (MPI_ERR_RANK), a displacement outside the window
 *   (MPI_ERR_RMA_RANGE), a user operation (MPI_ERR_OP), a user error handler that gets
 *   the window and the code, MPI_Win_call_errhandler, MPI_WIN_NULL (MPI_ERR_WIN).
 * "multiple" as argument: MPI_THREAD_MULTIPLE. Each rank prints "rank R: RMA OK".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me = -1;

#include "check.h"

static int class_of(int rc) {
    int cls = -1;
    OK(MPI_Error_class(rc, &cls));
    return cls;
}

static int handler_calls = 0;
static MPI_Win handler_win = MPI_WIN_NULL;
static int handler_code = 0;

static void on_error(MPI_Win *win, int *code, ...) {
    handler_calls++;
    handler_win = *win;
    handler_code = *code;
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)in; (void)inout; (void)len; (void)dt;
}

#define EPOCHS 3

static void ring(int n) {
    int *base = NULL;
    MPI_Win win;
    OK(MPI_Win_allocate((MPI_Aint)(2 * EPOCHS * sizeof(int)), sizeof(int), MPI_INFO_NULL,
                        MPI_COMM_WORLD, &base, &win));
    CHECK(base != NULL);
    for (int i = 0; i < 2 * EPOCHS; i++) CHECK(base[i] == 0); /* zeroed */
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    OK(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
    for (int e = 0; e < EPOCHS; e++) {
        int v = me * 100 + e;
        OK(MPI_Put(&v, 1, MPI_INT, next, e, 1, MPI_INT, win));
        base[EPOCHS + e] = me * 1000 + e; /* a local store the previous rank gets */
        OK(MPI_Win_fence(0, win));
        CHECK(base[e] == prev * 100 + e);
        int got = -1;
        OK(MPI_Get(&got, 1, MPI_INT, prev, EPOCHS + e, 1, MPI_INT, win));
        CHECK(got == prev * 1000 + e);
        OK(MPI_Win_fence(0, win));
    }
    /* Attributes. */
    void *attr_base = NULL;
    MPI_Aint *attr_size = NULL;
    int *attr_unit = NULL, *flavor = NULL, *model = NULL, flag = 0;
    OK(MPI_Win_get_attr(win, MPI_WIN_BASE, &attr_base, &flag));
    CHECK(flag && attr_base == base);
    OK(MPI_Win_get_attr(win, MPI_WIN_SIZE, &attr_size, &flag));
    CHECK(flag && *attr_size == (MPI_Aint)(2 * EPOCHS * sizeof(int)));
    OK(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &attr_unit, &flag));
    CHECK(flag && *attr_unit == (int)sizeof(int));
    OK(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_ALLOCATE);
    OK(MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag));
    CHECK(flag && *model == MPI_WIN_UNIFIED);
    OK(MPI_Win_get_attr(win, MPI_TAG_UB, &attr_unit, &flag));
    CHECK(!flag);
    /* Name and group. */
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    OK(MPI_Win_get_name(win, name, &len));
    CHECK(len == 0);
    OK(MPI_Win_set_name(win, "ring window"));
    OK(MPI_Win_get_name(win, name, &len));
    CHECK(len == 11 && strcmp(name, "ring window") == 0);
    MPI_Group wg, cg;
    int cmp = -1;
    OK(MPI_Win_get_group(win, &wg));
    OK(MPI_Comm_group(MPI_COMM_WORLD, &cg));
    OK(MPI_Group_compare(wg, cg, &cmp));
    CHECK(cmp == MPI_IDENT);
    OK(MPI_Group_free(&wg));
    OK(MPI_Group_free(&cg));
    OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    OK(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL);
}

/* MPI_Win_create over the program's doubles; even ranks count displacements in
 * doubles, odd ones in bytes; the last rank (when n > 1) exposes nothing. */
static void units(int n) {
    double buf[4] = {0, 0, 0, 0};
    int unit = me % 2 == 0 ? (int)sizeof(double) : 1;
    /* Only slots of ranks that put are checked below. */
    int empty = n > 1 && me == n - 1;
    MPI_Win win;
    OK(MPI_Win_create(empty ? NULL : buf, empty ? 0 : (MPI_Aint)sizeof(buf), unit,
                      MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    int *flavor = NULL, flag = 0;
    OK(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_CREATE);
    OK(MPI_Win_fence(0, win));
    /* Every rank puts into slot (me % 4) of every non-empty rank's window. */
    for (int t = 0; t < n; t++) {
        if (n > 1 && t == n - 1) continue;
        MPI_Aint disp = (MPI_Aint)(me % 4) * (t % 2 == 0 ? 1 : (MPI_Aint)sizeof(double));
        double v = 0.5 + me;
        if (me < 4) OK(MPI_Put(&v, 1, MPI_DOUBLE, t, disp, 1, MPI_DOUBLE, win));
    }
    OK(MPI_Win_fence(0, win));
    if (!empty)
        for (int i = 0; i < 4 && i < n; i++) CHECK(buf[i] == 0.5 + i);
    /* Gets with the target's unit. */
    if (n > 1) {
        double got = -1;
        /* Rank 0 counts in doubles, rank 1 in bytes. */
        OK(MPI_Get(&got, 1, MPI_DOUBLE, 0, 2, 1, MPI_DOUBLE, win));
        CHECK(got == (n > 2 ? 2.5 : 0.0));
        if (n > 2) {
            OK(MPI_Get(&got, 1, MPI_DOUBLE, 1, 1 * sizeof(double), 1, MPI_DOUBLE, win));
            CHECK(got == 1.5);
        }
    }
    OK(MPI_Win_fence(0, win));
    OK(MPI_Win_free(&win));
}

#define ROUNDS 50

static void accumulate(int n) {
    struct {
        int count;
        int max;
        double sum;
        int replaced;
        long counter;
        long swapped;
    } *w = NULL;
    MPI_Win win;
    OK(MPI_Win_allocate(sizeof(*w), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w, &win));
    OK(MPI_Win_fence(0, win));
    const MPI_Aint at_count = 0, at_max = 4, at_sum = 8, at_replaced = 16, at_counter = 24,
                   at_swapped = 32;
    for (int epoch = 0; epoch < 2; epoch++) {
        for (int i = 0; i < ROUNDS; i++) {
            int one = me + 1;
            double d = 0.25 * (me + 1);
            OK(MPI_Accumulate(&one, 1, MPI_INT, 0, at_count, 1, MPI_INT, MPI_SUM, win));
            OK(MPI_Accumulate(&d, 1, MPI_DOUBLE, 0, at_sum, 1, MPI_DOUBLE, MPI_SUM, win));
        }
        int mine = 7 * me + epoch;
        OK(MPI_Accumulate(&mine, 1, MPI_INT, 0, at_max, 1, MPI_INT, MPI_MAX, win));
        OK(MPI_Accumulate(&mine, 1, MPI_INT, n - 1, at_replaced, 1, MPI_INT, MPI_REPLACE, win));
        OK(MPI_Win_fence(0, win));
    }
    long total = 2L * ROUNDS * n * (n + 1) / 2;
    if (me == 0) {
        CHECK(w->count == total);
        CHECK(w->sum == 0.25 * total);
        CHECK(w->max == 7 * (n - 1) + 1);
    }
    if (me == n - 1) CHECK(w->replaced >= 1 && w->replaced <= 7 * (n - 1) + 1);
    /* Fetch-and-op counters: in each epoch every rank takes one ticket. */
    for (int epoch = 0; epoch < 3; epoch++) {
        long one = 1, ticket = -1, peek = -1, nothing = 0;
        OK(MPI_Fetch_and_op(&one, &ticket, MPI_LONG, 0, at_counter, MPI_SUM, win));
        OK(MPI_Get_accumulate(&nothing, 1, MPI_LONG, &peek, 1, MPI_LONG, 0, at_counter, 1,
                              MPI_LONG, MPI_NO_OP, win));
        OK(MPI_Win_fence(0, win));
        CHECK(ticket >= (long)epoch * n && ticket < (long)(epoch + 1) * n);
        CHECK(peek > ticket && peek <= (long)(epoch + 1) * n);
        long *all = malloc(sizeof(long) * n);
        OK(MPI_Allgather(&ticket, 1, MPI_LONG, all, 1, MPI_LONG, MPI_COMM_WORLD));
        for (int i = 0; i < n; i++)
            for (int j = 0; j < i; j++) CHECK(all[i] != all[j]);
        free(all);
    }
    /* Compare and swap: exactly one rank replaces 0. */
    long mine = me + 1, zero = 0, old = -1;
    OK(MPI_Compare_and_swap(&mine, &zero, &old, MPI_LONG, 0, at_swapped, win));
    OK(MPI_Win_fence(0, win));
    int won = old == 0, winners = 0;
    OK(MPI_Allreduce(&won, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(winners == 1);
    long final = -1;
    OK(MPI_Get(&final, 1, MPI_LONG, 0, at_swapped, 1, MPI_LONG, win));
    CHECK(final >= 1 && final <= n);
    if (won) CHECK(final == me + 1);
    else CHECK(old == final);
    OK(MPI_Win_fence(0, win));
    OK(MPI_Win_free(&win));
}

static void errors(int n) {
    int buf[4] = {0};
    MPI_Win win;
    OK(MPI_Win_create(buf, sizeof(buf), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    OK(MPI_Win_get_errhandler(win, &eh));
    CHECK(eh == MPI_ERRORS_ARE_FATAL);
    OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    OK(MPI_Win_fence(0, win));
    int v = 1;
    int rc = MPI_Put(&v, 1, MPI_INT, n, 0, 1, MPI_INT, win);
    CHECK(class_of(rc) == MPI_ERR_RANK);
    rc = MPI_Get(&v, 1, MPI_INT, 0, 4, 1, MPI_INT, win);
    CHECK(class_of(rc) == MPI_ERR_RMA_RANGE);
    rc = MPI_Put(buf, 2, MPI_INT, 0, 3, 2, MPI_INT, win);
    CHECK(class_of(rc) == MPI_ERR_RMA_RANGE);
    rc = MPI_Accumulate(&v, 1, MPI_INT, 0, -1, 1, MPI_INT, MPI_SUM, win);
    CHECK(class_of(rc) == MPI_ERR_RMA_RANGE);
    MPI_Op uop;
    OK(MPI_Op_create(user_sum, 1, &uop));
    rc = MPI_Accumulate(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, uop, win);
    CHECK(class_of(rc) == MPI_ERR_OP);
    OK(MPI_Op_free(&uop));
    rc = MPI_Accumulate(&v, 1, MPI_INT, 0, 0, 1, MPI_DOUBLE, MPI_SUM, win);
    CHECK(class_of(rc) == MPI_ERR_TYPE);
    /* MPI_PROC_NULL targets do nothing. */
    OK(MPI_Put(&v, 1, MPI_INT, MPI_PROC_NULL, 1000, 1, MPI_INT, win));
    OK(MPI_Accumulate(&v, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, MPI_SUM, win));
    /* A user handler gets the window and the code. */
    MPI_Errhandler mine;
    OK(MPI_Win_create_errhandler(on_error, &mine));
    OK(MPI_Win_set_errhandler(win, mine));
    rc = MPI_Put(&v, 1, MPI_INT, n + 5, 0, 1, MPI_INT, win);
    CHECK(class_of(rc) == MPI_ERR_RANK);
    CHECK(handler_calls == 1 && handler_win == win && class_of(handler_code) == MPI_ERR_RANK);
    OK(MPI_Win_call_errhandler(win, MPI_ERR_OTHER));
    CHECK(handler_calls == 2 && handler_code == MPI_ERR_OTHER);
    OK(MPI_Win_get_errhandler(win, &eh));
    CHECK(eh == mine);
    OK(MPI_Errhandler_free(&mine));
    OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    OK(MPI_Win_fence(0, win));
    OK(MPI_Win_free(&win));
    /* A freed or null window: MPI_ERR_WIN, raised where no object is. */
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    rc = MPI_Win_fence(0, MPI_WIN_NULL);
    CHECK(class_of(rc) == MPI_ERR_WIN);
    rc = MPI_Put(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, win);
    CHECK(class_of(rc) == MPI_ERR_WIN);
}

int main(int argc, char **argv) {
    int n, provided;
    int multiple = argc > 1 && strcmp(argv[1], "multiple") == 0;
    OK(MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE,
                       &provided));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &n));
    ring(n);
    units(n);
    accumulate(n);
    errors(n);
    OK(MPI_Finalize());
    printf("rank %d: RMA OK\n", me);
    return 0;
}
