/* Dynamic windows: MPI_Win_create_dynamic, MPI_Win_attach, MPI_Win_detach. Each rank
 * attaches an array and the ranks swap its address (MPI_Get_address, MPI_Allgather).
 * Checks:
 * - puts, gets and accumulates in fence epochs, and MPI_Fetch_and_op under
 *   MPI_Win_lock_all, land at the addresses named, in every rank's array;
 * - an access outside what the target attached (past the array's end; a region
 *   detached) is MPI_ERR_RMA_RANGE and changes nothing;
 * - a second region attached later is reachable, and unreachable once detached;
 * - a detach of what is not attached is MPI_ERR_RMA_ATTACH, an attach to a window of
 *   another flavor MPI_ERR_RMA_FLAVOR; the flavor attribute says dynamic, the size 0.
 * argv[1] "fabric": every process reached through the fabric, where remote accesses
 * are MPI_ERR_UNSUPPORTED_OPERATION (and a rank's own still work).
 * Prints WIN DYNAMIC OK on every rank. */
#include <mpi.h>
#include <string.h>

static int me = -1;

#include "check.h"

#define N 8

static int cls(int rc) {
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}

int main(int argc, char **argv) {
    int n;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &n));
    int fabric = argc > 1 && strcmp(argv[1], "fabric") == 0;
    int right = (me + 1) % n, left = (me + n - 1) % n;

    MPI_Win win;
    OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    int *flavor, flag = 0;
    OK(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_DYNAMIC);
    MPI_Aint *size;
    OK(MPI_Win_get_attr(win, MPI_WIN_SIZE, &size, &flag));
    CHECK(flag && *size == 0);

    int arr[N];
    for (int i = 0; i < N; i++) arr[i] = 1000 * me + i;
    OK(MPI_Win_attach(win, arr, sizeof arr));
    MPI_Aint mine, addr[64];
    CHECK(n <= 64);
    OK(MPI_Get_address(arr, &mine));
    OK(MPI_Allgather(&mine, 1, MPI_AINT, addr, 1, MPI_AINT, MPI_COMM_WORLD));

    if (fabric && n > 1) {
        int v = 7;
        OK(MPI_Win_fence(0, win));
        CHECK(cls(MPI_Put(&v, 1, MPI_INT, right, addr[right], 1, MPI_INT, win)) ==
              MPI_ERR_UNSUPPORTED_OPERATION);
        OK(MPI_Put(&v, 1, MPI_INT, me, addr[me] + 5 * sizeof(int), 1, MPI_INT, win));
        OK(MPI_Win_fence(0, win));
        CHECK(arr[5] == 7);
        OK(MPI_Win_detach(win, arr));
        OK(MPI_Win_free(&win));
        printf("rank %d: WIN DYNAMIC OK (%d)\n", me, n);
        OK(MPI_Finalize());
        return 0;
    }

    /* A fence epoch: a put to the right, a get from the left, sums at rank 0. */
    OK(MPI_Win_fence(0, win));
    int v = me + 1, got = -1, one = 1;
    OK(MPI_Put(&v, 1, MPI_INT, right, addr[right] + 1 * sizeof(int), 1, MPI_INT, win));
    OK(MPI_Get(&got, 1, MPI_INT, left, addr[left], 1, MPI_INT, win));
    OK(MPI_Accumulate(&one, 1, MPI_INT, 0, addr[0] + 2 * sizeof(int), 1, MPI_INT, MPI_SUM, win));
    /* Outside the array: refused, nothing written. */
    CHECK(cls(MPI_Put(&v, 1, MPI_INT, right, addr[right] + N * sizeof(int), 1, MPI_INT, win)) ==
          MPI_ERR_RMA_RANGE);
    CHECK(cls(MPI_Put(&v, 2, MPI_INT, right, addr[right] + (N - 1) * sizeof(int), 2, MPI_INT,
                      win)) == MPI_ERR_RMA_RANGE);
    CHECK(cls(MPI_Accumulate(&one, 1, MPI_INT, right, addr[right] - sizeof(int), 1, MPI_INT,
                             MPI_SUM, win)) == MPI_ERR_RMA_RANGE);
    OK(MPI_Win_fence(0, win));
    CHECK(got == 1000 * left);
    CHECK(arr[1] == left + 1);
    CHECK(arr[2] == (me == 0 ? 2 + n : 1000 * me + 2));
    for (int i = 3; i < N; i++) CHECK(arr[i] == 1000 * me + i);

    /* A passive epoch: every rank adds to rank 0's element 3. */
    OK(MPI_Win_lock_all(0, win));
    int old = -1;
    OK(MPI_Fetch_and_op(&one, &old, MPI_INT, 0, addr[0] + 3 * sizeof(int), MPI_SUM, win));
    CHECK(old >= 3 && old < 3 + n);
    OK(MPI_Win_unlock_all(win));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) CHECK(arr[3] == 3 + n);

    /* A second region, attached later, then detached. */
    int extra[2] = {-1, -1};
    OK(MPI_Win_attach(win, extra, sizeof extra));
    MPI_Aint xa, xaddr[64];
    OK(MPI_Get_address(extra, &xa));
    OK(MPI_Allgather(&xa, 1, MPI_AINT, xaddr, 1, MPI_AINT, MPI_COMM_WORLD));
    OK(MPI_Win_fence(0, win));
    OK(MPI_Put(&me, 1, MPI_INT, right, xaddr[right] + sizeof(int), 1, MPI_INT, win));
    OK(MPI_Win_fence(0, win));
    CHECK(extra[0] == -1 && extra[1] == left);
    OK(MPI_Win_detach(win, extra));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Win_fence(0, win));
    CHECK(cls(MPI_Put(&me, 1, MPI_INT, right, xaddr[right], 1, MPI_INT, win)) == MPI_ERR_RMA_RANGE);
    OK(MPI_Win_fence(0, win));
    CHECK(extra[0] == -1);
    CHECK(cls(MPI_Win_detach(win, extra)) == MPI_ERR_RMA_ATTACH);

    /* Attach is for dynamic windows only. */
    MPI_Win other;
    int mem[2];
    OK(MPI_Win_create(mem, sizeof mem, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &other));
    OK(MPI_Win_set_errhandler(other, MPI_ERRORS_RETURN));
    CHECK(cls(MPI_Win_attach(other, extra, sizeof extra)) == MPI_ERR_RMA_FLAVOR);
    OK(MPI_Win_free(&other));

    OK(MPI_Win_detach(win, arr));
    OK(MPI_Win_free(&win));
    printf("rank %d: WIN DYNAMIC OK (%d)\n", me, n);
    OK(MPI_Finalize());
    return 0;
}
