/* SPDX-License-Identifier: MIT */
/* For the tests of the file collectors: this process's open descriptors, removing a tree. */
#ifndef WT_TEST_FSTREE_H
#define WT_TEST_FSTREE_H

#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>

static inline int wt_fstree_rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

/* Removes dir and everything under it, as a driver unloaded takes its sysfs directory. */
static inline int wt_fstree_remove(const char *dir)
{
    return nftw(dir, wt_fstree_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Open descriptors of this process (/proc/self/fd), or -1. */
static inline int wt_fstree_open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the directory's own */
}

#endif
