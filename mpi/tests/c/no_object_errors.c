/*
 * Where an error that concerns no communicator is raised (a call that names none, or an
 * invalid communicator handle): MPI 4.1 raises it on MPI_COMM_SELF; a program written
 * for MPI 3 sets MPI_COMM_WORLD's handler and expects it there. The library uses
 * MPI_COMM_SELF's handler once the program has changed it, else MPI_COMM_WORLD's.
 * Checked here with MPI_Type_size(MPI_DATATYPE_NULL) and MPI_Group_size(MPI_GROUP_NULL)
 * (no communicator) and MPI_Comm_rank on a freed communicator (an invalid handle):
 * with only MPI_COMM_WORLD's handler set (to MPI_ERRORS_RETURN, then to a recording
 * handler), then with MPI_COMM_SELF's set to another recording handler, then with it
 * set back to MPI_ERRORS_ARE_FATAL (the one it started with). An error on a live
 * communicator still goes to that communicator's handler. Each rank prints
 * "rank R: NO OBJECT ERRORS OK".
 */
#include <mpi.h>
#include <stdio.h>

static int me = -1;

#include "check.h"

static int world_calls, self_calls;
static MPI_Comm last_comm = MPI_COMM_NULL;

static void on_world(MPI_Comm *comm, int *code, ...) {
    (void)code;
    world_calls++;
    last_comm = *comm;
}

static void on_self(MPI_Comm *comm, int *code, ...) {
    (void)code;
    self_calls++;
    last_comm = *comm;
}

static int error_class(int rc) {
    int cls = -1;
    MPI_Error_class(rc, &cls);
    return cls;
}

/* The three erroneous calls; each must fail with its class. */
static void three_errors(void) {
    int size = -1, rank = -1;
    CHECK(error_class(MPI_Type_size(MPI_DATATYPE_NULL, &size)) == MPI_ERR_TYPE);
    CHECK(error_class(MPI_Group_size(MPI_GROUP_NULL, &size)) == MPI_ERR_GROUP);
    MPI_Comm dup, stale;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    stale = dup;
    OK(MPI_Comm_free(&dup));
    CHECK(error_class(MPI_Comm_rank(stale, &rank)) == MPI_ERR_COMM);
}

int main(int argc, char **argv) {
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));

    /* MPI 3 style: MPI_COMM_WORLD's handler only. */
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    three_errors();
    MPI_Errhandler hw, hs;
    OK(MPI_Comm_create_errhandler(on_world, &hw));
    OK(MPI_Comm_create_errhandler(on_self, &hs));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, hw));
    three_errors();
    CHECK(world_calls == 3 && self_calls == 0 && last_comm == MPI_COMM_WORLD);

    /* MPI 4 style: MPI_COMM_SELF's handler, once set, takes them. */
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, hs));
    three_errors();
    CHECK(world_calls == 3 && self_calls == 3 && last_comm == MPI_COMM_SELF);

    /* An error on a live communicator stays with it. */
    int x = 0;
    CHECK(error_class(MPI_Send(&x, 1, MPI_INT, 1 << 20, 0, MPI_COMM_WORLD)) == MPI_ERR_RANK);
    CHECK(world_calls == 4 && self_calls == 3 && last_comm == MPI_COMM_WORLD);
    CHECK(error_class(MPI_Send(&x, 1, MPI_INT, 1 << 20, 0, MPI_COMM_SELF)) == MPI_ERR_RANK);
    CHECK(world_calls == 4 && self_calls == 4 && last_comm == MPI_COMM_SELF);

    /* Back to the handler it started with: MPI_COMM_WORLD's again. */
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL));
    three_errors();
    CHECK(world_calls == 7 && self_calls == 4 && last_comm == MPI_COMM_WORLD);

    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Errhandler_free(&hw));
    OK(MPI_Errhandler_free(&hs));
    printf("rank %d: NO OBJECT ERRORS OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
