/*
 * MPI-IO (MPI 4.1 chapter 14) at any number of ranks: opening (amode rules, missing
 * and existing files, EXCL, APPEND, DELETE_ON_CLOSE), sizes, explicit offsets, a view
 * whose filetype has gaps interleaving the ranks (checked byte by byte through a
 * second, plain handle), individual pointers (seek, get_position, get_byte_offset),
 * short reads at the end of the file, the non-blocking forms, shared file pointers,
 * error handlers and the handle conversions. Files live in a directory rank 0 makes with mkdtemp under
 * $TMPDIR (or /tmp) and removes at the end.
 * Each rank prints "rank R: FILE IO OK" at the end.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int me = -1;

#include "check.h"

static char dir[512];
static int np;

static void path(char *out, const char *name) { snprintf(out, 600, "%s/%s", dir, name); }

static int class_of(int rc) {
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}

static int count_of(MPI_Status *st, MPI_Datatype t) {
    int n = -1;
    OK(MPI_Get_count(st, t, &n));
    return n;
}

/* The amode rules, a missing file, an existing file with EXCL, MPI_File_delete. */
static void open_errors(void) {
    char p[600];
    MPI_File fh = (MPI_File)0x1;
    MPI_Errhandler eh;
    OK(MPI_File_get_errhandler(MPI_FILE_NULL, &eh));
    CHECK(eh == MPI_ERRORS_RETURN);
    path(p, "missing");
    int rc = MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    CHECK(class_of(rc) == MPI_ERR_NO_SUCH_FILE);
    CHECK(fh == MPI_FILE_NULL);
    const int bad[] = {MPI_MODE_RDONLY | MPI_MODE_CREATE, MPI_MODE_RDONLY | MPI_MODE_EXCL,
                       MPI_MODE_RDWR | MPI_MODE_WRONLY, 0, MPI_MODE_CREATE,
                       MPI_MODE_RDWR | MPI_MODE_SEQUENTIAL, MPI_MODE_RDWR | 4096};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        rc = MPI_File_open(MPI_COMM_WORLD, p, bad[k], MPI_INFO_NULL, &fh);
        CHECK(class_of(rc) == MPI_ERR_AMODE);
    }
    path(p, "excl");
    OK(MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_WRONLY,
                     MPI_INFO_NULL, &fh));
    OK(MPI_File_close(&fh));
    CHECK(fh == MPI_FILE_NULL);
    rc = MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_WRONLY,
                       MPI_INFO_NULL, &fh);
    CHECK(class_of(rc) == MPI_ERR_FILE_EXISTS);
    if (geteuid() != 0) {
        /* Permission denied (root reads anything: not checked then). */
        if (me == 0) CHECK(chmod(p, 0) == 0);
        OK(MPI_Barrier(MPI_COMM_WORLD));
        rc = MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
        CHECK(class_of(rc) == MPI_ERR_ACCESS);
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) OK(MPI_File_delete(p, MPI_INFO_NULL));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    CHECK(access(p, F_OK) != 0);
    CHECK(class_of(MPI_File_delete(p, MPI_INFO_NULL)) == MPI_ERR_NO_SUCH_FILE);
}

enum { BLK = 1000 };

/* Each rank writes its block at an explicit offset; every rank reads all blocks. */
static void explicit_offsets(void) {
    char p[600];
    MPI_File fh;
    MPI_Status st;
    path(p, "blocks");
    OK(MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    int amode = 0;
    OK(MPI_File_get_amode(fh, &amode));
    CHECK(amode == (MPI_MODE_CREATE | MPI_MODE_RDWR));
    int *buf = malloc(sizeof(int) * BLK);
    for (int i = 0; i < BLK; i++) buf[i] = me * 100000 + i;
    MPI_Offset at = (MPI_Offset)me * BLK * sizeof(int);
    if (me % 2 == 0) {
        OK(MPI_File_write_at(fh, at, buf, BLK, MPI_INT, &st));
    } else {
        OK(MPI_File_write_at_all(fh, at, buf, BLK, MPI_INT, &st));
    }
    CHECK(count_of(&st, MPI_INT) == BLK);
    if (me % 2 == 0) OK(MPI_File_write_at_all(fh, at, buf, BLK, MPI_INT, &st));
    else OK(MPI_File_write_at(fh, at, buf, BLK, MPI_INT, &st));
    OK(MPI_File_sync(fh));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Offset size = -1;
    OK(MPI_File_get_size(fh, &size));
    CHECK(size == (MPI_Offset)np * BLK * (MPI_Offset)sizeof(int));
    for (int r = 0; r < np; r++) {
        memset(buf, 0, sizeof(int) * BLK);
        at = (MPI_Offset)r * BLK * sizeof(int);
        OK(MPI_File_read_at_all(fh, at, buf, BLK, MPI_INT, &st));
        CHECK(count_of(&st, MPI_INT) == BLK);
        for (int i = 0; i < BLK; i++) CHECK(buf[i] == r * 100000 + i);
    }
    /* Short reads at the end of the file: the status counts what was there. */
    char bytes[100];
    OK(MPI_File_read_at(fh, size - 40, bytes, 100, MPI_BYTE, &st));
    CHECK(count_of(&st, MPI_BYTE) == 40);
    CHECK(count_of(&st, MPI_INT) == 10);
    int last;
    memcpy(&last, bytes + 36, sizeof last);
    CHECK(last == (np - 1) * 100000 + BLK - 1);
    OK(MPI_File_read_at(fh, size + 10, bytes, 100, MPI_BYTE, &st));
    CHECK(count_of(&st, MPI_BYTE) == 0);
    /* Sizes (collective). */
    OK(MPI_File_set_size(fh, 100));
    OK(MPI_File_get_size(fh, &size));
    CHECK(size == 100);
    OK(MPI_File_set_size(fh, 5000));
    OK(MPI_File_get_size(fh, &size));
    CHECK(size == 5000);
    OK(MPI_File_preallocate(fh, 6000));
    OK(MPI_File_get_size(fh, &size));
    CHECK(size == 6000);
    OK(MPI_File_preallocate(fh, 10));
    OK(MPI_File_get_size(fh, &size));
    CHECK(size == 6000);
    OK(MPI_File_read_at(fh, 96, buf, 1, MPI_INT, &st)); /* before the first truncation */
    CHECK(buf[0] == 24);
    OK(MPI_File_read_at(fh, 200, buf, 1, MPI_INT, &st)); /* cut off, then zeros */
    CHECK(buf[0] == 0);
    OK(MPI_File_close(&fh));
    free(buf);
}

enum { H = 3, NT = 5 };

/* A view whose filetype is two pieces of H ints per tile, n*H ints apart, the tile
 * 2*n*H ints long, displaced by the rank: the ranks' pieces interleave. */
static void strided_view(void) {
    char p[600];
    MPI_File fh;
    MPI_Status st;
    MPI_Datatype vec, ft, got_et, got_ft, mem;
    path(p, "strided");
    OK(MPI_Type_vector(2, H, np * H, MPI_INT, &vec));
    OK(MPI_Type_create_resized(vec, 0, (MPI_Aint)(2 * np * H * sizeof(int)), &ft));
    OK(MPI_Type_commit(&ft));
    OK(MPI_Type_free(&vec));
    OK(MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    MPI_Offset disp = (MPI_Offset)me * H * sizeof(int);
    OK(MPI_File_set_view(fh, disp, MPI_INT, ft, "native", MPI_INFO_NULL));
    OK(MPI_Type_free(&ft)); /* the view keeps its own */
    MPI_Offset d = -1;
    char rep[MPI_MAX_DATAREP_STRING];
    OK(MPI_File_get_view(fh, &d, &got_et, &got_ft, rep));
    CHECK(d == disp && got_et == MPI_INT && strcmp(rep, "native") == 0);
    MPI_Aint lb, ext;
    OK(MPI_Type_get_extent(got_ft, &lb, &ext));
    CHECK(lb == 0 && ext == (MPI_Aint)(2 * np * H * sizeof(int)));
    OK(MPI_Type_free(&got_ft));
    OK(MPI_File_get_type_extent(fh, MPI_INT, &ext));
    CHECK(ext == sizeof(int));
    const int n = NT * 2 * H;
    int data[NT * 2 * H], back[2 * NT * 2 * H];
    for (int i = 0; i < n; i++) data[i] = me * 1000000 + i;
    OK(MPI_File_write_all(fh, data, n / 2, MPI_INT, &st));
    CHECK(count_of(&st, MPI_INT) == n / 2);
    OK(MPI_File_write(fh, data + n / 2, n - n / 2, MPI_INT, &st));
    MPI_Offset pos = -1;
    OK(MPI_File_get_position(fh, &pos));
    CHECK(pos == n);
    MPI_Offset b = -1;
    OK(MPI_File_get_byte_offset(fh, H + 1, &b));
    CHECK(b == disp + (MPI_Offset)(np * H + 1) * (MPI_Offset)sizeof(int));
    OK(MPI_File_get_byte_offset(fh, 2 * H, &b));
    CHECK(b == disp + (MPI_Offset)(2 * np * H) * (MPI_Offset)sizeof(int));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    /* The whole file through a plain handle of this process's own, int by int. */
    MPI_File raw;
    OK(MPI_File_open(MPI_COMM_SELF, p, MPI_MODE_RDONLY, MPI_INFO_NULL, &raw));
    MPI_Offset size = -1;
    OK(MPI_File_get_size(raw, &size));
    const int total = np * n;
    CHECK(size == (MPI_Offset)total * (MPI_Offset)sizeof(int));
    int *all = malloc(sizeof(int) * (size_t)total);
    OK(MPI_File_read(raw, all, total, MPI_INT, &st));
    CHECK(count_of(&st, MPI_INT) == total);
    for (int j = 0; j < total; j++) {
        int blk = j / H, owner = blk % np, i = (blk / np) * H + j % H;
        CHECK(all[j] == owner * 1000000 + i);
    }
    free(all);
    OK(MPI_File_close(&raw));
    /* Back through the view, into every other int of memory. */
    OK(MPI_Type_vector(n, 1, 2, MPI_INT, &mem));
    OK(MPI_Type_commit(&mem));
    for (int i = 0; i < 2 * n; i++) back[i] = -1;
    OK(MPI_File_seek(fh, 0, MPI_SEEK_SET));
    OK(MPI_File_read_all(fh, back, 1, mem, &st));
    CHECK(count_of(&st, mem) == 1);
    for (int i = 0; i < n; i++) CHECK(back[2 * i] == data[i] && back[2 * i + 1] == -1);
    OK(MPI_Type_free(&mem));
    /* The end of the file in the view's terms; reading there gets nothing. */
    OK(MPI_File_seek(fh, 0, MPI_SEEK_END));
    OK(MPI_File_get_position(fh, &pos));
    CHECK(pos == n);
    OK(MPI_File_read(fh, back, 4, MPI_INT, &st));
    CHECK(count_of(&st, MPI_INT) == 0);
    OK(MPI_File_seek(fh, -H, MPI_SEEK_CUR));
    OK(MPI_File_get_position(fh, &pos));
    CHECK(pos == n - H);
    OK(MPI_File_read(fh, back, 2 * H, MPI_INT, &st)); /* a short read through the view */
    CHECK(count_of(&st, MPI_INT) == H);
    for (int i = 0; i < H; i++) CHECK(back[i] == data[n - H + i]);
    OK(MPI_File_close(&fh));
}

static int handler_calls, handler_code;
static MPI_File handler_file;

static void on_file_error(MPI_File *f, int *code, ...) {
    handler_calls++;
    handler_file = *f;
    handler_code = *code;
}

/* Individual pointers on a file of this rank's own (MPI_COMM_SELF), APPEND, access
 * mode errors, error handlers, the conversions, group and info. */
static void pointers_and_handlers(void) {
    char p[600], name[64];
    MPI_File fh;
    MPI_Status st;
    snprintf(name, sizeof name, "ptr.%d", me);
    path(p, name);
    OK(MPI_File_open(MPI_COMM_SELF, p, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh));
    int v[10], two[2];
    for (int i = 0; i < 10; i++) v[i] = i;
    OK(MPI_File_write(fh, v, 10, MPI_INT, &st));
    MPI_Offset pos = -1, b = -1;
    OK(MPI_File_get_position(fh, &pos));
    CHECK(pos == 40);
    CHECK(class_of(MPI_File_read(fh, two, 2, MPI_INT, &st)) == MPI_ERR_ACCESS);
    OK(MPI_File_close(&fh));
    OK(MPI_File_open(MPI_COMM_SELF, p, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    CHECK(class_of(MPI_File_write(fh, v, 1, MPI_INT, &st)) == MPI_ERR_READ_ONLY);
    OK(MPI_File_seek(fh, 8, MPI_SEEK_SET));
    OK(MPI_File_read(fh, two, 2, MPI_INT, &st));
    CHECK(two[0] == 2 && two[1] == 3);
    OK(MPI_File_get_position(fh, &pos));
    CHECK(pos == 16);
    OK(MPI_File_seek(fh, -4, MPI_SEEK_CUR));
    OK(MPI_File_get_position(fh, &pos));
    CHECK(pos == 12);
    OK(MPI_File_seek(fh, 0, MPI_SEEK_END));
    OK(MPI_File_get_position(fh, &pos));
    CHECK(pos == 40);
    CHECK(class_of(MPI_File_seek(fh, -41, MPI_SEEK_END)) == MPI_ERR_ARG);
    OK(MPI_File_get_byte_offset(fh, 5, &b));
    CHECK(b == 5);
    OK(MPI_File_set_view(fh, 4, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    OK(MPI_File_get_position(fh, &pos));
    CHECK(pos == 0);
    OK(MPI_File_read(fh, two, 1, MPI_INT, &st));
    CHECK(two[0] == 1);
    OK(MPI_File_get_byte_offset(fh, 2, &b));
    CHECK(b == 12);
    CHECK(class_of(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "external32", MPI_INFO_NULL)) ==
          MPI_ERR_UNSUPPORTED_DATAREP);
    /* A file's error handler: the program's, called with the file and the code. */
    MPI_Errhandler eh, got;
    OK(MPI_File_get_errhandler(fh, &got));
    CHECK(got == MPI_ERRORS_RETURN);
    OK(MPI_File_create_errhandler(on_file_error, &eh));
    OK(MPI_File_set_errhandler(fh, eh));
    OK(MPI_File_get_errhandler(fh, &got));
    CHECK(got == eh);
    int rc = MPI_File_read_at(fh, -1, two, 1, MPI_INT, &st);
    CHECK(class_of(rc) == MPI_ERR_ARG && handler_calls == 1 && handler_file == fh);
    CHECK(class_of(handler_code) == MPI_ERR_ARG);
    OK(MPI_File_call_errhandler(fh, MPI_ERR_IO));
    CHECK(handler_calls == 2 && handler_code == MPI_ERR_IO);
    /* MPI_FILE_NULL's handler gets the errors of open. */
    OK(MPI_File_set_errhandler(MPI_FILE_NULL, eh));
    MPI_File none;
    char missing[600];
    path(missing, "no-such-file");
    rc = MPI_File_open(MPI_COMM_SELF, missing, MPI_MODE_RDONLY, MPI_INFO_NULL, &none);
    CHECK(class_of(rc) == MPI_ERR_NO_SUCH_FILE && handler_calls == 3);
    CHECK(handler_file == MPI_FILE_NULL);
    OK(MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN));
    OK(MPI_Errhandler_free(&eh));
    /* Conversions, group, info. */
    CHECK(MPI_File_f2c(MPI_File_c2f(fh)) == fh);
    MPI_Group fg, wg;
    int cmp = -1;
    OK(MPI_File_get_group(fh, &fg));
    OK(MPI_Comm_group(MPI_COMM_SELF, &wg));
    OK(MPI_Group_compare(fg, wg, &cmp));
    CHECK(cmp == MPI_IDENT);
    OK(MPI_Group_free(&fg));
    OK(MPI_Group_free(&wg));
    MPI_Info info;
    OK(MPI_File_set_info(fh, MPI_INFO_NULL));
    OK(MPI_File_get_info(fh, &info));
    OK(MPI_Info_free(&info));
    OK(MPI_File_close(&fh));
    /* APPEND: the pointer starts at the end. */
    OK(MPI_File_open(MPI_COMM_SELF, p, MPI_MODE_RDWR | MPI_MODE_APPEND, MPI_INFO_NULL, &fh));
    OK(MPI_File_get_position(fh, &pos));
    CHECK(pos == 40);
    OK(MPI_File_write(fh, v, 1, MPI_INT, &st));
    OK(MPI_File_get_size(fh, &pos));
    CHECK(pos == 44);
    OK(MPI_File_close(&fh));
    OK(MPI_File_delete(p, MPI_INFO_NULL));
    CHECK(class_of(MPI_File_get_position(MPI_FILE_NULL, &pos)) == MPI_ERR_FILE);
}

/* DELETE_ON_CLOSE: gone at every rank once closed. */
static void delete_on_close(void) {
    char p[600];
    MPI_File fh;
    path(p, "scratch");
    OK(MPI_File_open(MPI_COMM_WORLD, p,
                     MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE |
                         MPI_MODE_UNIQUE_OPEN,
                     MPI_INFO_NULL, &fh));
    OK(MPI_File_write_at(fh, me, "x", 1, MPI_CHAR, MPI_STATUS_IGNORE));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    CHECK(access(p, F_OK) == 0);
    OK(MPI_File_close(&fh));
    CHECK(access(p, F_OK) != 0);
}

/* The non-blocking forms: complete requests with their statuses. */
static void nonblocking(void) {
    char p[600];
    MPI_File fh;
    MPI_Status st;
    MPI_Request rq[2];
    path(p, "nb");
    OK(MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    int out[8], in[8];
    for (int i = 0; i < 8; i++) out[i] = me * 10 + i;
    OK(MPI_File_iwrite_at(fh, (MPI_Offset)me * 32, out, 4, MPI_INT, &rq[0]));
    OK(MPI_File_iwrite_at_all(fh, (MPI_Offset)me * 32 + 16, out + 4, 4, MPI_INT, &rq[1]));
    MPI_Status sts[2];
    OK(MPI_Waitall(2, rq, sts));
    CHECK(count_of(&sts[0], MPI_INT) == 4 && count_of(&sts[1], MPI_INT) == 4);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    int peer = (me + 1) % np;
    OK(MPI_File_iread_at(fh, (MPI_Offset)peer * 32, in, 8, MPI_INT, &rq[0]));
    int flag = 0;
    OK(MPI_Test(&rq[0], &flag, &st));
    CHECK(flag && rq[0] == MPI_REQUEST_NULL && count_of(&st, MPI_INT) == 8);
    for (int i = 0; i < 8; i++) CHECK(in[i] == peer * 10 + i);
    OK(MPI_File_iread_at_all(fh, (MPI_Offset)np * 32 - 8, in, 8, MPI_INT, &rq[0]));
    OK(MPI_Wait(&rq[0], &st));
    CHECK(count_of(&st, MPI_INT) == 2 && in[1] == (np - 1) * 10 + 7);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    /* Pointers: each rank's view starts at its own 32 bytes. */
    OK(MPI_File_set_view(fh, (MPI_Offset)me * 32, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    OK(MPI_File_iread(fh, in, 2, MPI_INT, &rq[0]));
    OK(MPI_Wait(&rq[0], &st));
    CHECK(in[0] == out[0] && in[1] == out[1]);
    OK(MPI_File_iread_all(fh, in, 1, MPI_INT, &rq[0]));
    OK(MPI_Wait(&rq[0], &st));
    CHECK(in[0] == out[2]);
    int nine = 900 + me;
    OK(MPI_File_iwrite(fh, &nine, 1, MPI_INT, &rq[0]));
    OK(MPI_Wait(&rq[0], &st));
    OK(MPI_File_iwrite_all(fh, &nine, 1, MPI_INT, &rq[0]));
    OK(MPI_Wait(&rq[0], &st));
    MPI_Offset pos = -1;
    OK(MPI_File_get_position(fh, &pos));
    CHECK(pos == 5);
    OK(MPI_File_read_at(fh, 3, in, 3, MPI_INT, &st));
    CHECK(in[0] == nine && in[1] == nine && in[2] == out[5]);
    OK(MPI_File_close(&fh));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) OK(MPI_File_delete(p, MPI_INFO_NULL));
}

/* Shared pointers: one pointer for all ranks, in a side file rank 0 removes at close. */
static void shared_pointers(void) {
    char p[600], side[600];
    MPI_File fh;
    MPI_Status st;
    path(p, "shared");
    path(side, ".shared.shfp");
    OK(MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    OK(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    int two[2] = {me * 10, me * 10 + 1}, in[2] = {-1, -1};
    OK(MPI_File_write_ordered(fh, two, 2, MPI_INT, &st));
    CHECK(count_of(&st, MPI_INT) == 2);
    MPI_Offset pos = -1;
    OK(MPI_File_get_position_shared(fh, &pos));
    CHECK(pos == 2 * np);
    OK(MPI_File_get_position(fh, &pos)); /* the individual pointer did not move */
    CHECK(pos == 0);
    OK(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
    OK(MPI_File_read_ordered(fh, in, 2, MPI_INT, &st));
    CHECK(in[0] == me * 10 && in[1] == me * 10 + 1);
    /* Each rank reads one int at the shared pointer: all different places. */
    OK(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
    OK(MPI_File_read_shared(fh, in, 1, MPI_INT, &st));
    CHECK(count_of(&st, MPI_INT) == 1);
    int *seen = calloc((size_t)np, sizeof(int)), *got = malloc(sizeof(int) * (size_t)np);
    OK(MPI_Allgather(in, 1, MPI_INT, got, 1, MPI_INT, MPI_COMM_WORLD));
    for (int r = 0; r < np; r++) {
        int at = (got[r] / 10) * 2 + got[r] % 10; /* the place it was read from */
        CHECK(got[r] % 10 < 2 && at >= 0 && at < np && !seen[at]);
        seen[at] = 1;
    }
    OK(MPI_File_get_position_shared(fh, &pos));
    CHECK(pos == np);
    /* Each rank appends one int at the shared pointer, past the ordered part. */
    OK(MPI_File_seek_shared(fh, 0, MPI_SEEK_END));
    int mark = 100 + me;
    OK(MPI_File_write_shared(fh, &mark, 1, MPI_INT, &st));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_File_get_position_shared(fh, &pos));
    CHECK(pos == 3 * np);
    OK(MPI_File_read_at(fh, 2 * np, got, np, MPI_INT, &st));
    CHECK(count_of(&st, MPI_INT) == np);
    for (int r = 0; r < np; r++) seen[r] = 0;
    for (int r = 0; r < np; r++) {
        CHECK(got[r] >= 100 && got[r] < 100 + np && !seen[got[r] - 100]);
        seen[got[r] - 100] = 1;
    }
    free(seen);
    free(got);
    OK(MPI_File_seek_shared(fh, -1, MPI_SEEK_CUR));
    OK(MPI_File_get_position_shared(fh, &pos));
    CHECK(pos == 3 * np - 1);
    CHECK(class_of(MPI_File_seek_shared(fh, -4 * np, MPI_SEEK_CUR)) == MPI_ERR_ARG);
    OK(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    OK(MPI_File_get_position_shared(fh, &pos));
    CHECK(pos == 0);
    OK(MPI_File_close(&fh));
    CHECK(access(side, F_OK) != 0);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) OK(MPI_File_delete(p, MPI_INFO_NULL));
}

int main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &np));
    if (me == 0) {
        const char *t = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/sf-file-io-XXXXXX", t && *t ? t : "/tmp");
        CHECK(mkdtemp(dir) != NULL);
    }
    OK(MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD));
    open_errors();
    explicit_offsets();
    strided_view();
    pointers_and_handlers();
    delete_on_close();
    nonblocking();
    shared_pointers();
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) {
        char p[600];
        path(p, "blocks");
        OK(MPI_File_delete(p, MPI_INFO_NULL));
        path(p, "strided");
        OK(MPI_File_delete(p, MPI_INFO_NULL));
        CHECK(rmdir(dir) == 0);
    }
    printf("rank %d: FILE IO OK\n", me);
    OK(MPI_Finalize());
    return 0;
}
