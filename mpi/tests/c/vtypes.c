/*
 * The v collectives with types with gaps.
 * - A matrix of R rows and np*W columns at rank 0 scattered by blocks of W columns
 *   (MPI_Scatterv of a vector type resized to W ints, the classic distribution), each
 *   rank's block checked, then gathered back by MPI_Gatherv into another matrix (equal
 *   to the first), and once more in place at the root.
 * - MPI_Allgatherv into ints spaced by one (an int resized to 8 bytes), rank r giving
 *   r + 1 ints: the gaps untouched; and in place.
 * - MPI_Alltoallv sending every other int (a strided send type), receiving contiguous.
 * - MPI_Ibcast, MPI_Igather, MPI_Iallgather, MPI_Ialltoall, MPI_Iscatter and a
 *   persistent MPI_Bcast_init with the spaced int type, all in flight at once.
 * Each rank prints "rank R: VTYPES OK".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int me = -1, np;

#include "check.h"

#define R 5
#define W 3
#define GAP (-9)

static void matrix(void) {
    int C = np * W;
    int *a = malloc(sizeof(int) * R * C), *b = malloc(sizeof(int) * R * C);
    for (int i = 0; i < R * C; i++) {
        a[i] = i * 7 + 1;
        b[i] = GAP;
    }
    MPI_Datatype col, cols;
    OK(MPI_Type_vector(R, W, C, MPI_INT, &col));
    OK(MPI_Type_create_resized(col, 0, W * sizeof(int), &cols));
    OK(MPI_Type_commit(&cols));
    int *counts = malloc(sizeof(int) * np), *displs = malloc(sizeof(int) * np);
    for (int r = 0; r < np; r++) {
        counts[r] = 1;
        displs[r] = r;
    }
    int mine[R * W];
    for (int i = 0; i < R * W; i++) mine[i] = GAP;
    OK(MPI_Scatterv(a, counts, displs, cols, mine, R * W, MPI_INT, 0, MPI_COMM_WORLD));
    for (int i = 0; i < R; i++)
        for (int j = 0; j < W; j++) CHECK(mine[i * W + j] == a[i * C + me * W + j]);
    OK(MPI_Gatherv(mine, R * W, MPI_INT, b, counts, displs, cols, 0, MPI_COMM_WORLD));
    if (me == 0)
        for (int i = 0; i < R * C; i++) CHECK(b[i] == a[i]);
    /* In place at the root: its own block stays, the others arrive. */
    if (me == 0)
        for (int i = 0; i < R * C; i++) b[i] = (i % C) / W == 0 ? a[i] : GAP;
    OK(MPI_Gatherv(me == 0 ? MPI_IN_PLACE : mine, R * W, MPI_INT, b, counts, displs, cols, 0,
                   MPI_COMM_WORLD));
    if (me == 0)
        for (int i = 0; i < R * C; i++) CHECK(b[i] == a[i]);
    OK(MPI_Type_free(&cols));
    OK(MPI_Type_free(&col));
    free(a);
    free(b);
    free(counts);
    free(displs);
}

static void spaced(void) {
    MPI_Datatype sp;
    OK(MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &sp));
    OK(MPI_Type_commit(&sp));
    int *counts = malloc(sizeof(int) * np), *displs = malloc(sizeof(int) * np), total = 0;
    for (int r = 0; r < np; r++) {
        counts[r] = r + 1;
        displs[r] = total;
        total += r + 1;
    }
    int *out = malloc(sizeof(int) * 2 * total), in[64];
    for (int i = 0; i <= me; i++) in[i] = me * 100 + i;
    for (int way = 0; way < 2; way++) {
        for (int i = 0; i < 2 * total; i++) out[i] = GAP;
        if (way == 1)
            for (int i = 0; i <= me; i++) out[2 * (displs[me] + i)] = me * 100 + i;
        OK(MPI_Allgatherv(way ? MPI_IN_PLACE : in, me + 1, MPI_INT, out, counts, displs, sp,
                          MPI_COMM_WORLD));
        for (int r = 0; r < np; r++)
            for (int i = 0; i <= r; i++) {
                CHECK(out[2 * (displs[r] + i)] == r * 100 + i);
                CHECK(out[2 * (displs[r] + i) + 1] == GAP);
            }
    }
    OK(MPI_Type_free(&sp));
    free(out);
    free(counts);
    free(displs);
}

static void strided(void) {
    MPI_Datatype every_other;
    OK(MPI_Type_vector(2, 1, 2, MPI_INT, &every_other)); /* ints 0 and 2 of 3 */
    OK(MPI_Type_create_resized(every_other, 0, 4 * sizeof(int), &every_other));
    OK(MPI_Type_commit(&every_other));
    /* To rank r: one item (2 ints) at item r: ints 4r and 4r + 2. */
    int *send = malloc(sizeof(int) * 4 * np), *recv = malloc(sizeof(int) * 2 * np);
    int *sc = malloc(sizeof(int) * np), *sd = malloc(sizeof(int) * np);
    int *rc = malloc(sizeof(int) * np), *rd = malloc(sizeof(int) * np);
    for (int r = 0; r < np; r++) {
        for (int k = 0; k < 4; k++) send[4 * r + k] = k % 2 ? GAP : me * 1000 + r * 10 + k;
        sc[r] = 1;
        sd[r] = r;
        rc[r] = 2;
        rd[r] = 2 * r;
    }
    OK(MPI_Alltoallv(send, sc, sd, every_other, recv, rc, rd, MPI_INT, MPI_COMM_WORLD));
    for (int r = 0; r < np; r++) {
        CHECK(recv[2 * r] == r * 1000 + me * 10 + 0);
        CHECK(recv[2 * r + 1] == r * 1000 + me * 10 + 2);
    }
    OK(MPI_Type_free(&every_other));
    free(send);
    free(recv);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
}

/* The non-blocking data-moving collectives and a persistent broadcast with a type
 * with gaps (ints spaced by one), all in flight at once. */
static void nonblocking(void) {
    MPI_Datatype sp;
    OK(MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &sp));
    OK(MPI_Type_commit(&sp));
    int K = 3, big = 2 * K * np;
    int *bc = malloc(sizeof(int) * 2 * K), *pb = malloc(sizeof(int) * 2 * K);
    int *gat = malloc(sizeof(int) * big), *all = malloc(sizeof(int) * big);
    int *a2a_s = malloc(sizeof(int) * big), *a2a_r = malloc(sizeof(int) * big);
    int *sca_s = malloc(sizeof(int) * big), sca_r[6], mine[3];
    for (int i = 0; i < 2 * K; i++) {
        bc[i] = me == 0 ? (i % 2 ? GAP : 50 + i) : GAP;
        pb[i] = bc[i];
    }
    for (int i = 0; i < big; i++) {
        gat[i] = all[i] = a2a_r[i] = GAP;
        a2a_s[i] = i % 2 ? GAP : me * 1000 + i / 2;
        sca_s[i] = i % 2 ? GAP : 7000 + i / 2;
    }
    for (int i = 0; i < 6; i++) sca_r[i] = GAP;
    for (int i = 0; i < K; i++) mine[i] = me * 10 + i;
    MPI_Request r[6];
    OK(MPI_Ibcast(bc, K, sp, 0, MPI_COMM_WORLD, &r[0]));
    OK(MPI_Igather(mine, K, MPI_INT, gat, K, sp, np - 1, MPI_COMM_WORLD, &r[1]));
    OK(MPI_Iallgather(mine, K, MPI_INT, all, K, sp, MPI_COMM_WORLD, &r[2]));
    OK(MPI_Ialltoall(a2a_s, K, sp, a2a_r, K, sp, MPI_COMM_WORLD, &r[3]));
    OK(MPI_Iscatter(sca_s, K, sp, sca_r, K, sp, 0, MPI_COMM_WORLD, &r[4]));
    OK(MPI_Bcast_init(pb, K, sp, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &r[5]));
    OK(MPI_Start(&r[5]));
    OK(MPI_Waitall(6, r, MPI_STATUSES_IGNORE));
    for (int i = 0; i < K; i++) {
        CHECK(bc[2 * i] == 50 + 2 * i && bc[2 * i + 1] == GAP);
        CHECK(pb[2 * i] == 50 + 2 * i && pb[2 * i + 1] == GAP);
        CHECK(sca_r[2 * i] == 7000 + me * K + i && sca_r[2 * i + 1] == GAP);
    }
    for (int q = 0; q < np; q++)
        for (int i = 0; i < K; i++) {
            int at = 2 * (q * K + i);
            if (me == np - 1) CHECK(gat[at] == q * 10 + i && gat[at + 1] == GAP);
            CHECK(all[at] == q * 10 + i && all[at + 1] == GAP);
            CHECK(a2a_r[at] == q * 1000 + me * K + i && a2a_r[at + 1] == GAP);
        }
    OK(MPI_Request_free(&r[5]));
    OK(MPI_Type_free(&sp));
    free(bc);
    free(pb);
    free(gat);
    free(all);
    free(a2a_s);
    free(a2a_r);
    free(sca_s);
}

int main(int argc, char **argv) {
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &np));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    matrix();
    spaced();
    strided();
    nonblocking();
    printf("rank %d: VTYPES OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
