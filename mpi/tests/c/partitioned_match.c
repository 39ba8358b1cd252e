/*
 * How partitioned messages match (MPI 4.1, 5.2.3), between rank pairs (r, r^1), the
 * even rank sending:
 * - apart from ordinary messages: an ordinary zero-byte MPI_Recv with the same tag
 *   takes the ordinary MPI_Send that follows the partitioned send, not the partitioned
 *   message; an MPI_ANY_SOURCE/MPI_ANY_TAG MPI_Irecv posted next is still pending once
 *   the partitioned transfer completed, and then takes an ordinary message;
 * - in the order of the initialization calls: three sends to the partner with one tag,
 *   started in the order 2, 0, 1, each one's data in the receive initialized in the
 *   same position, started 0, 1, 2; twice, so restarted requests keep their pairing;
 * - by tag: three sends with tags 2, 1, 0 initialized in that order, received by
 *   receives with tags 0, 1, 2;
 * - the status names the partner and the program's tag.
 * With "inter", the same over an inter-communicator of the even and the odd ranks.
 * Each rank prints "rank R: PMATCH OK".
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int me = -1;

#include "check.h"

#define PARTS 4
#define COUNT 16
#define TOTAL (PARTS * COUNT)

static int bufs[3][TOTAL];

static void fill(int *b, int v) {
    for (int i = 0; i < TOTAL; i++)
        b[i] = v * 1000 + i;
}

static void check_data(const int *b, int v) {
    for (int i = 0; i < TOTAL; i++)
        CHECK(b[i] == v * 1000 + i);
}

static void send_all(MPI_Request r, int *b, int v) {
    OK(MPI_Start(&r));
    fill(b, v);
    OK(MPI_Pready_range(0, PARTS - 1, r));
}

/* Apart from ordinary messages. */
static void apart(MPI_Comm comm, int partner, int sender) {
    int a = 0;
    MPI_Request r, any;
    MPI_Status st;
    if (sender) {
        a = 41;
        OK(MPI_Psend_init(&a, 1, 1, MPI_INT, partner, 0, comm, MPI_INFO_NULL, &r));
        OK(MPI_Start(&r));
        OK(MPI_Pready(0, r));
        OK(MPI_Send(NULL, 0, MPI_INT, partner, 0, comm));
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        /* The receiver's wildcard receive waits for this one. */
        OK(MPI_Barrier(comm));
        int b = 42;
        OK(MPI_Send(&b, 1, MPI_INT, partner, 5, comm));
    } else {
        int got = -1;
        OK(MPI_Precv_init(&a, 1, 1, MPI_INT, partner, 0, comm, MPI_INFO_NULL, &r));
        /* The ordinary send follows the partitioned one: a receive that could take
         * either gets the ordinary one (zero bytes: the partitioned one would not
         * fit). */
        OK(MPI_Recv(NULL, 0, MPI_INT, partner, 0, comm, &st));
        int n = -1;
        OK(MPI_Get_count(&st, MPI_INT, &n));
        CHECK(n == 0);
        /* The partitioned message may be in already: a wildcard receive must not
         * take it. */
        OK(MPI_Irecv(&got, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &any));
        OK(MPI_Start(&r));
        OK(MPI_Wait(&r, &st));
        CHECK(a == 41);
        CHECK(st.MPI_SOURCE == partner && st.MPI_TAG == 0);
        int flag = 1;
        OK(MPI_Test(&any, &flag, MPI_STATUS_IGNORE));
        CHECK(!flag);
        OK(MPI_Barrier(comm));
        OK(MPI_Wait(&any, &st));
        CHECK(got == 42 && st.MPI_TAG == 5 && st.MPI_SOURCE == partner);
    }
    OK(MPI_Request_free(&r));
}

/* In the order of the initialization calls, twice. */
static void init_order(MPI_Comm comm, int partner, int sender) {
    MPI_Request r[3];
    MPI_Status st[3];
    for (int i = 0; i < 3; i++) {
        if (sender)
            OK(MPI_Psend_init(bufs[i], PARTS, COUNT, MPI_INT, partner, 7, comm, MPI_INFO_NULL,
                              &r[i]));
        else
            OK(MPI_Precv_init(bufs[i], PARTS, COUNT, MPI_INT, partner, 7, comm, MPI_INFO_NULL,
                              &r[i]));
    }
    for (int round = 0; round < 2; round++) {
        if (sender) {
            int order[3] = {2, 0, 1};
            for (int k = 0; k < 3; k++)
                send_all(r[order[k]], bufs[order[k]], 10 * round + order[k] + 1);
            OK(MPI_Waitall(3, r, st));
        } else {
            for (int i = 0; i < 3; i++) {
                fill(bufs[i], -1);
                OK(MPI_Start(&r[i]));
            }
            OK(MPI_Waitall(3, r, st));
            for (int i = 0; i < 3; i++) {
                check_data(bufs[i], 10 * round + i + 1);
                CHECK(st[i].MPI_SOURCE == partner && st[i].MPI_TAG == 7);
            }
        }
        OK(MPI_Barrier(comm));
    }
    for (int i = 0; i < 3; i++)
        OK(MPI_Request_free(&r[i]));
}

/* By tag: sends initialized with tags 2, 1, 0, receives with 0, 1, 2. */
static void by_tag(MPI_Comm comm, int partner, int sender) {
    MPI_Request r[3];
    MPI_Status st[3];
    if (sender) {
        for (int t = 2; t >= 0; t--)
            OK(MPI_Psend_init(bufs[t], PARTS, COUNT, MPI_INT, partner, t, comm, MPI_INFO_NULL,
                              &r[t]));
        for (int t = 0; t < 3; t++)
            send_all(r[t], bufs[t], 50 + t);
        OK(MPI_Waitall(3, r, MPI_STATUSES_IGNORE));
    } else {
        for (int t = 0; t < 3; t++) {
            fill(bufs[t], -1);
            OK(MPI_Precv_init(bufs[t], PARTS, COUNT, MPI_INT, partner, t, comm, MPI_INFO_NULL,
                              &r[t]));
        }
        OK(MPI_Startall(3, r));
        OK(MPI_Waitall(3, r, st));
        for (int t = 0; t < 3; t++) {
            check_data(bufs[t], 50 + t);
            CHECK(st[t].MPI_TAG == t && st[t].MPI_SOURCE == partner);
        }
    }
    for (int t = 0; t < 3; t++)
        OK(MPI_Request_free(&r[t]));
}

int main(int argc, char **argv) {
    int size;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size % 2 == 0);
    int inter = argc > 1 && strcmp(argv[1], "inter") == 0;
    MPI_Comm comm = MPI_COMM_WORLD, local = MPI_COMM_NULL;
    int partner = me ^ 1;
    if (inter) {
        /* Even ranks on one side, odd on the other; the partner's rank in the remote
         * group is this rank's in the local one. */
        OK(MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &local));
        OK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, me % 2 ? 0 : 1, 9, &comm));
        OK(MPI_Comm_rank(local, &partner));
    }
    int sender = me % 2 == 0;
    apart(comm, partner, sender);
    init_order(comm, partner, sender);
    by_tag(comm, partner, sender);
    if (inter) {
        OK(MPI_Comm_free(&comm));
        OK(MPI_Comm_free(&local));
    }
    printf("rank %d: PMATCH OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
