/*
 * Distributed graph topologies and the neighborhood collectives.
 * - A periodic ring (a 1-D Cartesian grid): MPI_Neighbor_allgather gives [left, right];
 *   MPI_Neighbor_alltoall delivers what the left neighbor sent upwards in block 0 and
 *   what the right one sent downwards in block 1, also at 1 and 2 ranks, where both
 *   neighbors are one process (the order MPI 4.1 §8.6 fixes).
 * - A 2-D non-periodic grid: blocks of MPI_PROC_NULL neighbors are left unwritten.
 * - MPI_Dist_graph_create_adjacent (weighted, two sources and two destinations each),
 *   MPI_Dist_graph_neighbors_count / _neighbors, MPI_Topo_test, kept by MPI_Comm_dup
 *   and MPI_Comm_idup; MPI_Neighbor_alltoallv with a different count per neighbor and
 *   MPI_Neighbor_alltoallw with a different type per neighbor.
 * - MPI_Dist_graph_create with every edge named by rank 0 (unweighted), and with each
 *   rank naming the edges into it.
 * - A graph topology (MPI_Graph_create): MPI_Neighbor_allgatherv.
 * - Each blocking call again in its MPI_Ineighbor_ form, all in flight at once.
 * Each rank prints "rank R: NEIGHBOR OK".
 */
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me = -1, np;

#include "check.h"

#define SENTINEL (-7)

struct pair {
    int i;
    double x;
};

static void ring(void) {
    int dims[1] = {np}, periods[1] = {1};
    MPI_Comm c;
    OK(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &c));
    int left = (me + np - 1) % np, right = (me + 1) % np;
    int got[2] = {SENTINEL, SENTINEL};
    OK(MPI_Neighbor_allgather(&me, 1, MPI_INT, got, 1, MPI_INT, c));
    CHECK(got[0] == left && got[1] == right);
    /* Block 0 goes down (to the left), block 1 up (to the right). */
    int send[2] = {me * 10 + 0, me * 10 + 1}, recv[2] = {SENTINEL, SENTINEL};
    OK(MPI_Neighbor_alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, c));
    CHECK(recv[0] == left * 10 + 1);  /* what the left one sent up */
    CHECK(recv[1] == right * 10 + 0); /* what the right one sent down */
    MPI_Request reqs[2];
    int got2[2] = {SENTINEL, SENTINEL}, recv2[2] = {SENTINEL, SENTINEL};
    OK(MPI_Ineighbor_allgather(&me, 1, MPI_INT, got2, 1, MPI_INT, c, &reqs[0]));
    OK(MPI_Ineighbor_alltoall(send, 1, MPI_INT, recv2, 1, MPI_INT, c, &reqs[1]));
    OK(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));
    CHECK(got2[0] == left && got2[1] == right);
    CHECK(recv2[0] == left * 10 + 1 && recv2[1] == right * 10 + 0);
    OK(MPI_Comm_free(&c));
}

static void grid(void) {
    int dims[2] = {0, 0}, periods[2] = {0, 0}, coords[2];
    OK(MPI_Dims_create(np, 2, dims));
    MPI_Comm c;
    OK(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &c));
    OK(MPI_Cart_coords(c, me, 2, coords));
    int nb[4];
    OK(MPI_Cart_shift(c, 0, 1, &nb[0], &nb[1]));
    OK(MPI_Cart_shift(c, 1, 1, &nb[2], &nb[3]));
    int got[4] = {SENTINEL, SENTINEL, SENTINEL, SENTINEL};
    OK(MPI_Neighbor_allgather(&me, 1, MPI_INT, got, 1, MPI_INT, c));
    for (int j = 0; j < 4; j++) CHECK(got[j] == (nb[j] == MPI_PROC_NULL ? SENTINEL : nb[j]));
    OK(MPI_Comm_free(&c));
}

/* Ranks `me - 1` and `me - 2` send here (weights 1 and 2), `me + 1` and `me + 2` get
 * from here (weights 1 and 2), modulo np. */
static void adjacent(void) {
    int src[2] = {(me + np - 1) % np, (me + 2 * np - 2) % np};
    int dst[2] = {(me + 1) % np, (me + 2) % np};
    int w[2] = {1, 2};
    MPI_Comm c, d, d2;
    OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, w, 2, dst, w, MPI_INFO_NULL, 0,
                                      &c));
    int indeg = -1, outdeg = -1, weighted = -1, topo = -1;
    OK(MPI_Topo_test(c, &topo));
    CHECK(topo == MPI_DIST_GRAPH);
    OK(MPI_Dist_graph_neighbors_count(c, &indeg, &outdeg, &weighted));
    CHECK(indeg == 2 && outdeg == 2 && weighted);
    int s[2], sw[2], t[2], tw[2];
    OK(MPI_Dist_graph_neighbors(c, 2, s, sw, 2, t, tw));
    CHECK(s[0] == src[0] && s[1] == src[1] && t[0] == dst[0] && t[1] == dst[1]);
    CHECK(sw[0] == 1 && sw[1] == 2 && tw[0] == 1 && tw[1] == 2);
    OK(MPI_Comm_dup(c, &d));
    MPI_Request r;
    OK(MPI_Comm_idup(c, &d2, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    OK(MPI_Topo_test(d, &topo));
    CHECK(topo == MPI_DIST_GRAPH);
    OK(MPI_Topo_test(d2, &topo));
    CHECK(topo == MPI_DIST_GRAPH);

    /* alltoallv: to destination j, j + 1 ints of value me * 100 + j * 10 + i; from
     * source j, j + 1 ints, stored in reverse order of the blocks. */
    int sendv[3], scounts[2] = {1, 2}, sdispls[2] = {0, 1};
    for (int j = 0, k = 0; j < 2; j++)
        for (int i = 0; i <= j; i++) sendv[k++] = me * 100 + j * 10 + i;
    int recvv[4], rcounts[2] = {1, 2}, rdispls[2] = {3, 0};
    for (int i = 0; i < 4; i++) recvv[i] = SENTINEL;
    OK(MPI_Neighbor_alltoallv(sendv, scounts, sdispls, MPI_INT, recvv, rcounts, rdispls,
                              MPI_INT, d));
    /* Source 0 (me - 1) sent its block for destination 0 (1 int); source 1 (me - 2) its
     * block for destination 1 (2 ints). */
    CHECK(recvv[3] == src[0] * 100 + 0);
    CHECK(recvv[0] == src[1] * 100 + 10 && recvv[1] == src[1] * 100 + 11);
    CHECK(recvv[2] == SENTINEL);

    /* alltoallw: an int to destination 0, a double to destination 1. */
    struct pair out = {me, me + 0.5}, in = {SENTINEL, -1.0};
    int wc[2] = {1, 1};
    MPI_Aint sd[2] = {offsetof(struct pair, i), offsetof(struct pair, x)};
    MPI_Datatype st[2] = {MPI_INT, MPI_DOUBLE};
    OK(MPI_Neighbor_alltoallw(&out, wc, sd, st, &in, wc, sd, st, d2));
    CHECK(in.i == src[0] && in.x == src[1] + 0.5);

    /* The non-blocking forms, both at once. */
    int recv2[4] = {SENTINEL, SENTINEL, SENTINEL, SENTINEL};
    struct pair in2 = {SENTINEL, -1.0};
    MPI_Request reqs[2];
    OK(MPI_Ineighbor_alltoallv(sendv, scounts, sdispls, MPI_INT, recv2, rcounts, rdispls,
                               MPI_INT, c, &reqs[0]));
    OK(MPI_Ineighbor_alltoallw(&out, wc, sd, st, &in2, wc, sd, st, c, &reqs[1]));
    OK(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));
    CHECK(recv2[3] == src[0] * 100 && recv2[0] == src[1] * 100 + 10 &&
          recv2[1] == src[1] * 100 + 11);
    CHECK(in2.i == src[0] && in2.x == src[1] + 0.5);
    OK(MPI_Comm_free(&d2));
    OK(MPI_Comm_free(&d));
    OK(MPI_Comm_free(&c));
}

/* MPI_Dist_graph_create: the ring i -> i + 1, named all by rank 0, then each edge named
 * by its destination. */
static void general(void) {
    for (int way = 0; way < 2; way++) {
        int n = 0, *sources = malloc(sizeof(int) * np), *degrees = malloc(sizeof(int) * np),
            *dests = malloc(sizeof(int) * np);
        if (way == 0 && me == 0) {
            for (int i = 0; i < np; i++) {
                sources[i] = i;
                degrees[i] = 1;
                dests[i] = (i + 1) % np;
            }
            n = np;
        } else if (way == 1) {
            sources[0] = (me + np - 1) % np;
            degrees[0] = 1;
            dests[0] = me;
            n = 1;
        }
        MPI_Comm c;
        OK(MPI_Dist_graph_create(MPI_COMM_WORLD, n, sources, degrees, dests, MPI_UNWEIGHTED,
                                 MPI_INFO_NULL, 0, &c));
        int indeg = -1, outdeg = -1, weighted = -1, s = -1, t = -1;
        OK(MPI_Dist_graph_neighbors_count(c, &indeg, &outdeg, &weighted));
        CHECK(indeg == 1 && outdeg == 1 && !weighted);
        OK(MPI_Dist_graph_neighbors(c, 1, &s, MPI_UNWEIGHTED, 1, &t, MPI_UNWEIGHTED));
        CHECK(s == (me + np - 1) % np && t == (me + 1) % np);
        int got = SENTINEL;
        OK(MPI_Neighbor_allgather(&me, 1, MPI_INT, &got, 1, MPI_INT, c));
        CHECK(got == s);
        OK(MPI_Comm_free(&c));
        free(sources);
        free(degrees);
        free(dests);
    }
    /* A rank with no edge at all: MPI_WEIGHTS_EMPTY. */
    MPI_Comm c;
    OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 0, NULL, MPI_WEIGHTS_EMPTY, 0, NULL,
                                      MPI_WEIGHTS_EMPTY, MPI_INFO_NULL, 0, &c));
    int x = SENTINEL;
    OK(MPI_Neighbor_allgather(&me, 1, MPI_INT, &x, 1, MPI_INT, c));
    CHECK(x == SENTINEL);
    OK(MPI_Comm_free(&c));
}

/* A graph topology: a star around node 0 (every other node's one neighbor is 0). */
static void star(void) {
    int *index = malloc(sizeof(int) * np), *edges = malloc(sizeof(int) * 2 * np), m = 0;
    for (int i = 0; i < np; i++) {
        if (i == 0)
            for (int j = 1; j < np; j++) edges[m++] = j;
        else
            edges[m++] = 0;
        index[i] = m;
    }
    MPI_Comm c;
    OK(MPI_Graph_create(MPI_COMM_WORLD, np, index, edges, 0, &c));
    int deg = me == 0 ? np - 1 : (np > 1 ? 1 : 0);
    int *got = malloc(sizeof(int) * 2 * (deg + 1)), *counts = malloc(sizeof(int) * (deg + 1)),
        *displs = malloc(sizeof(int) * (deg + 1));
    for (int j = 0; j < deg; j++) {
        counts[j] = 1;
        displs[j] = 2 * j + 1; /* every other int */
    }
    for (int i = 0; i < 2 * (deg + 1); i++) got[i] = SENTINEL;
    OK(MPI_Neighbor_allgatherv(&me, 1, MPI_INT, got, counts, displs, MPI_INT, c));
    for (int j = 0; j < deg; j++) {
        CHECK(got[2 * j] == SENTINEL);
        CHECK(got[2 * j + 1] == (me == 0 ? j + 1 : 0));
    }
    MPI_Request r;
    for (int i = 0; i < 2 * (deg + 1); i++) got[i] = SENTINEL;
    OK(MPI_Ineighbor_allgatherv(&me, 1, MPI_INT, got, counts, displs, MPI_INT, c, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int j = 0; j < deg; j++) CHECK(got[2 * j + 1] == (me == 0 ? j + 1 : 0));
    OK(MPI_Comm_free(&c));
    free(index);
    free(edges);
    free(got);
    free(counts);
    free(displs);
}

static int error_class(int rc) {
    int cls = -1;
    MPI_Error_class(rc, &cls);
    return cls;
}

int main(int argc, char **argv) {
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &np));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    ring();
    grid();
    adjacent();
    general();
    star();
    /* No topology: MPI_ERR_TOPOLOGY; a rank out of range: MPI_ERR_RANK. */
    int x;
    CHECK(error_class(MPI_Neighbor_allgather(&me, 1, MPI_INT, &x, 1, MPI_INT,
                                             MPI_COMM_WORLD)) == MPI_ERR_TOPOLOGY);
    int bad = np;
    MPI_Comm c = MPI_COMM_NULL;
    CHECK(error_class(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &bad, MPI_UNWEIGHTED,
                                                     0, NULL, MPI_UNWEIGHTED, MPI_INFO_NULL,
                                                     0, &c)) == MPI_ERR_RANK);
    int y = 1, sum = 0;
    OK(MPI_Allreduce(&y, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == np);
    printf("rank %d: NEIGHBOR OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
