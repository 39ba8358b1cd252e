/*
 * MPI_THREAD_MULTIPLE at 2 ranks: a thread blocked in MPI_Recv must not keep another
 * thread of the same process from sending the message that unblocks the peer (the
 * library releases its lock between attempts), and two threads ping-pong on two
 * communicators at once. Each rank prints "rank R: THREADS OK".
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int me = -1;

#include "check.h"

static void *blocked_receiver(void *arg) {
    (void)arg;
    int v = -1;
    OK(MPI_Recv(&v, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(v == 11);
    return NULL;
}

struct pingpong {
    MPI_Comm comm;
    int rounds;
};

static void *pingpong(void *arg) {
    struct pingpong *p = arg;
    int peer = 1 - me, v = 0;
    for (int i = 0; i < p->rounds; i++) {
        if (me == 0) {
            v = i;
            OK(MPI_Send(&v, 1, MPI_INT, peer, 3, p->comm));
            OK(MPI_Recv(&v, 1, MPI_INT, peer, 3, p->comm, MPI_STATUS_IGNORE));
            CHECK(v == i + 1);
        } else {
            OK(MPI_Recv(&v, 1, MPI_INT, peer, 3, p->comm, MPI_STATUS_IGNORE));
            v++;
            OK(MPI_Send(&v, 1, MPI_INT, peer, 3, p->comm));
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    int provided, size, flag;
    OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    CHECK(provided == MPI_THREAD_MULTIPLE);
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size == 2);

    if (me == 0) {
        pthread_t t;
        CHECK(pthread_create(&t, NULL, blocked_receiver, NULL) == 0);
        struct timespec pause = {0, 100 * 1000 * 1000};
        nanosleep(&pause, NULL); /* the receiver is now blocked in MPI_Recv */
        OK(MPI_Is_thread_main(&flag));
        CHECK(flag == 1);
        int v = 22;
        OK(MPI_Send(&v, 1, MPI_INT, 1, 2, MPI_COMM_WORLD));
        CHECK(pthread_join(t, NULL) == 0);
    } else {
        int v = -1;
        OK(MPI_Recv(&v, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(v == 22);
        v = 11;
        OK(MPI_Send(&v, 1, MPI_INT, 0, 1, MPI_COMM_WORLD));
    }

    struct pingpong a = {MPI_COMM_NULL, 2000}, b = {MPI_COMM_NULL, 2000};
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &a.comm));
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &b.comm));
    pthread_t ta, tb;
    CHECK(pthread_create(&ta, NULL, pingpong, &a) == 0);
    CHECK(pthread_create(&tb, NULL, pingpong, &b) == 0);
    CHECK(pthread_join(ta, NULL) == 0 && pthread_join(tb, NULL) == 0);
    OK(MPI_Comm_free(&a.comm));
    OK(MPI_Comm_free(&b.comm));
    OK(MPI_Finalize());
    printf("rank %d: THREADS OK\n", me);
    return 0;
}
