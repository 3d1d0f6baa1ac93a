// The CPU pipeline's threads: each nest is an scf.if on the step's size;
// steps of at least min-parallel-iterations (token, head) pairs run it as
// one omp.parallel + omp.wsloop over (token, head) whose chunk loops run
// sequentially (no nested parallel region), smaller steps as plain loops on
// the calling thread with no OpenMP call. threads=1 (the default) emits no
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

// The fused layer is one nest: a branch on T * 8 >= 32 between one region
// on 4 threads and the sequential nest; 16 fmas in each (the four streams'
// chains, twice).
// FUSED-LABEL: llvm.func @decoder_layer
// FUSED-DAG:     %[[MIN:.*]] = llvm.mlir.constant(32 : index) : i64
// FUSED-DAG:     %[[N:.*]] = llvm.mlir.constant(4 : i32) : i32
// FUSED:         %[[BIG:.*]] = llvm.icmp "sge" %{{.*}}, %[[MIN]] : i64
// FUSED-NEXT:    llvm.cond_br %[[BIG]], ^[[PAR:.*]], ^[[SEQ:[a-z0-9]*]]
// FUSED:       ^[[PAR]]:
// FUSED-NEXT:    omp.parallel num_threads(%[[N]] : i32) {
// FUSED-NEXT:      omp.wsloop {
// FUSED-NEXT:        omp.loop_nest ({{.*}}) : i64 = {{.*}} collapse(2) {
// FUSED-NOT:     omp.parallel
// FUSED-COUNT-16: llvm.intr.fma
// FUSED:           omp.terminator
// FUSED:       ^[[SEQ]]:
// FUSED-NOT:     omp.
// FUSED-COUNT-16: llvm.intr.fma
// FUSED-NOT:     llvm.intr.fma
// FUSED-NOT:     omp.

// Unfused: eight nests, eight regions, with the OpenMP default team.
// NONE-LABEL: llvm.func @decoder_layer
// NONE-COUNT-8: omp.parallel {
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
