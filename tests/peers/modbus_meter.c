/* SPDX-License-Identifier: MIT */
/*
 * A Modbus TCP meter for tests, on libmodbus's own server API.
 *
 *   modbus_meter PORT_FILE REGS_FILE [MODE_FILE [LOG_FILE]]
 *
 * Listens on 127.0.0.1 on a free port and writes the port number to PORT_FILE. REGS_FILE holds
 * one value per line, re-read whenever it changes:
 *   holding|input ADDR TYPE ORDER VALUE   TYPE u16|i16|u32|i32|float32|u64, ORDER big|little
 *   holding|input ADDR raw WORD           one 16-bit register, as is
 *   exception ADDR                        reading a block that covers ADDR answers "illegal
 *                                         data address"
 * MODE_FILE (optional, read at every request) says how to behave: "ok" (or absent), "drop"
 * (close the connection on each request without answering), "hang" (never answer).
 * LOG_FILE (optional) gets one line per read request: "FUNCTION ADDRESS COUNT".
 * Several clients are served at once (select). Stops on SIGTERM.
 */
#include <errno.h>
#include <inttypes.h>
#include <modbus.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define NREG 65536
#define MAX_EXC 64

static modbus_mapping_t *map;
static int exc_addr[MAX_EXC];
static int nexc;
static struct timespec regs_mtime;
static off_t regs_size = -1;

static void put_words(uint16_t *tab, int addr, const uint16_t *w, int n)
{
    for (int i = 0; i < n && addr + i < NREG; i++)
        tab[addr + i] = w[i];
}

/* Encodes value as the meter would send it: words most significant first, or reversed. */
static int encode(const char *type, const char *order, const char *val, uint16_t *w)
{
    bool little = strcmp(order, "little") == 0;
    uint64_t u = 0;
    int n;
    if (strcmp(type, "float32") == 0) {
        /*
         * IEEE 754 bits, most significant word first (libmodbus 3.1.6's modbus_set_float_abcd
         * swaps bytes on little-endian hosts, so it is not used here).
         */
        float f = strtof(val, NULL);
        uint32_t b;
        memcpy(&b, &f, sizeof b);
        u = b;
        n = 2;
    } else if (strcmp(type, "u16") == 0 || strcmp(type, "i16") == 0)
        n = 1;
    else if (strcmp(type, "u32") == 0 || strcmp(type, "i32") == 0)
        n = 2;
    else if (strcmp(type, "u64") == 0)
        n = 4;
    else
        return -1;
    if (type[0] == 'i')
        u = (uint64_t)strtoll(val, NULL, 0);
    else if (type[0] == 'u')
        u = strtoull(val, NULL, 0);
    for (int i = 0; i < n; i++) {
        uint16_t word = (uint16_t)(u >> (16 * (n - 1 - i))); /* i = 0: most significant */
        w[little ? n - 1 - i : i] = word;
    }
    return n;
}

static void load_regs(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return;
    if (st.st_mtim.tv_sec == regs_mtime.tv_sec && st.st_mtim.tv_nsec == regs_mtime.tv_nsec &&
        st.st_size == regs_size)
        return;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    regs_mtime = st.st_mtim;
    regs_size = st.st_size;
    nexc = 0;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        char fn[16], type[16], order[16], val[64];
        int addr;
        uint16_t w[4];
        if (sscanf(line, "exception %d", &addr) == 1) {
            if (nexc < MAX_EXC)
                exc_addr[nexc++] = addr;
            continue;
        }
        int k = sscanf(line, "%15s %d %15s %15s %63s", fn, &addr, type, order, val);
        if (k < 4 || addr < 0 || addr >= NREG)
            continue;
        uint16_t *tab = strcmp(fn, "input") == 0 ? map->tab_input_registers : map->tab_registers;
        if (strcmp(type, "raw") == 0) {
            w[0] = (uint16_t)strtoul(order, NULL, 0);
            put_words(tab, addr, w, 1);
            continue;
        }
        if (k < 5)
            continue;
        int n = encode(type, order, val, w);
        if (n > 0)
            put_words(tab, addr, w, n);
    }
    fclose(f);
}

static void read_mode(const char *path, char *mode, size_t n)
{
    snprintf(mode, n, "ok");
    if (!path)
        return;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    if (fgets(mode, (int)n, f))
        mode[strcspn(mode, " \r\n")] = '\0';
    fclose(f);
}

/* True when the read request in query covers an address that answers with an exception. */
static bool wants_exception(modbus_t *ctx, const uint8_t *query)
{
    int off = modbus_get_header_length(ctx);
    int fn = query[off];
    if (fn != 3 && fn != 4)
        return false;
    int addr = (query[off + 1] << 8) | query[off + 2];
    int n = (query[off + 3] << 8) | query[off + 4];
    for (int i = 0; i < nexc; i++)
        if (exc_addr[i] >= addr && exc_addr[i] < addr + n)
            return true;
    return false;
}

static volatile sig_atomic_t stop;
static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s PORT_FILE REGS_FILE [MODE_FILE]\n", argv[0]);
        return 2;
    }
    const char *port_file = argv[1], *regs_file = argv[2], *mode_file = argc > 3 ? argv[3] : NULL;
    const char *log_file = argc > 4 ? argv[4] : NULL;
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa = {.sa_handler = on_term};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    modbus_t *ctx = modbus_new_tcp("127.0.0.1", 0);
    map = modbus_mapping_new(0, 0, NREG, NREG);
    if (!ctx || !map) {
        fprintf(stderr, "modbus_meter: %s\n", modbus_strerror(errno));
        return 1;
    }
    int server = modbus_tcp_listen(ctx, 16);
    if (server < 0) {
        fprintf(stderr, "modbus_meter: listen: %s\n", modbus_strerror(errno));
        return 1;
    }
    struct sockaddr_in sin = {0};
    socklen_t sl = sizeof sin;
    if (getsockname(server, (struct sockaddr *)&sin, &sl) != 0)
        return 1;
    load_regs(regs_file);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
    FILE *pf = fopen(tmp, "w");
    if (!pf)
        return 1;
    fprintf(pf, "%d\n", ntohs(sin.sin_port));
    fclose(pf);
    rename(tmp, port_file);

    fd_set all;
    FD_ZERO(&all);
    FD_SET(server, &all);
    int maxfd = server;
    uint8_t query[MODBUS_TCP_MAX_ADU_LENGTH];
    while (!stop) {
        fd_set rd = all;
        struct timeval tv = {.tv_sec = 0, .tv_usec = 200000};
        int k = select(maxfd + 1, &rd, NULL, NULL, &tv);
        if (k <= 0)
            continue;
        for (int fd = 0; fd <= maxfd; fd++) {
            if (!FD_ISSET(fd, &rd))
                continue;
            if (fd == server) {
                int c = accept(server, NULL, NULL);
                if (c >= 0) {
                    FD_SET(c, &all);
                    if (c > maxfd)
                        maxfd = c;
                }
                continue;
            }
            modbus_set_socket(ctx, fd);
            int rc = modbus_receive(ctx, query);
            char mode[32];
            read_mode(mode_file, mode, sizeof mode);
            if (rc > 0 && strcmp(mode, "hang") == 0)
                continue;
            if (rc <= 0 || strcmp(mode, "drop") == 0) {
                if (rc < 0 || strcmp(mode, "drop") == 0) {
                    close(fd);
                    FD_CLR(fd, &all);
                }
                continue;
            }
            load_regs(regs_file);
            if (log_file) {
                int off = modbus_get_header_length(ctx);
                FILE *lf = fopen(log_file, "a");
                if (lf) {
                    fprintf(lf, "%d %d %d\n", query[off], (query[off + 1] << 8) | query[off + 2],
                            (query[off + 3] << 8) | query[off + 4]);
                    fclose(lf);
                }
            }
            if (wants_exception(ctx, query))
                modbus_reply_exception(ctx, query, MODBUS_EXCEPTION_ILLEGAL_DATA_ADDRESS);
            else
                modbus_reply(ctx, query, rc, map);
        }
    }
    close(server);
    modbus_mapping_free(map);
    modbus_free(ctx);
    return 0;
}
