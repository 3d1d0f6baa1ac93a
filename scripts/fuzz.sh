#!/usr/bin/env bash
# Runs the libFuzzer targets of the sanitizer build for a bounded time:
#   scripts/fuzz.sh [SECONDS_PER_TARGET]      (default 60; scripts/test.sh: 20)
# The targets run side by side, one per core ($INKLING_FUZZ_JOBS overrides
# nproc), each for the full time; each one's report prints when it ends.
# The build is $INKLING_ASAN_BUILD_DIR (default build-asan/, made by
# scripts/test.sh's stage 2). A finding (crash, sanitizer report, leak,
# timeout, invariant violation) stops that target, leaves the reproducer in
# <build>/fuzz-work/artifacts/, and makes the script exit non-zero once
# every target has ended.
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

# Starts `run` in the background once fewer than $parallel targets run; its
# output and exit status go to files that `report` reads.
parallel="${INKLING_FUZZ_JOBS:-$(nproc)}"
names=()
launch() {
  local name="$1"
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do
    wait -n || true
  done
  names+=("$name")
  (if run "$@"; then echo 0; else echo $?; fi) >"$work/$name.log" 2>&1 &
}
report() {
  wait
  local name status failed=0
  for name in "${names[@]}"; do
    status="$(tail -n 1 "$work/$name.log")"
    head -n -1 "$work/$name.log"
    if [ "$status" != 0 ]; then
      echo "== $name failed (exit $status)"
      failed=1
    fi
  done
  return "$failed"
}

launch inkling-fuzz-ir -dict="$root/fuzz/sconv.dict" -max_len=16384 \
  "$work/ir-corpus"
launch inkling-fuzz-runtime -max_len=4096 "$work/runtime-corpus"
launch inkling-fuzz-manifest -dict="$root/fuzz/manifest.dict" -max_len=65536 \
  "$work/manifest-corpus"
# -close_fd_mask=1: replay prints a line per output it writes.
launch inkling-fuzz-replay -max_len=65536 -close_fd_mask=1 "$work/replay-corpus"
launch inkling-fuzz-layer-call -max_len=4096 "$work/layer-call-corpus"
report
