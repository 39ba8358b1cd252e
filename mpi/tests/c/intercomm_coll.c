/*
 * The collectives on inter-communicators (MPI 4.1 §6.2.2), at 4 or 5 ranks: the world is
 * split into two groups twice (1 + n-1, then n/2 + the rest), each pair joined by
 * MPI_Intercomm_create, and on each inter-communicator every collective runs with both
 * groups as the root's group, the first and last rank of that group as root, and counts
 * 0, 1, 7 and 64 Ki ints. Every element received is checked against a value naming the
 * sending side, rank, destination, position and call; the ranks that take no part
 * (MPI_PROC_NULL) pass null buffers, and the gaps of the v layouts stay untouched.
 * Then: MPI_IN_PLACE refused, collectives on an MPI_Comm_dup of the inter-communicator,
 * and a wildcard MPI_Irecv posted across collectives that must not take their messages
 * (it then receives a real message). With the argument "multiple": MPI_THREAD_MULTIPLE,
 * and two threads run the collectives at once, each on its own dup.
 * Each rank prints "rank R: INTERCOMM COLL OK".
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me = -1;

#include "check.h"

/* One inter-communicator as a thread sees it; `salt` counts the calls (the same
 * sequence at every process, so both sides agree on it). */
typedef struct {
    MPI_Comm inter;
    int side, rank, lsize, rsize, salt;
} ctx;

/* A value naming who sent it, to whom, where and in which call. */
static int V(int side, int rank, int dest, int j, int salt) {
    unsigned parts[5] = {(unsigned)side, (unsigned)rank, (unsigned)dest, (unsigned)j,
                         (unsigned)salt};
    unsigned h = 2166136261u;
    for (int i = 0; i < 5; i++) {
        h ^= parts[i];
        h *= 16777619u;
        h ^= h >> 15;
    }
    return (int)(h & 0x7fffffff);
}

/* A reduction's contribution of element j: small enough that sums fit, and the side
 * and rank show in the sum. */
static int R(int side, int rank, int j, int salt) {
    return (side + 1) * 1000000 + (rank + 1) * 10000 + (j * 7 + salt) % 5000;
}

static int *ints(size_t n) {
    int *p = malloc((n ? n : 1) * sizeof(int));
    CHECK(p != NULL);
    for (size_t i = 0; i < n; i++) p[i] = -1;
    return p;
}

/* Count of the v variants' block from rank a (of its side) to rank b. */
static int cnt(int count, int a, int b) { return count ? count + a + 2 * b : 0; }

/* Displacements of n blocks with `gap` ints between them, in reverse rank order when
 * `reverse`; the span. */
static int layout(int n, const int *counts, int *displs, int reverse, int gap) {
    int pos = 0;
    for (int k = 0; k < n; k++) {
        int r = reverse ? n - 1 - k : k;
        displs[r] = pos;
        pos += counts[r] + gap;
    }
    return pos;
}

/* Every int of buf[0..span) outside the blocks is still -1. */
static void gaps_untouched(const int *buf, int span, int n, const int *counts,
                           const int *displs) {
    char *in = calloc(span ? span : 1, 1);
    CHECK(in != NULL);
    for (int r = 0; r < n; r++)
        for (int j = 0; j < counts[r]; j++) in[displs[r] + j] = 1;
    for (int i = 0; i < span; i++) CHECK(in[i] || buf[i] == -1);
    free(in);
}

static void t_bcast(ctx *c, int rside, int root, int count) {
    int salt = ++c->salt;
    int *buf = ints(count);
    if (c->side == rside && c->rank == root) {
        for (int j = 0; j < count; j++) buf[j] = V(rside, root, 0, j, salt);
        OK(MPI_Bcast(buf, count, MPI_INT, MPI_ROOT, c->inter));
        for (int j = 0; j < count; j++) CHECK(buf[j] == V(rside, root, 0, j, salt));
    } else if (c->side == rside) {
        OK(MPI_Bcast(NULL, count, MPI_INT, MPI_PROC_NULL, c->inter));
    } else {
        OK(MPI_Bcast(buf, count, MPI_INT, root, c->inter));
        for (int j = 0; j < count; j++) CHECK(buf[j] == V(rside, root, 0, j, salt));
    }
    free(buf);
}

static void t_reduce(ctx *c, int rside, int root, int count) {
    int salt = ++c->salt;
    int *buf = ints(count);
    if (c->side == rside && c->rank == root) {
        OK(MPI_Reduce(NULL, buf, count, MPI_INT, MPI_SUM, MPI_ROOT, c->inter));
        for (int j = 0; j < count; j++) {
            int want = 0;
            for (int r = 0; r < c->rsize; r++) want += R(1 - rside, r, j, salt);
            CHECK(buf[j] == want);
        }
    } else if (c->side == rside) {
        OK(MPI_Reduce(NULL, NULL, count, MPI_INT, MPI_SUM, MPI_PROC_NULL, c->inter));
    } else {
        for (int j = 0; j < count; j++) buf[j] = R(c->side, c->rank, j, salt);
        OK(MPI_Reduce(buf, NULL, count, MPI_INT, MPI_SUM, root, c->inter));
        for (int j = 0; j < count; j++) CHECK(buf[j] == R(c->side, c->rank, j, salt));
    }
    free(buf);
}

static void t_gather(ctx *c, int rside, int root, int count) {
    int salt = ++c->salt;
    if (c->side == rside && c->rank == root) {
        int *buf = ints((size_t)count * c->rsize);
        OK(MPI_Gather(NULL, 0, MPI_INT, buf, count, MPI_INT, MPI_ROOT, c->inter));
        for (int r = 0; r < c->rsize; r++)
            for (int j = 0; j < count; j++)
                CHECK(buf[r * count + j] == V(1 - rside, r, root, j, salt));
        free(buf);
    } else if (c->side == rside) {
        OK(MPI_Gather(NULL, 0, MPI_INT, NULL, 0, MPI_INT, MPI_PROC_NULL, c->inter));
    } else {
        int *buf = ints(count);
        for (int j = 0; j < count; j++) buf[j] = V(c->side, c->rank, root, j, salt);
        OK(MPI_Gather(buf, count, MPI_INT, NULL, 0, MPI_INT, root, c->inter));
        free(buf);
    }
}

static void t_scatter(ctx *c, int rside, int root, int count) {
    int salt = ++c->salt;
    if (c->side == rside && c->rank == root) {
        int *buf = ints((size_t)count * c->rsize);
        for (int r = 0; r < c->rsize; r++)
            for (int j = 0; j < count; j++) buf[r * count + j] = V(rside, root, r, j, salt);
        OK(MPI_Scatter(buf, count, MPI_INT, NULL, 0, MPI_INT, MPI_ROOT, c->inter));
        free(buf);
    } else if (c->side == rside) {
        OK(MPI_Scatter(NULL, 0, MPI_INT, NULL, 0, MPI_INT, MPI_PROC_NULL, c->inter));
    } else {
        int *buf = ints(count);
        OK(MPI_Scatter(NULL, 0, MPI_INT, buf, count, MPI_INT, root, c->inter));
        for (int j = 0; j < count; j++) CHECK(buf[j] == V(rside, root, c->rank, j, salt));
        free(buf);
    }
}

static void t_gatherv(ctx *c, int rside, int root, int count) {
    int salt = ++c->salt;
    if (c->side == rside && c->rank == root) {
        int counts[8], displs[8];
        for (int r = 0; r < c->rsize; r++) counts[r] = cnt(count, r, 0);
        int span = layout(c->rsize, counts, displs, 1, 3);
        int *buf = ints(span);
        OK(MPI_Gatherv(NULL, 0, MPI_INT, buf, counts, displs, MPI_INT, MPI_ROOT, c->inter));
        for (int r = 0; r < c->rsize; r++)
            for (int j = 0; j < counts[r]; j++)
                CHECK(buf[displs[r] + j] == V(1 - rside, r, root, j, salt));
        gaps_untouched(buf, span, c->rsize, counts, displs);
        free(buf);
    } else if (c->side == rside) {
        OK(MPI_Gatherv(NULL, 0, MPI_INT, NULL, NULL, NULL, MPI_INT, MPI_PROC_NULL, c->inter));
    } else {
        int n = cnt(count, c->rank, 0);
        int *buf = ints(n);
        for (int j = 0; j < n; j++) buf[j] = V(c->side, c->rank, root, j, salt);
        OK(MPI_Gatherv(buf, n, MPI_INT, NULL, NULL, NULL, MPI_INT, root, c->inter));
        free(buf);
    }
}

static void t_scatterv(ctx *c, int rside, int root, int count) {
    int salt = ++c->salt;
    if (c->side == rside && c->rank == root) {
        int counts[8], displs[8];
        for (int r = 0; r < c->rsize; r++) counts[r] = cnt(count, r, 0);
        int span = layout(c->rsize, counts, displs, 1, 3);
        int *buf = ints(span);
        for (int r = 0; r < c->rsize; r++)
            for (int j = 0; j < counts[r]; j++) buf[displs[r] + j] = V(rside, root, r, j, salt);
        OK(MPI_Scatterv(buf, counts, displs, MPI_INT, NULL, 0, MPI_INT, MPI_ROOT, c->inter));
        free(buf);
    } else if (c->side == rside) {
        OK(MPI_Scatterv(NULL, NULL, NULL, MPI_INT, NULL, 0, MPI_INT, MPI_PROC_NULL, c->inter));
    } else {
        int n = cnt(count, c->rank, 0);
        int *buf = ints(n);
        OK(MPI_Scatterv(NULL, NULL, NULL, MPI_INT, buf, n, MPI_INT, root, c->inter));
        for (int j = 0; j < n; j++) CHECK(buf[j] == V(rside, root, c->rank, j, salt));
        free(buf);
    }
}

static void t_allreduce(ctx *c, int count) {
    int salt = ++c->salt;
    int *in = ints(count), *out = ints(count);
    for (int j = 0; j < count; j++) in[j] = R(c->side, c->rank, j, salt);
    OK(MPI_Allreduce(in, out, count, MPI_INT, MPI_SUM, c->inter));
    for (int j = 0; j < count; j++) {
        int want = 0;
        for (int r = 0; r < c->rsize; r++) want += R(1 - c->side, r, j, salt);
        CHECK(out[j] == want);
        CHECK(in[j] == R(c->side, c->rank, j, salt));
    }
    free(in);
    free(out);
}

static void t_allgather(ctx *c, int count) {
    int salt = ++c->salt;
    int *in = ints(count), *out = ints((size_t)count * c->rsize);
    for (int j = 0; j < count; j++) in[j] = V(c->side, c->rank, 0, j, salt);
    OK(MPI_Allgather(in, count, MPI_INT, out, count, MPI_INT, c->inter));
    for (int r = 0; r < c->rsize; r++)
        for (int j = 0; j < count; j++) CHECK(out[r * count + j] == V(1 - c->side, r, 0, j, salt));
    free(in);
    free(out);
}

static void t_alltoall(ctx *c, int count) {
    int salt = ++c->salt;
    size_t n = (size_t)count * c->rsize;
    int *in = ints(n), *out = ints(n);
    for (int r = 0; r < c->rsize; r++)
        for (int j = 0; j < count; j++) in[r * count + j] = V(c->side, c->rank, r, j, salt);
    OK(MPI_Alltoall(in, count, MPI_INT, out, count, MPI_INT, c->inter));
    for (int r = 0; r < c->rsize; r++)
        for (int j = 0; j < count; j++)
            CHECK(out[r * count + j] == V(1 - c->side, r, c->rank, j, salt));
    free(in);
    free(out);
}

static void t_allgatherv(ctx *c, int count) {
    int salt = ++c->salt;
    int n = cnt(count, c->rank, 0);
    int *in = ints(n);
    for (int j = 0; j < n; j++) in[j] = V(c->side, c->rank, 0, j, salt);
    int counts[8], displs[8];
    for (int r = 0; r < c->rsize; r++) counts[r] = cnt(count, r, 0);
    int span = layout(c->rsize, counts, displs, 1, 2);
    int *out = ints(span);
    OK(MPI_Allgatherv(in, n, MPI_INT, out, counts, displs, MPI_INT, c->inter));
    for (int r = 0; r < c->rsize; r++)
        for (int j = 0; j < counts[r]; j++)
            CHECK(out[displs[r] + j] == V(1 - c->side, r, 0, j, salt));
    gaps_untouched(out, span, c->rsize, counts, displs);
    free(in);
    free(out);
}

static void t_alltoallv(ctx *c, int count) {
    int salt = ++c->salt;
    int scounts[8], sdispls[8], rcounts[8], rdispls[8];
    for (int r = 0; r < c->rsize; r++) {
        scounts[r] = cnt(count, c->rank, r);
        rcounts[r] = cnt(count, r, c->rank);
    }
    int sspan = layout(c->rsize, scounts, sdispls, 0, 1);
    int rspan = layout(c->rsize, rcounts, rdispls, 1, 2);
    int *in = ints(sspan), *out = ints(rspan);
    for (int r = 0; r < c->rsize; r++)
        for (int j = 0; j < scounts[r]; j++) in[sdispls[r] + j] = V(c->side, c->rank, r, j, salt);
    OK(MPI_Alltoallv(in, scounts, sdispls, MPI_INT, out, rcounts, rdispls, MPI_INT, c->inter));
    for (int r = 0; r < c->rsize; r++)
        for (int j = 0; j < rcounts[r]; j++)
            CHECK(out[rdispls[r] + j] == V(1 - c->side, r, c->rank, j, salt));
    gaps_untouched(out, rspan, c->rsize, rcounts, rdispls);
    free(in);
    free(out);
}

/* Every collective at every count of `counts` (n of them), each group as the root's,
 * its first and last rank as root. */
static void suite(ctx *c, const int *counts, int n) {
    for (int rside = 0; rside < 2; rside++) {
        int gsize = c->side == rside ? c->lsize : c->rsize;
        int roots[2] = {0, gsize - 1};
        for (int k = 0; k < (gsize > 1 ? 2 : 1); k++) {
            for (int i = 0; i < n; i++) {
                t_bcast(c, rside, roots[k], counts[i]);
                t_reduce(c, rside, roots[k], counts[i]);
                t_gather(c, rside, roots[k], counts[i]);
                t_scatter(c, rside, roots[k], counts[i]);
                t_gatherv(c, rside, roots[k], counts[i]);
                t_scatterv(c, rside, roots[k], counts[i]);
            }
        }
    }
    for (int i = 0; i < n; i++) {
        t_allreduce(c, counts[i]);
        t_allgather(c, counts[i]);
        t_alltoall(c, counts[i]);
        t_allgatherv(c, counts[i]);
        t_alltoallv(c, counts[i]);
    }
}

/* MPI_IN_PLACE is an error on an inter-communicator (every process passes it). */
static void in_place_refused(ctx *c) {
    OK(MPI_Comm_set_errhandler(c->inter, MPI_ERRORS_RETURN));
    int buf[16] = {0}, cls = -1;
    int rc = MPI_Allreduce(MPI_IN_PLACE, buf, 4, MPI_INT, MPI_SUM, c->inter);
    CHECK(rc != MPI_SUCCESS);
    OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_BUFFER);
    rc = MPI_Allgather(MPI_IN_PLACE, 0, MPI_INT, buf, 1, MPI_INT, c->inter);
    CHECK(rc != MPI_SUCCESS);
    rc = MPI_Alltoall(MPI_IN_PLACE, 0, MPI_INT, buf, 1, MPI_INT, c->inter);
    CHECK(rc != MPI_SUCCESS);
    OK(MPI_Comm_set_errhandler(c->inter, MPI_ERRORS_ARE_FATAL));
}

/* A wildcard receive posted on the inter-communicator across collectives takes none of
 * their messages; it then receives one of the point-to-point messages every remote
 * process sends here after a barrier, and blocking receives take the others. */
static void wildcard_across(ctx *c) {
    static const int counts[] = {0, 5, 4096};
    int got = -1;
    MPI_Request req;
    MPI_Status st;
    OK(MPI_Irecv(&got, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, c->inter, &req));
    suite(c, counts, 3);
    int flag = 1;
    OK(MPI_Test(&req, &flag, &st));
    CHECK(!flag);
    /* No process sends before every one has tested. */
    OK(MPI_Barrier(c->inter));
    for (int r = 0; r < c->rsize; r++) {
        int v = V(c->side, c->rank, r, 0, 77);
        OK(MPI_Send(&v, 1, MPI_INT, r, 77, c->inter));
    }
    int seen[8] = {0};
    OK(MPI_Wait(&req, &st));
    for (int k = 0;; k++) {
        CHECK(st.MPI_TAG == 77);
        CHECK(st.MPI_SOURCE >= 0 && st.MPI_SOURCE < c->rsize && !seen[st.MPI_SOURCE]);
        CHECK(got == V(1 - c->side, st.MPI_SOURCE, c->rank, 0, 77));
        seen[st.MPI_SOURCE] = 1;
        if (k + 1 == c->rsize) break;
        OK(MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, c->inter, &st));
    }
}

static void *thread_suite(void *arg) {
    static const int counts[] = {0, 3, 2048};
    ctx *c = arg;
    for (int round = 0; round < 3; round++) suite(c, counts, 3);
    return NULL;
}

/* Two threads run collectives at once, each on its own dup of `c`'s communicator. */
static void two_threads(ctx *c) {
    static const int counts[] = {0, 3, 2048};
    ctx a = *c, b = *c;
    OK(MPI_Comm_dup(c->inter, &a.inter));
    OK(MPI_Comm_dup(c->inter, &b.inter));
    pthread_t t;
    CHECK(pthread_create(&t, NULL, thread_suite, &b) == 0);
    for (int round = 0; round < 3; round++) suite(&a, counts, 3);
    CHECK(pthread_join(t, NULL) == 0);
    OK(MPI_Comm_free(&a.inter));
    OK(MPI_Comm_free(&b.inter));
}

/* Ranks below `low` against the rest. */
static void split(int low, int size, int multiple) {
    static const int counts[] = {0, 1, 7, 65536};
    int side = me < low ? 0 : 1;
    MPI_Comm local, inter;
    OK(MPI_Comm_split(MPI_COMM_WORLD, side, me, &local));
    OK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, side == 0 ? low : 0, 100 + low, &inter));
    ctx c = {inter, side, -1, -1, -1, 0};
    OK(MPI_Comm_rank(inter, &c.rank));
    OK(MPI_Comm_size(inter, &c.lsize));
    OK(MPI_Comm_remote_size(inter, &c.rsize));
    CHECK(c.lsize == (side == 0 ? low : size - low));
    CHECK(c.rsize == size - c.lsize && c.rsize <= 8);
    suite(&c, counts, 4);
    in_place_refused(&c);

    ctx d = c;
    OK(MPI_Comm_dup(inter, &d.inter));
    static const int small[] = {0, 9};
    suite(&d, small, 2);
    /* The original goes on after the dup's calls, and the dup after the original's. */
    t_allreduce(&c, 11);
    t_alltoall(&d, 11);
    OK(MPI_Comm_free(&d.inter));

    wildcard_across(&c);
    if (multiple) two_threads(&c);
    OK(MPI_Comm_free(&inter));
    OK(MPI_Comm_free(&local));
}

int main(int argc, char **argv) {
    int size, provided;
    int multiple = argc > 1 && strcmp(argv[1], "multiple") == 0;
    OK(MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE,
                       &provided));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size >= 2 && size <= 9);
    if (multiple) CHECK(provided == MPI_THREAD_MULTIPLE);
    split(1, size, multiple);
    if (size / 2 != 1) split(size / 2, size, multiple);
    printf("rank %d: INTERCOMM COLL OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
