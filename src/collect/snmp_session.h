/* SPDX-License-Identifier: MIT */
/*
 * One SNMP target's net-snmp session (collect/snmp_session.c), for the SNMP collector
 * (collect/snmp.c): net-snmp's single-session API only (no global session list, so target
 * threads share nothing but the library's one-time init and, for SNMPv3, its USM user list,
 * which only open and close change, one at a time). A request waits at most the target's
 * timeout x (retries + 1), and a closed port (ICMP port unreachable) ends it at once.
 */
#ifndef WT_SNMP_SESSION_H
#define WT_SNMP_SESSION_H

#include <stddef.h>

#include <net-snmp/net-snmp-config.h>
#include <net-snmp/net-snmp-includes.h>

#include "collect/facility.h"
#include "collect/snmp.h"
#include "core/err.h"
#include "core/reading.h"

/* net-snmp's entry points and protocol OIDs (*wt_ns.usmAESPrivProtocol), filled by
 * wt_snmp_lib_load: never linked, so that a daemon without SNMP targets maps none of it. */
/* clang-format off */
#define WT_NETSNMP(X, t)                                                                           \
    X(t, generate_Ku) X(t, init_snmp) X(t, netsnmp_ds_set_boolean) X(t, netsnmp_ds_set_int)        \
    X(t, netsnmp_ds_set_string) X(t, netsnmp_register_loghandler) X(t, snmp_add_null_var)          \
    X(t, snmp_api_errstring) X(t, snmp_clone_pdu) X(t, snmp_disable_log) X(t, snmp_errstring)      \
    X(t, snmp_free_pdu) X(t, snmp_pdu_create) X(t, snmp_sess_async_send) X(t, snmp_sess_close)     \
    X(t, snmp_sess_error) X(t, snmp_sess_init) X(t, snmp_sess_open) X(t, snmp_sess_read)           \
    X(t, snmp_sess_select_info) X(t, snmp_sess_timeout) X(t, snmp_sess_transport)                  \
    X(t, usmHMACMD5AuthProtocol) X(t, usmHMACSHA1AuthProtocol)                                     \
    X(t, usmHMAC128SHA224AuthProtocol) X(t, usmHMAC192SHA256AuthProtocol)                          \
    X(t, usmHMAC256SHA384AuthProtocol) X(t, usmHMAC384SHA512AuthProtocol)                          \
    X(t, usmDESPrivProtocol) X(t, usmAESPrivProtocol) X(t, usmAES192PrivProtocol)                  \
    X(t, usmAES256PrivProtocol)
/* clang-format on */
WT_FAC_LIB_TABLE(wt_ns, WT_NETSNMP);
extern struct wt_ns_table wt_ns;

/* Loads net-snmp (libnetsnmp.so.40) once into wt_ns. Returns 0 or collect/facility.h's
 * wt_fac_lib_load error (-ELIBACC, -ELIBBAD) with err naming collectors.snmp.targets. */
int wt_snmp_lib_load(struct wt_err *err) WT_MUST_USE;

/* A session; zero-initialise (closed), then wt_snmp_session_open. */
struct wt_snmp_session {
    const struct wt_snmp_target *t; /* the target it was opened for (outlives the session) */
    void *sess;                     /* net-snmp single session, NULL when closed */
    /* The request in flight (see wt_snmp_request): its id, and what its callback learned. A
     * callback for an older id (one abandoned on a port unreachable) is ignored. */
    int pending_id;
    int reply_state; /* -1 waiting, else STAT_SUCCESS / STAT_TIMEOUT / STAT_ERROR */
    netsnmp_pdu *reply;
};

/*
 * Opens a session to target t (v2c: its community or community_file; v3: authPriv with keys
 * from its password files). The secrets leave no copy behind. Returns 0 or a negative errno
 * with err naming the target.
 */
int wt_snmp_session_open(struct wt_snmp_session *s, const struct wt_snmp_target *t,
                         struct wt_err *err);
/* Closes the session; a closed one (zeroed) is left as it is. */
void wt_snmp_session_close(struct wt_snmp_session *s);
/*
 * Sends pdu (consumed), waits for the answer. Returns 0 with *resp (caller frees with
 * snmp_free_pdu), or -ETIMEDOUT, -ECONNREFUSED (port unreachable), -EMSGSIZE (the agent answered
 * tooBig) or -EIO with err.
 */
int wt_snmp_request(struct wt_snmp_session *s, netsnmp_pdu *pdu, netsnmp_pdu **resp,
                    struct wt_err *err);
/* GET of one scalar (dotted OID txt) into out as text. Returns 0 (out "" when absent) or
 * wt_snmp_request's error. */
int wt_snmp_get_text(struct wt_snmp_session *s, const char *txt, char *out, size_t n,
                     struct wt_err *err);

#endif
