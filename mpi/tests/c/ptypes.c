/*
 * Types with gaps in persistent point-to-point requests and the neighborhood
 * collectives. `sp` is an int resized to two ints (every other int); `vec` a vector of
 * 4 ints spaced by 2. Each rank works with its partner r^1 (itself when alone):
 * - MPI_Send_init / MPI_Recv_init of 6 `sp`, started three times with new data: the
 *   receive unpacks at each completion (the elements checked after each MPI_Wait), the
 *   gaps keep their sentinel; a `vec` send into 4 contiguous ints and 4 contiguous
 *   ints into a `vec` receive, by MPI_Ssend_init and MPI_Startall;
 * - a partitioned send and receive of 2 partitions of 3 `sp`;
 * - on a periodic ring: MPI_Neighbor_allgather and MPI_Neighbor_alltoall with `sp` on
 *   both sides, MPI_Ineighbor_alltoall with `sp` sent and ints received, and
 *   MPI_Neighbor_alltoall_init started twice; on a non-periodic line,
 *   MPI_Neighbor_alltoall with `sp`: the blocks from MPI_PROC_NULL stay untouched;
 *   MPI_Neighbor_allgatherv, MPI_Neighbor_alltoallv, MPI_Neighbor_alltoallw (`sp` and
 *   int blocks at byte displacements) and their non-blocking forms with blocks in
 *   reverse order with holes, on the ring and on the line.
 * Every element is checked against its sender and position, every gap against its
 * sentinel. Each rank prints "rank R: PTYPES OK".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me = -1;

#include "check.h"

enum { GAP = -5 };

static int v(int from, int round, int i) { return from * 1000 + round * 100 + i; }

static MPI_Datatype sp, vec;

static void persistent(int partner) {
    int sbuf[12] = {0}, rbuf[12];
    MPI_Request req[2];
    OK(MPI_Recv_init(rbuf, 6, sp, partner, 1, MPI_COMM_WORLD, &req[1]));
    OK(MPI_Send_init(sbuf, 6, sp, partner, 1, MPI_COMM_WORLD, &req[0]));
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 12; i++) {
            sbuf[i] = i % 2 ? -1 : v(me, round, i / 2);
            rbuf[i] = GAP;
        }
        OK(MPI_Start(&req[1]));
        OK(MPI_Start(&req[0]));
        OK(MPI_Wait(&req[0], MPI_STATUS_IGNORE));
        OK(MPI_Wait(&req[1], MPI_STATUS_IGNORE));
        for (int i = 0; i < 12; i++)
            CHECK(rbuf[i] == (i % 2 ? GAP : v(partner, round, i / 2)));
    }
    OK(MPI_Request_free(&req[0]));
    OK(MPI_Request_free(&req[1]));

    /* A vec send into contiguous ints, contiguous ints into a vec receive. */
    int vs[8] = {0}, cr[4], cs[4] = {0}, vr[8];
    OK(MPI_Ssend_init(vs, 1, vec, partner, 2, MPI_COMM_WORLD, &req[0]));
    OK(MPI_Recv_init(cr, 4, MPI_INT, partner, 2, MPI_COMM_WORLD, &req[1]));
    MPI_Request req2[2];
    OK(MPI_Send_init(cs, 4, MPI_INT, partner, 3, MPI_COMM_WORLD, &req2[0]));
    OK(MPI_Recv_init(vr, 1, vec, partner, 3, MPI_COMM_WORLD, &req2[1]));
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 8; i++) {
            vs[i] = i % 2 ? -1 : v(me, round, i / 2);
            vr[i] = GAP;
        }
        for (int i = 0; i < 4; i++) {
            cs[i] = v(me, round + 5, i);
            cr[i] = GAP;
        }
        MPI_Request all[4] = {req[1], req2[1], req[0], req2[0]};
        OK(MPI_Startall(4, all));
        OK(MPI_Waitall(4, all, MPI_STATUSES_IGNORE));
        for (int i = 0; i < 4; i++)
            CHECK(cr[i] == v(partner, round, i));
        /* The vector's 4 ints spaced by 2 span 7 ints: the 8th is untouched too. */
        for (int i = 0; i < 8; i++)
            CHECK(vr[i] == (i % 2 ? GAP : v(partner, round + 5, i / 2)));
    }
    OK(MPI_Request_free(&req[0]));
    OK(MPI_Request_free(&req[1]));
    OK(MPI_Request_free(&req2[0]));
    OK(MPI_Request_free(&req2[1]));
}

static void partitioned(int partner) {
    int sbuf[12] = {0}, rbuf[12];
    MPI_Request req[2];
    OK(MPI_Psend_init(sbuf, 2, 3, sp, partner, 4, MPI_COMM_WORLD, MPI_INFO_NULL, &req[0]));
    OK(MPI_Precv_init(rbuf, 2, 3, sp, partner, 4, MPI_COMM_WORLD, MPI_INFO_NULL, &req[1]));
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 12; i++) {
            sbuf[i] = i % 2 ? -1 : v(me, round, i / 2);
            rbuf[i] = GAP;
        }
        OK(MPI_Startall(2, req));
        OK(MPI_Pready(1, req[0]));
        OK(MPI_Pready(0, req[0]));
        OK(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
        for (int i = 0; i < 12; i++)
            CHECK(rbuf[i] == (i % 2 ? GAP : v(partner, round, i / 2)));
    }
    OK(MPI_Request_free(&req[0]));
    OK(MPI_Request_free(&req[1]));
}

/* Checks a received `sp` block of `n` elements at `b` from `from` (its block `k`). */
static void check_block(const int *b, int n, int from, int round, int k) {
    for (int i = 0; i < 2 * n; i++)
        CHECK(b[i] == (i % 2 ? GAP : v(from, round, k * n + i / 2)));
}

/* The `v` forms with `sp` on `c`, the neighbors `down` and `up` (-1: MPI_PROC_NULL,
 * whose blocks stay untouched), blocking then not. */
static void neighbors_v(MPI_Comm c, int down, int up, int round) {
    int s[6] = {0}, r[12];
    for (int i = 0; i < 6; i++)
        s[i] = i % 2 ? -1 : v(me, round, i / 2);
    /* allgatherv: 2 `sp` from each, from down at `sp` 3, from up at 0. */
    static const int gc[2] = {2, 2}, gd[2] = {3, 0};
    /* alltoallv: block 0 (`sp` 2) down, block 1 (`sp` 0, 1) up; so 2 from down at
     * `sp` 2, 1 from up at 0. */
    static const int sc[2] = {1, 2}, sd[2] = {2, 0}, rc[2] = {2, 1}, rd[2] = {2, 0};
    for (int nb = 0; nb < 2; nb++) {
        for (int i = 0; i < 12; i++)
            r[i] = GAP;
        if (nb) {
            MPI_Request q;
            OK(MPI_Ineighbor_allgatherv(s, 2, sp, r, gc, gd, sp, c, &q));
            OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
        } else {
            OK(MPI_Neighbor_allgatherv(s, 2, sp, r, gc, gd, sp, c));
        }
        for (int i = 0; i < 12; i++) {
            int at = i / 2, from = at == 3 || at == 4 ? down : at < 2 ? up : -1;
            int want = i % 2 || from < 0 ? GAP : v(from, round, at >= 3 ? at - 3 : at);
            CHECK(r[i] == want);
        }
        for (int i = 0; i < 12; i++)
            r[i] = GAP;
        if (nb) {
            MPI_Request q;
            OK(MPI_Ineighbor_alltoallv(s, sc, sd, sp, r, rc, rd, sp, c, &q));
            OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
        } else {
            OK(MPI_Neighbor_alltoallv(s, sc, sd, sp, r, rc, rd, sp, c));
        }
        for (int i = 0; i < 12; i++) {
            int at = i / 2, from = at == 2 || at == 3 ? down : at == 0 ? up : -1;
            int want = i % 2 || from < 0 ? GAP : v(from, round, at == 0 ? 2 : at - 2);
            CHECK(r[i] == want);
        }
        /* alltoallw: 1 `sp` (`sp` 2) down, 2 `sp` (0, 1) up; 2 `sp` from down at byte
         * 16 (`sp` 2, 3), 1 int from up at byte 4 (a gap of `sp` 0). */
        MPI_Aint wsd[2] = {16, 0}, wrd[2] = {16, 4};
        int wsc[2] = {1, 2}, wrc[2] = {2, 1};
        MPI_Datatype wst[2] = {sp, sp}, wrt[2] = {sp, MPI_INT};
        for (int i = 0; i < 12; i++)
            r[i] = GAP;
        if (nb) {
            MPI_Request q;
            OK(MPI_Ineighbor_alltoallw(s, wsc, wsd, wst, r, wrc, wrd, wrt, c, &q));
            OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
        } else {
            OK(MPI_Neighbor_alltoallw(s, wsc, wsd, wst, r, wrc, wrd, wrt, c));
        }
        for (int i = 0; i < 12; i++) {
            int want = GAP;
            if (i == 1 && up >= 0)
                want = v(up, round, 2);
            if ((i == 4 || i == 6) && down >= 0)
                want = v(down, round, i / 2 - 2);
            CHECK(r[i] == want);
        }
    }
}

static void neighbors(int size) {
    int dims[1] = {size}, periods[1] = {1};
    MPI_Comm ring, line;
    OK(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring));
    periods[0] = 0;
    OK(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &line));
    int down = (me + size - 1) % size, up = (me + 1) % size;
    /* Two blocks of 2 `sp` each: to (from) down then up. */
    int s[8] = {0}, r[8], ri[4];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 8; i++) {
            s[i] = i % 2 ? -1 : v(me, round, i / 2);
            r[i] = GAP;
        }
        OK(MPI_Neighbor_allgather(s, 2, sp, r, 2, sp, ring));
        check_block(r, 2, down, round, 0);
        check_block(r + 4, 2, up, round, 0);
        for (int i = 0; i < 8; i++)
            r[i] = GAP;
        /* Block 0 goes down (the lower neighbor's block 1), block 1 up. */
        OK(MPI_Neighbor_alltoall(s, 2, sp, r, 2, sp, ring));
        check_block(r, 2, down, round, 1);
        check_block(r + 4, 2, up, round, 0);
        MPI_Request q;
        OK(MPI_Ineighbor_alltoall(s, 2, sp, ri, 2, MPI_INT, ring, &q));
        OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
        CHECK(ri[0] == v(down, round, 2) && ri[1] == v(down, round, 3));
        CHECK(ri[2] == v(up, round, 0) && ri[3] == v(up, round, 1));
    }
    MPI_Request p;
    OK(MPI_Neighbor_alltoall_init(s, 2, sp, r, 2, sp, ring, MPI_INFO_NULL, &p));
    for (int round = 2; round < 4; round++) {
        for (int i = 0; i < 8; i++) {
            s[i] = i % 2 ? -1 : v(me, round, i / 2);
            r[i] = GAP;
        }
        OK(MPI_Start(&p));
        OK(MPI_Wait(&p, MPI_STATUS_IGNORE));
        check_block(r, 2, down, round, 1);
        check_block(r + 4, 2, up, round, 0);
    }
    OK(MPI_Request_free(&p));
    for (int i = 0; i < 8; i++) {
        s[i] = i % 2 ? -1 : v(me, 9, i / 2);
        r[i] = GAP;
    }
    OK(MPI_Neighbor_alltoall(s, 2, sp, r, 2, sp, line));
    for (int i = 0; i < 4; i++) {
        if (me == 0)
            CHECK(r[i] == GAP);
        if (me == size - 1)
            CHECK(r[4 + i] == GAP);
    }
    if (me > 0)
        check_block(r, 2, me - 1, 9, 1);
    if (me < size - 1)
        check_block(r + 4, 2, me + 1, 9, 0);
    neighbors_v(ring, down, up, 0);
    neighbors_v(line, me > 0 ? me - 1 : -1, me < size - 1 ? me + 1 : -1, 1);
    OK(MPI_Comm_free(&ring));
    OK(MPI_Comm_free(&line));
}

int main(int argc, char **argv) {
    int size;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    OK(MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &sp));
    OK(MPI_Type_commit(&sp));
    OK(MPI_Type_vector(4, 1, 2, MPI_INT, &vec));
    OK(MPI_Type_commit(&vec));
    int partner = (me ^ 1) < size ? me ^ 1 : me;
    persistent(partner);
    partitioned(partner);
    neighbors(size);
    OK(MPI_Type_free(&sp));
    OK(MPI_Type_free(&vec));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    printf("rank %d: PTYPES OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
