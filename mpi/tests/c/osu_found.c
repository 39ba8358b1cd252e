/* What the fifth probe (the OSU micro-benchmarks and the Intel MPI Benchmarks, docs/mpi.md)
 * found wrong, one part per finding. `osu_found [part]` runs one part (`overtake`), or all
 * of them; each rank prints "OSU FOUND OK" at the end. Needs an even number of ranks
 * (pairs 0-1, 2-3, ...).
 *
 * Run with STEADFAST_PROGRESS_THREAD=0: the progress thread drains the rings while the
 * receiver naps, which hid the overtaking below (IMB's Exchange met it by timing). */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

static int me, np;

static void nap_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* Non-overtaking (MPI 4.1 section 3.5; IMB-MPI1 -DCHECK's Exchange failed at 16 KiB on
 * 2 of 4 ranks): the even rank of each pair sends a large message (128 KiB: offered by
 * address, an RTS) and then a small one to its partner, same tag, with MPI_Isend; the
 * odd rank receives twice only once both sit in its ring (it naps 100 ms after telling
 * the sender to go). Its first receive waits unposted (one named peer, a quiet
 * context): the drain queued the RTS in the matcher and then copied the small message,
 * which came after it, straight into that receive's buffer. The first receive must get
 * the large message and the second the small one; for a small message of 8 B (inline)
 * and of 16 KiB (eager), with a named tag and with MPI_ANY_TAG. */
#define BIG (128 * 1024)

static void overtake(void) {
    const int smalls[2] = {8, 16 * 1024};
    char *big = malloc(BIG), *small = malloc(16 * 1024), *got = malloc(BIG);
    CHECK(big && small && got);
    int peer = me ^ 1;
    for (int round = 0; round < 4; round++) {
        int ns = smalls[round % 2];
        int rtag = round < 2 ? 5 : MPI_ANY_TAG;
        if (me % 2 == 0) {
            memset(big, 'A' + round, BIG);
            memset(small, 'a' + round, ns);
            OK(MPI_Recv(NULL, 0, MPI_BYTE, peer, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            MPI_Request q[2];
            OK(MPI_Isend(big, BIG, MPI_CHAR, peer, 5, MPI_COMM_WORLD, &q[0]));
            OK(MPI_Isend(small, ns, MPI_CHAR, peer, 5, MPI_COMM_WORLD, &q[1]));
            OK(MPI_Waitall(2, q, MPI_STATUSES_IGNORE));
        } else {
            OK(MPI_Send(NULL, 0, MPI_BYTE, peer, 9, MPI_COMM_WORLD));
            nap_ms(100);
            MPI_Status st;
            int n = -1;
            memset(got, 0, BIG);
            OK(MPI_Recv(got, BIG, MPI_CHAR, peer, rtag, MPI_COMM_WORLD, &st));
            OK(MPI_Get_count(&st, MPI_CHAR, &n));
            CHECK(n == BIG);
            CHECK(got[0] == 'A' + round && got[BIG - 1] == 'A' + round);
            CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == 5);
            memset(got, 0, BIG);
            OK(MPI_Recv(got, BIG, MPI_CHAR, peer, rtag, MPI_COMM_WORLD, &st));
            OK(MPI_Get_count(&st, MPI_CHAR, &n));
            CHECK(n == ns);
            CHECK(got[0] == 'a' + round && got[ns - 1] == 'a' + round);
        }
    }
    free(big);
    free(small);
    free(got);
}

int main(int argc, char **argv) {
    OK(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    CHECK(np % 2 == 0);
    const char *part = argc > 1 ? argv[1] : "all";
    int all = strcmp(part, "all") == 0;
    if (all || strcmp(part, "overtake") == 0) overtake();
    OK(MPI_Barrier(MPI_COMM_WORLD));
    printf("rank %d: OSU FOUND OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
