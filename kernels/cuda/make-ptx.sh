#!/usr/bin/env bash
# Makes the committed PTX form of every CUDA C twin in this folder with Debian's clang.
# Usage: make-ptx.sh [OUT_DIR]   (default: ../ptx beside this folder)
# No CUDA toolkit is needed: -nocudainc -nocudalib, with the prelude in xc.h.
# -ffp-contract=off keeps every float operation separately rounded (no FMA); clang's default
# division is IEEE div.rn.f32; no flush-to-zero.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../ptx}
clang=${CLANG:-$(command -v clang-14 || command -v clang)}
mkdir -p "$out"
for cu in "$here"/*.cu; do
    name=$(basename "$cu" .cu)
    "$clang" --cuda-device-only -nocudainc -nocudalib --cuda-gpu-arch=sm_70 -O3 -ffp-contract=off \
        -I "$here" -S "$cu" -o "$out/$name.ptx"
done
