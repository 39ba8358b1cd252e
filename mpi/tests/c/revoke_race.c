/*
 * A member revokes a new communicator as soon as its own creation call has returned,
 * while the other members may still be inside theirs (ULFM allows a revoke at any
 * time; a communicator handed out is the program's). For each way of making one
 * (MPI_Comm_dup, MPI_Comm_split, MPI_Comm_create, MPIX_Comm_shrink, MPI_Comm_create_group)
 * and ITERS times, with the revoker moving round the ranks, every member checks that
 * - its creation call succeeds (a revoke of the new communicator must not make it
 *   fail: the library's own twin of the communicator is made after a faster member
 *   may have revoked it);
 * - its next collective there fails with MPIX_ERR_REVOKED (not MPI_ERR_COMM);
 * - MPIX_Comm_shrink of the revoked communicator gives every member back, and a
 *   barrier and an allreduce work on it;
 * - both free.
 * Each rank prints "rank R: REVOKE RACE OK".
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <stdio.h>
#include <stdlib.h>

static int me = -1;

#include "check.h"

#define ITERS 60

static int class_of(int rc) {
    int cls = -1;
    OK(MPI_Error_class(rc, &cls));
    return cls;
}

/* Makes communicator `kind` over `base` (all of its members). */
static int create(int kind, MPI_Comm base, MPI_Comm *out) {
    MPI_Group g;
    int rc;
    switch (kind) {
    case 0:
        return MPI_Comm_dup(base, out);
    case 1:
        return MPI_Comm_split(base, 7, -me, out);
    case 2:
        OK(MPI_Comm_group(base, &g));
        rc = MPI_Comm_create(base, g, out);
        OK(MPI_Group_free(&g));
        return rc;
    case 3:
        return MPIX_Comm_shrink(base, out);
    default:
        OK(MPI_Comm_group(base, &g));
        rc = MPI_Comm_create_group(base, g, 5, out);
        OK(MPI_Group_free(&g));
        return rc;
    }
}

int main(int argc, char **argv) {
    int size;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    for (int it = 0; it < ITERS; it++) {
        for (int kind = 0; kind < 5; kind++) {
            MPI_Comm c = MPI_COMM_NULL, s = MPI_COMM_NULL;
            int rc = create(kind, MPI_COMM_WORLD, &c);
            if (rc != MPI_SUCCESS) {
                char str[MPI_MAX_ERROR_STRING];
                int len = 0;
                MPI_Error_string(rc, str, &len);
                fprintf(stderr, "rank %d: iteration %d kind %d: creation failed: %s\n", me,
                        it, kind, str);
            }
            CHECK(rc == MPI_SUCCESS && c != MPI_COMM_NULL);
            OK(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
            if (me == it % size) {
                OK(MPIX_Comm_revoke(c));
            } else {
                CHECK(class_of(MPI_Barrier(c)) == MPIX_ERR_REVOKED);
            }
            int flag = 0, n = 0, sum = 0, one = 1;
            OK(MPIX_Comm_is_revoked(c, &flag));
            CHECK(flag == 1);
            OK(MPIX_Comm_shrink(c, &s));
            OK(MPI_Comm_size(s, &n));
            CHECK(n == size);
            OK(MPI_Barrier(s));
            OK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, s));
            CHECK(sum == size);
            OK(MPI_Comm_free(&c));
            OK(MPI_Comm_free(&s));
        }
    }
    printf("rank %d: REVOKE RACE OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
