/*
 * Attributes with the program's keys: MPI_Comm_create_keyval with copy and delete
 * callbacks, MPI_COMM_DUP_FN, MPI_COMM_NULL_COPY_FN; set, get, replace, delete; the
 * copy on MPI_Comm_dup and the delete on MPI_Comm_free (each callback's arguments and
 * calls counted); MPI_Comm_free_keyval; MPI_Comm_dup_with_info, MPI_Comm_idup,
 * MPI_Comm_set_info / get_info; and a delete callback on MPI_COMM_SELF that
 * MPI_Finalize runs first and that itself calls MPI (it frees a communicator), which
 * prints "rank R: ATTR OK" only when everything before held; the same on datatypes
 * (MPI_Type_create_keyval, set/get/delete, the copy on MPI_Type_dup, the delete on
 * MPI_Type_free). With the argument
 * "multiple", under MPI_THREAD_MULTIPLE (the callbacks run without the library's lock).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int me = -1;

#include "check.h"

static int copies, deletes, last_deleted = -1, extra = 42;
static MPI_Comm internal = MPI_COMM_NULL;

static int copy_plus_one(MPI_Comm old, int key, void *xs, void *in, void *out, int *flag) {
    (void)old;
    (void)key;
    CHECK(xs == &extra);
    copies++;
    *(void **)out = (void *)((char *)in + 1);
    *flag = 1;
    return MPI_SUCCESS;
}

static int count_delete(MPI_Comm comm, int key, void *val, void *xs) {
    (void)comm;
    (void)key;
    CHECK(xs == &extra);
    deletes++;
    last_deleted = (int)(long)val;
    return MPI_SUCCESS;
}

static int self_cleanup(MPI_Comm comm, int key, void *val, void *xs) {
    (void)key;
    (void)xs;
    CHECK(comm == MPI_COMM_SELF && val == (void *)7);
    /* MPI from inside the callback: collective over the library's own communicator. */
    int one = 1, sum = 0;
    OK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, internal));
    OK(MPI_Comm_free(&internal));
    CHECK(internal == MPI_COMM_NULL);
    printf("rank %d: ATTR OK (%d)\n", me, sum);
    return MPI_SUCCESS;
}

static long get(MPI_Comm c, int key, int *flag) {
    void *v = NULL;
    OK(MPI_Comm_get_attr(c, key, &v, flag));
    return (long)v;
}

int main(int argc, char **argv) {
    int n, flag, provided;
    int multiple = argc > 1 && argv[1][0] == 'm';
    OK(MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE,
                       &provided));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &n));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    int key, dupkey, nocopy;
    OK(MPI_Comm_create_keyval(copy_plus_one, count_delete, &key, &extra));
    OK(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &dupkey, NULL));
    OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &nocopy, NULL));
    CHECK(key != dupkey && key != nocopy && dupkey != nocopy);
    MPI_Comm a;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &a));
    get(a, key, &flag);
    CHECK(flag == 0);
    OK(MPI_Comm_set_attr(a, key, (void *)100));
    OK(MPI_Comm_set_attr(a, dupkey, (void *)200));
    OK(MPI_Comm_set_attr(a, nocopy, (void *)300));
    CHECK(get(a, key, &flag) == 100 && flag == 1);
    CHECK(get(a, dupkey, &flag) == 200 && flag == 1);
    /* Replacing deletes the old value. */
    OK(MPI_Comm_set_attr(a, key, (void *)101));
    CHECK(deletes == 1 && last_deleted == 100);
    /* A dup copies through the callbacks. */
    MPI_Comm b;
    OK(MPI_Comm_dup(a, &b));
    CHECK(copies == 1);
    CHECK(get(b, key, &flag) == 102 && flag == 1);
    CHECK(get(b, dupkey, &flag) == 200 && flag == 1);
    get(b, nocopy, &flag);
    CHECK(flag == 0);
    /* Explicit delete; then free deletes what is left. */
    OK(MPI_Comm_delete_attr(b, key));
    CHECK(deletes == 2 && last_deleted == 102);
    get(b, key, &flag);
    CHECK(flag == 0);
    CHECK(MPI_Comm_delete_attr(b, key) != MPI_SUCCESS);
    OK(MPI_Comm_free(&b));
    CHECK(deletes == 2);
    OK(MPI_Comm_free(&a));
    CHECK(deletes == 3 && last_deleted == 101);
    /* A freed key takes no new value; predefined keys still answer. */
    int k2 = key;
    OK(MPI_Comm_free_keyval(&k2));
    CHECK(k2 == MPI_KEYVAL_INVALID);
    CHECK(MPI_Comm_set_attr(MPI_COMM_WORLD, key, (void *)1) != MPI_SUCCESS);
    int *ub = NULL;
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag));
    CHECK(flag == 1 && *ub >= 32767);
    CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, 123456, &ub, &flag) != MPI_SUCCESS);
    OK(MPI_Comm_free_keyval(&dupkey));
    OK(MPI_Comm_free_keyval(&nocopy));

    /* On datatypes: the same callbacks on MPI_Type_dup and MPI_Type_free. */
    int tkey, tdup;
    OK(MPI_Type_create_keyval((MPI_Type_copy_attr_function *)copy_plus_one,
                              (MPI_Type_delete_attr_function *)count_delete, &tkey, &extra));
    OK(MPI_Type_create_keyval(MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN, &tdup, NULL));
    MPI_Datatype t1, t2;
    OK(MPI_Type_contiguous(3, MPI_INT, &t1));
    void *tv = NULL;
    OK(MPI_Type_get_attr(t1, tkey, &tv, &flag));
    CHECK(flag == 0);
    OK(MPI_Type_set_attr(t1, tkey, (void *)500));
    OK(MPI_Type_set_attr(t1, tdup, (void *)600));
    OK(MPI_Type_get_attr(t1, tkey, &tv, &flag));
    CHECK(flag == 1 && tv == (void *)500);
    OK(MPI_Type_dup(t1, &t2));
    CHECK(copies == 2);
    OK(MPI_Type_get_attr(t2, tkey, &tv, &flag));
    CHECK(flag == 1 && tv == (void *)501);
    OK(MPI_Type_get_attr(t2, tdup, &tv, &flag));
    CHECK(flag == 1 && tv == (void *)600);
    OK(MPI_Type_delete_attr(t2, tdup));
    OK(MPI_Type_get_attr(t2, tdup, &tv, &flag));
    CHECK(flag == 0);
    OK(MPI_Type_free(&t1));
    CHECK(deletes == 4 && last_deleted == 500);
    OK(MPI_Type_free(&t2));
    CHECK(deletes == 5 && last_deleted == 501);
    OK(MPI_Type_free_keyval(&tkey));
    OK(MPI_Type_free_keyval(&tdup));
    CHECK(tkey == MPI_KEYVAL_INVALID);

    /* The dup variants and hints (none used: get_info gives an empty object). */
    MPI_Info info, used;
    OK(MPI_Info_create(&info));
    OK(MPI_Info_set(info, "mpi_assert_no_any_tag", "true"));
    MPI_Comm c1, c2;
    OK(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &c1));
    MPI_Request r;
    OK(MPI_Comm_idup(c1, &c2, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    OK(MPI_Comm_set_info(c2, info));
    int nkeys = -1, one = 1, sum = 0;
    OK(MPI_Comm_get_info(c2, &used));
    OK(MPI_Info_get_nkeys(used, &nkeys));
    CHECK(nkeys == 0);
    OK(MPI_Info_free(&used));
    OK(MPI_Info_free(&info));
    OK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c2));
    CHECK(sum == n);
    OK(MPI_Comm_free(&c2));
    OK(MPI_Comm_free(&c1));

    /* The clean-up idiom: a delete callback on MPI_COMM_SELF, run by MPI_Finalize. */
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &internal));
    int cleanup;
    OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_cleanup, &cleanup, NULL));
    OK(MPI_Comm_set_attr(MPI_COMM_SELF, cleanup, (void *)7));
    OK(MPI_Finalize());
    return 0;
}
