/*
 * Derived datatypes with gaps in point-to-point calls, at 2 ranks (rank 0 sends, rank
 * 1 receives, then the other way): a matrix column (MPI_Type_vector) received into a
 * contiguous array and into another column, by Send/Recv, Isend/Irecv and Sendrecv;
 * a resized column type sending three columns at once; an array of C structs
 * (MPI_Type_create_struct with MPI_Get_address: extent = sizeof the struct, padding
 * untouched); an upper triangle (MPI_Type_indexed); MPI_Pack / MPI_Unpack /
 * MPI_Pack_size; MPI_Get_count and MPI_Get_elements; bounds and true bounds; a dup;
 * MPI_Bcast, Gather, Scatter, Allgather and Alltoall with columns and resized columns
 * on either side; an allreduce of a column (the other columns untouched). Every element is checked and
 * the elements between the pieces must stay as they were.
 * Each rank prints "rank R: DTYPES OK".
 */
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me = -1;

#include "check.h"

#define R 5
#define C 4

struct item {
    int a;
    double b;
    char c[3];
};

static double cell(int r, int c) { return 100.0 * r + c; }

int main(int argc, char **argv) {
    int n;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &n));
    CHECK(n == 2);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int other = 1 - me;
    MPI_Status st;

    /* A column of an R x C matrix of doubles. */
    MPI_Datatype col;
    OK(MPI_Type_vector(R, 1, C, MPI_DOUBLE, &col));
    OK(MPI_Type_commit(&col));
    MPI_Aint lb, ext, tlb, text;
    OK(MPI_Type_get_extent(col, &lb, &ext));
    CHECK(lb == 0 && ext == (MPI_Aint)(((R - 1) * C + 1) * sizeof(double)));
    OK(MPI_Type_get_true_extent(col, &tlb, &text));
    CHECK(tlb == 0 && text == ext);
    int size;
    OK(MPI_Type_size(col, &size));
    CHECK(size == R * (int)sizeof(double));
    double m[R][C], got[R], m2[R][C];
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) m[r][c] = cell(r, c) + me * 1000;
    for (int round = 0; round < 2; round++) {
        int sender = round;
        if (me == sender) {
            OK(MPI_Send(&m[0][2], 1, col, other, 1, MPI_COMM_WORLD));
            MPI_Request q;
            OK(MPI_Isend(&m[0][1], 1, col, other, 2, MPI_COMM_WORLD, &q));
            OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
        } else {
            OK(MPI_Recv(got, R, MPI_DOUBLE, other, 1, MPI_COMM_WORLD, &st));
            for (int r = 0; r < R; r++) CHECK(got[r] == cell(r, 2) + other * 1000);
            for (int r = 0; r < R; r++)
                for (int c = 0; c < C; c++) m2[r][c] = -1;
            MPI_Request q;
            OK(MPI_Irecv(&m2[0][3], 1, col, other, 2, MPI_COMM_WORLD, &q));
            OK(MPI_Wait(&q, &st));
            int count, elems;
            OK(MPI_Get_count(&st, col, &count));
            OK(MPI_Get_elements(&st, col, &elems));
            CHECK(count == 1 && elems == R);
            for (int r = 0; r < R; r++)
                for (int c = 0; c < C; c++)
                    CHECK(m2[r][c] == (c == 3 ? cell(r, 1) + other * 1000 : -1));
        }
    }
    /* Sendrecv: each sends its column 0 into the other's column 1. */
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) m2[r][c] = -1;
    OK(MPI_Sendrecv(&m[0][0], 1, col, other, 3, &m2[0][1], 1, col, other, 3, MPI_COMM_WORLD, &st));
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) CHECK(m2[r][c] == (c == 1 ? cell(r, 0) + other * 1000 : -1));

    /* A column resized to one double: three consecutive columns in one send. */
    MPI_Datatype cols;
    OK(MPI_Type_create_resized(col, 0, sizeof(double), &cols));
    OK(MPI_Type_commit(&cols));
    OK(MPI_Type_get_extent(cols, &lb, &ext));
    CHECK(lb == 0 && ext == sizeof(double));
    if (me == 0) {
        OK(MPI_Send(&m[0][1], 3, cols, 1, 4, MPI_COMM_WORLD));
    } else {
        double flat[3 * R];
        OK(MPI_Recv(flat, 3 * R, MPI_DOUBLE, 0, 4, MPI_COMM_WORLD, &st));
        for (int k = 0; k < 3; k++)
            for (int r = 0; r < R; r++) CHECK(flat[k * R + r] == cell(r, 1 + k));
    }

    /* An array of structs. */
    struct item items[4], recv_items[4];
    MPI_Aint base, disp[3];
    OK(MPI_Get_address(&items[0], &base));
    OK(MPI_Get_address(&items[0].a, &disp[0]));
    OK(MPI_Get_address(&items[0].b, &disp[1]));
    OK(MPI_Get_address(&items[0].c, &disp[2]));
    for (int i = 0; i < 3; i++) disp[i] = MPI_Aint_diff(disp[i], base);
    int lens[3] = {1, 1, 3};
    MPI_Datatype types[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR}, st_type;
    OK(MPI_Type_create_struct(3, lens, disp, types, &st_type));
    OK(MPI_Type_commit(&st_type));
    OK(MPI_Type_get_extent(st_type, &lb, &ext));
    CHECK(lb == 0 && ext == sizeof(struct item));
    for (int i = 0; i < 4; i++) {
        memset(&items[i], 0x5a, sizeof items[i]);
        items[i].a = me * 10 + i;
        items[i].b = 0.5 + i;
        memcpy(items[i].c, "xyz", 3);
        items[i].c[0] += i;
    }
    memset(recv_items, 0x33, sizeof recv_items);
    OK(MPI_Sendrecv(items, 4, st_type, other, 5, recv_items, 4, st_type, other, 5, MPI_COMM_WORLD, &st));
    int count;
    OK(MPI_Get_count(&st, st_type, &count));
    CHECK(count == 4);
    for (int i = 0; i < 4; i++) {
        CHECK(recv_items[i].a == other * 10 + i && recv_items[i].b == 0.5 + i);
        CHECK(recv_items[i].c[0] == 'x' + i && recv_items[i].c[1] == 'y' && recv_items[i].c[2] == 'z');
        /* The padding after `a` was not written. */
        unsigned char *pad = (unsigned char *)&recv_items[i] + sizeof(int);
        if (offsetof(struct item, b) > sizeof(int)) CHECK(*pad == 0x33);
    }

    /* The upper triangle of a C x C matrix of ints. */
    int tri[C][C], tri2[C][C], bl[C], dl[C];
    for (int r = 0; r < C; r++) {
        bl[r] = C - r;
        dl[r] = r * C + r;
        for (int c = 0; c < C; c++) {
            tri[r][c] = r * 10 + c;
            tri2[r][c] = -1;
        }
    }
    MPI_Datatype upper;
    OK(MPI_Type_indexed(C, bl, dl, MPI_INT, &upper));
    OK(MPI_Type_commit(&upper));
    OK(MPI_Sendrecv(tri, 1, upper, other, 6, tri2, 1, upper, other, 6, MPI_COMM_WORLD, &st));
    for (int r = 0; r < C; r++)
        for (int c = 0; c < C; c++) CHECK(tri2[r][c] == (c >= r ? r * 10 + c : -1));

    /* Pack and unpack. */
    int psize, pos = 0;
    OK(MPI_Pack_size(1, col, MPI_COMM_WORLD, &psize));
    CHECK(psize == R * (int)sizeof(double));
    char packed[1024];
    OK(MPI_Pack(&m[0][3], 1, col, packed, sizeof packed, &pos, MPI_COMM_WORLD));
    int k = 7;
    OK(MPI_Pack(&k, 1, MPI_INT, packed, sizeof packed, &pos, MPI_COMM_WORLD));
    CHECK(pos == psize + (int)sizeof(int));
    double back[R][C];
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) back[r][c] = -2;
    int k2 = 0;
    pos = 0;
    OK(MPI_Unpack(packed, sizeof packed, &pos, &back[0][0], 1, col, MPI_COMM_WORLD));
    OK(MPI_Unpack(packed, sizeof packed, &pos, &k2, 1, MPI_INT, MPI_COMM_WORLD));
    CHECK(k2 == 7);
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) CHECK(back[r][c] == (c == 0 ? m[r][3] : -2));
    pos = sizeof packed - 4;
    CHECK(MPI_Pack(&m[0][0], 1, col, packed, sizeof packed, &pos, MPI_COMM_WORLD) != MPI_SUCCESS);

    /* Collectives that move data take types with gaps. */
    double bm[R][C], vec[R], gm[R][C];
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) bm[r][c] = me == 0 ? cell(r, c) : -1;
    OK(MPI_Bcast(&bm[0][2], 1, col, 0, MPI_COMM_WORLD));
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) CHECK(bm[r][c] == (me == 0 || c == 2 ? cell(r, c) : -1));
    /* Gather: each rank's column `me` into a contiguous array at rank 1. */
    double gath[2 * R];
    OK(MPI_Gather(&m[0][me], 1, col, gath, R, MPI_DOUBLE, 1, MPI_COMM_WORLD));
    for (int k = 0; k < 2 && me == 1; k++)
        for (int r = 0; r < R; r++) CHECK(gath[k * R + r] == cell(r, k) + k * 1000);
    /* Gather contiguous arrays into columns (a resized column type at the root). */
    for (int r = 0; r < R; r++) vec[r] = me * 10 + r;
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) gm[r][c] = -1;
    OK(MPI_Gather(vec, R, MPI_DOUBLE, &gm[0][0], 1, cols, 0, MPI_COMM_WORLD));
    for (int r = 0; r < R && me == 0; r++)
        for (int c = 0; c < C; c++) CHECK(gm[r][c] == (c < 2 ? c * 10 + r : -1));
    /* Scatter columns 1 and 2 of rank 0's matrix. */
    OK(MPI_Scatter(&m[0][1], 1, cols, vec, R, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    for (int r = 0; r < R; r++) CHECK(vec[r] == cell(r, 1 + me));
    /* Allgather into columns; alltoall from columns. */
    for (int r = 0; r < R; r++) vec[r] = me * 10 + r;
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) gm[r][c] = -1;
    OK(MPI_Allgather(vec, R, MPI_DOUBLE, &gm[0][1], 1, cols, MPI_COMM_WORLD));
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) CHECK(gm[r][c] == (c == 1 || c == 2 ? (c - 1) * 10 + r : -1));
    double a2a[2 * R];
    OK(MPI_Alltoall(&m[0][0], 1, cols, a2a, R, MPI_DOUBLE, MPI_COMM_WORLD));
    for (int k = 0; k < 2; k++)
        for (int r = 0; r < R; r++) CHECK(a2a[k * R + r] == cell(r, me) + k * 1000);

    /* A dup; a reduction of a column (the other columns untouched), against the same
     * reduction of a contiguous copy. */
    MPI_Datatype col2;
    OK(MPI_Type_dup(col, &col2));
    OK(MPI_Type_size(col2, &size));
    CHECK(size == R * (int)sizeof(double));
    double red[R][C], colv[R], want[R];
    for (int r = 0; r < R; r++) {
        colv[r] = m[r][0];
        for (int c = 0; c < C; c++) red[r][c] = -1;
    }
    OK(MPI_Allreduce(colv, want, R, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    OK(MPI_Allreduce(&m[0][0], &red[0][0], 1, col2, MPI_SUM, MPI_COMM_WORLD));
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) CHECK(red[r][c] == (c == 0 ? want[r] : -1));
    OK(MPI_Type_free(&col2));
    OK(MPI_Type_free(&upper));
    OK(MPI_Type_free(&st_type));
    OK(MPI_Type_free(&cols));
    OK(MPI_Type_free(&col));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    printf("rank %d: DTYPES OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
