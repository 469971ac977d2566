/* SPDX-License-Identifier: MIT */
/*
 * The kept-open file readers (collect/filesrc.h) on files written per test under wt_test_dir():
 * a value rewritten in place is read afresh through the same descriptor, a file replaced
 * (renamed over), removed or moved away is reopened by its path, the descriptor budget holds
 * however many readers there are, and the process's descriptors stay bounded over many reads.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect/filesrc.h"
#include "fstree.h"
#include "runner.h"

static const char *path_of(const char *name)
{
    static char buf[1024];
    snprintf(buf, sizeof buf, "%s/%s", wt_test_dir(), name);
    return buf;
}

/* Rewrites the file in place (same inode), as sysfs produces a new value. */
static void rewrite(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_TRUNC);
    WT_ASSERT(fd >= 0);
    WT_EQ_INT((int)write(fd, text, strlen(text)), (int)strlen(text));
    close(fd);
}

WT_TEST(filesrc_rereads_in_place_and_keeps_one_descriptor)
{
    char path[1024], buf[32];
    snprintf(path, sizeof path, "%s", path_of("power1_input"));
    wt_test_write(path, "1000\n");
    struct wt_filesrc f = {0};
    WT_EQ_INT(wt_filesrc_init(&f, path), 0);
    size_t kept0 = wt_filesrc_kept();
    WT_EQ_INT(wt_filesrc_read(&f, buf, sizeof buf), 4);
    WT_EQ_STR(buf, "1000");
    WT_EQ_INT((int)(wt_filesrc_kept() - kept0), 1);
    int fd = f.fd;
    rewrite(path, "250000 \n");
    WT_EQ_INT(wt_filesrc_read(&f, buf, sizeof buf), 6);
    WT_EQ_STR(buf, "250000");
    WT_EQ_INT(f.fd, fd); /* the same descriptor, read again at offset 0 */
    rewrite(path, "7");
    WT_EQ_INT(wt_filesrc_read(&f, buf, sizeof buf), 1);
    WT_EQ_STR(buf, "7");
    wt_filesrc_close(&f);
    WT_EQ_INT((int)wt_filesrc_kept(), (int)kept0);
    WT_ASSERT(f.path == NULL);
    wt_filesrc_close(&f); /* twice, and on a zeroed one: nothing */
}

WT_TEST(filesrc_replaced_removed_and_moved_files_are_reopened)
{
    char path[1024], moved[1024], buf[32];
    snprintf(path, sizeof path, "%s", path_of("energy_uj"));
    snprintf(moved, sizeof moved, "%s", path_of("elsewhere"));
    wt_test_write(path, "1\n");
    struct wt_filesrc f = {0};
    WT_EQ_INT(wt_filesrc_init(&f, path), 0);
    WT_EQ_INT(wt_filesrc_read(&f, buf, sizeof buf), 1);
    /* renamed over, as a tool replaces a file: the new one is read */
    wt_test_write(path, "22\n");
    WT_EQ_INT(wt_filesrc_read(&f, buf, sizeof buf), 2);
    WT_EQ_STR(buf, "22");
    /* removed: an error, and no descriptor held */
    WT_EQ_INT(unlink(path), 0);
    WT_EQ_INT(wt_filesrc_read(&f, buf, sizeof buf), -ENOENT);
    WT_ASSERT(!f.open);
    /* back: read again */
    wt_test_write(path, "333\n");
    WT_EQ_INT(wt_filesrc_read(&f, buf, sizeof buf), 3);
    WT_EQ_STR(buf, "333");
    /* moved away (nothing unlinked): the path is what counts */
    WT_EQ_INT(rename(path, moved), 0);
    WT_EQ_INT(wt_filesrc_read(&f, buf, sizeof buf), -ENOENT);
    wt_filesrc_close(&f);
}

WT_TEST(filesrc_bounds_and_whole_files)
{
    char path[1024], buf[8];
    snprintf(path, sizeof path, "%s", path_of("long"));
    wt_test_write(path, "12345678");
    struct wt_filesrc f = {0};
    WT_EQ_INT(wt_filesrc_init(&f, path), 0);
    WT_EQ_INT(wt_filesrc_read(&f, buf, sizeof buf), -E2BIG);
    wt_test_write(path, "1234567");
    WT_EQ_INT(wt_filesrc_read(&f, buf, sizeof buf), 7);
    WT_EQ_STR(buf, "1234567");

    /* a file longer than the first buffer, read whole, then shorter through the same reader */
    FILE *w = fopen(path, "w");
    WT_ASSERT(w != NULL);
    for (int i = 0; i < 2000; i++)
        fprintf(w, "cpu%d 1 2 3 4\n", i);
    fclose(w);
    char *text = NULL;
    size_t cap = 0, len = 0;
    WT_EQ_INT(wt_filesrc_read_all(&f, &text, &cap, &len), 0);
    WT_ASSERT(len > 20000);
    WT_EQ_INT((int)strlen(text), (int)len);
    size_t pos = 0;
    char line[64];
    int lines = 0, last = 0;
    while ((last = wt_filesrc_line(text, len, &pos, line, sizeof line)) == 1)
        lines++;
    WT_EQ_INT(last, 0);
    WT_EQ_INT(lines, 2000);
    WT_EQ_STR(line, "cpu1999 1 2 3 4");
    rewrite(path, "short\nx");
    WT_EQ_INT(wt_filesrc_read_all(&f, &text, &cap, &len), 0);
    WT_EQ_INT((int)len, 7);
    pos = 0;
    WT_EQ_INT(wt_filesrc_line(text, len, &pos, line, sizeof line), 1);
    WT_EQ_STR(line, "short");
    WT_EQ_INT(wt_filesrc_line(text, len, &pos, line, 3), 1);
    WT_EQ_STR(line, "x");
    WT_EQ_INT(wt_filesrc_line(text, len, &pos, line, sizeof line), 0);
    /* a line longer than the buffer: its start, and the next line after it */
    const char *t = "abcdefgh\nz\n";
    pos = 0;
    WT_EQ_INT(wt_filesrc_line(t, strlen(t), &pos, line, 4), -E2BIG);
    WT_EQ_STR(line, "abc");
    WT_EQ_INT(wt_filesrc_line(t, strlen(t), &pos, line, 4), 1);
    WT_EQ_STR(line, "z");
    free(text);
    wt_filesrc_close(&f);
}

WT_TEST(filesrc_descriptors_stay_within_the_budget)
{
    enum { N = WT_FILESRC_MAX_KEPT + 40 };
    struct wt_filesrc *f = calloc(N, sizeof *f);
    WT_ASSERT(f != NULL);
    int fds0 = wt_fstree_open_fds();
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "s%d", i);
        wt_test_write(path_of(name), "%d\n", i);
        WT_EQ_INT(wt_filesrc_init(&f[i], path_of(name)), 0);
    }
    /* rounds of reads with every value changing (replaced files): the count stays put */
    int fds_first = 0;
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < N; i++) {
            char name[32], buf[32];
            snprintf(name, sizeof name, "s%d", i);
            if (round > 0)
                wt_test_write(path_of(name), "%d\n", i * 10 + round);
            WT_ASSERT(wt_filesrc_read(&f[i], buf, sizeof buf) > 0);
            WT_EQ_INT(atoi(buf), round > 0 ? i * 10 + round : i);
        }
        WT_ASSERT(wt_filesrc_kept() <= WT_FILESRC_MAX_KEPT);
        if (round == 0)
            fds_first = wt_fstree_open_fds();
        else
            WT_EQ_INT(wt_fstree_open_fds(), fds_first);
    }
    WT_ASSERT(fds_first - fds0 <= WT_FILESRC_MAX_KEPT);
    WT_ASSERT(fds_first - fds0 >= WT_FILESRC_MAX_KEPT - 8); /* the budget is used */
    for (int i = 0; i < N; i++)
        wt_filesrc_close(&f[i]);
    WT_EQ_INT(wt_fstree_open_fds(), fds0);
    WT_EQ_INT((int)wt_filesrc_kept(), 0);
    free(f);
}
