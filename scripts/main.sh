#!/usr/bin/env bash
# README command (a): install what is missing, build, and run the main job on
# the bundled example decoder layer.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${INKLING_BUILD_DIR:-$root/build}"

"$root/scripts/build.sh"

example="$root/examples/decoder_layer.mlir"
echo "== verifying $example"
"$build/bin/inkling-opt" "$example" -o /dev/null
echo "== derived layout"
"$build/bin/inkling-opt" "$example" --sconv-print-layouts -o /dev/null
echo "== serving a checked synthetic workload (docs/inkling-run.md)"
"$build/bin/inkling-run" "$example"
