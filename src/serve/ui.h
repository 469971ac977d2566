/* SPDX-License-Identifier: MIT */
/*
 * The live page of `wattage run`: GET / (HTML), GET /ui/live.js and GET /ui/live.css, embedded
 * in the binary (src/serve/ui/), no other origin referenced. The page draws the current power
 * per GPU and of the node, the last hour's charts (SVG drawn by its own script), the firing
 * alerts and the running jobs, from the JSON API (/api/v1/status, /api/v1/series,
 * /api/v1/alerts, /api/v1/jobs), fetched again every few seconds.
 *
 * The three files hold no data, so they are public (a person must be able to load the page to
 * type the token); the data stays behind the API's own rule. With a token that protects reads,
 * the page asks for it (or takes it once from the address's fragment, #token=..., which no
 * browser sends to the server) and sends it as `Authorization: Bearer` on its fetches. It keeps
 * it in the tab's sessionStorage only, never in a cookie: no request carries it unless the
 * page's script adds it, so another site cannot make the browser use it (no CSRF). Every file
 * is served with a strict Content-Security-Policy (scripts and styles from this origin only, no
 * inline script, fetches to this origin only, no frames, no forms).
 */
#ifndef WT_UI_H
#define WT_UI_H

#include "serve/http.h"

/* The policy sent with the page's files. */
#define WT_UI_CSP                                                                                  \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "                    \
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

/* Adds the page's routes (public reads) to h. Returns 0 or -ENOSPC. */
int wt_ui_add(struct wt_http *h) WT_MUST_USE;

#endif
