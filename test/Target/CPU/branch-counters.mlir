// RUN: inkling-opt %s --inkling-cpu-lower-to-loops="hoist-taps=true token-runs=true branch-counters=true" --inkling-cpu-streaming-stores="min-iterations=16 branch-counters=true" --inkling-cpu-parallel-dispatch="min-iterations=16 branch-counters=true" | FileCheck %s
// RUN: inkling-opt %s --inkling-cpu-lower-to-loops="hoist-taps=true token-runs=true" --inkling-cpu-streaming-stores=min-iterations=16 --inkling-cpu-parallel-dispatch=min-iterations=16 | FileCheck %s --check-prefix=OFF

#real = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
!cache = memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>

// branch-counters: one public i64 counter per run-time branch of the CPU's
// nests, declared once in the module, and an atomic add of 1 at the start
// of each branch: the conv's token-run choice, a run unrolled or looped,
// streaming stores on or off, threads or the calling thread
// (BranchCounters.h; unittests/BranchTest.cpp asserts which one a step
// takes).
// CHECK-DAG:   memref.global @inkling_branch_token_runs_on : memref<1xi64> = dense<0>
// CHECK-DAG:   memref.global @inkling_branch_token_runs_off : memref<1xi64> = dense<0>
// CHECK-DAG:   memref.global @inkling_branch_runs_unrolled : memref<1xi64> = dense<0>
// CHECK-DAG:   memref.global @inkling_branch_runs_looped : memref<1xi64> = dense<0>
// CHECK-DAG:   memref.global @inkling_branch_streaming_on : memref<1xi64> = dense<0>
// CHECK-DAG:   memref.global @inkling_branch_streaming_off : memref<1xi64> = dense<0>
// CHECK-DAG:   memref.global @inkling_branch_threaded : memref<1xi64> = dense<0>
// CHECK-DAG:   memref.global @inkling_branch_sequential : memref<1xi64> = dense<0>
// The threaded and the sequential copies of the nests are private
// functions of their own (inkling-cpu-parallel-dispatch), counting where
// they start.
// CHECK-LABEL: func.func private @conv_real_threaded0
// CHECK:           memref.get_global @inkling_branch_threaded
// CHECK:           scf.parallel
// CHECK:           memref.get_global @inkling_branch_runs_unrolled
// CHECK:           memref.get_global @inkling_branch_runs_looped
// CHECK-LABEL: func.func private @conv_real_sequential0
// CHECK:           memref.get_global @inkling_branch_sequential
// CHECK-NOT:       scf.parallel
// CHECK:           memref.get_global @inkling_branch_runs_unrolled
// CHECK:           memref.get_global @inkling_branch_runs_looped
// CHECK-LABEL: func.func @conv_real
// CHECK:         scf.if %{{.+}} {
// CHECK-NEXT:      %[[ON:.+]] = memref.get_global @inkling_branch_token_runs_on
// CHECK:           memref.atomic_rmw addi %{{.+}}, %[[ON]][%{{.+}}] : (i64, memref<1xi64>) -> i64
// CHECK:           memref.get_global @inkling_branch_streaming_on
// CHECK:           call @conv_real_threaded0
// CHECK-NEXT:    } else {
// CHECK-NEXT:      call @conv_real_sequential0
// CHECK:           memref.get_global @inkling_branch_streaming_off
// CHECK:           %[[NORUNS:.+]] = memref.get_global @inkling_branch_token_runs_off
// CHECK-NEXT:      memref.atomic_rmw addi %{{.+}}, %[[NORUNS]][%{{.+}}] : (i64, memref<1xi64>) -> i64
// Without the option: none (the production IR).
// OFF-NOT:     memref.global
// OFF-LABEL: func.func @conv_real
// OFF-NOT:     atomic_rmw
// OFF-NOT:     get_global
func.func @conv_real(%buffer: memref<?xi8>, %qsl: memref<?xi32>,
                     %nc: memref<?xi32>, %bt: memref<?x?xi32>,
                     %slots: memref<?xi64>, %x: memref<?x4096xbf16>,
                     %w: memref<4096x4xbf16>, %y: memref<?x4096xbf16>) {
  %cache = sconv.bind %buffer layout #real page_bytes 131072 : memref<?xi8> -> !cache
  %step = sconv.step query_start_loc %qsl num_computed %nc
      block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.conv %x, %w history %cache[attn] layout #real step %step into %y
      : memref<?x4096xbf16>, memref<4096x4xbf16>, !cache -> memref<?x4096xbf16>
  return
}
