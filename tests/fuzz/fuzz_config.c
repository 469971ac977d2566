/* SPDX-License-Identifier: MIT */
/*
 * The config loader: YAML text through wt_config_load_string, which parses it (libyaml into the
 * line-keeping tree), checks every key against the schema and runs the check of every module
 * section registered in src/cli/sections.c (alerts, SNMP/Redfish/Modbus targets, topology,
 * facility, carbon). A file that loads is written back with wt_config_write (what
 * `wattage check-config` shows) and that text must load again and write the same text.
 * Seeds: tests/fixtures/config and the configurations under deploy/.
 */
#include "core/config.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_quiet();
    return 0;
}

/* wt_config_write's text of c (the caller frees). */
static char *written(const struct wt_config *c, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    FUZZ_CHECK(f != NULL);
    FUZZ_CHECK(wt_config_write(c, f) == 0);
    FUZZ_CHECK(fclose(f) == 0);
    return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct wt_config c, again;
    struct wt_err err = {{0}};
    wt_config_defaults(&c);
    wt_config_defaults(&again);
    int rc = wt_config_load_string("fuzz.yaml", (const char *)data, size, &c, &err);
    fuzz_check_err(&err);
    if (rc == 0) {
        size_t n1 = 0, n2 = 0;
        char *t1 = written(&c, &n1);
        if (wt_config_load_string("written.yaml", t1, n1, &again, &err) != 0) {
            fprintf(stderr, "the written config does not load: %s\n---\n%s---\n", err.msg, t1);
            abort();
        }
        char *t2 = written(&again, &n2);
        if (n1 != n2 || memcmp(t1, t2, n1) != 0) {
            fprintf(stderr, "written twice, two texts:\n---\n%s---\n%s---\n", t1, t2);
            abort();
        }
        free(t1);
        free(t2);
    } else {
        FUZZ_CHECK(rc < 0 && err.msg[0]);
    }
    wt_config_free(&c);
    wt_config_free(&again);
    return 0;
}
