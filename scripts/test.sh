#!/usr/bin/env bash
# README command (b): install what is missing, build, and run every test
# (lit suite, GoogleTests, Python tests) through ctest.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${INKLING_BUILD_DIR:-$root/build}"

"$root/scripts/build.sh"

cd "$build"
ctest --output-on-failure -j "$(nproc)"
