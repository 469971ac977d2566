/* SPDX-License-Identifier: MIT */
/* Secret files: the mode rule, and the stat-then-check that run and check-config share. */
#include <errno.h>
#include <sys/stat.h>

#include "core/secret.h"
#include "runner.h"

WT_TEST(secret_mode_refuses_group_and_others)
{
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_check_secret_mode("daemon.tls.key", "/k.pem", S_IFREG | 0600, &err), 0);
    WT_EQ_INT(wt_check_secret_mode("daemon.tls.key", "/k.pem", S_IFREG | 0400, &err), 0);
    WT_EQ_INT(wt_check_secret_mode("daemon.tls.key", "/k.pem", S_IFREG | 0644, &err), -EPERM);
    WT_CONTAINS(err.msg, "daemon.tls.key: /k.pem is accessible by group or others (mode 0644)");
    WT_CONTAINS(err.msg, "chmod 600 /k.pem");
    WT_EQ_INT(wt_check_secret_mode("k", "/k", S_IFREG | 0640, &err), -EPERM);
    WT_EQ_INT(wt_check_secret_mode("k", "/k", S_IFREG | 0604, &err), -EPERM);
    WT_EQ_INT(wt_check_secret_mode("k", "/k", S_IFREG | 0602, &err), -EPERM);
    WT_EQ_INT(wt_check_secret_mode("k", "/k", S_IFREG | 0610, &err), -EPERM);
}

/* The mode bits are read, not tried: the same answer as root (CI) as for any user. */
WT_TEST(secret_file_by_its_mode_and_a_missing_one_by_name)
{
    char path[512];
    struct wt_err err = {{0}};
    snprintf(path, sizeof path, "%s/t.token", wt_test_dir());
    wt_test_write(path, "s3cret\n");
    WT_EQ_INT(chmod(path, 0600), 0);
    WT_EQ_INT(wt_check_secret_file("carbon.sources[0].token_file", path, &err), 0);
    WT_EQ_INT(chmod(path, 0644), 0);
    WT_EQ_INT(wt_check_secret_file("carbon.sources[0].token_file", path, &err), -EPERM);
    WT_CONTAINS(err.msg, "carbon.sources[0].token_file: ");
    WT_CONTAINS(err.msg, "t.token is accessible by group or others (mode 0644)");
    snprintf(path, sizeof path, "%s/nope.token", wt_test_dir());
    WT_EQ_INT(wt_check_secret_file("bearer_token_file", path, &err), -ENOENT);
    WT_CONTAINS(err.msg, "bearer_token_file ");
    WT_CONTAINS(err.msg, "nope.token: No such file or directory");
}
