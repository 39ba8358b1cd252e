/*
 * Concurrent spawns from many processes: the first process spawns FAN children one
 * at a time, each told to spawn FAN-1 of its own, and so on (FAN 4: 64 children,
 * up to 24 spawns in flight from different processes). Each child sends its parent
 * the errors of its subtree; the first process prints `SPAWN TREE OK <processes>`.
 * The shape of MPICH's spawn/concurrent_spawns test. Every spawn picks free spare
 * slots of the universe; a slot another spawn started meanwhile must be skipped, not
 * restarted. Run: steadfast-run -np 1 --universe 80 spawn_tree 4
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_FAN 6

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm parent, kids[MAX_FAN];
    MPI_Comm_get_parent(&parent);
    int fan = argc > 1 ? atoi(argv[1]) : 0;
    if (fan < 0 || fan > MAX_FAN) {
        fan = 0;
    }
    char next[8];
    snprintf(next, sizeof next, "%d", fan > 0 ? fan - 1 : 0);
    char *child_args[] = {next, NULL};
    int errors = 0, processes = 1;
    for (int i = 0; i < fan; i++) {
        int remote = -1;
        int rc = MPI_Comm_spawn(argv[0], child_args, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD,
                                &kids[i], MPI_ERRCODES_IGNORE);
        if (rc == MPI_SUCCESS) {
            MPI_Comm_remote_size(kids[i], &remote);
        }
        if (remote != 1) {
            printf("spawn %d of %d: code %d, %d children\n", i, fan, rc, remote);
            errors++;
        }
    }
    for (int i = 0; i < fan; i++) {
        int sub[2] = {1, 0};
        MPI_Recv(sub, 2, MPI_INT, 0, 0, kids[i], MPI_STATUS_IGNORE);
        errors += sub[1];
        processes += sub[0];
        MPI_Comm_disconnect(&kids[i]);
    }
    if (parent != MPI_COMM_NULL) {
        int mine[2] = {processes, errors};
        MPI_Send(mine, 2, MPI_INT, 0, 0, parent);
        MPI_Comm_disconnect(&parent);
    } else if (errors == 0) {
        printf("SPAWN TREE OK %d\n", processes);
    } else {
        printf("SPAWN TREE FAILED: %d errors\n", errors);
    }
    MPI_Finalize();
    return 0;
}
