/* SPDX-License-Identifier: MIT */
/*
 * The one CSV reader (carbon series, nvidia-smi logs): records of RFC 4180 fields from a buffer
 * or a stream, one at a time, with the line each starts on.
 *
 * Fields are split on commas; a field that starts with a double quote (after blanks) runs to the
 * closing quote, may hold commas and line breaks, and writes a quote as two (""). Line ends are
 * LF or CRLF (a CRLF inside quotes is read as LF). Two departures from the RFC, which every file
 * we read wants: blanks (spaces, tabs) around a field are not part of it (inside quotes they are),
 * and blank lines are skipped rather than read as a record of one empty field. A line whose first
 * non-blank character is the comment character (when set) is skipped too.
 *
 * Errors name the line: an unterminated quoted field (the line its quote opened on) and text
 * after a closing quote (the line it is on). After an error the reader goes on with the next line.
 */
#ifndef WT_CSV_H
#define WT_CSV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "core/err.h"

#define WT_CSV_MAX_RECORD (1u << 20) /* bytes of one record's fields: longer is an error */
#define WT_CSV_MAX_FIELDS 4096

struct wt_csv {
    /* Set by the caller after wt_csv_init_*: lines starting with it are skipped (0: none). */
    char comment;
    /* The current record (after wt_csv_next returned 1): n NUL-terminated fields, writable in
     * place until the next call. */
    char **field;
    size_t n;
    /* The line (1-based) where the current record starts; after an error, the error's line. */
    size_t line;
    /* Lines read so far (blank and comment lines included). */
    size_t lines;
    /* After wt_csv_next returned -EINVAL: what was wrong ("unterminated quoted field", ...). */
    const char *why;

    /* private */
    FILE *f;
    const char *buf;
    size_t len, pos;
    char *ln; /* the current physical line */
    size_t lcap;
    char *rec; /* the fields, back to back */
    size_t rlen, rcap;
    size_t *off; /* field start offsets in rec */
    size_t fcap;
};

/* A reader over len bytes at buf (not copied: keep them while reading). */
void wt_csv_init_mem(struct wt_csv *c, const char *buf, size_t len);
/* A reader over a stream (not closed by wt_csv_free). */
void wt_csv_init_file(struct wt_csv *c, FILE *f);
/*
 * Reads the next record. Returns 1 (c->field, c->n, c->line), 0 at the end, -EINVAL for a
 * malformed record (c->why, c->line; it is skipped, the next call goes on after it), -ENOMEM,
 * -EIO (a read error on the stream).
 */
int wt_csv_next(struct wt_csv *c) WT_MUST_USE;
/* Frees the reader's buffers (not the source). */
void wt_csv_free(struct wt_csv *c);

#endif
