// An unknown serialization format fails inkling-lower-to-nvvm (exit code
// non-zero, no output file) with an error naming the value; upstream
// gpu-module-to-binary reports it without failing.
// RUN: rm -f %t.out
// RUN: not inkling-opt %s --inkling-lower-to-nvvm=format=bogus -o %t.out 2>&1 \
// RUN:   | FileCheck %s
// RUN: not ls %t.out
// RUN: inkling-opt %s --inkling-gpu-check-target=format=isa -verify-diagnostics
// RUN: inkling-opt %s --inkling-gpu-check-target="format=fatbin" -verify-diagnostics

// CHECK: error: GPU format 'bogus': expected isa, bin, fatbin, llvm or offloading
module {
  func.func @layer() {
    return
  }
}
