/*
 * ULFM rules of the point-to-point calls added for issue 17, at N >= 3 ranks: the last
 * rank sends rank 0 one message, then SIGKILLs itself. Survivors check that
 * - a message the dead rank sent before dying is still probed and received;
 * - MPI_Probe of the dead rank (nothing waiting) fails with MPIX_ERR_PROC_FAILED;
 * - MPI_Iprobe(MPI_ANY_SOURCE) fails with MPIX_ERR_PROC_FAILED_PENDING while the
 *   failure is not acknowledged, MPI_Probe(MPI_ANY_SOURCE) with MPIX_ERR_PROC_FAILED,
 *   and after MPIX_Comm_failure_ack both work again;
 * - a probe on a revoked communicator fails with MPIX_ERR_REVOKED.
 * Each survivor prints "rank R: P2P FT OK".
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static int me = -1;

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "rank %d: check failed at line %d: %s\n", me, __LINE__,     \
                    #cond);                                                            \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)
#define OK(call) CHECK((call) == MPI_SUCCESS)

static int class_of(int rc) {
    int cls = -1;
    OK(MPI_Error_class(rc, &cls));
    return cls;
}

int main(int argc, char **argv) {
    int size;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size >= 3);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int victim = size - 1;
    MPI_Comm comm, rev;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &rev));
    OK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(rev, MPI_ERRORS_RETURN));
    if (me == victim) {
        int last = 77;
        OK(MPI_Send(&last, 1, MPI_INT, 0, 1, comm));
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == victim) raise(SIGKILL);

    MPI_Status st;
    int flag = -1, count = -1;
    if (me == 0) {
        OK(MPI_Probe(victim, 1, comm, &st));
        OK(MPI_Get_count(&st, MPI_INT, &count));
        CHECK(st.MPI_SOURCE == victim && st.MPI_TAG == 1 && count == 1);
        int got = 0;
        OK(MPI_Recv(&got, 1, MPI_INT, victim, 1, comm, MPI_STATUS_IGNORE));
        CHECK(got == 77);
    }
    /* Nothing more will come from the dead rank: the probe learns of its death. */
    CHECK(class_of(MPI_Probe(victim, 1, comm, &st)) == MPIX_ERR_PROC_FAILED);
    CHECK(class_of(MPI_Iprobe(victim, MPI_ANY_TAG, comm, &flag, &st)) == MPIX_ERR_PROC_FAILED);
    /* Tag 5: nobody sends it. */
    CHECK(class_of(MPI_Iprobe(MPI_ANY_SOURCE, 5, comm, &flag, &st)) ==
          MPIX_ERR_PROC_FAILED_PENDING);
    CHECK(class_of(MPI_Probe(MPI_ANY_SOURCE, 5, comm, &st)) == MPIX_ERR_PROC_FAILED);
    OK(MPIX_Comm_failure_ack(comm));
    flag = -1;
    OK(MPI_Iprobe(MPI_ANY_SOURCE, 5, comm, &flag, &st));
    CHECK(flag == 0);
    /* A survivor's message is probed by a wildcard once the failure is acknowledged. */
    int right = (me + 1) % victim, left = (me + victim - 1) % victim;
    int v = me;
    OK(MPI_Send(&v, 1, MPI_INT, right, 3, comm));
    OK(MPI_Probe(MPI_ANY_SOURCE, 3, comm, &st));
    CHECK(st.MPI_SOURCE == left);
    OK(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 3, comm, MPI_STATUS_IGNORE));
    CHECK(v == left);

    /* Revoked: probes fail with MPIX_ERR_REVOKED. */
    if (me == 0) OK(MPIX_Comm_revoke(rev));
    CHECK(class_of(MPI_Probe(left, 4, rev, &st)) == MPIX_ERR_REVOKED);
    CHECK(class_of(MPI_Iprobe(MPI_ANY_SOURCE, 4, rev, &flag, &st)) == MPIX_ERR_REVOKED);

    OK(MPI_Comm_free(&rev));
    OK(MPI_Comm_free(&comm));
    OK(MPI_Finalize());
    printf("rank %d: P2P FT OK\n", me);
    return 0;
}
