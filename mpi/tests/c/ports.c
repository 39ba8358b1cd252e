/* Ports and names between processes of one launch (docs/spawn.md, "Ports").
 *
 * `halves` (-np 4): the world splits in two halves. Rank 0 opens a port and
 * publishes it; the other half looks it up and connects while the first accepts:
 * sizes and ranks, verified messages both ways, a merge (accepting side first) and an
 * allreduce over it, disconnect. Then the errors, through MPI_ERRORS_RETURN: a
 * malformed port name, a port of another launch, a closed port (before the connect,
 * and closed while a connect waits) give MPI_ERR_PORT; an unpublished name
 * MPI_ERR_NAME; unpublishing it MPI_ERR_SERVICE.
 * `spawned` (-np 2 --universe 4): the parents open a port, spawn 2 children (this
 * program, `portchild`) and send them the port's name over the parent
 * inter-communicator; the children connect, the parents accept, they talk. Child 0
 * then opens a port of its own, publishes it and sends it to parent 0; once the
 * child has finalized, the name is gone (MPI_ERR_NAME) and a connect to the port is
 * MPI_ERR_PORT (not the child's exit as a failure).
 * `join` (-np 2): rank 0 listens on a TCP socket of the loopback, rank 1 connects to
 * it, and both MPI_Comm_join over it: messages both ways; a bad descriptor is
 * MPI_ERR_ARG.
 * `opener_dies` (-np 2): rank 1 connects to rank 0's port, which rank 0 never
 * accepts: it SIGKILLs itself, and the connect ends with MPIX_ERR_PROC_FAILED. */
#include <mpi.h>
#include <mpi-ext.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int me = -1;
#include "check.h"

#define SERVICE "steadfast-ports-test"

static int class_of(int rc) {
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* Over `inter` (local rank `lr`, both sides of 2): rank r sends remote rank r and
 * (r + 1) % 2 a value naming both ends, and checks what comes back. */
static void exchange(MPI_Comm inter, int side) {
    int lr, ls, rs;
    OK(MPI_Comm_rank(inter, &lr));
    OK(MPI_Comm_size(inter, &ls));
    OK(MPI_Comm_remote_size(inter, &rs));
    CHECK(ls == 2 && rs == 2);
    for (int to = 0; to < 2; to++) {
        int v = 1000 * side + 10 * lr + to;
        OK(MPI_Send(&v, 1, MPI_INT, to, 9, inter));
    }
    for (int from = 0; from < 2; from++) {
        int got = -1;
        OK(MPI_Recv(&got, 1, MPI_INT, from, 9, inter, MPI_STATUS_IGNORE));
        CHECK(got == 1000 * (1 - side) + 10 * from + lr);
    }
}

static void errors(void) {
    MPI_Comm c = MPI_COMM_WORLD;
    CHECK(class_of(MPI_Comm_connect("not a port", MPI_INFO_NULL, 0, MPI_COMM_SELF, &c)) ==
          MPI_ERR_PORT);
    CHECK(c == MPI_COMM_NULL);
    CHECK(class_of(MPI_Comm_connect("steadfast-port:0123456789abcdef:0:0", MPI_INFO_NULL, 0,
                                    MPI_COMM_SELF, &c)) == MPI_ERR_PORT);
    char port[MPI_MAX_PORT_NAME];
    OK(MPI_Open_port(MPI_INFO_NULL, port));
    OK(MPI_Close_port(port));
    CHECK(class_of(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &c)) == MPI_ERR_PORT);
    CHECK(class_of(MPI_Close_port(port)) == MPI_ERR_PORT);
    CHECK(class_of(MPI_Lookup_name("no-such-steadfast-service", MPI_INFO_NULL, port)) ==
          MPI_ERR_NAME);
    CHECK(class_of(MPI_Unpublish_name("no-such-steadfast-service", MPI_INFO_NULL, port)) ==
          MPI_ERR_SERVICE);
}

static void halves(void) {
    int size;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size == 4);
    int side = me < 2 ? 0 : 1; /* 0 accepts, 1 connects */
    MPI_Comm half, inter, merged;
    OK(MPI_Comm_split(MPI_COMM_WORLD, side, me, &half));
    char port[MPI_MAX_PORT_NAME] = "";
    if (me == 0) {
        OK(MPI_Open_port(MPI_INFO_NULL, port));
        CHECK(strlen(port) > 0 && strlen(port) < MPI_MAX_PORT_NAME);
        OK(MPI_Publish_name(SERVICE, MPI_INFO_NULL, port));
    }
    OK(MPI_Barrier(MPI_COMM_WORLD)); /* published before any lookup */
    if (side == 0) {
        OK(MPI_Comm_accept(port, MPI_INFO_NULL, 0, half, &inter));
    } else {
        if (me == 2) {
            OK(MPI_Lookup_name(SERVICE, MPI_INFO_NULL, port));
            CHECK(strncmp(port, "steadfast-port:", 15) == 0);
        }
        OK(MPI_Comm_connect(me == 2 ? port : NULL, MPI_INFO_NULL, 0, half, &inter));
    }
    OK(MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN));
    int flag, lr;
    OK(MPI_Comm_test_inter(inter, &flag));
    OK(MPI_Comm_rank(inter, &lr));
    CHECK(flag == 1 && lr == me % 2);
    exchange(inter, side);
    OK(MPI_Intercomm_merge(inter, side, &merged));
    int mr, ms, sum = 0;
    OK(MPI_Comm_rank(merged, &mr));
    OK(MPI_Comm_size(merged, &ms));
    CHECK(ms == 4 && mr == me); /* the accepting side first */
    int w = 1 << me;
    OK(MPI_Allreduce(&w, &sum, 1, MPI_INT, MPI_SUM, merged));
    CHECK(sum == 15);
    OK(MPI_Comm_free(&merged));
    OK(MPI_Comm_disconnect(&inter));
    CHECK(inter == MPI_COMM_NULL);
    if (me == 0) {
        OK(MPI_Unpublish_name(SERVICE, MPI_INFO_NULL, port));
        OK(MPI_Close_port(port));
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 2) {
        MPI_Comm c;
        CHECK(class_of(MPI_Lookup_name(SERVICE, MPI_INFO_NULL, port)) == MPI_ERR_NAME);
        CHECK(class_of(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &c)) ==
              MPI_ERR_PORT);
    }
    errors();
    /* A port closed while a connect waits on it. */
    if (me == 1) {
        OK(MPI_Open_port(MPI_INFO_NULL, port));
        OK(MPI_Send(port, MPI_MAX_PORT_NAME, MPI_CHAR, 3, 4, MPI_COMM_WORLD));
        sleep_ms(300);
        OK(MPI_Close_port(port));
    } else if (me == 3) {
        MPI_Comm c;
        OK(MPI_Recv(port, MPI_MAX_PORT_NAME, MPI_CHAR, 1, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(class_of(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &c)) ==
              MPI_ERR_PORT);
    }
    OK(MPI_Comm_free(&half));
    printf("rank %d: PORTS HALVES OK\n", me);
}

static void spawned(const char *prog) {
    char port[MPI_MAX_PORT_NAME] = "";
    MPI_Comm children, inter;
    if (me == 0)
        OK(MPI_Open_port(MPI_INFO_NULL, port));
    char *args[] = {"portchild", NULL};
    OK(MPI_Comm_spawn(prog, args, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &children,
                      MPI_ERRCODES_IGNORE));
    if (me == 0) {
        for (int c = 0; c < 2; c++)
            OK(MPI_Send(port, MPI_MAX_PORT_NAME, MPI_CHAR, c, 3, children));
    }
    OK(MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter));
    exchange(inter, 0);
    OK(MPI_Comm_disconnect(&inter));
    if (me == 0) {
        OK(MPI_Close_port(port));
        OK(MPI_Recv(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, 4, children, MPI_STATUS_IGNORE));
    }
    OK(MPI_Comm_disconnect(&children));
    if (me == 0) {
        /* The child's MPI_Finalize withdraws its name and closes its port. */
        char found[MPI_MAX_PORT_NAME];
        int rc = MPI_SUCCESS;
        for (int i = 0; i < 6000 && rc == MPI_SUCCESS; i++) {
            rc = MPI_Lookup_name("steadfast-child-port", MPI_INFO_NULL, found);
            if (rc == MPI_SUCCESS) {
                CHECK(strcmp(found, port) == 0);
                sleep_ms(10);
            }
        }
        CHECK(class_of(rc) == MPI_ERR_NAME);
        MPI_Comm c;
        CHECK(class_of(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &c)) ==
              MPI_ERR_PORT);
    }
    printf("rank %d: PORTS PARENT OK\n", me);
}

static void port_child(MPI_Comm parent) {
    char port[MPI_MAX_PORT_NAME] = "";
    MPI_Comm inter;
    OK(MPI_Recv(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, 3, parent, MPI_STATUS_IGNORE));
    OK(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter));
    int lr;
    OK(MPI_Comm_rank(inter, &lr));
    CHECK(lr == me);
    exchange(inter, 1);
    OK(MPI_Comm_disconnect(&inter));
    if (me == 0) {
        /* Left open and published: MPI_Finalize ends both. */
        OK(MPI_Open_port(MPI_INFO_NULL, port));
        OK(MPI_Publish_name("steadfast-child-port", MPI_INFO_NULL, port));
        OK(MPI_Send(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, 4, parent));
    }
    OK(MPI_Comm_disconnect(&parent));
    printf("child %d: PORTS CHILD OK\n", me);
}

static void join(void) {
    int sock = -1, port = 0;
    if (me == 0) {
        int lsock = socket(AF_INET, SOCK_STREAM, 0);
        CHECK(lsock >= 0);
        struct sockaddr_in a = {0};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        CHECK(bind(lsock, (struct sockaddr *)&a, sizeof a) == 0 && listen(lsock, 1) == 0);
        socklen_t len = sizeof a;
        CHECK(getsockname(lsock, (struct sockaddr *)&a, &len) == 0);
        port = ntohs(a.sin_port);
        OK(MPI_Send(&port, 1, MPI_INT, 1, 6, MPI_COMM_WORLD));
        sock = accept(lsock, NULL, NULL);
        CHECK(sock >= 0);
        close(lsock);
    } else {
        OK(MPI_Recv(&port, 1, MPI_INT, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        sock = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {0};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons((unsigned short)port);
        CHECK(sock >= 0 && connect(sock, (struct sockaddr *)&a, sizeof a) == 0);
    }
    MPI_Comm inter;
    OK(MPI_Comm_join(sock, &inter));
    int rs, v = 40 + me, got = -1;
    OK(MPI_Comm_remote_size(inter, &rs));
    CHECK(rs == 1);
    OK(MPI_Sendrecv(&v, 1, MPI_INT, 0, 1, &got, 1, MPI_INT, 0, 1, inter, MPI_STATUS_IGNORE));
    CHECK(got == 40 + (1 - me));
    OK(MPI_Comm_disconnect(&inter));
    close(sock);
    CHECK(class_of(MPI_Comm_join(-1, &inter)) == MPI_ERR_ARG && inter == MPI_COMM_NULL);
    printf("rank %d: JOIN OK\n", me);
}

static void opener_dies(void) {
    char port[MPI_MAX_PORT_NAME] = "";
    if (me == 0) {
        OK(MPI_Open_port(MPI_INFO_NULL, port));
        OK(MPI_Send(port, MPI_MAX_PORT_NAME, MPI_CHAR, 1, 2, MPI_COMM_WORLD));
        sleep_ms(500);
        raise(SIGKILL);
    }
    MPI_Comm c;
    OK(MPI_Recv(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    int rc = MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &c);
    CHECK(class_of(rc) == MPIX_ERR_PROC_FAILED && c == MPI_COMM_NULL);
    printf("rank %d: OPENER DIED OK\n", me);
}

int main(int argc, char **argv) {
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    const char *mode = argc > 1 ? argv[1] : "halves";
    MPI_Comm parent;
    OK(MPI_Comm_get_parent(&parent));
    if (strcmp(mode, "halves") == 0) {
        halves();
    } else if (strcmp(mode, "spawned") == 0) {
        spawned(argv[0]);
    } else if (strcmp(mode, "portchild") == 0) {
        CHECK(parent != MPI_COMM_NULL);
        port_child(parent);
    } else if (strcmp(mode, "join") == 0) {
        join();
    } else if (strcmp(mode, "opener_dies") == 0) {
        opener_dies();
    } else {
        CHECK(0);
    }
    OK(MPI_Finalize());
    return 0;
}
