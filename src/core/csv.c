/* SPDX-License-Identifier: MIT */
/*
 * The CSV reader (see csv.h): physical lines from a buffer or a stream, a four-state scanner that
 * joins lines while a quoted field is open, and the fields of one record back to back in one
 * growing buffer.
 */
#include "core/csv.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

enum state { ST_START, ST_PLAIN, ST_QUOTED, ST_AFTER };

void wt_csv_init_mem(struct wt_csv *c, const char *buf, size_t len)
{
    memset(c, 0, sizeof *c);
    c->buf = buf ? buf : "";
    c->len = buf ? len : 0;
}

void wt_csv_init_file(struct wt_csv *c, FILE *f)
{
    memset(c, 0, sizeof *c);
    c->f = f;
}

void wt_csv_free(struct wt_csv *c)
{
    free(c->ln);
    free(c->rec);
    free(c->off);
    free(c->field);
    c->ln = c->rec = NULL;
    c->off = NULL;
    c->field = NULL;
    c->lcap = c->rcap = c->fcap = 0;
}

/*
 * The next physical line without its LF or CRLF: 1, 0 at the end, -EIO. A buffer of N line feeds
 * has N + 1 lines (the last one possibly empty), as an editor counts them.
 */
static int next_line(struct wt_csv *c, const char **s, size_t *n)
{
    if (c->f) {
        ssize_t r = getline(&c->ln, &c->lcap, c->f);
        if (r < 0)
            return ferror(c->f) ? -EIO : 0;
        *s = c->ln;
        *n = (size_t)r;
        if (*n && c->ln[*n - 1] == '\n')
            (*n)--;
    } else {
        if (c->pos > c->len)
            return 0;
        const char *p = c->buf + c->pos;
        const char *nl = memchr(p, '\n', c->len - c->pos);
        *s = p;
        *n = nl ? (size_t)(nl - p) : c->len - c->pos;
        c->pos += *n + 1;
    }
    if (*n && (*s)[*n - 1] == '\r')
        (*n)--;
    c->lines++;
    return 1;
}

static int push(struct wt_csv *c, char ch)
{
    if (c->rlen + 1 >= c->rcap) {
        size_t nc = c->rcap ? 2 * c->rcap : 256;
        if (c->rcap >= WT_CSV_MAX_RECORD)
            return -E2BIG;
        char *p = realloc(c->rec, nc);
        if (!p)
            return -ENOMEM;
        c->rec = p;
        c->rcap = nc;
    }
    c->rec[c->rlen++] = ch;
    return 0;
}

static int start_field(struct wt_csv *c, size_t *keep)
{
    if (c->n == c->fcap) {
        size_t nc = c->fcap ? 2 * c->fcap : 16;
        if (c->fcap >= WT_CSV_MAX_FIELDS)
            return -E2BIG;
        size_t *o = realloc(c->off, nc * sizeof *o);
        if (o)
            c->off = o;
        char **f = o ? realloc(c->field, nc * sizeof *f) : NULL;
        if (!f)
            return -ENOMEM;
        c->field = f;
        c->fcap = nc;
    }
    c->off[c->n++] = c->rlen;
    *keep = c->rlen;
    return 0;
}

/* Ends the field at keep (trailing blanks of an unquoted field dropped). */
static int end_field(struct wt_csv *c, size_t keep)
{
    c->rlen = keep;
    return push(c, '\0');
}

/* One character of a record: 0, -EINVAL (text after a closing quote: c->why), -E2BIG, -ENOMEM. */
static int scan(struct wt_csv *c, enum state *st, const char *s, size_t n, size_t *i, size_t *keep,
                size_t *quote_line)
{
    char ch = s[*i];
    bool sp = isspace((unsigned char)ch);
    int rc = 0;
    switch (*st) {
    case ST_START:
        if (sp)
            break;
        if (ch == '"') {
            *st = ST_QUOTED;
            *quote_line = c->lines;
        } else if (ch == ',') {
            if ((rc = end_field(c, *keep)) == 0)
                rc = start_field(c, keep);
        } else {
            *st = ST_PLAIN;
            rc = push(c, ch);
            *keep = c->rlen;
        }
        break;
    case ST_PLAIN:
        if (ch == ',') {
            if ((rc = end_field(c, *keep)) == 0)
                rc = start_field(c, keep);
            *st = ST_START;
        } else {
            rc = push(c, ch);
            if (!sp)
                *keep = c->rlen;
        }
        break;
    case ST_QUOTED:
        if (ch != '"') {
            rc = push(c, ch);
        } else if (*i + 1 < n && s[*i + 1] == '"') {
            rc = push(c, '"');
            (*i)++;
        } else {
            *st = ST_AFTER;
            *keep = c->rlen;
        }
        break;
    case ST_AFTER:
        if (sp)
            break;
        if (ch != ',') {
            c->why = "text after a closing quote";
            return -EINVAL;
        }
        if ((rc = end_field(c, *keep)) == 0)
            rc = start_field(c, keep);
        *st = ST_START;
        break;
    }
    return rc;
}

/* The record that starts with line s: 1, or a negative errno (c->why for -EINVAL). */
static int record(struct wt_csv *c, const char *s, size_t n)
{
    enum state st = ST_START;
    size_t keep = 0, quote_line = 0;
    int rc = start_field(c, &keep);
    while (rc == 0) {
        for (size_t i = 0; i < n && rc == 0; i++)
            rc = scan(c, &st, s, n, &i, &keep, &quote_line);
        if (rc || st != ST_QUOTED)
            break;
        /* A line break inside quotes belongs to the field. */
        if ((rc = push(c, '\n')) != 0)
            break;
        rc = next_line(c, &s, &n);
        if (rc == 0) {
            c->why = "unterminated quoted field";
            c->line = quote_line;
            return -EINVAL;
        }
        rc = rc < 0 ? rc : 0;
    }
    if (rc == -EINVAL) {
        c->line = c->lines;
        return rc;
    }
    if (rc == -E2BIG) {
        c->why = c->n >= WT_CSV_MAX_FIELDS ? "more than 4096 fields" : "a record over 1 MiB";
        c->line = c->lines;
        return -EINVAL;
    }
    if (rc == 0)
        rc = end_field(c, keep);
    if (rc)
        return rc;
    for (size_t i = 0; i < c->n; i++)
        c->field[i] = c->rec + c->off[i];
    return 1;
}

int wt_csv_next(struct wt_csv *c)
{
    const char *s;
    size_t n;
    int rc;
    c->why = NULL;
    c->n = 0;
    c->rlen = 0;
    while ((rc = next_line(c, &s, &n)) == 1) {
        size_t k = 0;
        while (k < n && isspace((unsigned char)s[k]))
            k++;
        if (k == n || (c->comment && s[k] == c->comment))
            continue;
        c->line = c->lines;
        return record(c, s, n);
    }
    return rc;
}
