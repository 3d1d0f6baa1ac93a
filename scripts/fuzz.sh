#!/usr/bin/env bash
# Runs the libFuzzer targets of the sanitizer build for a bounded time:
#   scripts/fuzz.sh [SECONDS_PER_TARGET]      (default 60; scripts/test.sh: 20)
# The build is $INKLING_ASAN_BUILD_DIR (default build-asan/, made by
# scripts/test.sh's stage 2). A finding (crash, sanitizer report, leak,
# timeout, invariant violation) stops the run with a non-zero exit and leaves
# the reproducer in <build>/fuzz-work/artifacts/.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${INKLING_ASAN_BUILD_DIR:-$root/build-asan}"
seconds="${1:-60}"
work="$build/fuzz-work"
mkdir -p "$work/ir-corpus" "$work/runtime-corpus" "$work/manifest-corpus" \
  "$work/replay-corpus" "$work/layer-call-corpus" "$work/artifacts"

python3 "$root/fuzz/make_ir_corpus.py" "$root/test" "$work/ir-corpus"
python3 "$root/fuzz/make_npy_corpus.py" "$root/test" "$work/replay-corpus"
# The build's own kernel bundles seed the manifest parser, and those the
# lit tests wrote (when they ran in this build: scratch buffers among them).
i=0
for manifest in "$build"/kernels/*/*/manifest.json \
  "$build"/test/Target/GPU/Output/*/manifest.json; do
  [ -f "$manifest" ] && cp "$manifest" "$work/manifest-corpus/seed-$i.json"
  i=$((i + 1))
done
# See scripts/test.sh for allow_user_poisoning=0.
export ASAN_OPTIONS="detect_leaks=1:allow_user_poisoning=0:${ASAN_OPTIONS:-}"

run() {
  local name="$1"
  shift
  echo "== fuzzing $name for ${seconds}s"
  "$build/bin/$name" -max_total_time="$seconds" -timeout=20 \
    -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/$name-" "$@" 2>&1 |
    grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss|INFO: Loaded|==[0-9]+==|SUMMARY|IR fuzzer|runtime fuzzer|manifest fuzzer|replay fuzzer|layer-call fuzzer)|cov:" |
    tail -n 6
  return "${PIPESTATUS[0]}"
}

run inkling-fuzz-ir -dict="$root/fuzz/sconv.dict" -max_len=16384 \
  "$work/ir-corpus"
run inkling-fuzz-runtime -max_len=4096 "$work/runtime-corpus"
run inkling-fuzz-manifest -dict="$root/fuzz/manifest.dict" -max_len=65536 \
  "$work/manifest-corpus"
# -close_fd_mask=1: replay prints a line per output it writes.
run inkling-fuzz-replay -max_len=65536 -close_fd_mask=1 "$work/replay-corpus"
run inkling-fuzz-layer-call -max_len=4096 "$work/layer-call-corpus"
