/* What the third sweep of MPICH's test suite found wrong (docs/mpi.md, "MPICH's test
 * suite"), one part per finding. `mpich_found3 [part]` runs one part (`freeing`, `gaps`,
 * `elements`), or all of them; each rank prints "MPICH FOUND3 OK" at the end. */
#include <mpi.h>
#include <stddef.h>
#include <string.h>

#include "check.h"

static int me, np;

static int error_class(int rc) {
    int cls = -1;
    MPI_Error_class(rc, &cls);
    return cls;
}

/* A target that takes no part in a passive epoch may free its window at once: the other
 * members' locks, accumulates, puts and unlocks of it still complete (its agent serves
 * them until every member is in MPI_Win_free), and after the free its memory holds
 * what they wrote. */
static void freeing(void) {
    int buf[64];
    for (int i = 0; i < 64; i++) buf[i] = -1;
    buf[0] = 0;
    MPI_Win win;
    OK(MPI_Win_create(me == 0 ? buf : NULL, me == 0 ? (MPI_Aint)sizeof buf : 0, sizeof(int),
                      MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    if (me != 0) {
        int one = 1, old = -2;
        for (int round = 0; round < 5; round++) {
            OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
            OK(MPI_Accumulate(&one, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, win));
            OK(MPI_Put(&me, 1, MPI_INT, 0, me, 1, MPI_INT, win));
            OK(MPI_Fetch_and_op(&one, &old, MPI_INT, 0, 63, MPI_SUM, win));
            OK(MPI_Win_unlock(0, win));
            CHECK(old >= -1);
        }
    }
    OK(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL);
    if (me == 0) {
        CHECK(buf[0] == 5 * (np - 1));
        CHECK(buf[63] == -1 + 5 * (np - 1));
        for (int r = 1; r < np && r < 63; r++) CHECK(buf[r] == r);
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));
}

/* MPI_Put, MPI_Get and MPI_Accumulate with types with gaps on either side (MPICH's
 * fetchandadd gets through an indexed type): every rank puts the column `me` of its 4x4 matrix (a
 * vector type) into row `me` of the next rank's window (contiguous), gets back the
 * diagonal of the previous rank's window (a vector of stride 5) into every other int
 * of a buffer (indexed), and a piece past the window's end is MPI_ERR_RMA_RANGE with
 * nothing written. */
static void gaps(void) {
    int w[16], m[16], got[8];
    for (int i = 0; i < 16; i++) {
        w[i] = -1;
        m[i] = 100 * me + i;
    }
    MPI_Win win;
    OK(MPI_Win_create(w, sizeof w, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    MPI_Datatype column, diagonal, every_other;
    OK(MPI_Type_vector(4, 1, 4, MPI_INT, &column));
    OK(MPI_Type_vector(4, 1, 5, MPI_INT, &diagonal));
    int lens[4] = {1, 1, 1, 1}, displs[4] = {0, 2, 4, 6};
    OK(MPI_Type_indexed(4, lens, displs, MPI_INT, &every_other));
    OK(MPI_Type_commit(&column));
    OK(MPI_Type_commit(&diagonal));
    OK(MPI_Type_commit(&every_other));
    int next = (me + 1) % np, prev = (me + np - 1) % np, row = me % 4;
    OK(MPI_Win_fence(0, win));
    OK(MPI_Put(&m[row], 1, column, next, 4 * row, 4, MPI_INT, win));
    OK(MPI_Win_fence(0, win));
    int from = prev % 4;
    for (int c = 0; c < 4; c++) CHECK(w[4 * from + c] == 100 * prev + from + 4 * c);
    for (int i = 0; i < 8; i++) got[i] = -7;
    OK(MPI_Win_fence(0, win));
    w[0] = 1000 + me;
    w[5] = 1005 + me;
    w[10] = 1010 + me;
    w[15] = 1015 + me;
    OK(MPI_Win_fence(0, win));
    OK(MPI_Get(got, 1, every_other, prev, 0, 1, diagonal, win));
    OK(MPI_Win_fence(0, win));
    for (int i = 0; i < 4; i++) {
        CHECK(got[2 * i] == 1000 + 5 * i + prev);
        CHECK(got[2 * i + 1] == -7);
    }
    /* MPI_SUM accumulates from every rank: into every rank's diagonal (a vector) by a
     * fence epoch, then from every other int (indexed) into words 1-4 of every rank
     * under a shared lock. */
    int four[4] = {1, 2, 3, 4}, spread[8] = {10, -1, 20, -1, 30, -1, 40, -1};
    OK(MPI_Win_fence(0, win));
    for (int r = 0; r < np; r++) OK(MPI_Accumulate(four, 4, MPI_INT, r, 0, 1, diagonal, MPI_SUM, win));
    OK(MPI_Win_fence(0, win));
    for (int i = 0; i < 4; i++) CHECK(w[5 * i] == 1000 + 5 * i + me + np * (i + 1));
    w[1] = w[2] = w[3] = w[4] = 0;
    OK(MPI_Barrier(MPI_COMM_WORLD));
    for (int r = 0; r < np; r++) {
        OK(MPI_Win_lock(MPI_LOCK_SHARED, r, 0, win));
        OK(MPI_Accumulate(spread, 1, every_other, r, 1, 4, MPI_INT, MPI_SUM, win));
        OK(MPI_Win_unlock(r, win));
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < 4; i++) CHECK(w[1 + i] == np * 10 * (i + 1));
    OK(MPI_Win_fence(0, win));
    /* The diagonal from int 1 ends one int past the window: refused, nothing written. */
    int before[16];
    memcpy(before, w, sizeof w);
    OK(MPI_Win_fence(0, win));
    int rc = MPI_Put(&m[0], 4, MPI_INT, next, 1, 1, diagonal, win);
    CHECK(error_class(rc) == MPI_ERR_RMA_RANGE);
    OK(MPI_Win_fence(0, win));
    CHECK(memcmp(before, w, sizeof w) == 0);
    OK(MPI_Type_free(&column));
    OK(MPI_Type_free(&diagonal));
    OK(MPI_Type_free(&every_other));
    OK(MPI_Win_free(&win));
}

/* MPI_Get_elements counts every element of whole items whatever their sizes (MPICH's
 * get_elements: a contiguous of a struct of a char, a short and an int was
 * MPI_UNDEFINED), and the elements of part of an item of one kind. */
static void elements(void) {
    struct s {
        char a;
        short b;
        int c;
    } out[2] = {{1, 2, 3}, {4, 5, 6}}, in[2];
    int lens[3] = {1, 1, 1};
    MPI_Aint displs[3] = {offsetof(struct s, a), offsetof(struct s, b), offsetof(struct s, c)};
    MPI_Datatype kinds[3] = {MPI_CHAR, MPI_SHORT, MPI_INT}, st, contig, pairs;
    OK(MPI_Type_create_struct(3, lens, displs, kinds, &st));
    OK(MPI_Type_contiguous(1, st, &contig));
    OK(MPI_Type_commit(&contig));
    MPI_Status status;
    OK(MPI_Sendrecv(out, 2, contig, 0, 9, in, 2, contig, 0, 9, MPI_COMM_SELF, &status));
    CHECK(in[1].a == 4 && in[1].b == 5 && in[1].c == 6);
    int n = -1;
    OK(MPI_Get_elements(&status, contig, &n));
    CHECK(n == 6);
    OK(MPI_Get_count(&status, contig, &n));
    CHECK(n == 2);
    /* Three ints into items of two: 3 elements, no whole count. */
    int three[3] = {7, 8, 9}, got[4] = {0, 0, 0, 0};
    OK(MPI_Type_contiguous(2, MPI_INT, &pairs));
    OK(MPI_Type_commit(&pairs));
    OK(MPI_Sendrecv(three, 3, MPI_INT, 0, 9, got, 2, pairs, 0, 9, MPI_COMM_SELF, &status));
    OK(MPI_Get_elements(&status, pairs, &n));
    CHECK(n == 3);
    OK(MPI_Get_count(&status, pairs, &n));
    CHECK(n == MPI_UNDEFINED);
    OK(MPI_Type_free(&pairs));
    OK(MPI_Type_free(&contig));
    OK(MPI_Type_free(&st));
}

int main(int argc, char **argv) {
    const char *part = argc > 1 ? argv[1] : "all";
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &np));
    int all = strcmp(part, "all") == 0;
    if (all || strcmp(part, "freeing") == 0) freeing();
    if (all || strcmp(part, "gaps") == 0) gaps();
    if (all || strcmp(part, "elements") == 0) elements();
    printf("rank %d: MPICH FOUND3 OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
