#!/usr/bin/env bash
# The GPU backend's device check, for a machine with an NVIDIA GPU and its
# driver (docs/gpu.md). One call, a few minutes on 16 cores:
#   1. builds inkling-opt, the runtime, its CUDA tests, inkling-gpu-bench and
#      inkling-run (build-gpu-device/);
#   2. runs every test that needs a device: the launcher's CudaGpu.* tests
#      (copies, events, a bad image, and the build's kernel bundle JIT-loaded
#      by the driver);
#   3. writes the decoder layer's kernels: unfused PTX and cubin (the build
#      step, fusion=none), fused PTX (the pipeline's default conv-insert: one
#      fused_conv that also inserts) and packed PTX (fusion=packed-inserts:
#      fused convs + one insert_packed);
#   4. runs each bundle on random data, compares with the CPU reference
#      (bit for bit), times every kernel, the whole layer and a
#      device-to-device copy of the same bytes, and prints its table;
#   5. serves the example with `inkling-run --device=gpu`, checked against
#      the full-history reference (fused and unfused), then a timing run;
#      the same for the extended layer with its epilogues (fused: 3
#      kernels; unfused: 13, with scratch buffers);
#   6. runs the Python engine loop (examples/python) on the GPU, checked, and
#      the Python layer tests (torch CUDA tensors when torch is installed);
#   7. ends with one table: every step above, passed / FAILED / skipped.
# Environment: INKLING_GPU_TOKENS (default 256), INKLING_GPU_RUNS (200),
# INKLING_GPU_BUILD_DIR, INKLING_GPU_SKIP_SETUP=1 (packages already there).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${INKLING_GPU_BUILD_DIR:-$root/build-gpu-device}"
tokens="${INKLING_GPU_TOKENS:-256}"
runs="${INKLING_GPU_RUNS:-200}"

if [ "${INKLING_GPU_SKIP_SETUP:-0}" != 1 ]; then
  "$root/scripts/setup.sh"
fi
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir >/dev/null
fi
cmake --build "$build" -j "$(nproc)" --target inkling-opt inkling-gpu-bench \
  inkling-kernels inkling-run InklingRuntimeCudaTests InklingRuntimeC InklingLayerC

# The summary: one row per step.
names=()
results=()
record() { names+=("$1"); results+=("$2"); }
run_step() { # NAME COMMAND...: runs it, records passed / FAILED
  local name="$1"
  shift
  echo "== $name"
  if "$@"; then record "$name" passed; else record "$name" FAILED; fi
}
summary() {
  echo
  echo "== device check summary ($(date -u +%Y-%m-%dT%H:%MZ), $device)"
  printf '| %-58s | %-7s |\n' step result
  printf '|%s|%s|\n' "$(printf -- '-%.0s' {1..60})" "$(printf -- '-%.0s' {1..9})"
  local i failed=0
  for i in "${!names[@]}"; do
    printf '| %-58s | %-7s |\n' "${names[$i]}" "${results[$i]}"
    [ "${results[$i]}" = FAILED ] && failed=1
  done
  return "$failed"
}

# 2. The launcher's tests that need a device (they skip without one).
gtest_log="$build/cuda-gpu-tests.log"
set +e
"$build/runtime/unittests/InklingRuntimeCudaTests" --gtest_filter='CudaGpu.*' \
  >"$gtest_log" 2>&1
gtest_rc=$?
set -e
cat "$gtest_log"
device="no GPU"
for t in CopiesRoundTrip EventsTime BadImageIsAnError LoadsTheKernelBundle; do
  if grep -q "^\[  SKIPPED \] CudaGpu.$t " "$gtest_log"; then
    record "CudaGpu.$t" skipped
  elif grep -q "^\[       OK \] CudaGpu.$t " "$gtest_log"; then
    record "CudaGpu.$t" passed
    device="a GPU"
  else
    record "CudaGpu.$t" FAILED
  fi
done
[ "$gtest_rc" = 0 ] || record "InklingRuntimeCudaTests --gtest_filter=CudaGpu.*" FAILED

# 3. The bundles.
kernels="$build/kernels/decoder_layer"
bundles=(--bundle "unfused=$kernels/isa")
if [ -f "$kernels/bin/manifest.json" ]; then
  bundles+=(--bundle "cubin=$kernels/bin")
fi
rm -rf "$kernels/fused-isa"
if "$build/bin/inkling-opt" "$root/examples/decoder_layer.mlir" \
    "--inkling-lower-to-nvvm=chip=sm_90 features=+ptx80 format=isa" \
    "--inkling-gpu-write-kernels=dir=$kernels/fused-isa" -o /dev/null \
    2>"$build/fused-lowering.log"; then
  bundles+=(--bundle "fused=$kernels/fused-isa")
else
  echo "fused bundle not built (see $build/fused-lowering.log)"
  record "fused bundle written" FAILED
fi
rm -rf "$kernels/packed-isa"
if "$build/bin/inkling-opt" "$root/examples/decoder_layer.mlir" \
    "--inkling-lower-to-nvvm=chip=sm_90 features=+ptx80 format=isa fusion=packed-inserts" \
    "--inkling-gpu-write-kernels=dir=$kernels/packed-isa" -o /dev/null \
    2>>"$build/fused-lowering.log"; then
  bundles+=(--bundle "packed=$kernels/packed-isa")
else
  record "packed bundle written" FAILED
fi

# 4. Every bundle against the CPU reference, and timed.
echo "== inkling-gpu-bench"
set +e
"$build/bench/gpu/inkling-gpu-bench" "${bundles[@]}" --tokens "$tokens" \
  --runs "$runs" --warmup 20
rc=$?
set -e
bench="inkling-gpu-bench: $((${#bundles[@]} / 2)) bundles, bit-exact + timing"
if [ "$rc" = 77 ]; then
  record "$bench" skipped
  echo "run.sh: no GPU run (see the reason above)"
  summary
  exit $?
fi
if [ "$rc" = 0 ]; then record "$bench" passed; else record "$bench" FAILED; fi

# 5. The main job on the device: the example served through the runtime and
#    the fused kernels, every output and cache row checked bit for bit
#    against the full-history reference, then unfused; and a timing run.
serve=("$build/bin/inkling-run" "$root/examples/decoder_layer.mlir"
  --device=gpu --no-progress)
run_step "inkling-run --device=gpu (checked, fused)" "${serve[@]}"
run_step "inkling-run --device=gpu --fusion=none --steps=200 (checked)" \
  "${serve[@]}" --fusion=none --steps=200
run_step "inkling-run --device=gpu --no-check --steps=2000 (timing)" \
  "${serve[@]}" --no-check --steps=2000
# The extended layer (issue #29): 3 fused kernels against the 13 unfused
# ones (y in the launcher's scratch buffers), checked, then timed.
serve_epilogues=("$build/bin/inkling-run"
  "$root/examples/decoder_layer_epilogues.mlir" --device=gpu --no-progress)
run_step "epilogue layer --device=gpu (checked, fused)" \
  "${serve_epilogues[@]}" --steps=200
run_step "epilogue layer --device=gpu --fusion=none (checked)" \
  "${serve_epilogues[@]}" --fusion=none --steps=200
run_step "epilogue layer --device=gpu --no-check (timing, fused)" \
  "${serve_epilogues[@]}" --no-check --steps=2000
run_step "epilogue layer --device=gpu --no-check --fusion=none (timing)" \
  "${serve_epilogues[@]}" --no-check --fusion=none --steps=2000

# 6. The Python package's GPU layer (libinkling_layer.so, the runtime's
#    launcher) in the example engine loop, checked against its numpy
#    reference; with torch, the layer tests' CUDA-tensor case too.
python=/usr/bin/python3
run_step "python engine loop --device=cuda (checked)" \
  env PYTHONPATH="$build/python" "$python" \
  "$root/examples/python/engine_loop.py" "$root/examples/small_layer.mlir" \
  --device=cuda
run_step "python layer tests (torch CUDA tensors with torch)" \
  env PYTHONPATH="$build/python" INKLING_EXAMPLES_DIR="$root/examples" \
  "$python" -m unittest discover -s "$root/python/tests" -p "test_layer.py"
summary
