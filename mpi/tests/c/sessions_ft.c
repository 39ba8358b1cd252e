/*
 * ULFM on communicators of the Sessions model, without MPI_Init: a communicator A over
 * mpi://WORLD, a barrier on it, then the last rank SIGKILLs itself once each survivor
 * told it that it is past the barrier. The survivors'
 * MPI_Comm_create_from_group over mpi://WORLD must return (never hang) with
 * MPIX_ERR_PROC_FAILED, raised on the handler it was given (a recording one). A is an
 * ordinary communicator: MPIX_Comm_get_failed names the dead rank, MPIX_Comm_revoke
 * makes its next barrier fail with MPIX_ERR_REVOKED, MPIX_Comm_shrink gives the
 * survivors, MPIX_Comm_agree and an allreduce work on the shrunk one; the group of
 * the survivors (mpi://WORLD less the failed) makes a new communicator by
 * MPI_Comm_create_from_group, with an allreduce. The session then ends. Each
 * survivor prints "rank R: SESSIONS FT OK".
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdio.h>

static int me = -1;

#include "check.h"
#include "past.h"

static int handler_calls, handler_code;

static void on_comm(MPI_Comm *c, int *code, ...) {
    (void)c;
    handler_calls++;
    handler_code = *code;
}

static int class_of(int rc) {
    int cls = -1;
    MPI_Error_class(rc, &cls);
    return cls;
}

int main(void) {
    MPI_Session s;
    MPI_Group world, failed, alive;
    MPI_Comm a, b = MPI_COMM_NULL, shrunk, c;
    MPI_Errhandler eh;
    int np = 0, n = 0;
    OK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s));
    OK(MPI_Group_from_session_pset(s, "mpi://WORLD", &world));
    OK(MPI_Group_rank(world, &me));
    OK(MPI_Group_size(world, &np));
    CHECK(np >= 3);
    OK(MPI_Comm_create_from_group(world, "ft.a", MPI_INFO_NULL, MPI_ERRORS_RETURN, &a));
    OK(MPI_Barrier(a));
    OK(others_past(a, np - 1));
    if (me == np - 1)
        raise(SIGKILL);

    OK(MPI_Comm_create_errhandler(on_comm, &eh));
    int rc = MPI_Comm_create_from_group(world, "ft.b", MPI_INFO_NULL, eh, &b);
    CHECK(class_of(rc) == MPIX_ERR_PROC_FAILED && b == MPI_COMM_NULL);
    CHECK(handler_calls == 1 && handler_code == rc);

    OK(MPIX_Comm_get_failed(a, &failed));
    OK(MPI_Group_size(failed, &n));
    CHECK(n == 1);
    int dead = -1, dead_in_world = -1, zero = 0;
    OK(MPI_Group_translate_ranks(failed, 1, &zero, world, &dead_in_world));
    dead = dead_in_world;
    CHECK(dead == np - 1);
    OK(MPIX_Comm_revoke(a));
    CHECK(class_of(MPI_Barrier(a)) == MPIX_ERR_REVOKED);
    OK(MPIX_Comm_shrink(a, &shrunk));
    OK(MPI_Comm_size(shrunk, &n));
    CHECK(n == np - 1);
    int flag = 1;
    OK(MPIX_Comm_agree(shrunk, &flag));
    CHECK(flag == 1);
    int one = 1, sum = 0;
    OK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, shrunk));
    CHECK(sum == np - 1);

    OK(MPI_Group_difference(world, failed, &alive));
    OK(MPI_Comm_create_from_group(alive, "ft.c", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c));
    OK(MPI_Comm_size(c, &n));
    CHECK(n == np - 1);
    sum = 0;
    OK(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, c));
    CHECK(sum == (np - 1) * (np - 2) / 2);

    OK(MPI_Comm_free(&c));
    OK(MPI_Comm_free(&shrunk));
    OK(MPI_Comm_free(&a));
    OK(MPI_Group_free(&alive));
    OK(MPI_Group_free(&failed));
    OK(MPI_Group_free(&world));
    OK(MPI_Errhandler_free(&eh));
    printf("rank %d: SESSIONS FT OK\n", me);
    OK(MPI_Session_finalize(&s));
    return 0;
}
