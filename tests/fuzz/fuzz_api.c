/* SPDX-License-Identifier: MIT */
/*
 * The HTTP API's request bodies, through wt_api_jobs_handle: the function the server's route
 * calls with the method, path and body of a request (serve/api_jobs.h). The first byte picks the
 * request: POST /api/v1/jobs (start), POST .../{ref}/marks, .../{ref}/end, .../{ref}/gpus, or a
 * request line "METHOD PATH" taken from the first line of the input; the rest is the body. The jobs
 * live in a real store in a temporary directory, made at start (with one running job, "fz",
 * for the marks), and removed at exit. Every answer must be JSON with a status, an error JSON
 * for 4xx. Seeds: tests/fuzz/seeds/api (bodies as the README and the Python client send them).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <unistd.h>

#include "audit/jobs.h"
#include "fuzz.h"
#include "serve/api_jobs.h"
#include "store/store.h"

#define T0 (1764439200LL * 1000000000LL)

static struct wt_jobs *jobs;
static char dir[64], db[96];
static int64_t now = T0;

static void cleanup(void)
{
    char p[128];
    wt_jobs_close(jobs);
    jobs = NULL;
    static const char *const ext[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s%s", db, ext[i]);
        unlink(p);
    }
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    unsigned status;
    char *json = NULL;
    fuzz_quiet();
    snprintf(dir, sizeof dir, "/tmp/wattage-fuzz-api-XXXXXX");
    FUZZ_CHECK(mkdtemp(dir) != NULL);
    snprintf(db, sizeof db, "%s/w.db", dir);
    FUZZ_CHECK(wt_store_open(db, NULL, &st, &err) == 0);
    wt_store_close(st);
    FUZZ_CHECK(wt_jobs_open(db, NULL, &jobs, &err) == 0);
    atexit(cleanup);
    static const char start[] = "{\"name\": \"fz\"}";
    FUZZ_CHECK(wt_api_jobs_handle(jobs, "POST", "/api/v1/jobs", start, sizeof start - 1, 0, now,
                                  &status, &json) == 0);
    FUZZ_CHECK(status == 201);
    cJSON_free(json);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const paths[] = {"/api/v1/jobs", "/api/v1/jobs/fz/marks",
                                        "/api/v1/jobs/fz/end", "/api/v1/jobs/fz/gpus"};
    char method[16] = "POST", path[256];
    const char *body = (const char *)data + 1;
    size_t len = size ? size - 1 : 0;
    unsigned status = 0, sel = size ? data[0] % 5 : 0;
    char *json = NULL;
    if (sel < 4) {
        snprintf(path, sizeof path, "%s", paths[sel]);
    } else {
        const char *nl = memchr(body, '\n', len);
        size_t ll = nl ? (size_t)(nl - body) : len;
        char line[300];
        if (ll >= sizeof line)
            return 0;
        memcpy(line, body, ll);
        line[ll] = '\0';
        if (strlen(line) != ll || sscanf(line, "%15s %255s", method, path) != 2)
            return 0;
        body += nl ? ll + 1 : ll;
        len -= nl ? ll + 1 : ll;
    }
    /* Later requests come later, as they would: a mark and an end at the same time are legal. */
    now += 1000000000LL;
    int rc = wt_api_jobs_handle(jobs, method, path, len ? body : NULL, len, 0, now, &status, &json);
    FUZZ_CHECK(rc == 0 || rc == -EIO);
    if (rc == 0) {
        FUZZ_CHECK(json != NULL && status >= 200 && status < 600);
        cJSON *v = cJSON_Parse(json);
        FUZZ_CHECK(v != NULL);
        if (status >= 400)
            FUZZ_CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(v, "error")));
        cJSON_Delete(v);
    }
    cJSON_free(json);
    return 0;
}
