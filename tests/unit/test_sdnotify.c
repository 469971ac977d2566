/* SPDX-License-Identifier: MIT */
/* sd_notify to a real datagram socket (a path and an abstract name), the watchdog period from the
 * environment, and the syslog priority prefixes of log lines written to the journal. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/log.h"
#include "core/sdnotify.h"
#include "runner.h"

/* Binds a datagram socket at name ('@' for abstract) and returns it. */
static int bind_dgram(const char *name)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t len = strlen(name);
    memcpy(sa.sun_path, name, len);
    if (name[0] == '@')
        sa.sun_path[0] = '\0';
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa,
                       (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) != 0)
        return -1;
    return fd;
}

static void recv_one(int fd, char *buf, size_t n)
{
    ssize_t got = recv(fd, buf, n - 1, MSG_DONTWAIT);
    buf[got > 0 ? got : 0] = '\0';
}

WT_TEST(notify_to_a_path_and_an_abstract_name)
{
    char path[64], abs[64], buf[256];
    snprintf(path, sizeof path, "/tmp/wt-sdnotify-%d", (int)getpid());
    snprintf(abs, sizeof abs, "@wt-sdnotify-%d", (int)getpid());
    unlink(path);
    int a = bind_dgram(path), b = bind_dgram(abs);
    WT_ASSERT(a >= 0 && b >= 0);

    unsetenv("NOTIFY_SOCKET");
    WT_EQ_INT(wt_sdnotify("READY=1"), 0);
    setenv("NOTIFY_SOCKET", path, 1);
    WT_EQ_INT(wt_sdnotify("READY=1\nSTATUS=gpus_up=8/8"), 1);
    recv_one(a, buf, sizeof buf);
    WT_EQ_STR(buf, "READY=1\nSTATUS=gpus_up=8/8");
    setenv("NOTIFY_SOCKET", abs, 1);
    WT_EQ_INT(wt_sdnotify("WATCHDOG=1"), 1);
    recv_one(b, buf, sizeof buf);
    WT_EQ_STR(buf, "WATCHDOG=1");
    /* Nobody listening, and a name that is neither: errors, not crashes. */
    setenv("NOTIFY_SOCKET", "@wt-sdnotify-nobody-listens", 1);
    WT_ASSERT(wt_sdnotify("READY=1") < 0);
    setenv("NOTIFY_SOCKET", "relative/path", 1);
    WT_EQ_INT(wt_sdnotify("READY=1"), -EINVAL);
    unsetenv("NOTIFY_SOCKET");
    close(a);
    close(b);
    unlink(path);
}

WT_TEST(watchdog_period_is_half_of_watchdog_usec_for_this_process)
{
    char pid[16];
    unsetenv("WATCHDOG_PID");
    unsetenv("WATCHDOG_USEC");
    WT_ASSERT(wt_sdnotify_watchdog_ns() == 0);
    setenv("WATCHDOG_USEC", "4000000", 1);
    WT_ASSERT(wt_sdnotify_watchdog_ns() == 2000000000LL);
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    setenv("WATCHDOG_PID", pid, 1);
    WT_ASSERT(wt_sdnotify_watchdog_ns() == 2000000000LL);
    setenv("WATCHDOG_PID", "1", 1); /* meant for another process */
    WT_ASSERT(wt_sdnotify_watchdog_ns() == 0);
    unsetenv("WATCHDOG_PID");
    setenv("WATCHDOG_USEC", "0", 1);
    WT_ASSERT(wt_sdnotify_watchdog_ns() == 0);
    setenv("WATCHDOG_USEC", "12s", 1);
    WT_ASSERT(wt_sdnotify_watchdog_ns() == 0);
    unsetenv("WATCHDOG_USEC");
}

/* Logs one line of each level with stderr sent to a file, and reads the file back. */
static void log_to_file(const char *journal_stream, char *out, size_t n)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/wt-sdnotify-log-%d", (int)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    struct stat st;
    fstat(fd, &st);
    char v[64];
    if (journal_stream) {
        snprintf(v, sizeof v, "%s", journal_stream);
    } else {
        snprintf(v, sizeof v, "%llu:%llu", (unsigned long long)st.st_dev,
                 (unsigned long long)st.st_ino);
    }
    setenv("JOURNAL_STREAM", v, 1);
    wt_log_detect_journal();
    enum wt_log_level was = wt_log_get_level();
    wt_log_set_level(WT_LOG_DEBUG);
    wt_error("t", "e");
    wt_warn("t", "w");
    wt_info("t", "i");
    wt_debug("t", "d");
    wt_log_set_level(was);
    dup2(saved, STDERR_FILENO);
    close(saved);
    unsetenv("JOURNAL_STREAM");
    wt_log_detect_journal();
    ssize_t got = pread(fd, out, n - 1, 0);
    out[got > 0 ? got : 0] = '\0';
    close(fd);
    unlink(path);
}

WT_TEST(log_lines_carry_priorities_only_when_stderr_is_the_journal)
{
    char buf[1024];
    log_to_file(NULL, buf, sizeof buf);
    /* Four lines, each starting with its priority. */
    char *l1 = buf, *l2 = strchr(l1, '\n') + 1, *l3 = strchr(l2, '\n') + 1,
         *l4 = strchr(l3, '\n') + 1;
    WT_ASSERT(strncmp(l1, "<3>", 3) == 0);
    WT_ASSERT(strncmp(l2, "<4>", 3) == 0);
    WT_ASSERT(strncmp(l3, "<6>", 3) == 0);
    WT_ASSERT(strncmp(l4, "<7>", 3) == 0);
    WT_CONTAINS(l1, " error t: e\n");
    /* Another stream's device:inode (stderr redirected after systemd set it): plain lines. */
    log_to_file("1:1", buf, sizeof buf);
    WT_ASSERT(buf[0] != '<');
    WT_ASSERT(strstr(buf, "\n<") == NULL);
    WT_CONTAINS(buf, " warn  t: w\n");
    log_to_file("garbage", buf, sizeof buf);
    WT_ASSERT(buf[0] == '2'); /* the timestamp */
}
