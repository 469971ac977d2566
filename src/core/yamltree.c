/* SPDX-License-Identifier: MIT */
/*
 * YAML tree: libyaml's event stream folded into mapping/sequence/scalar nodes that remember their
 * line and column. An explicit stack of open containers replaces recursion, so depth is bounded by
 * WT_YAML_MAX_DEPTH and not by the C stack. Only the reading happens here; what the keys mean is
 * for the caller (config.c walks the tree against its schema).
 */
#include "core/yamltree.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

struct builder {
    const char *name;
    const char *buf;
    size_t len;
    struct wt_ynode *root;
    struct wt_ynode *stack[WT_YAML_MAX_DEPTH];
    int depth;
    /* Inside a mapping, the key read and waiting for its value. */
    char *key;
    int key_line, key_col;
    int docs;
};

void wt_ynode_free(struct wt_ynode *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->n; i++)
        wt_ynode_free(n->child[i]);
    free(n->child);
    free(n->key);
    free(n->value);
    free(n);
}

bool wt_ynode_is_null(const struct wt_ynode *n)
{
    if (!n || n->kind != WT_YNODE_SCALAR || n->quoted)
        return false;
    const char *v = n->value;
    return !*v || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 || strcmp(v, "Null") == 0 ||
           strcmp(v, "NULL") == 0;
}

const char *wt_ynode_kind_name(enum wt_ynode_kind kind)
{
    switch (kind) {
    case WT_YNODE_MAP:
        return "a mapping";
    case WT_YNODE_SEQ:
        return "a list";
    case WT_YNODE_SCALAR:
        break;
    }
    return "a scalar";
}

static int append(struct wt_ynode *parent, struct wt_ynode *child)
{
    if (parent->n == parent->cap) {
        size_t cap = parent->cap ? parent->cap * 2 : 8;
        struct wt_ynode **p = realloc(parent->child, cap * sizeof *p);
        if (!p)
            return -ENOMEM;
        parent->child = p;
        parent->cap = cap;
    }
    parent->child[parent->n++] = child;
    return 0;
}

/* The line of a byte offset, for reader errors (bad UTF-8) where libyaml gives only the offset. */
static int line_of_offset(const char *buf, size_t len, size_t off)
{
    int line = 1;
    for (size_t i = 0; i < off && i < len; i++)
        line += buf[i] == '\n';
    return line;
}

/* True when the 1-based line starts with a tab inside its indentation. */
static bool line_indented_with_tab(const char *buf, size_t len, int line)
{
    size_t i = 0;
    for (int l = 1; l < line && i < len; i++)
        l += buf[i] == '\n';
    for (; i < len && (buf[i] == ' ' || buf[i] == '\t'); i++)
        if (buf[i] == '\t')
            return true;
    return false;
}

static int syntax_error(struct builder *b, yaml_parser_t *p, struct wt_err *err)
{
    if (p->error == YAML_MEMORY_ERROR) {
        wt_err_set(err, "%s: out of memory while reading YAML", b->name);
        return -ENOMEM;
    }
    int line;
    bool at_end = p->problem_mark.index >= b->len;
    if (p->error == YAML_READER_ERROR)
        line = line_of_offset(b->buf, b->len, p->problem_offset);
    else if (p->context && (at_end || strcmp(p->context, "while scanning a simple key") == 0))
        /*
         * An unclosed quote or bracket, or a key without its ':': the place to fix is where it
         * opened, not where libyaml noticed (the end, or the next line).
         */
        line = (int)p->context_mark.line + 1;
    else
        line = (int)p->problem_mark.line + 1;
    const char *problem = p->problem ? p->problem : "unreadable input";
    const char *hint = "";
    if (line_indented_with_tab(b->buf, b->len, line))
        hint = " (YAML indentation must use spaces, not tabs)";
    else if (p->error == YAML_READER_ERROR)
        hint = " (the file must be UTF-8 text)";
    if (p->context && p->error != YAML_READER_ERROR && (int)p->context_mark.line + 1 != line)
        return wt_err_set(err, "%s:%d: YAML syntax error: %s %s (which starts on line %d)%s",
                          b->name, line, problem, p->context, (int)p->context_mark.line + 1, hint);
    if (p->context && p->error != YAML_READER_ERROR)
        return wt_err_set(err, "%s:%d: YAML syntax error: %s %s%s", b->name, line, problem,
                          p->context, hint);
    return wt_err_set(err, "%s:%d: YAML syntax error: %s%s", b->name, line, problem, hint);
}

/* Places a new node: as the root, as a list item, as a mapping key (scalars only) or value. */
static int place(struct builder *b, struct wt_ynode *n, bool *is_key, struct wt_err *err)
{
    *is_key = false;
    if (b->depth == 0) {
        if (b->root) {
            wt_ynode_free(n);
            return wt_err_set(err, "%s:%d: more than one value at the top of the document", b->name,
                              n->line);
        }
        b->root = n;
        return 0;
    }
    struct wt_ynode *top = b->stack[b->depth - 1];
    if (top->kind == WT_YNODE_MAP && !b->key) {
        /* A key: keep its text and place, the node itself is not kept. */
        *is_key = true;
        if (n->kind != WT_YNODE_SCALAR) {
            int line = n->line;
            const char *kind = wt_ynode_kind_name(n->kind);
            wt_ynode_free(n);
            return wt_err_set(err, "%s:%d: a mapping key must be a plain name, not %s", b->name,
                              line, kind);
        }
        b->key = n->value;
        b->key_line = n->line;
        b->key_col = n->col;
        n->value = NULL;
        wt_ynode_free(n);
        return 0;
    }
    if (top->kind == WT_YNODE_MAP) {
        n->key = b->key;
        n->key_line = b->key_line;
        n->key_col = b->key_col;
        b->key = NULL;
    }
    if (append(top, n) != 0) {
        wt_ynode_free(n);
        return -ENOMEM;
    }
    return 0;
}

static struct wt_ynode *new_node(enum wt_ynode_kind kind, const yaml_event_t *ev)
{
    struct wt_ynode *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->kind = kind;
    n->line = (int)ev->start_mark.line + 1;
    n->col = (int)ev->start_mark.column + 1;
    return n;
}

static int on_event(struct builder *b, const yaml_event_t *ev, bool *done, struct wt_err *err)
{
    struct wt_ynode *n = NULL;
    const yaml_char_t *anchor = NULL;
    bool is_key;
    int rc;

    switch (ev->type) {
    case YAML_STREAM_END_EVENT:
        *done = true;
        return 0;
    case YAML_DOCUMENT_START_EVENT:
        if (++b->docs > 1)
            return wt_err_set(err,
                              "%s:%d: only one YAML document is allowed (a second starts here)",
                              b->name, (int)ev->start_mark.line + 1);
        return 0;
    case YAML_ALIAS_EVENT:
        return wt_err_set(
            err, "%s:%d: YAML aliases (*%s) are not supported here; write the value out", b->name,
            (int)ev->start_mark.line + 1, (const char *)ev->data.alias.anchor);
    case YAML_SCALAR_EVENT:
        anchor = ev->data.scalar.anchor;
        if (!anchor) {
            if (!(n = new_node(WT_YNODE_SCALAR, ev)))
                return -ENOMEM;
            n->value = malloc(ev->data.scalar.length + 1);
            if (!n->value) {
                free(n);
                return -ENOMEM;
            }
            memcpy(n->value, ev->data.scalar.value, ev->data.scalar.length);
            n->value[ev->data.scalar.length] = '\0';
            n->quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
        }
        break;
    case YAML_MAPPING_START_EVENT:
        anchor = ev->data.mapping_start.anchor;
        if (!anchor && !(n = new_node(WT_YNODE_MAP, ev)))
            return -ENOMEM;
        break;
    case YAML_SEQUENCE_START_EVENT:
        anchor = ev->data.sequence_start.anchor;
        if (!anchor && !(n = new_node(WT_YNODE_SEQ, ev)))
            return -ENOMEM;
        break;
    case YAML_MAPPING_END_EVENT:
    case YAML_SEQUENCE_END_EVENT:
        b->depth--;
        return 0;
    default:
        return 0;
    }
    if (anchor)
        return wt_err_set(err, "%s:%d: YAML anchors (&%s) are not supported here", b->name,
                          (int)ev->start_mark.line + 1, (const char *)anchor);
    if ((rc = place(b, n, &is_key, err)) != 0)
        return rc;
    /* A key's node is gone by now (only its text was kept); keys are scalars anyway. */
    if (!is_key && n->kind != WT_YNODE_SCALAR) {
        if (b->depth == WT_YAML_MAX_DEPTH)
            return wt_err_set(err, "%s:%d: nested more than %d levels deep", b->name, n->line,
                              WT_YAML_MAX_DEPTH);
        b->stack[b->depth++] = n;
    }
    return 0;
}

int wt_yaml_parse(const char *name, const char *buf, size_t len, struct wt_ynode **root,
                  struct wt_err *err)
{
    struct builder b = {.name = name, .buf = buf, .len = len};
    yaml_parser_t parser;
    yaml_event_t ev;
    bool done = false;
    int rc = 0;

    *root = NULL;
    if (len > WT_YAML_MAX_BYTES)
        return wt_err_set(err, "%s: larger than %d bytes; is this really a config file?", name,
                          WT_YAML_MAX_BYTES);
    if (!yaml_parser_initialize(&parser)) {
        wt_err_set(err, "%s: out of memory", name);
        return -ENOMEM;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
    while (!done) {
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = syntax_error(&b, &parser, err);
            break;
        }
        rc = on_event(&b, &ev, &done, err);
        yaml_event_delete(&ev);
        if (rc != 0)
            break;
    }
    yaml_parser_delete(&parser);
    free(b.key);
    if (rc != 0) {
        if (rc == -ENOMEM)
            wt_err_set(err, "%s: out of memory while reading YAML", name);
        wt_ynode_free(b.root);
        return rc;
    }
    *root = b.root;
    return 0;
}

bool wt_ynode_equal(const struct wt_ynode *a, const struct wt_ynode *b)
{
    if (!a || !b)
        return a == b;
    if (a->kind != b->kind || a->n != b->n || (!a->key) != (!b->key) ||
        (a->key && strcmp(a->key, b->key) != 0))
        return false;
    if (a->kind == WT_YNODE_SCALAR)
        return a->quoted == b->quoted &&
               strcmp(a->value ? a->value : "", b->value ? b->value : "") == 0;
    for (size_t i = 0; i < a->n; i++)
        if (!wt_ynode_equal(a->child[i], b->child[i]))
            return false;
    return true;
}
