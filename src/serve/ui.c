/* SPDX-License-Identifier: MIT */
/*
 * The live page's files (see ui.h), embedded at build time: the assembler's .incbin copies
 * src/serve/ui/live.{html,js,css} into read-only data (the Makefile rebuilds this object when
 * they change), so the binary serves them without reading the file system.
 */
#include "serve/ui.h"

#include <stdint.h>
#include <string.h>

/* Each file as NAME (its bytes) and NAME_end (one past the last); paths from the build's root. */
#define UI_ASSET(name, file)                                                                       \
    __asm__(".section .rodata\n"                                                                   \
            ".balign 16\n"                                                                         \
            ".hidden " #name "\n"                                                                  \
            ".hidden " #name "_end\n" #name ":\n"                                                  \
            ".incbin \"" file "\"\n" #name "_end:\n"                                               \
            ".byte 0\n"                                                                            \
            ".previous\n");                                                                        \
    extern const char name[] __attribute__((visibility("hidden")));                                \
    extern const char name##_end[] __attribute__((visibility("hidden")))

UI_ASSET(wt_ui_html, "src/serve/ui/live.html");
UI_ASSET(wt_ui_js, "src/serve/ui/live.js");
UI_ASSET(wt_ui_css, "src/serve/ui/live.css");

struct asset {
    const char *path, *type;
    const char *start, *end;
};

static const struct asset assets[] = {
    {"/", "text/html; charset=utf-8", wt_ui_html, wt_ui_html_end},
    {"/ui/live.js", "text/javascript; charset=utf-8", wt_ui_js, wt_ui_js_end},
    {"/ui/live.css", "text/css; charset=utf-8", wt_ui_css, wt_ui_css_end},
};

static void keep(void *arg)
{
    (void)arg; /* the bytes are the binary's own */
}

static int route(void *ctx, const struct wt_http_request *req, struct wt_http_reply *rep)
{
    const struct asset *a = ctx;
    (void)req;
    rep->status = 200;
    rep->body = (char *)(uintptr_t)a->start;
    rep->len = (size_t)(a->end - a->start);
    rep->content_type = a->type;
    rep->release = keep;
    rep->release_arg = NULL;
    rep->csp = WT_UI_CSP;
    return 0;
}

int wt_ui_add(struct wt_http *h)
{
    int rc = 0;
    for (size_t i = 0; i < sizeof assets / sizeof assets[0] && rc == 0; i++)
        rc =
            wt_http_add_route(h, "GET", assets[i].path, true, route, (void *)(uintptr_t)&assets[i]);
    return rc;
}
