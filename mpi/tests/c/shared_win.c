/*
 * Shared-memory windows: MPI_Win_allocate_shared over MPI_Comm_split_type's
 * MPI_COMM_TYPE_SHARED communicator, rank r's part r + 1 ints (rank 1's empty when
 * there are 3 or more ranks), disp_unit sizeof(int).
 * - Each rank writes its part by stores; after a fence every rank reads every part
 *   through MPI_Win_shared_query's addresses (loads), sizes and units checked;
 *   MPI_PROC_NULL names the lowest non-empty part.
 * - An MPI_Put into the next rank's part, a fence, and the value seen by a load.
 * - The flavor attribute; MPI_Win_shared_query on an MPI_Win_allocate window is
 *   MPI_ERR_RMA_FLAVOR.
 * - No segment is left in /dev/shm once the window exists (its name is removed as soon
 *   as every member mapped it).
 * Each rank prints "rank R: SHARED WIN OK".
 */
#include <dirent.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int me = -1;

#include "check.h"

static int part_len(int r, int n) { return (n >= 3 && r == 1) ? 0 : r + 1; }

static int segments_left(void) {
    int count = 0;
    DIR *d = opendir("/dev/shm");
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, "steadfast-", 10) == 0 && strstr(e->d_name, "-shwin-"))
            count++;
    closedir(d);
    return count;
}

int main(int argc, char **argv) {
    int n;
    OK(MPI_Init(&argc, &argv));
    MPI_Comm node;
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    OK(MPI_Comm_rank(node, &me));
    OK(MPI_Comm_size(node, &n));
    int *mine = NULL;
    MPI_Win win;
    OK(MPI_Win_allocate_shared(part_len(me, n) * sizeof(int), sizeof(int), MPI_INFO_NULL, node,
                               &mine, &win));
    OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    OK(MPI_Barrier(node));
    CHECK(segments_left() == 0);
    OK(MPI_Win_fence(0, win));
    for (int i = 0; i < part_len(me, n); i++) mine[i] = me * 100 + i;
    OK(MPI_Win_fence(0, win));
    for (int r = 0; r < n; r++) {
        MPI_Aint size = -1;
        int unit = -1, *p = NULL;
        OK(MPI_Win_shared_query(win, r, &size, &unit, &p));
        CHECK(size == (MPI_Aint)(part_len(r, n) * sizeof(int)) && unit == (int)sizeof(int));
        for (int i = 0; i < part_len(r, n); i++) CHECK(p[i] == r * 100 + i);
        if (r == me) CHECK(p == mine || part_len(r, n) == 0);
    }
    MPI_Aint size = -1;
    int unit = -1, *first = NULL, *zero = NULL;
    OK(MPI_Win_shared_query(win, MPI_PROC_NULL, &size, &unit, &first));
    OK(MPI_Win_shared_query(win, 0, &size, &unit, &zero));
    CHECK(first == zero);

    /* A put into the next rank's first int (when it has one), seen by a load. */
    int next = (me + 1) % n, v = 7000 + me, *np_part = NULL;
    OK(MPI_Win_shared_query(win, next, &size, &unit, &np_part));
    OK(MPI_Win_fence(0, win));
    if (part_len(next, n) > 0) OK(MPI_Put(&v, 1, MPI_INT, next, 0, 1, MPI_INT, win));
    OK(MPI_Win_fence(0, win));
    int prev = (me + n - 1) % n;
    if (part_len(me, n) > 0) CHECK(mine[0] == 7000 + prev);
    if (part_len(next, n) > 0) CHECK(np_part[0] == 7000 + me);

    int *flavor = NULL, flag = 0;
    OK(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_SHARED);
    MPI_Win plain;
    int *pb = NULL, cls = -1;
    OK(MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, node, &pb, &plain));
    OK(MPI_Win_set_errhandler(plain, MPI_ERRORS_RETURN));
    MPI_Error_class(MPI_Win_shared_query(plain, 0, &size, &unit, &first), &cls);
    CHECK(cls == MPI_ERR_RMA_FLAVOR);
    OK(MPI_Win_free(&plain));
    OK(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL);
    OK(MPI_Comm_free(&node));
    printf("rank %d: SHARED WIN OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
