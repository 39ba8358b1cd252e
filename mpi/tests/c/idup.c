/* MPI_Comm_idup as a non-blocking operation: started, then the messages a peer waits
 * for before it starts its own, then waited (a dup made inside the call deadlocks);
 * on an inter-communicator too; three in flight at once with a blocking MPI_Comm_dup
 * of another communicator among them, completed in reverse order and by MPI_Test
 * loops; attributes copied at the call; MPI_Comm_idup_with_info. Each rank prints "IDUP OK". */
#include <mpi.h>

#include "check.h"

static int me, np;
static int copies;

static int count_copy(MPI_Comm old, int key, void *extra, void *in, void *out, int *flag) {
    (void)old;
    (void)key;
    (void)extra;
    copies++;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

/* Every rank but 0 starts its dup, then sends rank 0 a synchronous message; rank 0
 * receives them all before it starts its own. */
static MPI_Comm start_then_talk(MPI_Comm comm, int leader_waits) {
    int r, n, rn, inter;
    MPI_Comm out;
    MPI_Request req;
    OK(MPI_Comm_rank(comm, &r));
    OK(MPI_Comm_test_inter(comm, &inter));
    if (inter) {
        OK(MPI_Comm_remote_size(comm, &rn));
    } else {
        OK(MPI_Comm_size(comm, &rn));
    }
    OK(MPI_Comm_size(comm, &n));
    if (r == 0 && leader_waits) {
        for (int i = 1; i < rn; i++) {
            int v = -1;
            OK(MPI_Recv(&v, 1, MPI_INT, i, 3, comm, MPI_STATUS_IGNORE));
            CHECK(v == i);
        }
        OK(MPI_Comm_idup(comm, &out, &req));
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    } else {
        OK(MPI_Comm_idup(comm, &out, &req));
        if (leader_waits) {
            OK(MPI_Ssend(&r, 1, MPI_INT, 0, 3, comm));
        }
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    }
    CHECK(req == MPI_REQUEST_NULL);
    return out;
}

/* The new communicator works and is distinct: a wildcard receive on `c` gets the
 * message sent on it, never the one sent on `other` with the same tag. */
static void works(MPI_Comm c, MPI_Comm other) {
    int r, n, sum = 0;
    OK(MPI_Comm_rank(c, &r));
    OK(MPI_Comm_size(c, &n));
    int to = (r + 1) % n, from = (r + n - 1) % n;
    int a = 1000 + r, b = 2000 + r, got = -1;
    MPI_Status st;
    OK(MPI_Send(&b, 1, MPI_INT, to, 9, other));
    OK(MPI_Send(&a, 1, MPI_INT, to, 9, c));
    OK(MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, c, &st));
    CHECK(got == 1000 + from && st.MPI_SOURCE == from);
    OK(MPI_Recv(&got, 1, MPI_INT, from, 9, other, MPI_STATUS_IGNORE));
    CHECK(got == 2000 + from);
    OK(MPI_Allreduce(&r, &sum, 1, MPI_INT, MPI_SUM, c));
    CHECK(sum == n * (n - 1) / 2);
}

int main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &np));

    /* Attributes are copied (at the call). */
    int key, val = 42, *got, flag;
    OK(MPI_Comm_create_keyval(count_copy, MPI_COMM_NULL_DELETE_FN, &key, NULL));
    OK(MPI_Comm_set_attr(MPI_COMM_WORLD, key, &val));

    for (int round = 0; round < 20; round++) {
        MPI_Comm c = start_then_talk(MPI_COMM_WORLD, 1);
        OK(MPI_Comm_get_attr(c, key, &got, &flag));
        CHECK(flag == 1 && got == &val);
        works(c, MPI_COMM_WORLD);
        OK(MPI_Comm_free(&c));
    }
    CHECK(copies == 20);
    {
        MPI_Comm c;
        MPI_Request r;
        OK(MPI_Comm_idup_with_info(MPI_COMM_WORLD, MPI_INFO_NULL, &c, &r));
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        works(c, MPI_COMM_WORLD);
        OK(MPI_Comm_free(&c));
    }

    /* Three at once, a blocking dup of another communicator before any completes;
     * completed in reverse order, the last by a test loop with traffic meanwhile. */
    MPI_Comm other;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &other));
    for (int round = 0; round < 20; round++) {
        MPI_Comm c[3], blocking;
        MPI_Request reqs[3];
        for (int k = 0; k < 3; k++) {
            OK(MPI_Comm_idup(MPI_COMM_WORLD, &c[k], &reqs[k]));
        }
        OK(MPI_Comm_dup(other, &blocking));
        OK(MPI_Wait(&reqs[2], MPI_STATUS_IGNORE));
        OK(MPI_Wait(&reqs[1], MPI_STATUS_IGNORE));
        /* Traffic of its own (to itself: the ranks loop different numbers of times)
         * between tests. */
        int done = 0;
        while (!done) {
            int v = me + round, w = -1;
            OK(MPI_Sendrecv(&v, 1, MPI_INT, me, 4, &w, 1, MPI_INT, me, 4, other,
                            MPI_STATUS_IGNORE));
            CHECK(w == me + round);
            OK(MPI_Test(&reqs[0], &done, MPI_STATUS_IGNORE));
        }
        CHECK(reqs[0] == MPI_REQUEST_NULL);
        for (int k = 0; k < 3; k++) {
            works(c[k], blocking);
        }
        works(blocking, c[0]);
        for (int k = 0; k < 3; k++) {
            OK(MPI_Comm_free(&c[k]));
        }
        OK(MPI_Comm_free(&blocking));
    }
    OK(MPI_Comm_free(&other));

    /* On an inter-communicator between the even and the odd ranks. */
    if (np >= 2) {
        MPI_Comm half, inter;
        OK(MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half));
        OK(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, me % 2 == 0 ? 1 : 0, 77, &inter));
        for (int round = 0; round < 5; round++) {
            MPI_Comm c = start_then_talk(inter, 1);
            int isinter, rs, lr, rsz;
            OK(MPI_Comm_test_inter(c, &isinter));
            OK(MPI_Comm_remote_size(c, &rs));
            OK(MPI_Comm_remote_size(inter, &rsz));
            OK(MPI_Comm_rank(c, &lr));
            CHECK(isinter == 1 && rs == rsz);
            /* Each local rank 0 sends the other group's rank 0 its group's parity. */
            if (lr == 0) {
                int mine = me % 2, theirs = -1;
                OK(MPI_Sendrecv(&mine, 1, MPI_INT, 0, 5, &theirs, 1, MPI_INT, 0, 5, c,
                                MPI_STATUS_IGNORE));
                CHECK(theirs == 1 - me % 2);
            }
            OK(MPI_Barrier(c));
            OK(MPI_Comm_free(&c));
        }
        OK(MPI_Comm_free(&inter));
        OK(MPI_Comm_free(&half));
    }
    OK(MPI_Comm_free_keyval(&key));
    printf("rank %d: IDUP OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
