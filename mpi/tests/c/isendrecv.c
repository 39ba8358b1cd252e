/*
 * MPI 4.0's MPI_Isendrecv and MPI_Isendrecv_replace, the status setters, and the
 * functions removed in MPI 3.0 that old programs still call.
 * - A ring shift by MPI_Isendrecv (ints, then a vector type with gaps on the receive
 *   side), completed by MPI_Wait and by an MPI_Test loop; the status is the receive's
 *   (source, tag, count); with MPI_ANY_SOURCE; with MPI_PROC_NULL on either side.
 * - A ring shift by MPI_Isendrecv_replace: the buffer holds the left neighbor's data
 *   after, and the right one got this rank's (the send is from a copy).
 * - MPI_Status_set_elements(_x), MPI_Status_set_cancelled read back by MPI_Get_count,
 *   MPI_Get_elements(_x), MPI_Test_cancelled; MPI_Type_match_size.
 * - MPI_Address, MPI_Type_extent/lb/ub, MPI_Type_hvector/hindexed/struct and
 *   MPI_Errhandler_create/set/get against their replacements.
 * Each rank prints "rank R: ISENDRECV OK".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int me = -1, np;

#include "check.h"

static void shifts(void) {
    int right = (me + 1) % np, left = (me + np - 1) % np;
    int out[4], in[4];
    for (int i = 0; i < 4; i++) {
        out[i] = me * 10 + i;
        in[i] = -1;
    }
    MPI_Request r;
    MPI_Status st;
    OK(MPI_Isendrecv(out, 4, MPI_INT, right, 7, in, 4, MPI_INT, left, 7, MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, &st));
    CHECK(r == MPI_REQUEST_NULL);
    int n = -1;
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 7 && n == 4);
    for (int i = 0; i < 4; i++) CHECK(in[i] == left * 10 + i);

    /* Into every other int of 8, from any source, completed by a test loop. */
    MPI_Datatype every_other;
    OK(MPI_Type_vector(4, 1, 2, MPI_INT, &every_other));
    OK(MPI_Type_commit(&every_other));
    int wide[8];
    for (int i = 0; i < 8; i++) wide[i] = -1;
    OK(MPI_Isendrecv(out, 4, MPI_INT, right, 8, wide, 1, every_other, MPI_ANY_SOURCE, 8,
                     MPI_COMM_WORLD, &r));
    int flag = 0;
    while (!flag) OK(MPI_Test(&r, &flag, &st));
    CHECK(st.MPI_SOURCE == left);
    for (int i = 0; i < 8; i++) CHECK(wide[i] == (i % 2 ? -1 : left * 10 + i / 2));
    OK(MPI_Type_free(&every_other));

    /* MPI_PROC_NULL on either side. */
    int x = -1;
    OK(MPI_Isendrecv(out, 1, MPI_INT, MPI_PROC_NULL, 9, &x, 1, MPI_INT, MPI_PROC_NULL, 9,
                     MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && x == -1);

    /* In place. */
    int buf[3] = {me, me + 100, me + 200};
    OK(MPI_Isendrecv_replace(buf, 3, MPI_INT, right, 10, left, 10, MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, &st));
    CHECK(buf[0] == left && buf[1] == left + 100 && buf[2] == left + 200);
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 10);
}

static void status_setters(void) {
    MPI_Status st;
    int n = -1;
    MPI_Count nx = -1;
    OK(MPI_Status_set_elements(&st, MPI_DOUBLE, 5));
    OK(MPI_Get_count(&st, MPI_DOUBLE, &n));
    CHECK(n == 5);
    OK(MPI_Get_elements(&st, MPI_DOUBLE, &n));
    CHECK(n == 5);
    OK(MPI_Get_elements_x(&st, MPI_DOUBLE, &nx));
    CHECK(nx == 5);
    MPI_Datatype pair;
    OK(MPI_Type_contiguous(2, MPI_INT, &pair));
    OK(MPI_Type_commit(&pair));
    OK(MPI_Status_set_elements_x(&st, pair, 6)); /* 6 ints: 3 pairs */
    OK(MPI_Get_count(&st, pair, &n));
    CHECK(n == 3);
    OK(MPI_Get_elements(&st, pair, &n));
    CHECK(n == 6);
    OK(MPI_Type_free(&pair));
    int flag = -1;
    OK(MPI_Status_set_cancelled(&st, 1));
    OK(MPI_Test_cancelled(&st, &flag));
    CHECK(flag == 1);
    OK(MPI_Status_set_cancelled(&st, 0));
    OK(MPI_Test_cancelled(&st, &flag));
    CHECK(flag == 0);

    MPI_Datatype t;
    OK(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 4, &t));
    CHECK(t == MPI_INTEGER4);
    OK(MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &t));
    CHECK(t == MPI_REAL8);
    OK(MPI_Type_match_size(MPI_TYPECLASS_COMPLEX, 16, &t));
    CHECK(t == MPI_COMPLEX16);
    int size = -1;
    OK(MPI_Type_size(t, &size));
    CHECK(size == 16);
    int rc = MPI_Type_match_size(MPI_TYPECLASS_REAL, 3, &t), cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ARG);
}

static int calls;
static void count_calls(MPI_Comm *c, int *code, ...) {
    (void)c;
    (void)code;
    calls++;
}

static void removed(void) {
    double d[4] = {0, 1, 2, 3};
    MPI_Aint a = 0, b = 0;
    OK(MPI_Address(&d[2], &a));
    OK(MPI_Get_address(&d[2], &b));
    CHECK(a == b && a != 0);

    MPI_Datatype r;
    OK(MPI_Type_create_resized(MPI_INT, -4, 16, &r));
    MPI_Aint lb = 0, ub = 0, ext = 0;
    OK(MPI_Type_lb(r, &lb));
    OK(MPI_Type_ub(r, &ub));
    OK(MPI_Type_extent(r, &ext));
    CHECK(lb == -4 && ext == 16 && ub == 12);
    OK(MPI_Type_free(&r));

    int lens[2] = {1, 2};
    MPI_Aint disps[2] = {0, 8};
    MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE}, s1, s2, h1, h2, v1, v2;
    OK(MPI_Type_struct(2, lens, disps, types, &s1));
    OK(MPI_Type_create_struct(2, lens, disps, types, &s2));
    OK(MPI_Type_hindexed(2, lens, disps, MPI_INT, &h1));
    OK(MPI_Type_create_hindexed(2, lens, disps, MPI_INT, &h2));
    OK(MPI_Type_hvector(3, 1, 12, MPI_INT, &v1));
    OK(MPI_Type_create_hvector(3, 1, 12, MPI_INT, &v2));
    MPI_Datatype olds[3] = {s1, h1, v1}, news[3] = {s2, h2, v2};
    for (int i = 0; i < 3; i++) {
        int z1 = -1, z2 = -2;
        MPI_Aint l1, e1, l2, e2;
        OK(MPI_Type_size(olds[i], &z1));
        OK(MPI_Type_size(news[i], &z2));
        OK(MPI_Type_get_extent(olds[i], &l1, &e1));
        OK(MPI_Type_get_extent(news[i], &l2, &e2));
        CHECK(z1 == z2 && l1 == l2 && e1 == e2);
        OK(MPI_Type_free(&olds[i]));
        OK(MPI_Type_free(&news[i]));
    }

    MPI_Errhandler h, got;
    OK(MPI_Errhandler_create(count_calls, &h));
    MPI_Comm c;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    OK(MPI_Errhandler_set(c, h));
    OK(MPI_Errhandler_get(c, &got));
    CHECK(got == h);
    int x = 0;
    (void)MPI_Send(&x, 1, MPI_INT, np + 5, 0, c); /* a bad rank: the handler runs */
    CHECK(calls == 1);
    OK(MPI_Errhandler_free(&got));
    OK(MPI_Errhandler_free(&h));
    OK(MPI_Comm_free(&c));
}

int main(int argc, char **argv) {
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &np));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    shifts();
    status_setters();
    removed();
    printf("rank %d: ISENDRECV OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
