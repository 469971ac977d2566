/* SPDX-License-Identifier: MIT */
/*
 * One SNMP target's net-snmp session; see snmp_session.h. Owns the library's one-time set-up
 * (no config files, no persistent state, no MIBs, no logging), the session's open (v2c
 * community or v3 authPriv keys from their files, wiped after use) and close under one lock
 * (they change net-snmp's global USM user list), and the request: a PDU sent, its answer waited
 * for, with a closed port seen at once through the socket's error queue.
 */
#include "collect/snmp_session.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <time.h>

/* after time.h: it uses struct timespec */
#include <linux/errqueue.h>

#include "collect/facility.h"
#include "collect/snmp_config.h"
#include "core/clock.h"

WT_FAC_LIB(, wt_ns, WT_NETSNMP, "collectors.snmp.targets", "libnetsnmp.so.40", "libsnmp40");

int wt_snmp_lib_load(struct wt_err *err)
{
    return wt_fac_lib_load(&wt_ns_lib, err);
}

static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
/* Session open and close touch net-snmp's global USM user list: one at a time. */
static pthread_mutex_t lib_mu = PTHREAD_MUTEX_INITIALIZER;

static void lib_init(void)
{
    /* No snmp.conf, no persistent state under /var/lib/snmp, no MIB files: we use numeric OIDs. */
    wt_ns.netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DONT_READ_CONFIGS, 1);
    wt_ns.netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DISABLE_PERSISTENT_LOAD, 1);
    wt_ns.netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DISABLE_PERSISTENT_SAVE, 1);
    wt_ns.netsnmp_ds_set_int(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_MIB_WARNINGS, 0);
    wt_ns.netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_MIB_ERRORS, 0);
    wt_ns.netsnmp_ds_set_string(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_MIBDIRS, "/nonexistent");
    /*
     * init_snmp creates <persistent dir>/cert_indexes even with persistence off; a directory
     * below /dev/null cannot be made, by root either, so nothing is written (nothing needs it:
     * no TLS transports, no saved state).
     */
    wt_ns.netsnmp_ds_set_string(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_PERSISTENT_DIR,
                                "/dev/null/wattage-no-snmp-state");
    /* The library logs to stderr when no handler is set: give it one that drops everything. */
    wt_ns.snmp_disable_log();
    wt_ns.netsnmp_register_loghandler(NETSNMP_LOGHANDLER_NONE, LOG_EMERG);
    wt_ns.init_snmp("wattage");
}

/* Reads a one-line secret file into out (trailing newline removed). Returns 0 or -errno. */
static int read_secret(const char *path, char *out, size_t n, const char *what,
                       const struct wt_snmp_target *t, struct wt_err *err)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        int e = errno;
        wt_err_set(err, "target %s: cannot read %s %s: %s", t->name, what, path, strerror(e));
        return -e;
    }
    size_t len = fread(out, 1, n - 1, f);
    bool more = fgetc(f) != EOF;
    fclose(f);
    out[len] = '\0';
    while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == '\r'))
        out[--len] = '\0';
    if (more || len == 0)
        return wt_err_set(err, "target %s: %s %s must hold one line of 1..%zu characters", t->name,
                          what, path, n - 2);
    return 0;
}

int wt_snmp_session_open(struct wt_snmp_session *s, const struct wt_snmp_target *target,
                         struct wt_err *err)
{
    s->t = target;
    const struct wt_snmp_target *t = s->t;
    netsnmp_session sess;
    char peer[200], community[256] = "", authpass[256] = "", privpass[256] = "";
    int rc = 0;
    pthread_once(&lib_once, lib_init);
    wt_ns.snmp_sess_init(&sess);
    bool v6 = strchr(t->host, ':') != NULL;
    snprintf(peer, sizeof peer, v6 ? "udp6:[%s]:%d" : "udp:%s:%d", t->host, t->port);
    sess.peername = peer;
    sess.timeout = (long)(t->timeout_ns / 1000);
    sess.retries = t->retries;
    if (t->version == WT_SNMP_V2C) {
        sess.version = SNMP_VERSION_2c;
        if (t->community_file[0])
            rc = read_secret(t->community_file, community, sizeof community, "community_file", t,
                             err);
        else
            snprintf(community, sizeof community, "%s", t->community);
        if (rc)
            return rc;
        sess.community = (u_char *)community;
        sess.community_len = strlen(community);
    } else {
        const oid *const auth_oids[] = {
            *wt_ns.usmHMACMD5AuthProtocol,       *wt_ns.usmHMACSHA1AuthProtocol,
            *wt_ns.usmHMAC128SHA224AuthProtocol, *wt_ns.usmHMAC192SHA256AuthProtocol,
            *wt_ns.usmHMAC256SHA384AuthProtocol, *wt_ns.usmHMAC384SHA512AuthProtocol};
        static const size_t auth_lens[] = {
            OID_LENGTH(usmHMACMD5AuthProtocol),       OID_LENGTH(usmHMACSHA1AuthProtocol),
            OID_LENGTH(usmHMAC128SHA224AuthProtocol), OID_LENGTH(usmHMAC192SHA256AuthProtocol),
            OID_LENGTH(usmHMAC256SHA384AuthProtocol), OID_LENGTH(usmHMAC384SHA512AuthProtocol)};
        const oid *const priv_oids[] = {*wt_ns.usmDESPrivProtocol, *wt_ns.usmAESPrivProtocol,
                                        *wt_ns.usmAES192PrivProtocol, *wt_ns.usmAES256PrivProtocol};
        static const size_t priv_lens[] = {
            OID_LENGTH(usmDESPrivProtocol), OID_LENGTH(usmAESPrivProtocol),
            OID_LENGTH(usmAES192PrivProtocol), OID_LENGTH(usmAES256PrivProtocol)};
        rc = read_secret(t->auth_password_file, authpass, sizeof authpass, "auth_password_file", t,
                         err);
        if (!rc)
            rc = read_secret(t->priv_password_file, privpass, sizeof privpass, "priv_password_file",
                             t, err);
        if (!rc && (strlen(authpass) < 8 || strlen(privpass) < 8))
            rc = wt_err_set(err, "target %s: SNMPv3 passwords must have at least 8 characters",
                            t->name);
        if (rc)
            goto out;
        sess.version = SNMP_VERSION_3;
        sess.securityName = (char *)t->user;
        sess.securityNameLen = strlen(t->user);
        sess.securityLevel = SNMP_SEC_LEVEL_AUTHPRIV;
        sess.securityAuthProto = (oid *)auth_oids[t->auth_proto];
        sess.securityAuthProtoLen = auth_lens[t->auth_proto];
        sess.securityAuthKeyLen = USM_AUTH_KU_LEN;
        sess.securityPrivProto = (oid *)priv_oids[t->priv_proto];
        sess.securityPrivProtoLen = priv_lens[t->priv_proto];
        sess.securityPrivKeyLen = USM_PRIV_KU_LEN;
        if (wt_ns.generate_Ku(sess.securityAuthProto, (u_int)sess.securityAuthProtoLen,
                              (u_char *)authpass, strlen(authpass), sess.securityAuthKey,
                              &sess.securityAuthKeyLen) != SNMPERR_SUCCESS ||
            wt_ns.generate_Ku(sess.securityAuthProto, (u_int)sess.securityAuthProtoLen,
                              (u_char *)privpass, strlen(privpass), sess.securityPrivKey,
                              &sess.securityPrivKeyLen) != SNMPERR_SUCCESS) {
            rc = wt_err_set(err, "target %s: cannot derive the SNMPv3 keys (%s)", t->name,
                            wt_snmp_auth_names[t->auth_proto]);
            goto out;
        }
    }
    pthread_mutex_lock(&lib_mu);
    s->sess = wt_ns.snmp_sess_open(&sess);
    int e = sess.s_snmp_errno;
    pthread_mutex_unlock(&lib_mu);
    if (!s->sess) {
        rc = wt_err_set(err, "target %s: cannot open a session to %s: %s", t->name, peer,
                        wt_ns.snmp_api_errstring(e));
    } else {
        /*
         * net-snmp sends from an unconnected UDP socket, where Linux drops the ICMP "port
         * unreachable" a closed port answers with; with IP_RECVERR the kernel queues it on the
         * socket, and request() sees it at once instead of waiting out every retry.
         */
        netsnmp_transport *tr = wt_ns.snmp_sess_transport(s->sess);
        int one = 1;
        if (tr && tr->sock >= 0)
            (void)(v6 ? setsockopt(tr->sock, IPPROTO_IPV6, IPV6_RECVERR, &one, sizeof one)
                      : setsockopt(tr->sock, IPPROTO_IP, IP_RECVERR, &one, sizeof one));
    }
out:
    /* The secrets leave no copy behind in our memory. */
    explicit_bzero(community, sizeof community);
    explicit_bzero(authpass, sizeof authpass);
    explicit_bzero(privpass, sizeof privpass);
    explicit_bzero(sess.securityAuthKey, sizeof sess.securityAuthKey);
    explicit_bzero(sess.securityPrivKey, sizeof sess.securityPrivKey);
    return rc;
}

void wt_snmp_session_close(struct wt_snmp_session *s)
{
    if (!s->sess)
        return;
    pthread_mutex_lock(&lib_mu);
    wt_ns.snmp_sess_close(s->sess);
    pthread_mutex_unlock(&lib_mu);
    s->sess = NULL;
}

/*
 * Reads the socket's error queue (IP_RECVERR): true when it holds an ICMP port unreachable
 * (ECONNREFUSED) from the target. Drains what it reads.
 */
static bool port_unreachable(int fd)
{
    bool refused = false;
    for (int i = 0; i < 16; i++) {
        char cbuf[512], data[64];
        struct iovec iov = {data, sizeof data};
        struct msghdr m = {
            .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
        if (recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
            break;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
            if ((c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_RECVERR) ||
                (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_RECVERR)) {
                const struct sock_extended_err *ee = (const void *)CMSG_DATA(c);
                refused |= ee->ee_errno == ECONNREFUSED;
            }
        }
    }
    return refused;
}

static int on_reply(int op, netsnmp_session *ss, int reqid, netsnmp_pdu *pdu, void *magic)
{
    struct wt_snmp_session *s = magic;
    (void)ss;
    if (reqid != s->pending_id || s->reply_state != -1)
        return 1; /* an abandoned request */
    if (op == NETSNMP_CALLBACK_OP_RECEIVED_MESSAGE) {
        s->reply = wt_ns.snmp_clone_pdu(pdu);
        s->reply_state = s->reply ? STAT_SUCCESS : STAT_ERROR;
    } else if (op == NETSNMP_CALLBACK_OP_TIMED_OUT) {
        s->reply_state = STAT_TIMEOUT;
    } else if (op == NETSNMP_CALLBACK_OP_SEND_FAILED || op == NETSNMP_CALLBACK_OP_DISCONNECT) {
        s->reply_state = STAT_ERROR;
    }
    return 1;
}

/*
 * snmp_sess_synch_response, with one difference: between packets it looks at the socket's
 * error queue, so a closed port (ICMP port unreachable) ends the wait at once. Returns a STAT_
 * value, or 1 for port unreachable; *resp is the answer on STAT_SUCCESS.
 */
static int exchange(struct wt_snmp_session *s, netsnmp_pdu *pdu, netsnmp_pdu **resp)
{
    netsnmp_transport *tr = wt_ns.snmp_sess_transport(s->sess);
    int fd = tr ? tr->sock : -1;
    if (fd >= 0)
        (void)port_unreachable(fd); /* what an earlier poll left */
    s->reply_state = -1;
    s->reply = NULL;
    s->pending_id = wt_ns.snmp_sess_async_send(s->sess, pdu, on_reply, s);
    if (!s->pending_id) {
        wt_ns.snmp_free_pdu(pdu);
        return STAT_ERROR;
    }
    while (s->reply_state == -1) {
        int nfds = 0, block = 1;
        fd_set fds;
        struct timeval tv = {0};
        FD_ZERO(&fds);
        wt_ns.snmp_sess_select_info(s->sess, &nfds, &fds, &tv, &block);
        int n = select(nfds, &fds, NULL, NULL, block ? NULL : &tv);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            s->reply_state = STAT_ERROR;
            break;
        }
        if (n > 0 && fd >= 0 && port_unreachable(fd)) {
            s->pending_id = 0; /* its callback, when the library times it out, is ignored */
            return 1;
        }
        if (n > 0)
            wt_ns.snmp_sess_read(s->sess, &fds);
        else
            wt_ns.snmp_sess_timeout(s->sess);
    }
    *resp = s->reply;
    s->reply = NULL;
    return s->reply_state;
}

/*
 * Sends pdu, waits for the answer. Returns 0 with *resp, or -ETIMEDOUT, -ECONNREFUSED (port
 * unreachable) or -EIO with err.
 */
int wt_snmp_request(struct wt_snmp_session *s, netsnmp_pdu *pdu, netsnmp_pdu **resp,
                    struct wt_err *err)
{
    *resp = NULL;
    int st = exchange(s, pdu, resp);
    int liberr = 0, syserr = 0;
    char *msg = NULL;
    if (st == 1) {
        wt_err_set(err,
                   "target %s: %s:%d: port unreachable (nothing listens there; is the agent "
                   "running, and on this port?)",
                   s->t->name, s->t->host, s->t->port);
        return -ECONNREFUSED;
    }
    if (st == STAT_ERROR) {
        wt_ns.snmp_sess_error(s->sess, &liberr, &syserr, &msg);
        /*
         * SNMPv3's engine ID discovery runs inside: its timeout is a timeout too, though it
         * comes back as an error whose number is lost (only the text says so).
         */
        if (liberr == SNMPERR_TIMEOUT ||
            (msg && strcmp(msg, wt_ns.snmp_api_errstring(SNMPERR_TIMEOUT)) == 0))
            st = STAT_TIMEOUT;
    }
    if (st == STAT_TIMEOUT) {
        free(msg);
        wt_err_set(err, "target %s: no answer from %s:%d (timeout %.3g s, %d tries)", s->t->name,
                   s->t->host, s->t->port, (double)s->t->timeout_ns / WT_NS_PER_S,
                   s->t->retries + 1);
        return -ETIMEDOUT;
    }
    if (st != STAT_SUCCESS || !*resp) {
        wt_err_set(err, "target %s: request failed: %s", s->t->name, msg ? msg : "unknown");
        free(msg);
        if (*resp)
            wt_ns.snmp_free_pdu(*resp);
        *resp = NULL;
        return -EIO;
    }
    if ((*resp)->errstat != SNMP_ERR_NOERROR) {
        long st2 = (*resp)->errstat;
        wt_err_set(err, "target %s: the agent answered %s", s->t->name,
                   wt_ns.snmp_errstring((int)st2));
        wt_ns.snmp_free_pdu(*resp);
        *resp = NULL;
        return st2 == SNMP_ERR_TOOBIG ? -EMSGSIZE : -EIO;
    }
    return 0;
}

/* GET of one scalar into out as text. Returns 0 (out "" when absent) or a request error. */
int wt_snmp_get_text(struct wt_snmp_session *s, const char *txt, char *out, size_t n,
                     struct wt_err *err)
{
    oid o[MAX_OID_LEN];
    int len = wt_snmp_parse_oid(txt, o, MAX_OID_LEN);
    netsnmp_pdu *pdu = wt_ns.snmp_pdu_create(SNMP_MSG_GET), *resp;
    out[0] = '\0';
    if (!pdu || len < 0)
        return -ENOMEM;
    wt_ns.snmp_add_null_var(pdu, o, (size_t)len);
    int rc = wt_snmp_request(s, pdu, &resp, err);
    if (rc)
        return rc;
    const netsnmp_variable_list *v = resp->variables;
    if (v && v->type == ASN_OBJECT_ID) {
        size_t k = 0;
        for (size_t i = 0; i < v->val_len / sizeof(oid) && k + 12 < n; i++)
            k += (size_t)snprintf(out + k, n - k, i ? ".%lu" : "%lu",
                                  (unsigned long)v->val.objid[i]);
    } else if (v && v->type == ASN_OCTET_STR) {
        size_t k = 0;
        for (size_t i = 0; i < v->val_len && k + 1 < n; i++) {
            unsigned char ch = v->val.string[i];
            out[k++] = (char)(ch < 0x20 || ch >= 0x7f ? '?' : ch);
        }
        out[k] = '\0';
    }
    wt_ns.snmp_free_pdu(resp);
    return 0;
}
