/* SPDX-License-Identifier: MIT */
/*
 * nvidia-smi CSV import: wt_import_nvidia_smi reading the input as a file (fmemopen) into a
 * real store in a temporary directory, as `wattage import nvidia-smi FILE` does. The store is
 * made anew every 256 inputs so that it stays small. Seeds: tests/fixtures/nvidia-smi.
 */
#include <errno.h>
#include <unistd.h>

#include "fuzz.h"
#include "store/import.h"
#include "store/store.h"

static struct wt_store *st;
static char dir[64], db[96];
static unsigned runs;

static void drop(void)
{
    char p[128];
    static const char *const ext[] = {"", "-wal", "-shm"};
    wt_store_close(st);
    st = NULL;
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s%s", db, ext[i]);
        unlink(p);
    }
}

static void fresh(void)
{
    struct wt_err err = {{0}};
    drop();
    FUZZ_CHECK(wt_store_open(db, NULL, &st, &err) == 0);
}

static void cleanup(void)
{
    drop();
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_quiet();
    snprintf(dir, sizeof dir, "/tmp/wattage-fuzz-import-XXXXXX");
    FUZZ_CHECK(mkdtemp(dir) != NULL);
    snprintf(db, sizeof db, "%s/w.db", dir);
    fresh();
    atexit(cleanup);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char report[4096];
    struct wt_import_stats stats;
    struct wt_err err = {{0}};
    if (++runs % 256 == 0)
        fresh();
    if (size == 0)
        return 0; /* fmemopen refuses an empty buffer */
    FILE *f = fmemopen((void *)data, size, "r");
    FILE *rep = fmemopen(report, sizeof report, "w");
    FUZZ_CHECK(f && rep);
    int rc = wt_import_nvidia_smi(st, f, "fuzz.csv", "fuzz", rep, &stats, &err);
    fclose(f);
    fclose(rep);
    fuzz_check_err(&err);
    FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -EIO);
    if (rc == 0)
        FUZZ_CHECK(stats.rows <= size);
    return 0;
}
