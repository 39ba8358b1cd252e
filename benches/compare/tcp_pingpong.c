/* The loopback TCP floor: two processes, one TCP connection over 127.0.0.1 with
 * TCP_NODELAY, 8-byte ping-pong, receives polled (MSG_DONTWAIT in a loop: a sleeping
 * reader's wake-up would dominate, as it would for any transport that blocks);
 * prints "tcp_loopback_8B <us>" (half the round trip, median of 5 repetitions of
 * 20000). Processes pinned to cores 0 and 1. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    sched_setaffinity(0, sizeof s, &s);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void full(int fd, char *b, int n, int rd) {
    for (int k = 0; k < n;) {
        ssize_t r = rd ? recv(fd, b + k, n - k, MSG_DONTWAIT) : write(fd, b + k, n - k);
        if (r < 0 && rd && errno == EAGAIN) continue;
        if (r <= 0) exit(1);
        k += (int)r;
    }
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(void) {
    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    bind(ls, (struct sockaddr *)&a, sizeof a);
    listen(ls, 1);
    getsockname(ls, (struct sockaddr *)&a, &al);
    pid_t child = fork();
    char b[8] = {0};
    int reps = 5, iters = 20000;
    if (child == 0) {
        pin(1);
        int c = socket(AF_INET, SOCK_STREAM, 0);
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(c, (struct sockaddr *)&a, sizeof a)) return 1;
        for (int i = 0; i < reps * (iters + 1000); i++) {
            full(c, b, 8, 1);
            full(c, b, 8, 0);
        }
        return 0;
    }
    pin(0);
    int s = accept(ls, NULL, NULL);
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    double res[5];
    for (int r = 0; r < reps; r++) {
        double t0 = 0;
        for (int i = -1000; i < iters; i++) {
            if (i == 0) t0 = now();
            full(s, b, 8, 0);
            full(s, b, 8, 1);
        }
        res[r] = (now() - t0) * 1e6 / iters / 2;
    }
    waitpid(child, NULL, 0);
    qsort(res, 5, sizeof(double), cmp);
    printf("tcp_loopback_8B %.3f\n", res[2]);
    return 0;
}
