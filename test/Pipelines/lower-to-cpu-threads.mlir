// The CPU pipeline's threads: each nest's (token, head) loop becomes one
// omp.parallel + omp.wsloop whose team forks only for steps of at least
// min-parallel-iterations (token, head) pairs; the chunk loops inside run
// sequentially (no nested parallel region). threads=1 (the default) emits no
// OpenMP at all.
// RUN: inkling-opt %inkling_src/examples/decoder_layer.mlir --inkling-lower-to-cpu="threads=4 min-parallel-iterations=32" \
// RUN:   | FileCheck %s --check-prefix=FUSED
// RUN: inkling-opt %inkling_src/examples/decoder_layer.mlir --inkling-lower-to-cpu="threads=0 fusion=none" \
// RUN:   | FileCheck %s --check-prefix=NONE
// RUN: inkling-opt %inkling_src/examples/decoder_layer.mlir --inkling-lower-to-cpu \
// RUN:   | FileCheck %s --check-prefix=ONE
// RUN: inkling-opt %inkling_src/examples/decoder_layer.mlir --inkling-lower-to-cpu=streaming-stores-min-iterations=0 \
// RUN:   | FileCheck %s --check-prefix=NOSTREAM
// RUN: inkling-opt %inkling_src/examples/decoder_layer.mlir --inkling-lower-to-cpu="threads=2" \
// RUN:   | mlir-opt --verify-each > /dev/null

// The fused layer is one nest: one region, 4 threads, forked when
// T * 8 >= 32, and the same 16 fmas as without threads.
// FUSED-LABEL: llvm.func @decoder_layer
// FUSED-DAG:     %[[N:.*]] = llvm.mlir.constant(4 : i32) : i32
// FUSED-DAG:     %[[MIN:.*]] = llvm.mlir.constant(32 : index) : i64
// FUSED:         %[[FORK:.*]] = llvm.icmp "sge" %{{.*}}, %[[MIN]] : i64
// FUSED:         omp.parallel if(%[[FORK]]) num_threads(%[[N]] : i32) {
// FUSED-NEXT:      omp.wsloop {
// FUSED-NEXT:        omp.loop_nest ({{.*}}) : i64 = {{.*}} collapse(2) {
// FUSED-NOT:     omp.parallel
// FUSED-COUNT-16: llvm.intr.fma
// FUSED-NOT:     llvm.intr.fma
// FUSED-NOT:     omp.parallel

// Unfused: eight nests, eight regions, with the OpenMP default team.
// NONE-LABEL: llvm.func @decoder_layer
// NONE-COUNT-8: omp.parallel if(%{{.*}}) {
// NONE-NOT:     omp.parallel

// ONE-LABEL: llvm.func @decoder_layer
// ONE-NOT:     omp.

// Without threads, the default still streams the stores of large steps:
// each of the nest's 8 stores (4 outputs, 4 cache rows) exists twice, one
// of them non-temporal; with the option at 0 none is.
// ONE-COUNT-8: llvm.store {{.*}} {alignment = 16 : i64, nontemporal} : vector<8xi16>
// ONE-NOT:     nontemporal
// NOSTREAM-LABEL: llvm.func @decoder_layer
// NOSTREAM-NOT:   nontemporal
