/* SPDX-License-Identifier: MIT */
/*
 * librdkafka, loaded with dlopen (librdkafka.so.1, or WATTAGE_RDKAFKA_LIBRARY) when a kafka
 * section is opened, as NVML is (collect/nvml.c): a daemon without one does not map it, nor the
 * TLS, SASL and compression libraries it pulls in. The entry points Kafka calls are resolved by
 * name; the types and constants come from the header (librdkafka-dev at build time).
 */
#ifndef WT_KAFKA_LIB_H
#define WT_KAFKA_LIB_H

#include <librdkafka/rdkafka.h>

#include "core/err.h"

/* The entry points serve/kafka.c calls, each of the library's own type. */
struct wt_rdk {
    __typeof__(rd_kafka_version_str) *version_str;
    __typeof__(rd_kafka_conf_new) *conf_new;
    __typeof__(rd_kafka_conf_set) *conf_set;
    __typeof__(rd_kafka_conf_destroy) *conf_destroy;
    __typeof__(rd_kafka_conf_set_opaque) *conf_set_opaque;
    __typeof__(rd_kafka_conf_set_dr_msg_cb) *conf_set_dr_msg_cb;
    __typeof__(rd_kafka_conf_set_error_cb) *conf_set_error_cb;
    __typeof__(rd_kafka_conf_set_log_cb) *conf_set_log_cb;
    __typeof__(rd_kafka_new) *new_;
    __typeof__(rd_kafka_destroy) *destroy;
    __typeof__(rd_kafka_purge) *purge;
    __typeof__(rd_kafka_poll) *poll;
    __typeof__(rd_kafka_producev) *producev;
    __typeof__(rd_kafka_message_status) *message_status;
    __typeof__(rd_kafka_fatal_error) *fatal_error;
    __typeof__(rd_kafka_err2name) *err2name;
    __typeof__(rd_kafka_err2str) *err2str;
};

/*
 * Loads the library, once per process (later calls return the first one's result). *out: the
 * entry points, valid for the process's life. Returns 0, or -ENOENT with err "cannot load
 * librdkafka ..." (the library or one of its entry points missing; the caller names its section).
 */
int wt_kafka_lib_load(const struct wt_rdk **out, struct wt_err *err) WT_MUST_USE;

#endif
