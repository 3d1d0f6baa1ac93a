#!/usr/bin/env bash
# The GPU backend's device check, for a machine with an NVIDIA GPU and its
# driver (docs/gpu.md). One call, a few minutes on 16 cores:
#   1. builds inkling-opt, the runtime and inkling-gpu-bench (build-gpu-device/);
#   2. writes the decoder layer's kernels: unfused PTX and cubin (the build
#      step, fusion=none), fused PTX (the pipeline's default conv-insert: one
#      fused_conv that also inserts) and packed PTX (fusion=packed-inserts:
#      fused convs + one insert_packed);
#   3. runs each bundle on random data, compares with the CPU reference
#      (bit for bit), times every kernel, the whole layer and a
#      device-to-device copy of the same bytes, and prints one table;
#   4. serves the example with `inkling-run --device=gpu`, checked against
#      the full-history reference (fused and unfused), then a timing run;
#   5. runs the Python engine loop (examples/python) on the GPU, checked.
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
  inkling-kernels inkling-run InklingRuntimeC InklingLayerC

kernels="$build/kernels/decoder_layer"
bundles=(--bundle "unfused=$kernels/isa")
if [ -f "$kernels/bin/manifest.json" ]; then
  bundles+=(--bundle "cubin=$kernels/bin")
fi
rm -rf "$kernels/fused-isa"
if "$build/bin/inkling-opt" "$root/examples/decoder_layer.mlir" \
    "--inkling-lower-to-nvvm=chip=sm_90 features=+ptx80 format=isa" \
    "--inkling-write-kernels=dir=$kernels/fused-isa" -o /dev/null \
    2>"$build/fused-lowering.log"; then
  bundles+=(--bundle "fused=$kernels/fused-isa")
else
  echo "fused bundle not built (see $build/fused-lowering.log)"
fi
rm -rf "$kernels/packed-isa"
if "$build/bin/inkling-opt" "$root/examples/decoder_layer.mlir" \
    "--inkling-lower-to-nvvm=chip=sm_90 features=+ptx80 format=isa fusion=packed-inserts" \
    "--inkling-write-kernels=dir=$kernels/packed-isa" -o /dev/null \
    2>>"$build/fused-lowering.log"; then
  bundles+=(--bundle "packed=$kernels/packed-isa")
fi

set +e
"$build/bench/gpu/inkling-gpu-bench" "${bundles[@]}" --tokens "$tokens" \
  --runs "$runs" --warmup 20
rc=$?
set -e
if [ "$rc" = 77 ]; then
  echo "run.sh: no GPU run (see the reason above)"
  exit 0
fi

# 4. The main job on the device: the example served through the runtime and
#    the fused kernels, every output and cache row checked bit for bit
#    against the full-history reference, then unfused; and a timing run.
serve=("$build/bin/inkling-run" "$root/examples/decoder_layer.mlir"
  --device=gpu --no-progress)
echo "== inkling-run --device=gpu (checked)"
"${serve[@]}" || rc=1
echo "== inkling-run --device=gpu --fusion=none (checked)"
"${serve[@]}" --fusion=none --steps=200 || rc=1
echo "== inkling-run --device=gpu --no-check (timing)"
"${serve[@]}" --no-check --steps=2000 || rc=1
# 5. The Python package's GPU layer (libinkling_layer.so, the runtime's
#    launcher) in the example engine loop, checked against its numpy
#    reference; with torch, the layer tests' CUDA-tensor case too.
python=/usr/bin/python3
echo "== python engine loop --device=cuda (checked)"
PYTHONPATH="$build/python" "$python" "$root/examples/python/engine_loop.py" \
  "$root/examples/small_layer.mlir" --device=cuda || rc=1
echo "== python layer tests (torch CUDA tensors when torch is installed)"
PYTHONPATH="$build/python" INKLING_EXAMPLES_DIR="$root/examples" \
  "$python" -m unittest discover -s "$root/python/tests" -p "test_layer.py" \
  || rc=1
exit "$rc"
