/* SPDX-License-Identifier: MIT */
/*
 * What `wattage cap clear` (cli/cap.c) passes to wt_cap_clear (alert/alert.h) beside a plain
 * index: its gpu argument is -1 for every GPU, N >= 0 for GPU N (NVIDIA's, else AMD's where
 * NVIDIA has none of that index, as the other commands read a plain index), or
 * WT_CAP_AMD_GPU(N) for AMD's GPU N ("amd:N").
 */
#ifndef WT_CAP_H
#define WT_CAP_H

#define WT_CAP_AMD_GPU(n) (-2 - (n))
#define WT_CAP_IS_AMD(gpu) ((gpu) <= -2)
#define WT_CAP_AMD_INDEX(gpu) (-2 - (gpu))

#endif
