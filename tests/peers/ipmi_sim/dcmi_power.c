/* SPDX-License-Identifier: MIT */
/*
 * A module for OpenIPMI's BMC simulator (ipmi_sim, Debian's openipmi), loaded with
 *   loadlib "/path/dcmi_power.so" "/path/state-file"
 * in its lan.conf. ipmi_sim speaks IPMI 1.5 and 2.0 (RMCP+) over UDP but has no DCMI: this
 * module answers the DCMI group extension (NetFn 0x2C, group 0xDC) with Get Power Reading
 * (command 0x02) and Get Temperature Reading (command 0x10, the inlet entity 0x40), from a state
 * file read at every request so that a test can change what the BMC says while it runs:
 *   current 412        watts (u16)
 *   minimum 380        over the statistics period
 *   maximum 455
 *   average 417
 *   period_ms 60000    the statistics reporting period (milliseconds, DCMI 1.5 table 6-16)
 *   clock_offset -30   seconds added to this host's clock for the reading's time stamp
 *   state inactive     "no power measurement available" (bit 6 of the state byte clear)
 *   dcmi no            answer "invalid command" (0xC1), as a BMC without DCMI does
 *   inlet 24,-3        the inlet temperature sensors, instances 1, 2...: whole degrees, at
 *                      most 16 (8 an answer, from the requested starting instance)
 *   temps no           Get Temperature Reading answers "invalid command" (0xC1)
 * Missing lines keep these defaults (state active, dcmi yes, clock_offset 0, no inlet
 * sensor: Get Temperature Reading answers with 0 instances). Every other
 * DCMI command is answered "invalid command", and so is every request when the file is
 * missing. Get DCMI Capability Info (0x01) is not needed by wattage and not implemented.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <OpenIPMI/lanserv.h>
#include <OpenIPMI/mcserv.h>
#include <OpenIPMI/msg.h>
#include <OpenIPMI/serv.h>

#define DCMI_GROUP 0xdc
#define DCMI_GET_POWER_READING 0x02
#define DCMI_GET_TEMPERATURE_READING 0x10
#define DCMI_ENTITY_INLET 0x40
#define MAX_INLETS 16
#define CC_INVALID_COMMAND 0xc1
#define CC_REQ_LENGTH 0xc7

int ipmi_sim_module_print_version(sys_data_t *sys, char *initstr);
int ipmi_sim_module_init(sys_data_t *sys, const char *initstr);

static char state_path[512];

struct reading {
    long current, minimum, maximum, average, period_ms, clock_offset;
    int active, dcmi, temps;
    long inlet[MAX_INLETS];
    int ninlets;
};

static int read_state(struct reading *r)
{
    FILE *f = fopen(state_path, "r");
    char key[32];
    char val[64];
    memset(r, 0, sizeof *r);
    r->active = 1;
    r->dcmi = 1;
    r->temps = 1;
    if (!f)
        return -1;
    while (fscanf(f, "%31s %63s", key, val) == 2) {
        long v = strtol(val, NULL, 10);
        if (strcmp(key, "current") == 0)
            r->current = v;
        else if (strcmp(key, "minimum") == 0)
            r->minimum = v;
        else if (strcmp(key, "maximum") == 0)
            r->maximum = v;
        else if (strcmp(key, "average") == 0)
            r->average = v;
        else if (strcmp(key, "period_ms") == 0)
            r->period_ms = v;
        else if (strcmp(key, "clock_offset") == 0)
            r->clock_offset = v;
        else if (strcmp(key, "state") == 0)
            r->active = strcmp(val, "inactive") != 0;
        else if (strcmp(key, "dcmi") == 0)
            r->dcmi = strcmp(val, "no") != 0;
        else if (strcmp(key, "temps") == 0)
            r->temps = strcmp(val, "no") != 0;
        else if (strcmp(key, "inlet") == 0)
            for (char *p = val, *end; *p && r->ninlets < MAX_INLETS; p = *end ? end + 1 : end) {
                r->inlet[r->ninlets++] = strtol(p, &end, 10);
                if (end == p)
                    break;
            }
    }
    fclose(f);
    return 0;
}

static void put16(unsigned char *p, long v)
{
    p[0] = (unsigned char)(v & 0xff);
    p[1] = (unsigned char)((v >> 8) & 0xff);
}

static void put32(unsigned char *p, unsigned long v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)((v >> (8 * i)) & 0xff);
}

/* Get Temperature Reading: group id, sensor type, entity id, instance (0: all), start. */
static void temperatures(const struct reading *r, msg_t *msg, unsigned char *rdata,
                         unsigned int *rdata_len)
{
    if (msg->len < 5) {
        rdata[0] = CC_REQ_LENGTH;
        *rdata_len = 1;
        return;
    }
    if (!r->temps || msg->data[2] != DCMI_ENTITY_INLET) {
        rdata[0] = CC_INVALID_COMMAND;
        *rdata_len = 1;
        return;
    }
    int start = msg->data[4] ? msg->data[4] : 1, n = 0;
    rdata[0] = 0;
    rdata[1] = DCMI_GROUP;
    rdata[2] = (unsigned char)r->ninlets;
    for (int i = start - 1; i < r->ninlets && n < 8; i++, n++) {
        long c = r->inlet[i];
        rdata[4 + 2 * n] = (unsigned char)(c < 0 ? 0x80 | (-c & 0x7f) : c & 0x7f);
        rdata[5 + 2 * n] = (unsigned char)(i + 1);
    }
    rdata[3] = (unsigned char)n;
    *rdata_len = 4 + 2 * (unsigned int)n;
}

static void handle_dcmi(lmc_data_t *mc, msg_t *msg, unsigned char *rdata, unsigned int *rdata_len,
                        void *cb_data)
{
    struct reading r;
    (void)mc;
    (void)cb_data;
    if (msg->cmd == DCMI_GET_TEMPERATURE_READING && read_state(&r) == 0 && r.dcmi) {
        temperatures(&r, msg, rdata, rdata_len);
        return;
    }
    if (msg->cmd != DCMI_GET_POWER_READING || read_state(&r) != 0 || !r.dcmi) {
        rdata[0] = CC_INVALID_COMMAND;
        *rdata_len = 1;
        return;
    }
    /* group id, mode, mode attributes (2 bytes) */
    if (msg->len < 4) {
        rdata[0] = CC_REQ_LENGTH;
        *rdata_len = 1;
        return;
    }
    rdata[0] = 0;
    rdata[1] = DCMI_GROUP;
    put16(rdata + 2, r.current);
    put16(rdata + 4, r.minimum);
    put16(rdata + 6, r.maximum);
    put16(rdata + 8, r.average);
    put32(rdata + 10, (unsigned long)((long)time(NULL) + r.clock_offset));
    put32(rdata + 14, (unsigned long)r.period_ms);
    rdata[18] = r.active ? 0x40 : 0x00;
    *rdata_len = 19;
}

int ipmi_sim_module_print_version(sys_data_t *sys, char *initstr)
{
    (void)sys;
    (void)initstr;
    printf("wattage DCMI power reading module 1\n");
    return 0;
}

int ipmi_sim_module_init(sys_data_t *sys, const char *initstr)
{
    (void)sys;
    snprintf(state_path, sizeof state_path, "%s", initstr ? initstr : "");
    ipmi_emu_register_group_extension_handler(DCMI_GROUP, handle_dcmi, NULL);
    return 0;
}
