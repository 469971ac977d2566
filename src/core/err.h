/* SPDX-License-Identifier: MIT */
/*
 * Error messages for a person: where input is bad (config, API bodies, CLI arguments, imports)
 * the callee fills a struct wt_err naming the place, e.g.
 *   "wattage.yaml:12: collectors.nvml.interval: expected seconds > 0"
 * and returns a negative errno; the caller decides to print, log or answer JSON.
 */
#ifndef WT_ERR_H
#define WT_ERR_H

#define WT_ERR_LEN 512

struct wt_err {
    char msg[WT_ERR_LEN];
};

/* Formats into err->msg (err may be NULL). Returns -EINVAL for use as `return wt_err_set(...)`. */
int wt_err_set(struct wt_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define WT_MUST_USE __attribute__((warn_unused_result))

#endif
