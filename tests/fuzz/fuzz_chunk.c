/* SPDX-License-Identifier: MIT */
/*
 * The store's chunk codec (src/store/chunk.c): any blob decodes or is refused without reading
 * past it, and what decodes has strictly increasing times and encodes to a blob that decodes to
 * the same points bit for bit. The input also read as (time, value) pairs: any such points, made
 * increasing, survive a round trip exactly. Seeds: a few hand-made blobs (seeds.sh).
 */
#include "fuzz.h"
#include "store/chunk.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_quiet();
    return 0;
}

static void round_trip(const struct wt_point *p, size_t n)
{
    uint8_t *blob = NULL;
    size_t len = 0;
    struct wt_point_buf again = {0};
    FUZZ_CHECK(wt_chunk_encode(p, n, &blob, &len) == 0);
    FUZZ_CHECK(wt_chunk_count(blob, len) == (int64_t)n);
    FUZZ_CHECK(wt_chunk_decode(blob, len, &again) == 0);
    FUZZ_CHECK(again.n == n);
    FUZZ_CHECK(memcmp(again.p, p, n * sizeof *p) == 0);
    free(again.p);
    free(blob);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct wt_point_buf out = {0};
    int rc = wt_chunk_decode(data, size, &out);
    FUZZ_CHECK(rc == 0 || rc == -EINVAL);
    FUZZ_CHECK(rc == 0 || out.n == 0);
    if (rc == 0) {
        for (size_t i = 1; i < out.n; i++)
            FUZZ_CHECK(out.p[i].t_ns > out.p[i - 1].t_ns);
        round_trip(out.p, out.n);
    }
    free(out.p);
    /* the input as points: 8 bytes of time step (made >= 1), 8 of value */
    size_t n = size / 16;
    if (n) {
        struct wt_point *p = calloc(n, sizeof *p);
        FUZZ_CHECK(p != NULL);
        int64_t t = INT64_MIN / 2;
        for (size_t i = 0; i < n; i++) {
            uint64_t step;
            memcpy(&step, data + 16 * i, 8);
            t += (int64_t)(step % 1000000000000ULL) + 1;
            p[i].t_ns = t;
            memcpy(&p[i].v, data + 16 * i + 8, 8);
        }
        round_trip(p, n);
        free(p);
    }
    return 0;
}
