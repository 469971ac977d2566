/* SPDX-License-Identifier: MIT */
/*
 * The store's chunk codec: the readings of one series over a closed span, in one compressed blob
 * (the chunks table of store.c). Pure: no SQL, no state.
 *
 * Layout: a format byte (WT_CHUNK_PLAIN or WT_CHUNK_ZSTD), the point count (varint) and, for
 * zstd, the plain payload's length (varint) before the zstd frame. The plain payload:
 *   - times: the first (zigzag varint), the first delta, then each delta of delta (ticks at a
 *     steady interval cost one byte each, which zstd then folds away);
 *   - a value mode byte: 0..WT_CHUNK_MAX_SCALE, the decimal scale s at which every value is an
 *     integer i that gives the value back exactly as i / 10^s (watts with milliwatt resolution,
 *     joules with millijoules, °C with 0.01 °C: s = 3, 3, 2); the first integer and then deltas
 *     (zigzag varints). Else WT_CHUNK_XOR: each double's bits XORed with the previous one's,
 *     written as a control byte (trailing zero bytes << 4 | significant bytes, 0: equal) and
 *     the significant bytes. NaN, infinities and -0 make a chunk XOR: every value comes back
 *     bit for bit.
 * zstd is used when it makes the blob smaller.
 */
#ifndef WT_STORE_CHUNK_H
#define WT_STORE_CHUNK_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "store/store.h"

enum { WT_CHUNK_PLAIN = 1, WT_CHUNK_ZSTD = 2 };
#define WT_CHUNK_MAX_SCALE 6
#define WT_CHUNK_XOR 0xff

/*
 * Encodes n >= 1 points, times strictly increasing, into *out (malloc'd, *len bytes). Returns 0,
 * -EINVAL (n == 0 or times not increasing) or -ENOMEM.
 */
int wt_chunk_encode(const struct wt_point *p, size_t n, uint8_t **out, size_t *len) WT_MUST_USE;

/*
 * Appends the points of a blob to out. Returns 0, -EINVAL (not a well-formed chunk: out is then
 * left as it was) or -ENOMEM.
 */
int wt_chunk_decode(const uint8_t *b, size_t len, struct wt_point_buf *out) WT_MUST_USE;

/* The point count a blob says it holds, without decoding it: >= 0, or -EINVAL. */
int64_t wt_chunk_count(const uint8_t *b, size_t len);

#endif
