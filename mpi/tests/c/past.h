/* others_past(comm, victim): called by every rank of `comm` right after a collective,
 * before `victim` kills itself. Every other rank tells the victim it is past the
 * collective, and the victim returns only once all have. A rank may leave a collective
 * before the others have, and ULFM lets a collective fail at a rank that learns of a
 * death before its own part is done: without this, a test whose victim dies right
 * after a barrier sees that barrier fail now and then. Returns an MPI error code.
 * Include <mpi.h> first. */
#ifndef STEADFAST_TEST_PAST_H
#define STEADFAST_TEST_PAST_H

#define PAST_TAG 32001

static int others_past(MPI_Comm comm, int victim) {
    int me, size, rc;
    if ((rc = MPI_Comm_rank(comm, &me)) != MPI_SUCCESS) return rc;
    if ((rc = MPI_Comm_size(comm, &size)) != MPI_SUCCESS) return rc;
    if (me != victim) return MPI_Send(NULL, 0, MPI_INT, victim, PAST_TAG, comm);
    for (int i = 0; i < size - 1; i++) {
        rc = MPI_Recv(NULL, 0, MPI_INT, MPI_ANY_SOURCE, PAST_TAG, comm, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return rc;
    }
    return MPI_SUCCESS;
}

#endif
