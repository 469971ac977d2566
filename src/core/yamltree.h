/* SPDX-License-Identifier: MIT */
/*
 * A YAML document read with libyaml into a small tree of mapping, sequence and scalar nodes, each
 * keeping the line and column it starts at, so that whoever checks the values can name the place:
 * "wattage.yaml:12: collectors.nvml.interval: ...". Anchors and aliases are refused (they have no
 * use in a config file and would make a line number ambiguous); tags are ignored.
 */
#ifndef WT_YAMLTREE_H
#define WT_YAMLTREE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"

/* Inputs larger than this are refused: a config file is a few kilobytes. */
#define WT_YAML_MAX_BYTES (1 << 20)
/* Deeper nesting is refused, so that a hostile file cannot exhaust the stack. */
#define WT_YAML_MAX_DEPTH 64

enum wt_ynode_kind { WT_YNODE_SCALAR, WT_YNODE_MAP, WT_YNODE_SEQ };

struct wt_ynode {
    enum wt_ynode_kind kind;
    int line, col; /* 1-based, where the node starts */
    /* In a mapping's child: its key and where the key is written (the line a person looks at). */
    char *key;
    int key_line, key_col;
    /* A scalar's text ("" for an empty value), and whether it was quoted ("null" vs null). */
    char *value;
    bool quoted;
    /* A mapping's entries in document order (duplicates kept), or a sequence's items. */
    struct wt_ynode **child;
    size_t n, cap;
};

/*
 * Parses one YAML document from buf. name is used in messages ("name:LINE: ..."). On success
 * returns 0 and sets *root to the tree (the caller frees it with wt_ynode_free), or to NULL when
 * the input holds no document (empty, or only comments). Returns -EINVAL with err set on a syntax
 * error (libyaml's line and problem), more than one document, an alias or anchor, a non-scalar
 * mapping key, nesting deeper than WT_YAML_MAX_DEPTH or input larger than WT_YAML_MAX_BYTES;
 * -ENOMEM when out of memory.
 */
int wt_yaml_parse(const char *name, const char *buf, size_t len, struct wt_ynode **root,
                  struct wt_err *err) WT_MUST_USE;

/* Frees a tree; accepts NULL. */
void wt_ynode_free(struct wt_ynode *n);

/* True for a plain (unquoted) scalar that YAML reads as null: "", "~", "null", "Null", "NULL". */
bool wt_ynode_is_null(const struct wt_ynode *n);

/* True when both trees hold the same keys and values (lines aside); two NULLs are equal. */
bool wt_ynode_equal(const struct wt_ynode *a, const struct wt_ynode *b);

/* "a scalar", "a mapping" or "a list": for messages. */
const char *wt_ynode_kind_name(enum wt_ynode_kind kind);

#endif
