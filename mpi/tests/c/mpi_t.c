/*
 * MPI 4.1's tool information interface (MPI_T), at 1 or more ranks. The test runs with
 * STEADFAST_SHM_EAGER_MAX=12345 and STEADFAST_HEARTBEAT_MS=250 in the environment.
 * - MPI_T_init_thread before MPI_Init, twice (reference counted), with MPI_T_finalize
 *   matching each; a call after the last finalize is MPI_T_ERR_NOT_INITIALIZED.
 * - Every control variable: its info (name, description, datatype, scope), its index
 *   found again by name, a handle, a read; steadfast_shm_eager_max reads 12345 and
 *   steadfast_heartbeat_ms 250 (the values the runtime uses), steadfast_provider a
 *   null-terminated string of its count; a write is MPI_T_ERR_CVAR_SET_NEVER.
 * - Strings: a buffer too short gets a truncated, null-terminated copy; a null buffer
 *   gets the length needed.
 * - Enumerations of the variables that have one: every item named.
 * - Categories: every variable listed exactly once.
 * - No performance variables, event types or sources: their counts are 0 and an index
 *   is MPI_T_ERR_INVALID_INDEX; a session is made and freed.
 * - Errors: a bad index, an unknown name, a freed handle.
 * - MPI_T used again after MPI_Finalize.
 * Each rank prints "rank R: MPI_T OK".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me = -1;
#include "check.h"

static int cvar_index(const char *name) {
    int i = -1;
    OK(MPI_T_cvar_get_index(name, &i));
    return i;
}

/* Reads cvar `i` as an unsigned long or int (per its datatype). */
static unsigned long read_number(int i) {
    MPI_T_cvar_handle h;
    int count = 0;
    OK(MPI_T_cvar_handle_alloc(i, NULL, &h, &count));
    CHECK(count == 1);
    char name[128];
    int name_len = sizeof name, verbosity, bind, scope;
    MPI_Datatype dt;
    MPI_T_enum e;
    OK(MPI_T_cvar_get_info(i, name, &name_len, &verbosity, &dt, &e, NULL, NULL, &bind,
                           &scope));
    unsigned long v = 0;
    if (dt == MPI_UNSIGNED_LONG) {
        OK(MPI_T_cvar_read(h, &v));
    } else {
        CHECK(dt == MPI_INT);
        int x = -1;
        OK(MPI_T_cvar_read(h, &x));
        v = (unsigned long)x;
    }
    OK(MPI_T_cvar_handle_free(&h));
    CHECK(h == MPI_T_CVAR_HANDLE_NULL);
    return v;
}

static void every_cvar(void) {
    int n = 0;
    OK(MPI_T_cvar_get_num(&n));
    CHECK(n > 0);
    int *listed = calloc((size_t)n, sizeof(int));
    CHECK(listed != NULL);
    for (int i = 0; i < n; i++) {
        char name[256], desc[2048];
        int name_len = sizeof name, desc_len = sizeof desc, verbosity, bind, scope;
        MPI_Datatype dt;
        MPI_T_enum e;
        OK(MPI_T_cvar_get_info(i, name, &name_len, &verbosity, &dt, &e, desc, &desc_len,
                               &bind, &scope));
        CHECK(name_len == (int)strlen(name) + 1 && strlen(name) > 0);
        CHECK(desc_len == (int)strlen(desc) + 1);
        CHECK(bind == MPI_T_BIND_NO_OBJECT);
        CHECK(scope == MPI_T_SCOPE_CONSTANT || scope == MPI_T_SCOPE_READONLY);
        CHECK(cvar_index(name) == i);
        MPI_T_cvar_handle h;
        int count = 0;
        OK(MPI_T_cvar_handle_alloc(i, NULL, &h, &count));
        CHECK(count >= 1);
        char *buf = calloc((size_t)count + 8, 8);
        CHECK(buf != NULL);
        OK(MPI_T_cvar_read(h, buf));
        if (dt == MPI_CHAR) CHECK(strlen(buf) == (size_t)count - 1);
        int w = MPI_T_cvar_write(h, buf);
        CHECK(w == MPI_T_ERR_CVAR_SET_NEVER);
        if (e != MPI_T_ENUM_NULL) {
            int items = 0;
            char ename[128];
            int ename_len = sizeof ename;
            OK(MPI_T_enum_get_info(e, &items, ename, &ename_len));
            CHECK(items > 0);
            for (int k = 0; k < items; k++) {
                int value = -1;
                char iname[128];
                int iname_len = sizeof iname;
                OK(MPI_T_enum_get_item(e, k, &value, iname, &iname_len));
                CHECK(iname_len > 1);
            }
            int value;
            char iname[16];
            int iname_len = sizeof iname;
            CHECK(MPI_T_enum_get_item(e, items, &value, iname, &iname_len) ==
                  MPI_T_ERR_INVALID_ITEM);
        }
        OK(MPI_T_cvar_handle_free(&h));
        free(buf);
    }
    /* Categories list every variable exactly once. */
    int cats = 0;
    OK(MPI_T_category_get_num(&cats));
    CHECK(cats >= 1);
    for (int c = 0; c < cats; c++) {
        char cname[128];
        int cname_len = sizeof cname, ncv = 0, npv = -1, ncat = -1;
        OK(MPI_T_category_get_info(c, cname, &cname_len, NULL, NULL, &ncv, &npv, &ncat));
        int found = -1;
        OK(MPI_T_category_get_index(cname, &found));
        CHECK(found == c);
        int *idx = malloc(sizeof(int) * (size_t)(ncv + 1));
        CHECK(idx != NULL);
        OK(MPI_T_category_get_cvars(c, ncv, idx));
        for (int k = 0; k < ncv; k++) {
            CHECK(idx[k] >= 0 && idx[k] < n);
            listed[idx[k]]++;
        }
        free(idx);
    }
    for (int i = 0; i < n; i++) CHECK(listed[i] == 1);
    free(listed);
    /* Errors. */
    char name[8];
    int name_len = sizeof name, verbosity, bind, scope, idx = 0;
    MPI_Datatype dt;
    MPI_T_enum e;
    CHECK(MPI_T_cvar_get_info(n, name, &name_len, &verbosity, &dt, &e, NULL, NULL, &bind,
                              &scope) == MPI_T_ERR_INVALID_INDEX);
    CHECK(MPI_T_cvar_get_index("no_such_variable", &idx) == MPI_T_ERR_INVALID_NAME);
    MPI_T_cvar_handle h, freed;
    int count;
    OK(MPI_T_cvar_handle_alloc(0, NULL, &h, &count));
    freed = h;
    OK(MPI_T_cvar_handle_free(&h));
    char big[4096];
    CHECK(MPI_T_cvar_read(freed, big) == MPI_T_ERR_INVALID_HANDLE);
}

static void strings_and_values(void) {
    CHECK(read_number(cvar_index("steadfast_shm_eager_max")) == 12345);
    CHECK(read_number(cvar_index("steadfast_heartbeat_ms")) == 250);
    /* A buffer too short: truncated, null-terminated; a null buffer: the length. */
    int i = cvar_index("steadfast_shm_eager_max");
    char name[6];
    int name_len = sizeof name, verbosity, bind, scope;
    MPI_Datatype dt;
    MPI_T_enum e;
    OK(MPI_T_cvar_get_info(i, name, &name_len, &verbosity, &dt, &e, NULL, NULL, &bind,
                           &scope));
    CHECK(strcmp(name, "stead") == 0 && name_len == 6);
    name_len = 0;
    OK(MPI_T_cvar_get_info(i, NULL, &name_len, &verbosity, &dt, &e, NULL, NULL, &bind,
                           &scope));
    CHECK(name_len == (int)strlen("steadfast_shm_eager_max") + 1);
}

static void no_pvars_events_or_sources(void) {
    int n = -1;
    OK(MPI_T_pvar_get_num(&n));
    CHECK(n == 0);
    OK(MPI_T_event_get_num(&n));
    CHECK(n == 0);
    OK(MPI_T_source_get_num(&n));
    CHECK(n == 0);
    char name[16];
    int name_len = sizeof name, verbosity, var_class, bind, readonly, continuous, atomic;
    MPI_Datatype dt;
    MPI_T_enum e;
    CHECK(MPI_T_pvar_get_info(0, name, &name_len, &verbosity, &var_class, &dt, &e, NULL,
                              NULL, &bind, &readonly, &continuous, &atomic) ==
          MPI_T_ERR_INVALID_INDEX);
    MPI_T_pvar_session s;
    OK(MPI_T_pvar_session_create(&s));
    OK(MPI_T_pvar_session_free(&s));
    CHECK(s == MPI_T_PVAR_SESSION_NULL);
}

int main(int argc, char **argv) {
    int provided = -1;
    OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    every_cvar();
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    strings_and_values();
    no_pvars_events_or_sources();
    OK(MPI_T_finalize());
    int n = 0;
    OK(MPI_T_cvar_get_num(&n)); /* still initialized once */
    OK(MPI_T_finalize());
    CHECK(MPI_T_cvar_get_num(&n) == MPI_T_ERR_NOT_INITIALIZED);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Finalize());
    OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    strings_and_values();
    OK(MPI_T_finalize());
    printf("rank %d: MPI_T OK\n", me);
    return 0;
}
