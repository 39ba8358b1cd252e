/* The loopback TCP floors: two processes, one TCP connection over 127.0.0.1 with
 * TCP_NODELAY, receives polled (MSG_DONTWAIT in a loop: a sleeping reader's wake-up
 * would dominate, as it would for any transport that blocks). Processes pinned to
 * cores 0 and 1. Prints, each the median of 5 repetitions:
 *   tcp_loopback_8B <us>              8-byte ping-pong, half the round trip (20000)
 *   tcp_loopback_pingpong_4MiB <MB/s> 4 MiB ping-pong: 4 MiB / half the round trip (100)
 *   tcp_loopback_stream_4MiB <MB/s>   windows of 64 one-way 4 MiB writes, each window
 *                                     acknowledged by one byte (3 windows)
 * The last two bound what any transport over kernel TCP moves on this host: a
 * ping-pong and a one-way stream of large messages. */
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

static void full(int fd, char *b, long n, int rd) {
    for (long k = 0; k < n;) {
        ssize_t r = rd ? recv(fd, b + k, n - k, MSG_DONTWAIT) : write(fd, b + k, n - k);
        if (r < 0 && rd && errno == EAGAIN) continue;
        if (r <= 0) exit(1);
        k += (long)r;
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
    const long big = 4L << 20;
    const int pp_iters = 100, windows = 3, window = 64;
    char *buf = calloc(1, big);
    if (!buf) return 1;
    if (child == 0) {
        pin(1);
        int c = socket(AF_INET, SOCK_STREAM, 0);
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(c, (struct sockaddr *)&a, sizeof a)) return 1;
        for (int i = 0; i < reps * (iters + 1000); i++) {
            full(c, b, 8, 1);
            full(c, b, 8, 0);
        }
        for (int i = 0; i < reps * (pp_iters + 10); i++) {
            full(c, buf, big, 1);
            full(c, buf, big, 0);
        }
        for (int i = 0; i < reps * (windows + 1); i++) {
            for (int w = 0; w < window; w++) full(c, buf, big, 1);
            full(c, b, 1, 0);
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
    qsort(res, 5, sizeof(double), cmp);
    printf("tcp_loopback_8B %.3f\n", res[2]);
    for (int r = 0; r < reps; r++) {
        double t0 = 0;
        for (int i = -10; i < pp_iters; i++) {
            if (i == 0) t0 = now();
            full(s, buf, big, 0);
            full(s, buf, big, 1);
        }
        res[r] = big * 2.0 * pp_iters / (now() - t0) / 1e6;
    }
    qsort(res, 5, sizeof(double), cmp);
    printf("tcp_loopback_pingpong_4MiB %.0f\n", res[2]);
    for (int r = 0; r < reps; r++) {
        double t0 = 0;
        for (int i = -1; i < windows; i++) {
            if (i == 0) t0 = now();
            for (int w = 0; w < window; w++) full(s, buf, big, 0);
            full(s, b, 1, 1);
        }
        res[r] = big * (double)window * windows / (now() - t0) / 1e6;
    }
    qsort(res, 5, sizeof(double), cmp);
    printf("tcp_loopback_stream_4MiB %.0f\n", res[2]);
    waitpid(child, NULL, 0);
    return 0;
}
