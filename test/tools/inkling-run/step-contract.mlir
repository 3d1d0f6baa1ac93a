// The engine's step contract, end to end: token dimensions padded as graph
// capture pads them (--pad-tokens), async scheduling (--async: every step is
// scheduled before the previous step's sampled tokens reach the runtime),
// and both, under every fusion strategy. Padding outputs are checked to be
// their inputs; the padding tokens' slots point at live history rows and
// their token_seq entries out of range, so a kernel that stored or read
// through them fails the output or cache checks.
//
// small_layer (no token_seq: the search form), every workload feature on:
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --steps=300 \
// RUN:   --budget-mb=0.025 --arrival-rate=0.5 --fork-rate=0.05 --preempt-rate=0.02 \
// RUN:   --max-prompt=64 --max-output=48 --pad-tokens=16 --async --json \
// RUN:   --fusion=conv-insert | FileCheck %s --check-prefix=SMALL
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --steps=300 \
// RUN:   --budget-mb=0.025 --arrival-rate=0.5 --fork-rate=0.05 --preempt-rate=0.02 \
// RUN:   --max-prompt=64 --max-output=48 --pad-tokens=16 --async --json \
// RUN:   --fusion=packed-inserts | FileCheck %s --check-prefix=SMALL
// RUN: inkling-run %inkling_src/examples/small_layer.mlir --steps=300 \
// RUN:   --budget-mb=0.025 --arrival-rate=0.5 --fork-rate=0.05 --preempt-rate=0.02 \
// RUN:   --max-prompt=64 --max-output=48 --pad-tokens=16 --async --json \
// RUN:   --fusion=none --checked | FileCheck %s --check-prefix=SMALL
// SMALL: {
// SMALL-DAG: "async": true,
// SMALL-DAG: "pad_tokens": 16,
// SMALL-DAG: "padding_tokens": {{[1-9][0-9]*}},
// SMALL-DAG: "mismatches": 0,
// SMALL-DAG: "outputs_checked": {{[1-9][0-9]*}},
// SMALL-DAG: "forks": {{[1-9][0-9]*}},
// SMALL-DAG: "out_of_blocks_preemptions": {{[1-9][0-9]*}},
// SMALL-DAG: "spec_accepted": {{[1-9][0-9]*}},
// SMALL-DAG: "steps": 300,
// SMALL: }

// The bundled layer (token_seq from the runtime's step builder), padded to
// 64 tokens, async, and each alone.
// RUN: inkling-run %inkling_src/examples/decoder_layer.mlir --steps=30 \
// RUN:   --token-budget=64 --pad-tokens=64 --async | FileCheck %s --check-prefix=REAL
// REAL: step contract  async scheduling (scheduleAhead); {{[1-9][0-9]*}} padding tokens (--pad-tokens=64)
// REAL: mismatches     0 ({{[1-9][0-9]*}} outputs and {{[1-9][0-9]*}} cache values checked
// RUN: inkling-run %inkling_src/examples/decoder_layer.mlir --steps=30 \
// RUN:   --token-budget=64 --pad-tokens=64 --fusion=none | FileCheck %s --check-prefix=PAD
// PAD: step contract  {{[1-9][0-9]*}} padding tokens (--pad-tokens=64)
// PAD: mismatches     0 ({{[1-9][0-9]*}} outputs
// RUN: inkling-run %inkling_src/examples/decoder_layer.mlir --steps=30 \
// RUN:   --token-budget=64 --async --fusion=packed-inserts | FileCheck %s --check-prefix=ASYNC
// ASYNC: step contract  async scheduling (scheduleAhead); 0 padding tokens (--pad-tokens=0)
// ASYNC: mismatches     0 ({{[1-9][0-9]*}} outputs

// The padding check fires: one padding output flipped after the kernel.
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --steps=20 \
// RUN:   --pad-tokens=16 --inject-fault=padding:5 2>&1 | FileCheck %s --check-prefix=FAULT
// FAULT: inkling-run: mismatch in step 5, layer 0: output of stream k, padding token {{[0-9]+}}, head 0, channel 2: expected its input 0x{{[0-9a-f]+}} ({{.*}}), found 0x{{[0-9a-f]+}}

// Bad option values are one-line errors.
// RUN: not inkling-run %inkling_src/examples/small_layer.mlir --pad-tokens=-1 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BADPAD
// BADPAD: inkling-run: --pad-tokens=-1: expected an integer in [0, 1048576]
