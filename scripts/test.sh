#!/usr/bin/env bash
# README command (b): install what is missing, build, and run every test:
#   stage 1: the Release build's ctest (lit suite, GoogleTests, Python tests);
#   stage 2: the same tests on an ASan+UBSan build (build-asan/; the JIT
#            kernel tests on a subset, unittests/CMakeLists.txt), and the
#            fuzz targets for a bounded time.
# INKLING_SKIP_SANITIZERS=1 runs stage 1 only (a quick local loop). At the
# end (also after a failure) it prints how long each step took.
# Both stages share the JIT's object cache (INKLING_CACHE_DIR, default
# build/object-cache; set it empty for none): a layer's module lowered to the
# same LLVM IR for the same CPU is optimized and compiled once, and the
# sanitizer stage, whose JIT code is not instrumented, loads what stage 1
# compiled (docs/Design.md section 9).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${INKLING_BUILD_DIR:-$root/build}"
jobs="$(nproc)"
export INKLING_CACHE_DIR="${INKLING_CACHE_DIR-$build/object-cache}"

# The steps' names and seconds, printed on exit.
steps=()
started=$SECONDS
step_start=$SECONDS
finish_step() {
  steps+=("$(printf '%-34s %5d s' "$1" $((SECONDS - step_start)))")
  step_start=$SECONDS
}
print_times() {
  local status=$?
  echo "== step times ($jobs jobs)"
  local line
  for line in "${steps[@]}"; do
    echo "  $line"
  done
  printf '  %-34s %5d s%s\n' "total" $((SECONDS - started)) \
    "$([ "$status" = 0 ] || echo " (failed, exit $status)")"
}
trap print_times EXIT

echo "== stage 1: build and test ($build)"
"$root/scripts/build.sh"
finish_step "stage 1: setup and build"
(cd "$build" && ctest --output-on-failure -j "$jobs")
finish_step "stage 1: ctest"

if [ "${INKLING_SKIP_SANITIZERS:-0}" = 1 ]; then
  exit 0
fi

asan="${INKLING_ASAN_BUILD_DIR:-$root/build-asan}"
echo "== stage 2: ASan+UBSan build and test ($asan)"
INKLING_BUILD_DIR="$asan" "$root/scripts/build.sh" -DINKLING_SANITIZE=ON
finish_step "stage 2: ASan+UBSan build"
# allow_user_poisoning=0: our instrumented copies of LLVM's inline
# BumpPtrAllocator poison slabs that the uninstrumented libMLIR.so's inlined
# fast path never unpoisons (a false use-after-poison in the parser).
export ASAN_OPTIONS="detect_leaks=1:allow_user_poisoning=0:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
(cd "$asan" && ctest --output-on-failure -j "$jobs")
finish_step "stage 2: ASan+UBSan ctest"

echo "== stage 2: fuzzing (${INKLING_FUZZ_SECONDS:-20}s per target)"
INKLING_ASAN_BUILD_DIR="$asan" "$root/scripts/fuzz.sh" "${INKLING_FUZZ_SECONDS:-20}"
finish_step "stage 2: fuzzing (5 targets)"
