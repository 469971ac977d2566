/* SPDX-License-Identifier: MIT */
/*
 * procfs collector: CPU utilization from deltas of the cpu lines of /proc/stat (the aggregate
 * line and one per core) and memory use from /proc/meminfo, both under wt_procfs_root().
 *
 * /proc/stat counts USER_HZ ticks per state since boot. guest and guest_nice are already inside
 * user and nice, so they are left out of the total. iowait is idle time waiting on I/O and is
 * known to go backwards on NO_HZ kernels; a delta in which any sum goes backwards is skipped,
 * never reported as a negative or a huge utilization.
 */
#include "collect/procfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect/collector.h"
#include "collect/filesrc.h"
#include "core/log.h"
#include "core/reading.h"

#define STAT_FIELDS 10 /* user nice system idle iowait irq softirq steal guest guest_nice */
#define TOTAL_FIELDS 8 /* up to steal */

struct procfs {
    /* Kept open and read with pread at 0: procfs makes a fresh snapshot at every read. */
    struct wt_filesrc stat, meminfo;
    char *text; /* the latest file read, whole */
    size_t text_cap;
    struct wt_cpu_times *prev, *cur;
    size_t nprev, ncur, cap_prev, cap_cur;
    bool have_prev;
};

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* Parses an unsigned decimal at *p, moving *p past it. Returns 0 or -EINVAL (none, overflow). */
static int take_u64(const char **p, uint64_t *out)
{
    const char *s = *p;
    if (!is_digit(*s))
        return -EINVAL;
    uint64_t v = 0;
    while (is_digit(*s)) {
        if (__builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, (uint64_t)(*s - '0'), &v))
            return -EINVAL;
        s++;
    }
    *p = s;
    *out = v;
    return 0;
}

int wt_procfs_parse_cpu_line(const char *line, struct wt_cpu_times *out)
{
    if (strncmp(line, "cpu", 3) != 0)
        return 1;
    const char *p = line + 3;
    int cpu = -1;
    if (is_digit(*p)) {
        uint64_t v;
        if (take_u64(&p, &v) < 0 || v > INT_MAX)
            return -EINVAL;
        cpu = (int)v;
    } else if (!is_blank(*p) && *p != '\0') {
        return 1; /* some other key that starts with "cpu" */
    }
    if (!is_blank(*p))
        return -EINVAL;

    uint64_t f[STAT_FIELDS] = {0};
    int nf = 0;
    for (;;) {
        while (is_blank(*p))
            p++;
        if (*p == '\0')
            break;
        uint64_t v;
        if (take_u64(&p, &v) < 0 || (!is_blank(*p) && *p != '\0'))
            return -EINVAL;
        if (nf < STAT_FIELDS)
            f[nf] = v; /* fields a newer kernel adds beyond guest_nice are ignored */
        nf++;
    }
    if (nf < 4)
        return -EINVAL;
    uint64_t total = 0;
    for (int i = 0; i < TOTAL_FIELDS; i++)
        if (__builtin_add_overflow(total, f[i], &total))
            return -EINVAL;
    out->cpu = cpu;
    out->total = total;
    out->idle = f[3] + f[4]; /* cannot overflow: both are inside total */
    return 0;
}

int wt_procfs_cpu_util(const struct wt_cpu_times *prev, const struct wt_cpu_times *cur,
                       double *ratio)
{
    if (cur->total < prev->total || cur->idle < prev->idle)
        return -ERANGE;
    uint64_t busy_prev = prev->total - prev->idle, busy_cur = cur->total - cur->idle;
    if (busy_cur < busy_prev)
        return -ERANGE;
    uint64_t dt = cur->total - prev->total;
    if (dt == 0)
        return -EAGAIN;
    *ratio = (double)(busy_cur - busy_prev) / (double)dt;
    return 0;
}

/* Reads a whole file through f into *text (grown; *cap its capacity). err names the path. */
static int slurp(struct wt_filesrc *f, char **text, size_t *cap, size_t *len, struct wt_err *err)
{
    int rc = wt_filesrc_read_all(f, text, cap, len);
    if (rc < 0)
        wt_err_set(err, "%s: %s", f->path, strerror(-rc));
    return rc;
}

/* Parses the text of a /proc/stat file read from path; see wt_procfs_read_stat. */
static int parse_stat(const char *path, const char *text, size_t len, struct wt_cpu_times **arr,
                      size_t *cap, size_t *n, struct wt_err *err)
{
    int rc = 0;
    *n = 0;
    char line[WT_PROCFS_LINE_LEN];
    int lineno = 0;
    size_t pos = 0;
    bool have_all = false;
    for (;;) {
        int k = wt_filesrc_line(text, len, &pos, line, sizeof line);
        if (k == 0)
            break;
        lineno++;
        if (k == -E2BIG) {
            /* The intr and softirq lines are long on big hosts and not ours; cpu lines are. */
            if (strncmp(line, "cpu", 3) == 0) {
                rc = -EINVAL;
                wt_err_set(err, "%s:%d: cpu line longer than %d bytes", path, lineno,
                           WT_PROCFS_LINE_LEN - 1);
                goto out;
            }
            continue;
        }
        struct wt_cpu_times t;
        int r = wt_procfs_parse_cpu_line(line, &t);
        if (r == 1)
            continue;
        if (r < 0) {
            rc = -EINVAL;
            wt_err_set(err, "%s:%d: expected \"cpu[N]\" and at least 4 tick counts, got \"%.60s\"",
                       path, lineno, line);
            goto out;
        }
        if (t.cpu < 0)
            have_all = true;
        if (*n > WT_PROCFS_MAX_CPUS)
            continue;
        if (*n == *cap) {
            size_t nc = *cap ? *cap * 2 : 16;
            struct wt_cpu_times *na = realloc(*arr, nc * sizeof *na);
            if (!na) {
                rc = -ENOMEM;
                wt_err_set(err, "%s: out of memory", path);
                goto out;
            }
            *arr = na;
            *cap = nc;
        }
        (*arr)[(*n)++] = t;
    }
    if (!have_all) {
        rc = -EINVAL;
        wt_err_set(err, "%s: no aggregate \"cpu\" line", path);
    }
out:
    return rc;
}

/* Reads the file at path once, whole, into *text (caller frees, also on failure). */
static int read_once(const char *path, char **text, size_t *len, struct wt_err *err)
{
    struct wt_filesrc f = {0};
    size_t cap = 0;
    *text = NULL;
    int rc = wt_filesrc_init(&f, path);
    if (rc < 0)
        wt_err_set(err, "out of memory");
    else
        rc = slurp(&f, text, &cap, len, err);
    wt_filesrc_close(&f);
    return rc;
}

int wt_procfs_read_stat(const char *path, struct wt_cpu_times **arr, size_t *cap, size_t *n,
                        struct wt_err *err)
{
    char *text;
    size_t len = 0;
    *n = 0;
    int rc = read_once(path, &text, &len, err);
    if (rc == 0)
        rc = parse_stat(path, text, len, arr, cap, n, err);
    free(text);
    return rc;
}

/* Parses the text of a /proc/meminfo file read from path; see wt_procfs_read_meminfo. */
static int parse_meminfo(const char *path, const char *text, size_t len, struct wt_meminfo *m,
                         struct wt_err *err)
{
    static const char *const keys[] = {"MemTotal", "MemAvailable", "MemFree", "Buffers", "Cached"};
    enum { TOTAL, AVAIL, FREE, BUFFERS, CACHED, NKEYS };
    uint64_t val[NKEYS] = {0};
    bool have[NKEYS] = {false};
    int rc = 0;
    char line[WT_PROCFS_LINE_LEN];
    int lineno = 0;
    size_t pos = 0;
    for (;;) {
        int k = wt_filesrc_line(text, len, &pos, line, sizeof line);
        if (k == 0)
            break;
        lineno++;
        if (k < 0) {
            rc = -EINVAL;
            wt_err_set(err, "%s:%d: line too long", path, lineno);
            goto out;
        }
        const char *colon = strchr(line, ':');
        if (!colon || colon == line) {
            rc = -EINVAL;
            wt_err_set(err, "%s:%d: expected \"Key: value\", got \"%.60s\"", path, lineno, line);
            goto out;
        }
        size_t klen = (size_t)(colon - line);
        int which = -1;
        for (int i = 0; i < NKEYS; i++)
            if (strlen(keys[i]) == klen && strncmp(line, keys[i], klen) == 0)
                which = i;
        if (which < 0)
            continue;
        /* The value is in kB (KiB, as the kernel means it) for every key we read. */
        const char *p = colon + 1;
        while (is_blank(*p))
            p++;
        uint64_t kb;
        int bad = take_u64(&p, &kb) < 0;
        while (!bad && is_blank(*p))
            p++;
        if (!bad && strncmp(p, "kB", 2) == 0)
            p += 2;
        while (!bad && is_blank(*p))
            p++;
        if (bad || *p != '\0' || kb > UINT64_MAX / 1024) {
            rc = -EINVAL;
            wt_err_set(err, "%s:%d: %s: expected a number of kB, got \"%.60s\"", path, lineno,
                       keys[which], colon + 1);
            goto out;
        }
        val[which] = kb * 1024;
        have[which] = true;
    }
    if (!have[TOTAL]) {
        rc = -EINVAL;
        wt_err_set(err, "%s: no MemTotal line", path);
        goto out;
    }
    m->total_b = val[TOTAL];
    if (have[AVAIL]) {
        m->available_b = val[AVAIL];
    } else if (have[FREE]) {
        /* Kernels before 3.14 have no MemAvailable: free plus page cache is the old estimate. */
        m->available_b = val[FREE] + val[BUFFERS] + val[CACHED];
    } else {
        rc = -EINVAL;
        wt_err_set(err, "%s: neither MemAvailable nor MemFree", path);
    }
out:
    return rc;
}

int wt_procfs_read_meminfo(const char *path, struct wt_meminfo *m, struct wt_err *err)
{
    char *text;
    size_t len = 0;
    int rc = read_once(path, &text, &len, err);
    if (rc == 0)
        rc = parse_meminfo(path, text, len, m, err);
    free(text);
    return rc;
}

static void procfs_close(void *state)
{
    struct procfs *p = state;
    if (!p)
        return;
    wt_filesrc_close(&p->stat);
    wt_filesrc_close(&p->meminfo);
    free(p->text);
    free(p->prev);
    free(p->cur);
    free(p);
}

/* Sets f to <root><rel>. 0 or -ENOMEM. */
static int path_under(struct wt_filesrc *f, const char *root, const char *rel)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s%s", root, rel) >= (int)sizeof path)
        return -ENAMETOOLONG;
    return wt_filesrc_init(f, path);
}

static int procfs_open(const struct wt_config *cfg, void **state, struct wt_err *err)
{
    (void)cfg;
    *state = NULL;
    int rc;
    struct procfs *p = calloc(1, sizeof *p);
    if (!p)
        return wt_err_set(err, "out of memory"), -ENOMEM;
    const char *root = wt_procfs_root();
    rc = path_under(&p->stat, root, "/proc/stat");
    if (rc == 0)
        rc = path_under(&p->meminfo, root, "/proc/meminfo");
    if (rc < 0) {
        wt_err_set(err, rc == -ENOMEM ? "out of memory" : "procfs root too long");
        goto fail;
    }
    if (access(p->stat.path, R_OK) != 0) {
        rc = errno == ENOENT ? -ENOENT : -errno;
        wt_err_set(err, "%s: %s", p->stat.path, strerror(-rc));
        goto fail;
    }
    *state = p;
    return 0;
fail:
    procfs_close(p);
    return rc;
}

static const struct wt_cpu_times *find_prev(const struct procfs *p, size_t hint, int cpu)
{
    /* CPUs come in the same order each time: the same index almost always matches. */
    if (hint < p->nprev && p->prev[hint].cpu == cpu)
        return &p->prev[hint];
    for (size_t i = 0; i < p->nprev; i++)
        if (p->prev[i].cpu == cpu)
            return &p->prev[i];
    return NULL;
}

static int procfs_poll(void *state, int64_t t_ns, struct wt_batch *out, struct wt_err *err)
{
    struct procfs *p = state;
    size_t len = 0;
    int rc = slurp(&p->stat, &p->text, &p->text_cap, &len, err);
    if (rc == 0)
        rc = parse_stat(p->stat.path, p->text, len, &p->cur, &p->cap_cur, &p->ncur, err);
    if (rc < 0)
        return rc;
    if (p->have_prev) {
        for (size_t i = 0; i < p->ncur; i++) {
            const struct wt_cpu_times *c = &p->cur[i];
            const struct wt_cpu_times *pv = find_prev(p, i, c->cpu);
            double ratio;
            if (!pv || wt_procfs_cpu_util(pv, c, &ratio) < 0)
                continue; /* new CPU, or a counter went backwards: skip this delta */
            char num[16], labels[32];
            if (c->cpu < 0)
                snprintf(num, sizeof num, "all");
            else
                snprintf(num, sizeof num, "%d", c->cpu);
            if (wt_labels(labels, sizeof labels, "cpu", num, NULL) < 0 ||
                wt_batch_add(out, WT_M_CPU_UTIL_RATIO, labels, t_ns, ratio) < 0)
                return wt_err_set(err, "out of memory"), -ENOMEM;
        }
    }
    /* The sample just read becomes the baseline. */
    struct wt_cpu_times *tmp = p->prev;
    size_t tcap = p->cap_prev;
    p->prev = p->cur;
    p->cap_prev = p->cap_cur;
    p->nprev = p->ncur;
    p->cur = tmp;
    p->cap_cur = tcap;
    p->ncur = 0;
    p->have_prev = true;

    struct wt_meminfo m;
    rc = slurp(&p->meminfo, &p->text, &p->text_cap, &len, err);
    if (rc == 0)
        rc = parse_meminfo(p->meminfo.path, p->text, len, &m, err);
    if (rc < 0)
        return rc;
    uint64_t used = m.total_b > m.available_b ? m.total_b - m.available_b : 0;
    if (wt_batch_add(out, WT_M_MEM_TOTAL_B, "", t_ns, (double)m.total_b) < 0 ||
        wt_batch_add(out, WT_M_MEM_USED_B, "", t_ns, (double)used) < 0)
        return wt_err_set(err, "out of memory"), -ENOMEM;
    if (m.total_b > 0 &&
        wt_batch_add(out, WT_M_MEM_USED_RATIO, "", t_ns, (double)used / (double)m.total_b) < 0)
        return wt_err_set(err, "out of memory"), -ENOMEM;
    return 0;
}

static const struct wt_collector_config *procfs_config(const struct wt_config *cfg)
{
    return &cfg->collectors.procfs;
}

const struct wt_collector_ops wt_procfs_collector = {
    .name = "procfs",
    .file_source = true,
    .config = procfs_config,
    .open = procfs_open,
    .poll = procfs_poll,
    .close = procfs_close,
};

/* ---- per process (see procfs.h): /proc/PID/stat ---- */

#define PID_STAT_MAX 4096 /* a stat line is ~300 bytes; the command is at most 64 */

int wt_procfs_parse_pid_stat(const char *text, struct wt_pid_stat *out)
{
    const char *p = strrchr(text, ')');
    if (!p || !strchr(text, '('))
        return -EINVAL;
    p++;
    /* Field 3 (state) follows; utime is field 14, stime 15, starttime 22. */
    uint64_t v[23] = {0};
    int field = 3;
    while (field <= 22) {
        while (is_blank(*p))
            p++;
        if (!*p || *p == '\n')
            return -EINVAL;
        if (field == 3) {
            /* the state letter */
            while (*p && !is_blank(*p))
                p++;
        } else if (take_u64(&p, &v[field]) != 0) {
            /* fields such as priority may be negative: skip them, they are not ours */
            if (field == 14 || field == 15 || field == 22)
                return -EINVAL;
            if (*p == '-')
                p++;
            while (*p && !is_blank(*p))
                p++;
        }
        field++;
    }
    out->utime = v[14];
    out->stime = v[15];
    out->start = v[22];
    return 0;
}

int wt_procfs_pid_stat(int pid, struct wt_pid_stat *out)
{
    char path[PATH_MAX], buf[PID_STAT_MAX];
    if (snprintf(path, sizeof path, "%s/proc/%d/stat", wt_procfs_root(), pid) >= (int)sizeof path)
        return -ENAMETOOLONG;
    /* open/read, not stdio: this runs for every process every RAPL interval */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t n = 0;
    ssize_t k = 0;
    while (n < sizeof buf - 1 && (k = read(fd, buf + n, sizeof buf - 1 - n)) > 0)
        n += (size_t)k;
    /* A process that exits while we read gives ESRCH on the read itself. */
    int rc = k < 0 ? -errno : 0;
    close(fd);
    if (rc)
        return rc;
    buf[n] = '\0';
    return wt_procfs_parse_pid_stat(buf, out);
}

int wt_procfs_each_pid(void (*fn)(void *ctx, int pid), void *ctx)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/proc", wt_procfs_root()) >= (int)sizeof path)
        return -ENAMETOOLONG;
    DIR *d = opendir(path);
    if (!d)
        return -errno;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        if (!is_digit(e->d_name[0]))
            continue;
        long pid = strtol(e->d_name, &end, 10);
        if (*end == '\0' && pid > 0 && pid <= INT_MAX)
            fn(ctx, (int)pid);
    }
    closedir(d);
    return 0;
}
