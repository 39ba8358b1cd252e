/*
 * MPI_DATATYPE_NULL with a count of zero: no items, so the type is never looked at
 * (MPICH accepts it, and programs pass it for ranks that move nothing). Each rank
 * sends to and receives from its neighbours zero items of MPI_DATATYPE_NULL by
 * MPI_Send/MPI_Recv and MPI_Isend/MPI_Irecv (the status: the tag, zero items of
 * MPI_INT), calls MPI_Bcast, MPI_Allgather and MPI_Alltoallw with zero counts of it,
 * and MPI_Alltoallw with every block empty but the one to the next rank; with a count
 * of one the type is refused (MPI_ERR_TYPE).
 * Each rank prints "rank R: NULL TYPE OK".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int me = -1;

#include "check.h"

int main(int argc, char **argv) {
    int n;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &n));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    MPI_Request r[2];
    MPI_Status st;
    int count = -1;

    OK(MPI_Irecv(NULL, 0, MPI_DATATYPE_NULL, prev, MPI_ANY_TAG, MPI_COMM_WORLD, &r[0]));
    OK(MPI_Send(NULL, 0, MPI_DATATYPE_NULL, next, 3, MPI_COMM_WORLD));
    OK(MPI_Wait(&r[0], &st));
    CHECK(st.MPI_TAG == 3 && st.MPI_SOURCE == prev);
    OK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == 0);
    OK(MPI_Isend(NULL, 0, MPI_DATATYPE_NULL, next, 4, MPI_COMM_WORLD, &r[1]));
    OK(MPI_Recv(NULL, 0, MPI_DATATYPE_NULL, prev, 4, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_TAG == 4);
    OK(MPI_Wait(&r[1], MPI_STATUS_IGNORE));

    OK(MPI_Bcast(NULL, 0, MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD));
    OK(MPI_Allgather(NULL, 0, MPI_DATATYPE_NULL, NULL, 0, MPI_DATATYPE_NULL, MPI_COMM_WORLD));

    int *counts = calloc(n, sizeof(int)), *displs = calloc(n, sizeof(int));
    int *rcounts = calloc(n, sizeof(int));
    MPI_Datatype *types = malloc(n * sizeof(MPI_Datatype));
    MPI_Datatype *rtypes = malloc(n * sizeof(MPI_Datatype));
    for (int i = 0; i < n; i++)
        types[i] = rtypes[i] = MPI_DATATYPE_NULL;
    OK(MPI_Alltoallw(NULL, counts, displs, types, NULL, counts, displs, types, MPI_COMM_WORLD));
    /* One int to the next rank, one from the previous: every other block empty. */
    int out = 1000 + me, in = -1;
    counts[next] = 1;
    types[next] = MPI_INT;
    rcounts[prev] = 1;
    rtypes[prev] = MPI_INT;
    OK(MPI_Alltoallw(&out, counts, displs, types, &in, rcounts, displs, rtypes, MPI_COMM_WORLD));
    CHECK(in == 1000 + prev);

    int rc = MPI_Send(&out, 1, MPI_DATATYPE_NULL, next, 5, MPI_COMM_WORLD);
    int cls = -1;
    OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_TYPE);
    free(counts);
    free(displs);
    free(rcounts);
    free(types);
    free(rtypes);
    printf("rank %d: NULL TYPE OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
