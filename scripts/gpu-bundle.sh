#!/bin/sh
# Packs build/wattage, build/bench/nvml_calls and the shared libraries they need (less glibc's
# own) into build/gpu/, for a machine with a GPU but without the Debian -dev packages.
# Usage: scripts/gpu-bundle.sh [BUILD_DIR]
set -eu
build=${1:-build}
out=$build/gpu
rm -rf "$out"
mkdir -p "$out/lib"
cp "$build/wattage" "$build/bench/nvml_calls" "$out/"
for bin in "$out/wattage" "$out/nvml_calls"; do
    ldd "$bin" | awk '/=> \// { print $3 }' | while read -r lib; do
        case $(basename "$lib") in
        libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | ld-linux*) ;;
        *) cp -L "$lib" "$out/lib/" ;;
        esac
    done
done
du -sh "$out"
