/* MPI_Get_accumulate with types with gaps on each of its sides. Every rank's window
 * holds 16 ints, 100 * rank + i. Checks:
 * - in a fence epoch, a sum through a vector target type (every third int from 1)
 *   fetches the old values into a result type with gaps of another shape (two pairs,
 *   stride 3), leaving the result's gaps untouched, and adds to exactly those ints;
 * - MPI_NO_OP with a gapped origin fetches without changing the target;
 * - under an exclusive lock, MPI_REPLACE from a gapped origin into a gapped target,
 *   with a contiguous result, swaps the values;
 * - a target type reaching past the window is MPI_ERR_RMA_RANGE, nothing changed.
 * Prints GETACC GAPS OK on every rank. */
#include <mpi.h>

static int me = -1;

#include "check.h"

int main(int argc, char **argv) {
    int n;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &n));
    int right = (me + 1) % n, left = (me + n - 1) % n;
    int mem[16];
    for (int i = 0; i < 16; i++) mem[i] = 100 * me + i;
    MPI_Win win;
    OK(MPI_Win_create(mem, sizeof mem, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));

    MPI_Datatype every3, pairs, every2;
    OK(MPI_Type_vector(4, 1, 3, MPI_INT, &every3)); /* ints 0, 3, 6, 9 of its start */
    OK(MPI_Type_vector(2, 2, 3, MPI_INT, &pairs));  /* ints 0, 1, 3, 4 */
    OK(MPI_Type_vector(4, 1, 2, MPI_INT, &every2)); /* ints 0, 2, 4, 6 */
    OK(MPI_Type_commit(&every3));
    OK(MPI_Type_commit(&pairs));
    OK(MPI_Type_commit(&every2));

    /* A sum, fetched into pairs. */
    int ones[4] = {1, 1, 1, 1}, res[6] = {-1, -1, -1, -1, -1, -1};
    OK(MPI_Win_fence(0, win));
    OK(MPI_Get_accumulate(ones, 4, MPI_INT, res, 1, pairs, right, 1, 1, every3, MPI_SUM, win));
    OK(MPI_Win_fence(0, win));
    int r0 = 100 * right;
    CHECK(res[0] == r0 + 1 && res[1] == r0 + 4 && res[3] == r0 + 7 && res[4] == r0 + 10);
    CHECK(res[2] == -1 && res[5] == -1);
    /* Each rank is the right neighbour of exactly one (itself when alone). */
    for (int i = 0; i < 16; i++) {
        int added = (i == 1 || i == 4 || i == 7 || i == 10);
        CHECK(mem[i] == 100 * me + i + added);
    }

    /* MPI_NO_OP: a fetch only (the origin, gapped, is ignored). */
    int ignored[8] = {0}, got[4] = {0};
    OK(MPI_Win_fence(0, win));
    OK(MPI_Get_accumulate(ignored, 1, every2, got, 4, MPI_INT, right, 0, 1, every2, MPI_NO_OP, win));
    OK(MPI_Win_fence(0, win));
    CHECK(got[0] == r0 + 0 && got[1] == r0 + 2 && got[2] == r0 + 4 + 1 && got[3] == r0 + 6);
    for (int i = 0; i < 16; i++) {
        int added = (i == 1 || i == 4 || i == 7 || i == 10);
        CHECK(mem[i] == 100 * me + i + added);
    }

    /* A swap under an exclusive lock: ints 12, 14 of the target get 7000 + me. */
    int mine[4] = {7000 + me, -5, 7000 + me, -5}, old[2] = {0, 0};
    MPI_Datatype two_every2;
    OK(MPI_Type_vector(2, 1, 2, MPI_INT, &two_every2));
    OK(MPI_Type_commit(&two_every2));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    OK(MPI_Get_accumulate(mine, 1, two_every2, old, 2, MPI_INT, right, 12, 1, two_every2,
                          MPI_REPLACE, win));
    OK(MPI_Win_unlock(right, win));
    CHECK(old[0] == r0 + 12 && old[1] == r0 + 14);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    CHECK(mem[12] == 7000 + left && mem[14] == 7000 + left && mem[13] == 100 * me + 13);

    /* Past the window's end: refused, nothing changed. */
    int cls = -1;
    OK(MPI_Win_fence(0, win));
    OK(MPI_Error_class(MPI_Get_accumulate(ones, 4, MPI_INT, res, 1, pairs, right, 8, 1,
                                          every3, MPI_SUM, win), &cls));
    CHECK(cls == MPI_ERR_RMA_RANGE);
    OK(MPI_Win_fence(0, win));
    CHECK(mem[8] == 100 * me + 8 && mem[11] == 100 * me + 11);

    OK(MPI_Type_free(&every3));
    OK(MPI_Type_free(&pairs));
    OK(MPI_Type_free(&every2));
    OK(MPI_Type_free(&two_every2));
    OK(MPI_Win_free(&win));
    printf("rank %d: GETACC GAPS OK (%d)\n", me, n);
    OK(MPI_Finalize());
    return 0;
}
