/* SPDX-License-Identifier: MIT */
/* GPU names across vendors (core/gpuname.h): indices, vendors' indices, UUIDs, lists. */
#include <string.h>

#include "core/gpuname.h"
#include "runner.h"

WT_TEST(an_index_a_vendors_index_and_anything_else)
{
    const char *vendor, *idx;
    WT_ASSERT(wt_gpu_vendor_index("3", &vendor, &idx));
    WT_EQ_STR(vendor, "");
    WT_EQ_STR(idx, "3");
    WT_ASSERT(wt_gpu_vendor_index("amd:12", &vendor, &idx));
    WT_EQ_STR(vendor, "amd");
    WT_EQ_STR(idx, "12");
    WT_ASSERT(wt_gpu_vendor_index("nvidia:0", &vendor, &idx));
    WT_EQ_STR(vendor, "nvidia");
    WT_EQ_STR(idx, "0");
    static const char *const bad[] = {"",       "amd:", "amd:x",     "intel:1", "GPU-1234",
                                      "123456", "1a",   "nvidia:-1", " 5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        WT_ASSERT(!wt_gpu_vendor_index(bad[i], &vendor, &idx));
        WT_EQ_STR(vendor, "");
        WT_EQ_STR(idx, bad[i]);
    }
    WT_EQ_STR(wt_gpu_uuid_vendor("AMD-0x1234"), "amd");
    WT_EQ_STR(wt_gpu_uuid_vendor("GPU-abcd"), "nvidia");
    WT_EQ_STR(wt_gpu_uuid_vendor(""), "nvidia");
}

WT_TEST(lists_hold_whole_items_only)
{
    WT_ASSERT(wt_list_has("0,amd:1,12", "amd:1"));
    WT_ASSERT(wt_list_has("0,amd:1,12", "12"));
    WT_ASSERT(wt_list_has("0,amd:1,12", "0"));
    WT_ASSERT(!wt_list_has("0,amd:1,12", "1"));
    WT_ASSERT(!wt_list_has("0,amd:1,12", "2"));
    WT_ASSERT(!wt_list_has("", "0"));
    char item[4];
    const char *p = "0,amd:1,,7";
    static const char *const want[] = {"0", "amd", "", "7"}; /* cut to 3 bytes */
    for (size_t i = 0; i < 4; i++) {
        WT_ASSERT(wt_list_next(&p, item, sizeof item));
        WT_EQ_STR(item, want[i]);
    }
    WT_ASSERT(!wt_list_next(&p, item, sizeof item));
}
