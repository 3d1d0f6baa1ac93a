// The CPU pipeline's threads: each nest is an scf.if on the step's size;
// steps of at least min-parallel-iterations outer iterations ((token, head)
// pairs, or (run of 4 tokens, head)) run it as one omp.parallel +
// omp.wsloop over them whose chunk loops run sequentially (no nested
// parallel region), smaller steps as plain loops on the calling thread with
// no OpenMP call. threads=1 (the default) emits no OpenMP at all.
// RUN: inkling-opt %inkling_src/examples/decoder_layer.mlir --inkling-lower-to-cpu="threads=4 min-parallel-iterations=32 streaming-stores-min-iterations=0" \
// RUN:   | FileCheck %s --check-prefix=FUSED
// RUN: inkling-opt %inkling_src/examples/decoder_layer.mlir --inkling-lower-to-cpu="threads=0 fusion=none streaming-stores-min-iterations=0" \
// RUN:   | FileCheck %s --check-prefix=NONE
// RUN: inkling-opt %inkling_src/examples/decoder_layer.mlir --inkling-lower-to-cpu=streaming-stores-min-iterations=0 \
// RUN:   | FileCheck %s --check-prefix=ONE
// RUN: inkling-opt %inkling_src/examples/decoder_layer.mlir --inkling-lower-to-cpu \
// RUN:   | FileCheck %s --check-prefix=STREAM
// RUN: inkling-opt %inkling_src/examples/decoder_layer.mlir --inkling-lower-to-cpu="threads=2" \
// RUN:   | mlir-opt --verify-each > /dev/null
// RUN: inkling-opt %inkling_src/examples/decoder_layer.mlir --inkling-lower-to-cpu="threads=2 avx512-bf16=true" \
// RUN:   | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=X86

// avx512-bf16: the decode-run nest's rounding reaches LLVM IR as x86
// intrinsics in its threaded copies (their immediates constants there:
// inkling-cpu-parallel-dispatch clones them in; their alloca scopes
// inlined: inkling-cpu-hoist-static-allocas) and in its sequential copies;
// the prefill nest (threaded0/sequential0, threaded1/sequential1) keeps the
// software rounding, and the layer's function holds no nest.
// X86-LABEL: define internal void @decoder_layer_threaded0..omp_par
// X86-NOT:     cvtne2ps2bf16
// X86-LABEL: define void @decoder_layer_sequential0(
// X86-NOT:     cvtne2ps2bf16
// X86-LABEL: define internal void @decoder_layer_threaded2..omp_par
// X86:         call <16 x i1> @llvm.x86.avx512.fpclass.ps.512(<16 x float> %{{.*}}, i32 161)
// X86:         call <32 x bfloat> @llvm.x86.avx512bf16.cvtne2ps2bf16.512(
// X86-LABEL: define void @decoder_layer_sequential2(
// X86:         call <16 x i1> @llvm.x86.avx512.fpclass.ps.512(<16 x float> %{{.*}}, i32 161)
// X86:         call <32 x bfloat> @llvm.x86.avx512bf16.cvtne2ps2bf16.512(
// X86-LABEL: define void @decoder_layer(
// X86-NOT:     call <32 x bfloat> @llvm.x86.avx512bf16
// X86:         {{^}}declare

// The fused layer is one nest in two forms, chosen per call on the step's
// shape (sconv-lower-to-loops token-runs): the (run of 4 tokens, head)
// nest of prefill, then the (run of 4 tokens, head) decode-run nest. Each
// is a branch on its outer iterations (ceil(T / 4) * 8) >= 32 between a
// call of its threaded copy (one region on 4 threads) and a call of its
// sequential copy (no OpenMP op: the single-thread code), each outlined
// into a private function of its own. The four streams' chains (16 fmas)
// in each copy, 5 times in the token-run form (4 unrolled tokens and the
// token loop), 9 in the decode-run form (its whole runs with cache taps
// unselected, or selected; the token loop). Streaming stores off here
// (their copies: STREAM below).
// FUSED-LABEL: llvm.func @decoder_layer_threaded0(
// FUSED-SAME:    attributes {{{.*}}passthrough = ["noinline"]
// FUSED:         omp.parallel num_threads(%{{.*}} : i32) {
// FUSED-NEXT:      omp.wsloop {
// FUSED-NEXT:        omp.loop_nest ({{.*}}) : i64 = {{.*}} collapse(2) {
// FUSED-NOT:     omp.parallel
// FUSED-COUNT-80: llvm.intr.fma
// FUSED:           omp.terminator
// FUSED-LABEL: llvm.func @decoder_layer_sequential0(
// FUSED-SAME:    attributes {{{.*}}passthrough = ["noinline"]
// FUSED-NOT:     omp.
// FUSED-COUNT-80: llvm.intr.fma
// FUSED-NOT:     omp.
// FUSED-LABEL: llvm.func @decoder_layer_threaded1(
// FUSED:         omp.parallel num_threads(%{{.*}} : i32) {
// FUSED-NOT:     omp.parallel
// FUSED-COUNT-144: llvm.intr.fma
// FUSED:           omp.terminator
// FUSED-LABEL: llvm.func @decoder_layer_sequential1(
// FUSED-NOT:     omp.
// FUSED-COUNT-144: llvm.intr.fma
// FUSED-NOT:     omp.
// FUSED-LABEL: llvm.func @decoder_layer(
// FUSED-NOT:     omp.
// FUSED:         %[[MIN:.*]] = llvm.mlir.constant(32 : index) : i64
// FUSED-NOT:     omp.
// FUSED:         %[[BIG1:.*]] = llvm.icmp "sge" %{{.*}}, %[[MIN]] : i64
// FUSED-NEXT:    llvm.cond_br %[[BIG1]], ^[[PAR1:.*]], ^[[SEQ1:[a-z0-9]*]]
// FUSED:       ^[[PAR1]]:
// FUSED-NOT:     omp.
// FUSED:         llvm.call @decoder_layer_threaded0(
// FUSED:       ^[[SEQ1]]:
// FUSED-NOT:     omp.
// FUSED:         llvm.call @decoder_layer_sequential0(
// FUSED:         %[[BIG2:.*]] = llvm.icmp "sge" %{{.*}}, %[[MIN]] : i64
// FUSED-NEXT:    llvm.cond_br %[[BIG2]], ^[[PAR2:.*]], ^[[SEQ2:[a-z0-9]*]]
// FUSED:       ^[[PAR2]]:
// FUSED-NOT:     omp.
// FUSED:         llvm.call @decoder_layer_threaded1(
// FUSED:       ^[[SEQ2]]:
// FUSED-NOT:     omp.
// FUSED:         llvm.call @decoder_layer_sequential1(
// FUSED-NOT:     llvm.intr.fma
// FUSED-NOT:     omp.

// Unfused: eight nests (the four convs' in two forms), twelve regions,
// with the OpenMP default team.
// NONE-LABEL: llvm.func @decoder_layer
// NONE-COUNT-12: omp.parallel {
// NONE-NOT:     omp.parallel

// ONE-LABEL: llvm.func @decoder_layer
// ONE-NOT:     omp.

// With streaming stores off no row is stored non-temporally. By default
// (4096) each nest exists twice, once with non-temporal stores: in that
// copy the 64-byte line stores claim 64-byte alignment, checked at run
// time on the bases: in the token-run form 4 outputs and 4 cache rows of
// 32 channels, 5 times (4 unrolled tokens and the token loop): 40; in the
// decode-run form only the 4 cache rows (its outputs stay ordinary), 9
// times (its whole runs twice, 4 tokens each, and the partial run's loop):
// 36. The 16-byte ones keep 16 (the token-run form's padding outputs).
// ONE-NOT:     nontemporal
// STREAM-LABEL: llvm.func @decoder_layer
// STREAM-DAG:    llvm.store {{.*}} {alignment = 64 : i64, nontemporal} : vector<32xi16>
// STREAM-DAG:    llvm.store {{.*}} {alignment = 16 : i64, nontemporal} : vector<8xi16>
// RUN: inkling-opt %inkling_src/examples/decoder_layer.mlir --inkling-lower-to-cpu \
// RUN:   | grep -c "alignment = 64 : i64, nontemporal} : vector<32xi16>" | FileCheck %s --check-prefix=LINES
// RUN: inkling-opt %inkling_src/examples/decoder_layer.mlir --inkling-lower-to-cpu \
// RUN:   | grep -c "alignment = 16 : i64, nontemporal} : vector<8xi16>" | FileCheck %s --check-prefix=CHUNKS
// LINES: {{^}}76{{$}}
// CHUNKS: {{^}}4{{$}}
