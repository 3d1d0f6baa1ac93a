#!/usr/bin/env bash
# Installs what is missing, configures and builds the project into build/
# (or $INKLING_BUILD_DIR). Extra arguments go to the CMake configure step.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${INKLING_BUILD_DIR:-$root/build}"

"$root/scripts/setup.sh"

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir "$@" >/dev/null
fi
cmake --build "$build" -j "$(nproc)"
