/*
 * Communicator creation beside a fresh failure: rank V (the argument) SIGKILLs itself
 * right after a barrier; the survivors at once call MPI_Comm_dup, MPI_Comm_split,
 * MPI_Comm_create and MPI_Comm_idup (then MPI_Wait) on MPI_COMM_WORLD (MPI_ERRORS_RETURN). Each call must return, with
 * MPI_SUCCESS or MPIX_ERR_PROC_FAILED (ULFM lets the outcome differ between ranks:
 * those that got every message before they learnt of the failure succeed), never
 * wait forever on a live rank that gave up. The pattern of the ULFM tutorial's
 * ft_comm_dup then makes the outcome uniform: MPIX_Comm_agree on the flag, a
 * communicator made where the agreement says it failed is freed. Finally a shrink
 * gives N-1 ranks, on which a dup and an allreduce work. Each survivor prints
 * "rank R: CREATE FT OK".
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static int me = -1;

#include "check.h"
#include "past.h"

static int class_of(int rc) {
    int cls = -1;
    OK(MPI_Error_class(rc, &cls));
    return cls;
}

/* Makes communicator `kind` over `base`; the uniform outcome (1: made everywhere). */
static int create_agreed(int kind, MPI_Comm base, int size) {
    MPI_Comm c = MPI_COMM_NULL;
    MPI_Group g;
    int rc;
    switch (kind) {
    case 0:
        rc = MPI_Comm_dup(base, &c);
        break;
    case 1:
        rc = MPI_Comm_split(base, 1, me, &c);
        break;
    case 3: {
        MPI_Request r;
        rc = MPI_Comm_idup(base, &c, &r);
        if (rc == MPI_SUCCESS) {
            rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
        if (rc != MPI_SUCCESS) {
            /* Not a communicator: the dup did not complete. */
            c = MPI_COMM_NULL;
        }
        break;
    }
    default:
        OK(MPI_Comm_group(base, &g));
        rc = MPI_Comm_create(base, g, &c);
        OK(MPI_Group_free(&g));
        break;
    }
    if (rc != MPI_SUCCESS && class_of(rc) != MPIX_ERR_PROC_FAILED) {
        char s[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, s, &len);
        fprintf(stderr, "rank %d: creation %d: %s\n", me, kind, s);
    }
    CHECK(rc == MPI_SUCCESS || class_of(rc) == MPIX_ERR_PROC_FAILED);
    CHECK((rc == MPI_SUCCESS) == (c != MPI_COMM_NULL));
    int flag = rc == MPI_SUCCESS;
    int arc = MPIX_Comm_agree(base, &flag);
    CHECK(arc == MPI_SUCCESS || class_of(arc) == MPIX_ERR_PROC_FAILED);
    if (c != MPI_COMM_NULL) {
        int n = 0;
        OK(MPI_Comm_size(c, &n));
        CHECK(n == size);
        OK(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
        OK(MPI_Comm_free(&c));
    }
    return flag;
}

int main(int argc, char **argv) {
    int size;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK(argc == 2);
    int victim = atoi(argv[1]);
    CHECK(victim >= 0 && victim < size);

    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(others_past(MPI_COMM_WORLD, victim));
    if (me == victim)
        raise(SIGKILL);
    for (int kind = 0; kind < 4; kind++) {
        /* Made somewhere or not, the agreement says the same at every survivor. */
        int made = create_agreed(kind, MPI_COMM_WORLD, size);
        CHECK(made == 0 || made == 1);
    }

    MPI_Comm s, d;
    int n = 0, sum = 0, one = 1;
    OK(MPIX_Comm_shrink(MPI_COMM_WORLD, &s));
    OK(MPI_Comm_size(s, &n));
    CHECK(n == size - 1);
    OK(MPI_Comm_dup(s, &d));
    OK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, d));
    CHECK(sum == size - 1);
    OK(MPI_Comm_free(&d));
    OK(MPI_Comm_free(&s));
    printf("rank %d: CREATE FT OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
