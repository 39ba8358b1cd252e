/* Attributes with the program's keys on windows: MPI_Win_create_keyval, set, get,
 * delete, and MPI_Win_free deleting what is left, last set first. Checks:
 * - keys the program makes never equal a predefined window key, and the predefined
 *   attributes still read as before beside the program's;
 * - a replacing set and MPI_Win_delete_attr run the delete callback on the old value;
 * - MPI_Win_free runs the delete callbacks of what is left, in reverse order of
 *   setting, with the window still usable for MPI_Win_get_attr inside the callback;
 * - an unset key reads with flag 0; a predefined key cannot be set (MPI_ERR_KEYVAL);
 *   a key freed while a value uses it still has that value deleted;
 * - MPI_Win_set_info accepts hints, MPI_Win_get_info gives an info of none.
 * Prints WIN ATTR OK on every rank. */
#include <mpi.h>
#include <stdint.h>

static int me = -1;

#include "check.h"

static int deleted[8];
static int ndeleted;
static int bad_callback;

static int on_delete(MPI_Win win, int key, void *val, void *extra) {
    (void)key;
    (void)extra;
    /* The window is still live: its predefined attributes read. */
    void *base;
    int flag = 0;
    if (MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag) != MPI_SUCCESS || !flag)
        bad_callback = 1;
    if (ndeleted < 8) deleted[ndeleted++] = (int)(intptr_t)val;
    return MPI_SUCCESS;
}

int main(int argc, char **argv) {
    int n;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &n));

    int mem[4] = {0};
    MPI_Win win;
    OK(MPI_Win_create(mem, sizeof mem, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));

    /* Enough keys to run past every predefined window key's value. */
    int keys[8];
    for (int i = 0; i < 8; i++) {
        OK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, on_delete, &keys[i], NULL));
        CHECK(keys[i] != MPI_KEYVAL_INVALID);
        CHECK(keys[i] < MPI_WIN_BASE || keys[i] > MPI_WIN_MODEL);
        for (int j = 0; j < i; j++) CHECK(keys[i] != keys[j]);
    }
    for (int i = 0; i < 8; i++)
        OK(MPI_Win_set_attr(win, keys[i], (void *)(intptr_t)(100 + i)));

    void *val;
    int flag = 0;
    for (int i = 0; i < 8; i++) {
        OK(MPI_Win_get_attr(win, keys[i], &val, &flag));
        CHECK(flag == 1 && (intptr_t)val == 100 + i);
    }
    OK(MPI_Win_get_attr(win, MPI_WIN_BASE, &val, &flag));
    CHECK(flag == 1 && val == (void *)mem);
    MPI_Aint *size;
    OK(MPI_Win_get_attr(win, MPI_WIN_SIZE, &size, &flag));
    CHECK(flag == 1 && *size == (MPI_Aint)sizeof mem);

    /* A replacing set deletes the old value; a delete deletes it. */
    OK(MPI_Win_set_attr(win, keys[0], (void *)(intptr_t)200));
    CHECK(ndeleted == 1 && deleted[0] == 100);
    OK(MPI_Win_delete_attr(win, keys[1]));
    CHECK(ndeleted == 2 && deleted[1] == 101);
    OK(MPI_Win_get_attr(win, keys[1], &val, &flag));
    CHECK(flag == 0);

    /* Predefined keys are read-only. */
    int cls = -1;
    int rc = MPI_Win_set_attr(win, MPI_WIN_BASE, NULL);
    OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_KEYVAL);

    /* A key freed while a value uses it: the value is still deleted at the free. */
    OK(MPI_Win_free_keyval(&keys[7]));
    CHECK(keys[7] == MPI_KEYVAL_INVALID);

    /* Info hints: accepted, none in effect. */
    MPI_Info info;
    OK(MPI_Info_create(&info));
    OK(MPI_Info_set(info, "no_locks", "true"));
    OK(MPI_Win_set_info(win, info));
    OK(MPI_Info_free(&info));
    OK(MPI_Win_get_info(win, &info));
    int nkeys = -1;
    OK(MPI_Info_get_nkeys(info, &nkeys));
    CHECK(nkeys == 0);
    OK(MPI_Info_free(&info));

    /* The free deletes the rest, last set first: 200 (keys[0], set last) then 107..102. */
    ndeleted = 0;
    OK(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL);
    CHECK(!bad_callback);
    CHECK(ndeleted == 7);
    CHECK(deleted[0] == 200);
    for (int i = 1; i < 7; i++) CHECK(deleted[i] == 108 - i);

    for (int i = 0; i < 7; i++) OK(MPI_Win_free_keyval(&keys[i]));
    printf("rank %d: WIN ATTR OK (%d)\n", me, n);
    OK(MPI_Finalize());
    return 0;
}
