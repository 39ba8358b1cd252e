/* What the fourth sweep of MPICH's test suite (its multithreaded programs) found wrong
 * (docs/mpi.md, "MPICH's test suite"), one part per finding. `mpich_found4 [part]` runs
 * one part (`selfdup`, `bsend_init`), or all of them; each rank prints "MPICH FOUND4 OK" at the end.
 * Needs MPI_THREAD_MULTIPLE and at least 2 ranks. */
#include <mpi.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "check.h"

static int me, np;

static void nap_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* Two threads per rank, each dups a communicator of its own (a dup of MPI_COMM_WORLD);
 * at rank 0 thread 1 starts first, at rank 1 thread 0 does, the other thread of the
 * rank starting 200 ms later. Before its dup each thread dups MPI_COMM_SELF. The late
 * thread's dup of MPI_COMM_SELF then runs while the early thread's dup waits for the
 * other rank's late thread, which is in its own dup of MPI_COMM_SELF: a dup of
 * MPI_COMM_SELF that waited for its process's other creations (for the context
 * allocator's mask) deadlocked here (MPICH's comm_dup_deadlock). */
static MPI_Comm shared[2];

static void *selfdup_thread(void *arg) {
    int t = (int)(long)arg;
    if (t == me % 2) nap_ms(200);
    MPI_Comm self_dup, dup;
    OK(MPI_Comm_dup(MPI_COMM_SELF, &self_dup));
    int n = -1;
    OK(MPI_Comm_size(self_dup, &n));
    CHECK(n == 1);
    int one = 1, sum = 0;
    OK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, self_dup));
    CHECK(sum == 1);
    OK(MPI_Comm_dup(shared[t], &dup));
    OK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, dup));
    CHECK(sum == np);
    OK(MPI_Comm_free(&dup));
    OK(MPI_Comm_free(&self_dup));
    return NULL;
}

static void selfdup(void) {
    for (int i = 0; i < 2; i++) OK(MPI_Comm_dup(MPI_COMM_WORLD, &shared[i]));
    pthread_t th[2];
    for (long i = 0; i < 2; i++) CHECK(pthread_create(&th[i], NULL, selfdup_thread, (void *)i) == 0);
    for (int i = 0; i < 2; i++) CHECK(pthread_join(th[i], NULL) == 0);
    for (int i = 0; i < 2; i++) OK(MPI_Comm_free(&shared[i]));
}

/* MPI_Bsend_init (MPICH's mt_bsendrecv_pers_huge did not link): rank 0 starts a
 * persistent buffered send of 64 KiB to rank 1 three times, each completing (MPI_Wait)
 * before rank 1 has posted any receive (it receives only after a barrier that rank 0
 * reaches once its three sends completed), the buffer refilled between the starts;
 * rank 1 then gets the three messages in order, each with the values of its start. A
 * send to MPI_PROC_NULL completes at once; a bad rank is refused at the call. */
#define BN 16384
static void bsend_init(void) {
    static int buf[BN], got[BN];
    int size = 3 * (int)(BN * sizeof(int) + MPI_BSEND_OVERHEAD);
    char *attached = malloc((size_t)size);
    CHECK(attached != NULL);
    OK(MPI_Buffer_attach(attached, size));
    MPI_Request req, nul;
    if (me == 0) {
        OK(MPI_Bsend_init(buf, BN, MPI_INT, 1, 5, MPI_COMM_WORLD, &req));
        for (int round = 0; round < 3; round++) {
            for (int i = 0; i < BN; i++) buf[i] = round * BN + i;
            OK(MPI_Start(&req));
            OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        }
        OK(MPI_Request_free(&req));
        CHECK(req == MPI_REQUEST_NULL);
    }
    OK(MPI_Bsend_init(buf, 1, MPI_INT, MPI_PROC_NULL, 5, MPI_COMM_WORLD, &nul));
    OK(MPI_Start(&nul));
    OK(MPI_Wait(&nul, MPI_STATUS_IGNORE));
    OK(MPI_Request_free(&nul));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int err = -1;
    MPI_Error_class(MPI_Bsend_init(buf, 1, MPI_INT, np, 5, MPI_COMM_WORLD, &nul), &err);
    CHECK(err == MPI_ERR_RANK);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 1) {
        for (int round = 0; round < 3; round++) {
            MPI_Status st;
            OK(MPI_Recv(got, BN, MPI_INT, 0, 5, MPI_COMM_WORLD, &st));
            int n = -1;
            OK(MPI_Get_count(&st, MPI_INT, &n));
            CHECK(n == BN);
            for (int i = 0; i < BN; i++) CHECK(got[i] == round * BN + i);
        }
    }
    void *back;
    int back_size;
    OK(MPI_Buffer_detach(&back, &back_size));
    CHECK(back == attached && back_size == size);
    free(attached);
}

int main(int argc, char **argv) {
    int provided = -1;
    OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    CHECK(provided == MPI_THREAD_MULTIPLE);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    CHECK(np >= 2);
    const char *part = argc > 1 ? argv[1] : "all";
    int all = strcmp(part, "all") == 0;
    if (all || strcmp(part, "selfdup") == 0) selfdup();
    if (all || strcmp(part, "bsend_init") == 0) bsend_init();
    OK(MPI_Barrier(MPI_COMM_WORLD));
    printf("rank %d: MPICH FOUND4 OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
