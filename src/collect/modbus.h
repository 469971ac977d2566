/* SPDX-License-Identifier: MIT */
/*
 * Modbus TCP collector (libmodbus): facility power meters, chiller and CRAH meters, water flow
 * meters and heat meters. Each target is one meter (address, unit id, timeout) described in
 * `collectors.modbus.targets` by its registers: address, function (holding|input), type
 * (u16|i16|u32|i32|float32|u64), word order (big|little), scale, unit, metric and point/kind.
 * Readings are wattage_facility_* series labelled source="modbus", target, point, kind, name and
 * node/rack/zone; counters (energy, water, heat) are followed with struct wt_energy_counter, so
 * a u16/u32 register that wraps or a meter that is reset never makes a negative or a jump.
 *
 * A register may name a scale_register: a SunSpec "sunssf" (int16 exponent, value x 10^sf) read
 * in the same request and never exported; 0x8000 there ("not implemented") leaves the reading
 * out.
 *
 * A meter that drops the connection or stops answering fails that poll (each request is bounded
 * by the target's timeout); the next poll connects again. A Modbus exception on one block of
 * registers (illegal address...) skips those registers only.
 */
#ifndef WT_MODBUS_H
#define WT_MODBUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/reading.h"
#include "core/source.h"
#include "core/yamltree.h"

extern const struct wt_collector_ops wt_modbus_collector;

/* Checks the section collectors.modbus.targets (see sections.c). Returns 0 or -EINVAL. */
int wt_modbus_config_check(const char *file, const struct wt_ynode *node, struct wt_err *err);

enum wt_modbus_type {
    WT_MB_U16,
    WT_MB_I16,
    WT_MB_U32,
    WT_MB_I32,
    WT_MB_FLOAT32,
    WT_MB_U64,
};

/* Number of 16-bit registers a type spans (1, 2 or 4). */
unsigned wt_modbus_type_words(enum wt_modbus_type t);

/*
 * Decodes the registers of one value as read from the wire (regs[0] first). Words are
 * big-endian within themselves (Modbus); little_words says the least significant word comes
 * first (the "CDAB" order of many meters). The raw integer is put in *raw (bit pattern for
 * float32, sign-extended two's complement for i16/i32) and the numeric value in *value.
 */
void wt_modbus_decode(const uint16_t *regs, enum wt_modbus_type t, bool little_words, uint64_t *raw,
                      double *value);

/*
 * For tests and fuzzing: a poll without the network, on a target's state made by
 * wt_modbus_collector.open_target (which does not connect). wt_modbus_feed gives the registers
 * read: words[i] is register first + i of function (0 holding, 1 input); a register lying wholly
 * in them is read this poll. wt_modbus_readings then appends what the poll would (type, word
 * order, scale, unit, SunSpec scale factor, counters followed across polls) and starts the next
 * poll with nothing read. Returns 0 or -ENOMEM.
 */
void wt_modbus_feed(void *state, int function, unsigned first, const uint16_t *words, size_t n);
int wt_modbus_readings(void *state, int64_t t_ns, struct wt_batch *out) WT_MUST_USE;

#endif
