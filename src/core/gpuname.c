/* SPDX-License-Identifier: MIT */
#include "core/gpuname.h"

#include <stdio.h>
#include <string.h>

static bool is_index(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && n < 6 && strspn(s, "0123456789") == n;
}

bool wt_gpu_vendor_index(const char *s, const char **vendor, const char **idx)
{
    static const char *const vendors[] = {"nvidia", "amd"};
    for (size_t k = 0; k < 2; k++) {
        size_t n = strlen(vendors[k]);
        if (strncmp(s, vendors[k], n) == 0 && s[n] == ':' && is_index(s + n + 1)) {
            *vendor = vendors[k];
            *idx = s + n + 1;
            return true;
        }
    }
    *vendor = "";
    *idx = s;
    return is_index(s);
}

const char *wt_gpu_uuid_vendor(const char *uuid)
{
    return strncmp(uuid, "AMD-", 4) == 0 ? "amd" : "nvidia";
}

bool wt_list_next(const char **p, char *item, size_t n)
{
    if (!**p)
        return false;
    size_t l = strcspn(*p, ",");
    snprintf(item, n, "%.*s", (int)l, *p);
    *p += l + ((*p)[l] == ',');
    return true;
}

bool wt_list_has(const char *list, const char *item)
{
    size_t len = strlen(item);
    for (const char *p = list; *p;) {
        size_t l = strcspn(p, ",");
        if (l == len && strncmp(p, item, l) == 0)
            return true;
        p += l + (p[l] == ',');
    }
    return false;
}
