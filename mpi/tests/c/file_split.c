/*
 * MPI-IO's split collectives (MPI 4.1 §14.4.5), the non-blocking shared-pointer forms
 * and atomic mode, at any number of ranks, on one file (DELETE_ON_CLOSE) in $TMPDIR
 * (or /tmp):
 * - write_at_all_begin/end and read_at_all_begin/end, each end's status counting the
 *   begin's items; a second begin while one is active, an end without its begin and
 *   the end of another kind are refused (MPI_ERR_OTHER) and leave the active one
 *   whole;
 * - write_all_begin/end and read_all_begin/end at the individual pointer, which moves;
 * - write_ordered_begin/end and read_ordered_begin/end: rank r's r + 1 ints in rank
 *   order at the shared pointer;
 * - MPI_File_iwrite_shared and MPI_File_iread_shared, completed by MPI_Wait;
 * - MPI_File_set_atomicity / get_atomicity, accesses in atomic mode, and a mismatched
 *   flag refused at every rank.
 * Each rank prints "rank R: FILE SPLIT OK".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int me = -1;

#include "check.h"

static int class_of(int rc) {
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}

static int count_of(MPI_Status *st) {
    int n = -1;
    OK(MPI_Get_count(st, MPI_INT, &n));
    return n;
}

int main(int argc, char **argv) {
    int np;
    char p[600];
    MPI_File fh;
    MPI_Status st;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &np));
    if (me == 0) {
        const char *t = getenv("TMPDIR");
        snprintf(p, sizeof p, "%s/sf-file-split-%d", t && *t ? t : "/tmp", (int)getpid());
    }
    OK(MPI_Bcast(p, sizeof p, MPI_CHAR, 0, MPI_COMM_WORLD));
    OK(MPI_File_open(MPI_COMM_WORLD, p,
                     MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                     MPI_INFO_NULL, &fh));

    /* Explicit offsets: rank r writes 4 ints at 16 r, then reads its right neighbour's. */
    int out[4], in[4];
    for (int i = 0; i < 4; i++) out[i] = 100 * me + i;
    OK(MPI_File_write_at_all_begin(fh, 16 * me, out, 4, MPI_INT));
    /* A second split collective, or another kind's end, is refused. */
    CHECK(class_of(MPI_File_read_at_all_begin(fh, 0, in, 4, MPI_INT)) == MPI_ERR_OTHER);
    CHECK(class_of(MPI_File_read_at_all_end(fh, in, &st)) == MPI_ERR_OTHER);
    OK(MPI_File_write_at_all_end(fh, out, &st));
    CHECK(count_of(&st) == 4);
    CHECK(class_of(MPI_File_write_at_all_end(fh, out, &st)) == MPI_ERR_OTHER);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    int right = (me + 1) % np;
    OK(MPI_File_read_at_all_begin(fh, 16 * right, in, 4, MPI_INT));
    OK(MPI_File_read_at_all_end(fh, in, &st));
    CHECK(count_of(&st) == 4);
    for (int i = 0; i < 4; i++) CHECK(in[i] == 100 * right + i);

    /* The individual pointer: 2 ints at 16 np + 8 r, read back from there. */
    MPI_Offset base = 16 * np, pos = -1;
    OK(MPI_File_seek(fh, base + 8 * me, MPI_SEEK_SET));
    OK(MPI_File_write_all_begin(fh, out, 2, MPI_INT));
    OK(MPI_File_write_all_end(fh, out, &st));
    CHECK(count_of(&st) == 2);
    OK(MPI_File_get_position(fh, &pos));
    CHECK(pos == base + 8 * me + 8);
    OK(MPI_File_seek(fh, base + 8 * me, MPI_SEEK_SET));
    in[0] = in[1] = -1;
    OK(MPI_File_read_all_begin(fh, in, 2, MPI_INT));
    OK(MPI_File_read_all_end(fh, in, &st));
    CHECK(count_of(&st) == 2 && in[0] == out[0] && in[1] == out[1]);

    /* Ordered: rank r's r + 1 ints (1000 + r) after those of the ranks before it. */
    MPI_Offset ord = base + 8 * np;
    int *mine = malloc(sizeof(int) * (me + 1)), *back = malloc(sizeof(int) * (me + 1));
    CHECK(mine && back);
    for (int i = 0; i <= me; i++) mine[i] = 1000 + me;
    OK(MPI_File_seek_shared(fh, ord, MPI_SEEK_SET));
    OK(MPI_File_write_ordered_begin(fh, mine, me + 1, MPI_INT));
    OK(MPI_File_write_ordered_end(fh, mine, &st));
    CHECK(count_of(&st) == me + 1);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    int before = me * (me + 1) / 2;
    OK(MPI_File_read_at(fh, ord + 4 * before, back, me + 1, MPI_INT, &st));
    for (int i = 0; i <= me; i++) CHECK(back[i] == 1000 + me);
    OK(MPI_File_seek_shared(fh, ord, MPI_SEEK_SET));
    for (int i = 0; i <= me; i++) back[i] = -1;
    OK(MPI_File_read_ordered_begin(fh, back, me + 1, MPI_INT));
    OK(MPI_File_read_ordered_end(fh, back, &st));
    CHECK(count_of(&st) == me + 1);
    for (int i = 0; i <= me; i++) CHECK(back[i] == 1000 + me);
    free(mine);
    free(back);

    /* Non-blocking shared forms: one int each, in some order, after the ordered part. */
    MPI_Offset sh = ord + 4 * (np * (np + 1) / 2);
    OK(MPI_File_seek_shared(fh, sh, MPI_SEEK_SET));
    MPI_Request r;
    int v = 2000 + me;
    OK(MPI_File_iwrite_shared(fh, &v, 1, MPI_INT, &r));
    OK(MPI_Wait(&r, &st));
    CHECK(count_of(&st) == 1);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_File_get_position_shared(fh, &pos));
    CHECK(pos == sh + 4 * np);
    int *all = calloc(np, sizeof(int));
    CHECK(all != NULL);
    OK(MPI_File_read_at(fh, sh, all, np, MPI_INT, &st));
    for (int k = 0; k < np; k++) {
        int seen = 0;
        for (int j = 0; j < np; j++) seen += all[j] == 2000 + k;
        CHECK(seen == 1);
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_File_seek_shared(fh, sh, MPI_SEEK_SET));
    v = -1;
    OK(MPI_File_iread_shared(fh, &v, 1, MPI_INT, &r));
    OK(MPI_Wait(&r, &st));
    CHECK(count_of(&st) == 1 && v >= 2000 && v < 2000 + np);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_File_get_position_shared(fh, &pos));
    CHECK(pos == sh + 4 * np);
    free(all);

    /* Atomic mode. */
    int flag = -1;
    OK(MPI_File_get_atomicity(fh, &flag));
    CHECK(flag == 0);
    OK(MPI_File_set_atomicity(fh, 1));
    OK(MPI_File_get_atomicity(fh, &flag));
    CHECK(flag == 1);
    OK(MPI_File_write_at(fh, 16 * me, out, 4, MPI_INT, &st));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_File_read_at(fh, 16 * right, in, 4, MPI_INT, &st));
    for (int i = 0; i < 4; i++) CHECK(in[i] == 100 * right + i);
    if (np > 1) {
        CHECK(class_of(MPI_File_set_atomicity(fh, me == 0)) == MPI_ERR_ARG);
    }
    OK(MPI_File_set_atomicity(fh, 0));
    OK(MPI_File_get_atomicity(fh, &flag));
    CHECK(flag == 0);

    OK(MPI_File_close(&fh));
    printf("rank %d: FILE SPLIT OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
