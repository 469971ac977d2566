/* SPDX-License-Identifier: MIT */
/* The runner's main: forks one child per test, reports TAP and the closing count line. */
#include "runner.h"

#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_TESTS 512
#define SKIP_CODE 77

static struct {
    const char *name;
    wt_test_fn fn;
} tests[MAX_TESTS];
static int ntests;
static char dir[256];
static char start_dir[2048];

void wt_test_register(const char *name, wt_test_fn fn)
{
    if (ntests < MAX_TESTS) {
        tests[ntests].name = name;
        tests[ntests].fn = fn;
        ntests++;
    }
}

const char *wt_test_dir(void)
{
    return dir;
}

/* The directory the runner started in, read before any test changes it. */
static const char *start(void)
{
    if (!start_dir[0] && !getcwd(start_dir, sizeof start_dir))
        start_dir[0] = '\0';
    return start_dir;
}

const char *wt_test_src_path(const char *rel)
{
    static char buf[4096];
    const char *root = getenv("WATTAGE_SRCDIR");
    snprintf(buf, sizeof buf, "%s/%s", root && *root ? root : start(), rel);
    return buf;
}

void wt_test_write(const char *path, const char *fmt, ...)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        wt_test_fail(__FILE__, __LINE__, "cannot write %s: %s", tmp, strerror(errno));
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        wt_test_fail(__FILE__, __LINE__, "cannot write %s: %s", path, strerror(errno));
}

char *wt_test_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        wt_test_fail(__FILE__, __LINE__, "cannot read %s: %s", path, strerror(errno));
    size_t cap = 8192, n = 0;
    char *b = malloc(cap);
    for (size_t r; b && (r = fread(b + n, 1, cap - n - 1, f)) > 0;) {
        n += r;
        if (n + 1 == cap) {
            char *p = realloc(b, cap *= 2);
            if (!p)
                free(b);
            b = p;
        }
    }
    fclose(f);
    if (!b)
        wt_test_fail(__FILE__, __LINE__, "out of memory reading %s", path);
    b[n] = '\0';
    if (len)
        *len = n;
    return b;
}

const char *wt_test_build_path(const char *rel)
{
    static char buf[4096];
    const char *b = getenv("WATTAGE_BUILD");
    b = b ? b : "build";
    if (b[0] == '/')
        snprintf(buf, sizeof buf, "%s/%s", b, rel);
    else
        snprintf(buf, sizeof buf, "%s/%s/%s", start(), b, rel);
    return buf;
}

void wt_test_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stdout, "# %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fprintf(stdout, "\n");
    fflush(stdout);
    _exit(1);
}

void wt_test_skip(const char *why)
{
    fprintf(stdout, "# skip: %s\n", why);
    fflush(stdout);
    _exit(SKIP_CODE);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st, (void)flag, (void)f;
    return remove(p);
}

int main(int argc, char **argv)
{
    int passed = 0, failed = 0, skipped = 0;
    int ci = getenv("CI") && strcmp(getenv("CI"), "true") == 0;
    const char *only = argc > 1 ? argv[1] : NULL;
    (void)start();

    printf("TAP version 13\n1..%d\n", ntests);
    fflush(stdout);
    for (int i = 0; i < ntests; i++) {
        if (only && strcmp(only, tests[i].name) != 0)
            continue;
        snprintf(dir, sizeof dir, "/tmp/wt-test-XXXXXX");
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            return 1;
        }
        pid_t pid = fork();
        if (pid == 0) {
            if (chdir(dir) != 0)
                _exit(1);
            tests[i].fn();
            fflush(NULL);
            _exit(0);
        }
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
            printf("ok %d - %s\n", i + 1, tests[i].name);
            passed++;
        } else if (WIFEXITED(st) && WEXITSTATUS(st) == SKIP_CODE) {
            if (ci) {
                printf("not ok %d - %s # skipped under CI=true\n", i + 1, tests[i].name);
                failed++;
            } else {
                printf("ok %d - %s # SKIP\n", i + 1, tests[i].name);
                skipped++;
            }
        } else {
            if (WIFSIGNALED(st))
                printf("# killed by signal %d\n", WTERMSIG(st));
            printf("not ok %d - %s\n", i + 1, tests[i].name);
            failed++;
        }
        fflush(stdout);
        if (!getenv("WATTAGE_KEEP_TMP"))
            nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}
