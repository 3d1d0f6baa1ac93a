// inkling-gpu-check-target: a chip the NVPTX backend knows passes the
// module through unchanged; an unknown one is an error on the module (the
// backend would otherwise stop the process at serialization).
// RUN: inkling-opt %s --inkling-gpu-check-target=chip=sm_90a | FileCheck %s
// RUN: inkling-opt %s --inkling-gpu-check-target=chip=sm_999 -verify-diagnostics
// RUN: not inkling-opt %s --inkling-lower-to-nvvm=chip=sm_999 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PIPELINE

// expected-error @below {{GPU target sm_999: not a chip LLVM's NVPTX backend knows (e.g. sm_80, sm_90)}}
module {
  // CHECK-LABEL: func.func @layer
  // CHECK-NEXT: return
  func.func @layer() {
    return
  }
}

// PIPELINE: error: GPU target sm_999: not a chip LLVM's NVPTX backend knows
