/*
 * Buffered sends and the small calls around them: MPI_Buffer_attach, MPI_Bsend (which
 * returns before the receiver posts: the receiver posts only after a barrier that the
 * sender reaches after its sends), MPI_Ibsend, a message too large for the buffer
 * (MPI_ERR_BUFFER), MPI_Buffer_detach (waits until the messages left, gives the buffer
 * back); MPI_Alloc_mem / MPI_Free_mem, MPI_Get_address with MPI_Aint_add /
 * MPI_Aint_diff, MPI_Request_get_status (does not free the request), MPI_Get_elements.
 * Each rank prints "rank R: BSEND OK".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me = -1;

#include "check.h"

#define BIG 100000

int main(int argc, char **argv) {
    int n;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &n));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int right = (me + 1) % n, left = (me + n - 1) % n;

    /* Buffered sends of a large message and a few small ones, which must return
     * before anyone receives. */
    int size = (BIG + 10) * (int)sizeof(int) + 8 * MPI_BSEND_OVERHEAD;
    void *attached = NULL;
    OK(MPI_Alloc_mem(size, MPI_INFO_NULL, &attached));
    CHECK(attached != NULL);
    OK(MPI_Buffer_attach(attached, size));
    int *big = malloc(sizeof(int) * BIG);
    for (int i = 0; i < BIG; i++) big[i] = me * BIG + i;
    OK(MPI_Bsend(big, BIG, MPI_INT, right, 1, MPI_COMM_WORLD));
    for (int i = 0; i < BIG; i++) big[i] = -1; /* reusable at once */
    int small[3] = {me, me + 1, me + 2};
    MPI_Request r;
    OK(MPI_Ibsend(small, 3, MPI_INT, right, 2, MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    small[0] = -1;
    /* Too large for what is left. */
    int rc = MPI_Bsend(big, BIG, MPI_INT, right, 3, MPI_COMM_WORLD), cls;
    OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_BUFFER);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Status st;
    OK(MPI_Recv(big, BIG, MPI_INT, left, 1, MPI_COMM_WORLD, &st));
    for (int i = 0; i < BIG; i++) CHECK(big[i] == left * BIG + i);
    int got[3];
    OK(MPI_Recv(got, 3, MPI_INT, left, 2, MPI_COMM_WORLD, &st));
    CHECK(got[0] == left && got[1] == left + 1 && got[2] == left + 2);
    void *back = NULL;
    int back_size = 0;
    OK(MPI_Buffer_detach(&back, &back_size));
    CHECK(back == attached && back_size == size);
    /* Without a buffer, a buffered send is refused. */
    rc = MPI_Bsend(small, 1, MPI_INT, right, 4, MPI_COMM_WORLD);
    OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_BUFFER);
    /* MPI_PROC_NULL needs no buffer. */
    OK(MPI_Bsend(small, 1, MPI_INT, MPI_PROC_NULL, 4, MPI_COMM_WORLD));
    OK(MPI_Free_mem(attached));

    /* Addresses. */
    int arr[10];
    MPI_Aint a0, a5;
    OK(MPI_Get_address(&arr[0], &a0));
    OK(MPI_Get_address(&arr[5], &a5));
    CHECK(MPI_Aint_diff(a5, a0) == 5 * (MPI_Aint)sizeof(int));
    CHECK(MPI_Aint_add(a0, 5 * sizeof(int)) == a5);

    /* MPI_Request_get_status leaves the request to MPI_Wait. */
    int v = me * 7, w = -1, flag = 0;
    MPI_Request rr, sr;
    OK(MPI_Irecv(&w, 1, MPI_INT, left, 5, MPI_COMM_WORLD, &rr));
    OK(MPI_Request_get_status(rr, &flag, &st));
    OK(MPI_Isend(&v, 1, MPI_INT, right, 5, MPI_COMM_WORLD, &sr));
    while (!flag) {
        OK(MPI_Request_get_status(rr, &flag, &st));
    }
    CHECK(rr != MPI_REQUEST_NULL && st.MPI_SOURCE == left && w == left * 7);
    OK(MPI_Wait(&rr, &st));
    CHECK(rr == MPI_REQUEST_NULL && st.MPI_SOURCE == left);
    OK(MPI_Wait(&sr, MPI_STATUS_IGNORE));
    OK(MPI_Request_get_status(MPI_REQUEST_NULL, &flag, &st));
    CHECK(flag == 1);

    /* Elements of a contiguous type: 2 items of 3 ints are 6 elements. */
    MPI_Datatype three;
    OK(MPI_Type_contiguous(3, MPI_INT, &three));
    OK(MPI_Type_commit(&three));
    int six[6] = {0, 1, 2, 3, 4, 5}, in6[6];
    OK(MPI_Sendrecv(six, 2, three, right, 6, in6, 2, three, left, 6, MPI_COMM_WORLD, &st));
    int count = -1, elems = -1;
    OK(MPI_Get_count(&st, three, &count));
    OK(MPI_Get_elements(&st, three, &elems));
    CHECK(count == 2 && elems == 6);
    OK(MPI_Type_free(&three));

    OK(MPI_Barrier(MPI_COMM_WORLD));
    printf("rank %d: BSEND OK\n", me);
    free(big);
    OK(MPI_Finalize());
    return 0;
}
