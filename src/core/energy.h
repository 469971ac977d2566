/* SPDX-License-Identifier: MIT */
/*
 * Energy integration, counter first. Pure functions over small caller-owned state, so every
 * edge case (first sample, wrap, reset, gap) is unit-tested without hardware.
 *
 * Counters stay in integer raw units (NVML mJ, RAPL µJ) and are converted to joules once, by the
 * caller. Power integration (trapezoid rule) is the fallback for devices without a counter, and
 * never spans a gap longer than the allowed span: the gap is counted, not filled.
 */
#ifndef WT_ENERGY_H
#define WT_ENERGY_H

#include <stdbool.h>
#include <stdint.h>

enum wt_delta_kind {
    WT_DELTA_FIRST, /* no previous reading: baseline taken, delta 0 */
    WT_DELTA_OK,    /* cur >= prev */
    WT_DELTA_WRAP,  /* cur < prev on a counter with a modulus, plausible as a wrap */
    WT_DELTA_RESET, /* cur < prev otherwise (driver reload, counter cleared): new baseline */
};

/*
 * The raw increase from prev to cur. modulus is the counter's range (RAPL max_energy_range_uj);
 * 0 means the counter does not wrap, so any decrease is a reset. A decrease whose wrap delta
 * would exceed max_delta (0: no limit) is a reset too. On a reset *delta is 0.
 */
enum wt_delta_kind wt_counter_delta(uint64_t prev, uint64_t cur, uint64_t modulus,
                                    uint64_t max_delta, uint64_t *delta);

/* A hardware counter followed over time. Zero-initialise. */
struct wt_energy_counter {
    bool have;
    uint64_t last_raw;
    int64_t last_t_ns;
    uint64_t total_raw; /* raw units accumulated since the first reading */
    uint64_t wraps;
    uint64_t resets;
};

/*
 * Feeds one counter reading taken at t_ns. max_delta as for wt_counter_delta. A reset starts a
 * new baseline; the energy counted since the reset (cur, when plausible) is kept, never a
 * negative or a huge jump. Returns the kind of step taken.
 */
enum wt_delta_kind wt_energy_counter_update(struct wt_energy_counter *c, int64_t t_ns, uint64_t raw,
                                            uint64_t modulus, uint64_t max_delta);

/*
 * Power integrated over time. Zero-initialise, then set window_ns before the first sample.
 *
 * A power reading is often an average over a window that ends when it is read: NVML's
 * nvmlDeviceGetPowerUsage averages over the last second on Ampere (but GA100) and newer (see
 * wt_energy_nvml_power_window_ns). Such a reading is the power at the middle of its window, so
 * each sample is placed at t - window/2 and the trapezoid runs over the placed samples; the
 * energy from the last placed sample to its stamp t is its power times window/2. When the
 * readings are 1-s averages taken every second that makes each step exact: the energy from one
 * stamp to the next is the newer reading times the second (E(t) - E(t - 1 s) is what the
 * average measures), where the trapezoid at the stamps lags the true energy by half a second
 * (with 265 W swings, about 130 J at every edge of a window). Readings closer together than the
 * window overlap; the last half window then also follows their slope (exact for power changing
 * linearly). window_ns 0: instantaneous readings, the plain trapezoid at the stamps.
 */
struct wt_energy_integral {
    int64_t window_ns; /* the readings' averaging window (0: instantaneous); set by the caller */
    bool have;
    int64_t last_t_ns;
    double last_power_w;
    /*
     * Joules counted up to the last sample's stamp (covered spans only): never decreases, so it
     * can be stored as a counter. Readings averaged over more than the poll interval can make the
     * estimate dip for a moment after a sharp drop in power; total_j then holds until it catches
     * up, and nothing is lost (the trapezoid below goes on).
     */
    double total_j;
    double covered_s; /* seconds integrated */
    double gap_s;     /* seconds skipped in gaps */
    uint64_t gaps;
    bool broken; /* set by wt_energy_integral_break: the next span is a gap */
    /* the trapezoid over the placed samples, and where the last one was placed */
    double placed_j;
    int64_t last_placed_ns;
    bool fresh; /* no step since the (re)start */
};

/*
 * Adds a power sample (watts) read at t_ns: the trapezoid with the previous sample is added unless
 * the span exceeds max_gap_ns, in which case the span is counted as a gap and integration restarts
 * from this sample (what was counted stays). A sample not after the previous one is ignored.
 * Returns 1 when a gap was recorded, 0 otherwise.
 */
int wt_energy_integral_update(struct wt_energy_integral *g, int64_t t_ns, double power_w,
                              int64_t max_gap_ns);
/* Marks the series as interrupted (device lost): the span up to the next sample is a gap. */
void wt_energy_integral_break(struct wt_energy_integral *g);

#define WT_ENERGY_NVML_WINDOW_DEFAULT_NS                                                           \
    1000000000LL /* a GPU not known to read instantaneously                                        \
                  */

/*
 * The averaging window of nvmlDeviceGetPowerUsage on a GPU, from its NVML name ("NVIDIA H200",
 * "Tesla V100-SXM2-32GB", "NVIDIA A100-SXM4-80GB"): 0 for the generations that read
 * instantaneous power (GA100 and older: A100, A800, A30, Volta, Turing, Pascal, Maxwell, Kepler),
 * else 1 s (Ampere but GA100, Ada, Hopper, Blackwell, and any GPU not recognised: the newer ones
 * all average). NULL or "" is unknown. The sources are in energy.c.
 */
int64_t wt_energy_nvml_power_window_ns(const char *model);

/*
 * The read skew of a GPU energy counter reading (wattage_gpu_energy_read_skew_seconds): how long
 * after the poll's stamp stamp_ns (CLOCK_REALTIME) the counter read returned at read_end_ns, in
 * seconds, rounded up to 10 us (a bound; jitter below that would cost the store bytes, see
 * bench/results). 0 when the read returned before the stamp (the clock was stepped back).
 * store/uncert.h counts power x this at a window edge on or between such readings.
 */
double wt_energy_read_skew_s(int64_t stamp_ns, int64_t read_end_ns);

#endif
