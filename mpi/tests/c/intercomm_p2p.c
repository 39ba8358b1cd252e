/*
 * Point to point on an inter-communicator. The world splits into a low group (the first
 * (size-1)/2 ranks) and a high group, which make an inter-communicator; then every
 * kind of point-to-point call crosses it, and every payload, source, tag and count is
 * checked (sources and ranks are the remote group's):
 *   - Isend/Irecv from and to every remote rank, named source and tag;
 *   - wildcard receives (MPI_ANY_SOURCE, MPI_ANY_TAG) posted before the sends;
 *   - non-overtaking: 50 messages from each remote rank, one tag, received by wildcard;
 *   - Ssend/Issend, Sendrecv, Probe/Iprobe, Mprobe/Mrecv, Improbe/Imrecv, MPI_PROC_NULL,
 *     a rank outside the remote group (MPI_ERR_RANK);
 *   - an MPI_Comm_dup of it, whose messages do not meet the original's;
 *   - with argument "multiple" (MPI_THREAD_MULTIPLE): a thread blocked in MPI_Recv and
 *     then in MPI_Barrier on the inter-communicator while the main thread sends the
 *     message on MPI_COMM_WORLD that the peer waits for before it sends (a blocking call
 *     on an inter-communicator must not keep other threads out of the library).
 * Each rank prints "rank R: INTERCOMM P2P OK".
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int me = -1;

#include "check.h"

#define ROUNDS 50

static MPI_Comm inter;
static int low_size, in_low;

/* A payload word that names its sender (world rank), receiver (remote rank) and
 * position. */
static int word(int from, int to, int i) { return from * 1000000 + to * 1000 + i; }

static void pairwise(int rank, int rsize, int wbase) {
    int n = 8;
    int *out = malloc(sizeof(int) * n * rsize), *in = malloc(sizeof(int) * n * rsize);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * 2 * rsize);
    for (int j = 0; j < rsize; j++) {
        OK(MPI_Irecv(in + j * n, n, MPI_INT, j, 100 + j, inter, &reqs[j]));
    }
    for (int j = 0; j < rsize; j++) {
        for (int i = 0; i < n; i++) out[j * n + i] = word(me, j, i);
        OK(MPI_Isend(out + j * n, n, MPI_INT, j, 100 + rank, inter, &reqs[rsize + j]));
    }
    MPI_Status *st = malloc(sizeof(MPI_Status) * 2 * rsize);
    OK(MPI_Waitall(2 * rsize, reqs, st));
    for (int j = 0; j < rsize; j++) {
        CHECK(st[j].MPI_SOURCE == j);
        CHECK(st[j].MPI_TAG == 100 + j);
        int count;
        OK(MPI_Get_count(&st[j], MPI_INT, &count));
        CHECK(count == n);
        for (int i = 0; i < n; i++) CHECK(in[j * n + i] == word(wbase + j, rank, i));
    }
    free(out);
    free(in);
    free(reqs);
    free(st);
}

static void wildcards(int rank, int rsize) {
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * rsize);
    int *in = calloc(rsize, sizeof(int));
    for (int j = 0; j < rsize; j++) {
        OK(MPI_Irecv(&in[j], 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, inter, &reqs[j]));
    }
    /* Everyone's receives are posted before anyone sends. */
    OK(MPI_Barrier(MPI_COMM_WORLD));
    for (int j = 0; j < rsize; j++) {
        OK(MPI_Send(&rank, 1, MPI_INT, j, 200 + rank, inter));
    }
    MPI_Status *st = malloc(sizeof(MPI_Status) * rsize);
    OK(MPI_Waitall(rsize, reqs, st));
    int *seen = calloc(rsize, sizeof(int));
    for (int j = 0; j < rsize; j++) {
        CHECK(st[j].MPI_SOURCE >= 0 && st[j].MPI_SOURCE < rsize);
        CHECK(in[j] == st[j].MPI_SOURCE);
        CHECK(st[j].MPI_TAG == 200 + st[j].MPI_SOURCE);
        seen[st[j].MPI_SOURCE]++;
    }
    for (int j = 0; j < rsize; j++) CHECK(seen[j] == 1);
    /* No rank sends the next phase's messages before every wildcard has matched. */
    OK(MPI_Barrier(MPI_COMM_WORLD));
    free(reqs);
    free(in);
    free(st);
    free(seen);
}

static void in_order(int rank, int rsize) {
    int total = ROUNDS * rsize;
    int *out = malloc(sizeof(int) * total);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * total);
    for (int k = 0; k < ROUNDS; k++) {
        for (int j = 0; j < rsize; j++) {
            out[k * rsize + j] = k;
            OK(MPI_Isend(&out[k * rsize + j], 1, MPI_INT, j, 300, inter, &reqs[k * rsize + j]));
        }
    }
    int *next = calloc(rsize, sizeof(int));
    for (int i = 0; i < total; i++) {
        int v;
        MPI_Status st;
        OK(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 300, inter, &st));
        CHECK(st.MPI_SOURCE >= 0 && st.MPI_SOURCE < rsize);
        CHECK(v == next[st.MPI_SOURCE]);
        next[st.MPI_SOURCE]++;
    }
    for (int j = 0; j < rsize; j++) CHECK(next[j] == ROUNDS);
    OK(MPI_Waitall(total, reqs, MPI_STATUSES_IGNORE));
    (void)rank;
    free(out);
    free(reqs);
    free(next);
}

/* The low group's rank r pairs with the high group's rank r. */
static void pairs(int rank, int rsize) {
    if (rank >= rsize) {
        return;
    }
    int peer = rank, v, got;
    MPI_Status st;
    /* Ssend low -> high, Issend high -> low. */
    if (in_low) {
        v = word(me, peer, 1);
        OK(MPI_Ssend(&v, 1, MPI_INT, peer, 400, inter));
        MPI_Request r;
        OK(MPI_Irecv(&got, 1, MPI_INT, peer, 401, inter, &r));
        OK(MPI_Wait(&r, &st));
        CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == 401);
        CHECK(got == word(low_size + peer, rank, 2));
    } else {
        OK(MPI_Recv(&got, 1, MPI_INT, peer, 400, inter, &st));
        CHECK(st.MPI_SOURCE == peer && got == word(peer, rank, 1));
        v = word(me, peer, 2);
        MPI_Request r;
        OK(MPI_Issend(&v, 1, MPI_INT, peer, 401, inter, &r));
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    }
    /* Sendrecv both ways at once. */
    v = word(me, peer, 3);
    OK(MPI_Sendrecv(&v, 1, MPI_INT, peer, 402, &got, 1, MPI_INT, peer, 402, inter, &st));
    CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == 402);
    CHECK(got == word(in_low ? low_size + peer : peer, rank, 3));
    /* Probes: the low side sends 5 then 7 ints; the high side looks before receiving. */
    if (in_low) {
        int a[5], b[7], c[3];
        for (int i = 0; i < 5; i++) a[i] = word(me, peer, i);
        for (int i = 0; i < 7; i++) b[i] = word(me, peer, 10 + i);
        for (int i = 0; i < 3; i++) c[i] = word(me, peer, 20 + i);
        OK(MPI_Send(a, 5, MPI_INT, peer, 500, inter));
        OK(MPI_Send(b, 7, MPI_INT, peer, 501, inter));
        OK(MPI_Send(c, 3, MPI_INT, peer, 502, inter));
    } else {
        int buf[8], count, flag = 0;
        OK(MPI_Probe(MPI_ANY_SOURCE, 500, inter, &st));
        CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == 500);
        OK(MPI_Get_count(&st, MPI_INT, &count));
        CHECK(count == 5);
        MPI_Message m;
        OK(MPI_Mprobe(peer, 500, inter, &m, &st));
        CHECK(st.MPI_SOURCE == peer);
        OK(MPI_Mrecv(buf, 8, MPI_INT, &m, &st));
        CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == 500);
        for (int i = 0; i < 5; i++) CHECK(buf[i] == word(peer, rank, i));
        while (!flag) {
            OK(MPI_Iprobe(peer, 501, inter, &flag, &st));
        }
        CHECK(st.MPI_SOURCE == peer);
        OK(MPI_Get_count(&st, MPI_INT, &count));
        CHECK(count == 7);
        OK(MPI_Recv(buf, 8, MPI_INT, MPI_ANY_SOURCE, 501, inter, &st));
        CHECK(st.MPI_SOURCE == peer);
        for (int i = 0; i < 7; i++) CHECK(buf[i] == word(peer, rank, 10 + i));
        flag = 0;
        while (!flag) {
            OK(MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, inter, &flag, &m, &st));
        }
        CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == 502);
        MPI_Request r;
        OK(MPI_Imrecv(buf, 8, MPI_INT, &m, &r));
        OK(MPI_Wait(&r, &st));
        CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == 502);
        for (int i = 0; i < 3; i++) CHECK(buf[i] == word(peer, rank, 20 + i));
    }
}

/* A dup's messages stay on the dup: the same (source, tag) on both, received from the
 * dup first. */
static void dup_is_apart(int rank, int rsize) {
    MPI_Comm d;
    OK(MPI_Comm_dup(inter, &d));
    int flag;
    OK(MPI_Comm_test_inter(d, &flag));
    CHECK(flag);
    int rs;
    OK(MPI_Comm_remote_size(d, &rs));
    CHECK(rs == rsize);
    if (rank >= rsize) {
        OK(MPI_Comm_free(&d));
        return;
    }
    int a = word(me, rank, 7), b = word(me, rank, 8), got;
    MPI_Status st;
    if (in_low) {
        OK(MPI_Send(&a, 1, MPI_INT, rank, 600, inter));
        OK(MPI_Send(&b, 1, MPI_INT, rank, 600, d));
    } else {
        OK(MPI_Recv(&got, 1, MPI_INT, rank, 600, d, &st));
        CHECK(got == word(rank, rank, 8));
        OK(MPI_Recv(&got, 1, MPI_INT, rank, 600, inter, &st));
        CHECK(got == word(rank, rank, 7));
    }
    OK(MPI_Comm_free(&d));
}

static void edges(int rsize) {
    int v = 1;
    MPI_Status st;
    OK(MPI_Send(&v, 1, MPI_INT, MPI_PROC_NULL, 0, inter));
    OK(MPI_Recv(&v, 1, MPI_INT, MPI_PROC_NULL, 0, inter, &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL);
    int rc = MPI_Send(&v, 1, MPI_INT, rsize, 0, inter), cls;
    OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_RANK);
}

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&t, NULL);
}

/* The blocked thread on the low leader: a receive, then a barrier, on the
 * inter-communicator. */
static void *blocked(void *arg) {
    int *got = arg;
    MPI_Status st;
    OK(MPI_Recv(got, 1, MPI_INT, 0, 700, inter, &st));
    CHECK(st.MPI_SOURCE == 0);
    OK(MPI_Barrier(inter));
    return NULL;
}

/* World rank 0 (low leader) blocks a thread on the inter-communicator and then, from the
 * main thread, sends the message on MPI_COMM_WORLD that the high leader waits for
 * before it sends the one the blocked thread receives. */
static void blocked_threads(int rank) {
    int high_leader = low_size;
    if (in_low && rank == 0) {
        int got = -1;
        pthread_t t;
        CHECK(pthread_create(&t, NULL, blocked, &got) == 0);
        sleep_ms(100);
        int v = 42;
        OK(MPI_Send(&v, 1, MPI_INT, high_leader, 701, MPI_COMM_WORLD));
        /* The barrier: the others enter it once the high leader has sent. */
        OK(MPI_Recv(&v, 1, MPI_INT, high_leader, 702, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        sleep_ms(100);
        OK(MPI_Send(&v, 1, MPI_INT, high_leader, 703, MPI_COMM_WORLD));
        CHECK(pthread_join(t, NULL) == 0);
        CHECK(got == 4242);
    } else if (!in_low && rank == 0) {
        int v, w = 4242;
        OK(MPI_Recv(&v, 1, MPI_INT, 0, 701, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(v == 42);
        OK(MPI_Send(&w, 1, MPI_INT, 0, 700, inter));
        OK(MPI_Send(&v, 1, MPI_INT, 0, 702, MPI_COMM_WORLD));
        OK(MPI_Recv(&v, 1, MPI_INT, 0, 703, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        OK(MPI_Barrier(inter));
    } else {
        OK(MPI_Barrier(inter));
    }
}

int main(int argc, char **argv) {
    int size, provided;
    int multiple = argc > 1 && strcmp(argv[1], "multiple") == 0;
    OK(MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE,
                       &provided));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size >= 3);
    if (multiple) {
        CHECK(provided == MPI_THREAD_MULTIPLE);
    }
    low_size = (size - 1) / 2;
    in_low = me < low_size;
    MPI_Comm side;
    OK(MPI_Comm_split(MPI_COMM_WORLD, in_low, me, &side));
    OK(MPI_Intercomm_create(side, 0, MPI_COMM_WORLD, in_low ? low_size : 0, 77, &inter));
    OK(MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN));
    int rank, lsize, rsize;
    OK(MPI_Comm_rank(inter, &rank));
    OK(MPI_Comm_size(inter, &lsize));
    OK(MPI_Comm_remote_size(inter, &rsize));
    CHECK(lsize == (in_low ? low_size : size - low_size));
    CHECK(rsize == size - lsize);
    CHECK(rank == (in_low ? me : me - low_size));
    /* The world rank of remote rank 0. */
    int wbase = in_low ? low_size : 0;

    pairwise(rank, rsize, wbase);
    wildcards(rank, rsize);
    in_order(rank, rsize);
    pairs(rank, rsize);
    dup_is_apart(rank, rsize);
    edges(rsize);
    if (multiple) {
        blocked_threads(rank);
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Comm_free(&inter));
    OK(MPI_Comm_free(&side));
    printf("rank %d: INTERCOMM P2P OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
