/* A C program embedding libsteadfast, run by tests/c_program.rs under
 * `steadfast-run -n 3`: point to point (blocking and not), agreement (blocking and
 * not), a window, dup and split, the error codes of bad input and of a call from the
 * wrong thread; then rank 2 kills itself and the survivors see the failure (error
 * codes and the callback), acknowledge, revoke, agree, shrink, communicate on the
 * shrunk communicator and finalize. Each survivor prints "CAPI OK" at the end. */

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <steadfast.h>

static uint32_t me = 999;

#define CHECK(call)                                                                  \
    do {                                                                             \
        int rc_ = (call);                                                            \
        if (rc_ != SF_OK) {                                                          \
            fprintf(stderr, "rank %u: %s:%d: %s returned %s: %s\n", me, __FILE__,    \
                    __LINE__, #call, sf_error_string(rc_), sf_last_error_message()); \
            exit(10);                                                                \
        }                                                                            \
    } while (0)

#define EXPECT(cond)                                                                 \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "rank %u: %s:%d: expected %s (last error: %s)\n", me,    \
                    __FILE__, __LINE__, #cond, sf_last_error_message());             \
            exit(11);                                                                \
        }                                                                            \
    } while (0)

/* What the failure callback saw. */
struct failures {
    int calls;
    uint32_t last_rank;
};

static void on_failure(uint32_t rank, void *user_data) {
    struct failures *f = user_data;
    f->calls++;
    f->last_rank = rank;
}

struct thread_call {
    const sf_comm *comm;
    int rc;
};

static void *rank_from_another_thread(void *arg) {
    struct thread_call *call = arg;
    uint32_t rank;
    call->rc = sf_comm_rank(call->comm, &rank);
    return NULL;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Bad input and the thread rule: codes, not crashes. */
static void misuse(sf_comm *comm, uint32_t n) {
    uint32_t r;
    EXPECT(sf_comm_rank(NULL, &r) == SF_ERR_INVALID_ARG);
    EXPECT(sf_comm_rank(comm, NULL) == SF_ERR_INVALID_ARG);
    EXPECT(sf_send(comm, NULL, 4, 0, 1) == SF_ERR_INVALID_ARG);
    EXPECT(sf_send(comm, "x", 1, (int)n + 4, 1) == SF_ERR_INVALID_ARG);
    EXPECT(strstr(sf_last_error_message(), "7") != NULL); /* names the rank */
    EXPECT(sf_recv(comm, NULL, 0, -5, 1, NULL) == SF_ERR_INVALID_ARG);
    EXPECT(strcmp(sf_error_string(SF_ERR_REVOKED), "communicator revoked") == 0);

    struct thread_call call = {comm, -1};
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, rank_from_another_thread, &call) == 0);
    EXPECT(pthread_join(t, NULL) == 0);
    EXPECT(call.rc == SF_ERR_WRONG_THREAD);
    CHECK(sf_comm_rank(comm, &r)); /* still fine on this thread */
}

static void point_to_point(sf_comm *comm, uint32_t n) {
    int right = (int)((me + 1) % n), left = (int)((me + n - 1) % n);
    /* Blocking, around the ring without a cycle of waits: rank 0 sends first. */
    uint64_t out = 1000 + me, in = 0;
    sf_status st;
    if (me == 0) {
        CHECK(sf_send(comm, &out, sizeof out, right, 5));
        CHECK(sf_recv(comm, &in, sizeof in, left, 5, &st));
    } else {
        CHECK(sf_recv(comm, &in, sizeof in, SF_ANY_SOURCE, SF_ANY_TAG, &st));
        CHECK(sf_send(comm, &out, sizeof out, right, 5));
    }
    EXPECT(in == 1000u + (uint32_t)left);
    EXPECT(st.source == (uint32_t)left && st.tag == 5 && st.len == sizeof in);

    /* Non-blocking over the caller's memory, 64 KiB each way. */
    enum { LEN = 64 << 10 };
    unsigned char *sbuf = malloc(LEN), *rbuf = calloc(LEN, 1);
    EXPECT(sbuf && rbuf);
    memset(sbuf, (int)me + 1, LEN);
    sf_request *rreq, *sreq;
    CHECK(sf_irecv(comm, rbuf, LEN, left, 6, &rreq));
    CHECK(sf_isend(comm, sbuf, LEN, right, 6, &sreq));
    int rdone = 0, sdone = 0;
    double deadline = now_s() + 60;
    while (!(rdone && sdone)) {
        if (!rdone) CHECK(sf_test(&rreq, &rdone, &st));
        if (!sdone) CHECK(sf_test(&sreq, &sdone, NULL));
        EXPECT(now_s() < deadline);
    }
    EXPECT(rreq == NULL && sreq == NULL); /* completed requests are freed */
    EXPECT(st.source == (uint32_t)left && st.len == LEN);
    for (size_t i = 0; i < LEN; i++) EXPECT(rbuf[i] == left + 1);
    free(sbuf);
    free(rbuf);

    /* A message longer than the buffer. */
    if (me == 0) {
        char msg[16] = "0123456789abcde";
        CHECK(sf_send(comm, msg, sizeof msg, 1, 7));
    } else if (me == 1) {
        char small[8];
        EXPECT(sf_recv(comm, small, sizeof small, 0, 7, NULL) == SF_ERR_TRUNCATED);
    }
}

static void agreements(sf_comm *comm) {
    uint64_t v = me == 1 ? 0x3 : 0x7;
    uint32_t failed[4];
    size_t nfailed = 99;
    CHECK(sf_comm_agree(comm, &v, failed, 4, &nfailed));
    EXPECT(v == 0x3 && nfailed == 0);

    uint64_t iv = 0xF0 | (1u << me);
    sf_request *req;
    CHECK(sf_comm_iagree(comm, &iv, &req));
    CHECK(sf_wait(&req, NULL));
    EXPECT(req == NULL && iv == 0xF0);

    uint64_t sums[2] = {me, 10 * me};
    CHECK(sf_comm_allreduce(comm, sums, 2, SF_OP_SUM));
    EXPECT(sums[0] == 3 && sums[1] == 30);
    EXPECT(sf_comm_allreduce(comm, sums, 2, 42) == SF_ERR_INVALID_ARG);
}

static void window(sf_comm *comm, uint32_t n) {
    uint32_t right = (me + 1) % n, left = (me + n - 1) % n;
    sf_window *win;
    CHECK(sf_window_allocate(comm, 8, &win));
    CHECK(sf_window_write_local(win, 4, &me, sizeof me));
    CHECK(sf_window_put(win, (int)right, 0, &me, sizeof me));
    CHECK(sf_window_fence(win));
    uint32_t got = 999, remote = 999;
    CHECK(sf_window_read_local(win, 0, &got, sizeof got));
    EXPECT(got == left);
    CHECK(sf_window_get(win, (int)left, 4, &remote, sizeof remote));
    EXPECT(remote == left);
    EXPECT(sf_window_put(win, (int)right, 6, &me, sizeof me) == SF_ERR_INVALID_ARG);
    CHECK(sf_window_fence(win));
    CHECK(sf_window_free(&win));
    EXPECT(win == NULL);
}

static void derived(sf_comm *comm, uint32_t n) {
    sf_comm *dup, *half;
    uint32_t size, rank;
    CHECK(sf_comm_dup(comm, &dup));
    CHECK(sf_comm_size(dup, &size));
    EXPECT(size == n);
    CHECK(sf_comm_split(comm, me % 2, 100 - me, &half));
    CHECK(sf_comm_size(half, &size));
    CHECK(sf_comm_rank(half, &rank));
    EXPECT(size == (me % 2 ? n / 2 : (n + 1) / 2));
    if (me == 0) EXPECT(rank == 1); /* ordered by key: rank 2 has the smaller key */
    CHECK(sf_comm_barrier(half));

    /* An inter-communicator between the halves {2, 0} and {1}, over `comm`: each
     * half's leader is its local rank 0 (world ranks 2 and 1). */
    sf_intercomm *inter;
    int remote_leader = me % 2 ? 2 : 1;
    CHECK(sf_intercomm_create(half, 0, comm, remote_leader, 40, &inter));
    uint32_t local_size, remote_size;
    CHECK(sf_intercomm_shape(inter, &rank, &local_size, &remote_size));
    EXPECT(local_size == size && local_size + remote_size == n);
    uint32_t flag = me == 0 ? 0x6 : 0x7;
    CHECK(sf_intercomm_agree(inter, &flag));
    EXPECT(flag == (me % 2 ? 0x6u : 0x7u)); /* the AND of the remote group's flags */
    if (me == 1) {
        uint32_t v = 555;
        CHECK(sf_intercomm_send(inter, &v, sizeof v, 1, 41)); /* remote rank 1: world 0 */
    } else if (me == 0) {
        uint32_t v = 0;
        sf_status st;
        CHECK(sf_intercomm_recv(inter, &v, sizeof v, SF_ANY_SOURCE, 41, &st));
        EXPECT(v == 555 && st.source == 0);
    }
    CHECK(sf_intercomm_free(&inter));
    EXPECT(inter == NULL);
    CHECK(sf_comm_free(&half));
    CHECK(sf_comm_free(&dup));
    EXPECT(dup == NULL && half == NULL);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    sf_world *world;
    CHECK(sf_init(&world));
    sf_comm *comm;
    CHECK(sf_world_comm(world, &comm));
    uint32_t n;
    CHECK(sf_comm_rank(comm, &me));
    CHECK(sf_comm_size(comm, &n));
    EXPECT(n == 3);
    const uint32_t victim = 2;
    struct failures seen = {0, 999};
    CHECK(sf_world_on_failure(world, on_failure, &seen));

    misuse(comm, n);
    point_to_point(comm, n);
    agreements(comm);
    window(comm, n);
    derived(comm, n);

    /* The failure: the victim dies abruptly after everyone passed the barrier. */
    CHECK(sf_comm_barrier(comm));
    EXPECT(seen.calls == 0);
    if (me == victim) raise(SIGKILL);

    char byte;
    int rc = sf_recv(comm, &byte, 1, (int)victim, 8, NULL);
    EXPECT(rc == SF_ERR_PROC_FAILED || rc == SF_ERR_REVOKED);
    /* A blocking wildcard receive cannot stay posted: PROC_FAILED (ULFM). */
    rc = sf_recv(comm, &byte, 1, SF_ANY_SOURCE, 9, NULL);
    EXPECT(rc == SF_ERR_PROC_FAILED || rc == SF_ERR_REVOKED);
    /* The callback ran, once, on this thread, from inside a call. */
    double deadline = now_s() + 60;
    while (seen.calls == 0 && now_s() < deadline) CHECK(sf_world_progress(world));
    EXPECT(seen.calls == 1 && seen.last_rank == victim);
    uint32_t failed[4];
    size_t nfailed = 0;
    CHECK(sf_world_failures(world, failed, 4, &nfailed));
    EXPECT(nfailed == 1 && failed[0] == victim);

    size_t acked = 0;
    CHECK(sf_comm_ack_failed(comm, &acked));
    EXPECT(acked == 1);
    CHECK(sf_comm_get_failed(comm, failed, 4, &nfailed));
    EXPECT(nfailed == 1 && failed[0] == victim);

    /* Revoke: rank 0 revokes; rank 1 learns it in a receive from rank 0. */
    if (me == 0) {
        CHECK(sf_comm_revoke(comm));
    } else {
        EXPECT(sf_recv(comm, &byte, 1, 0, 10, NULL) == SF_ERR_REVOKED);
    }
    int revoked = 0;
    CHECK(sf_comm_is_revoked(comm, &revoked));
    EXPECT(revoked == 1);
    EXPECT(sf_send(comm, "x", 1, (int)(1 - me), 11) == SF_ERR_REVOKED);

    /* Agreement and shrink still work on the revoked communicator. */
    uint64_t v = 1;
    nfailed = 0;
    CHECK(sf_comm_agree(comm, &v, failed, 4, &nfailed));
    EXPECT(v == 1 && nfailed == 1 && failed[0] == victim);
    sf_comm *survivors;
    CHECK(sf_comm_shrink(comm, &survivors));
    uint32_t size, rank;
    CHECK(sf_comm_size(survivors, &size));
    CHECK(sf_comm_rank(survivors, &rank));
    EXPECT(size == 2 && rank == me);
    v = me == 0 ? 0x6 : 0xC;
    CHECK(sf_comm_agree(survivors, &v, NULL, 0, &nfailed));
    EXPECT(v == 0x4 && nfailed == 0);
    uint64_t token = 77 + me, got = 0;
    if (rank == 0) {
        CHECK(sf_send(survivors, &token, sizeof token, 1, 12));
        CHECK(sf_recv(survivors, &got, sizeof got, 1, 12, NULL));
    } else {
        CHECK(sf_recv(survivors, &got, sizeof got, 0, 12, NULL));
        CHECK(sf_send(survivors, &token, sizeof token, 0, 12));
    }
    EXPECT(got == 77 + (1 - me));
    uint64_t max = me + 5;
    CHECK(sf_comm_allreduce(survivors, &max, 1, SF_OP_MAX));
    EXPECT(max == 6);
    EXPECT(seen.calls == 1); /* one failure, reported once */

    CHECK(sf_comm_free(&comm));
    CHECK(sf_finalize(&world));
    EXPECT(world == NULL);
    /* Handles of a finalized world fail cleanly, and can still be freed. */
    EXPECT(sf_comm_rank(survivors, &rank) == SF_ERR_NOT_INITIALIZED);
    CHECK(sf_comm_free(&survivors));
    printf("rank %u: CAPI OK\n", me);
    return 0;
}
