// inkling-gpu-write-kernels explains what it needs.
// RUN: not inkling-opt %s --inkling-gpu-write-kernels 2>&1 | FileCheck %s --check-prefix=NODIR
// RUN: not inkling-opt %s --inkling-gpu-write-kernels=dir=%t 2>&1 | FileCheck %s --check-prefix=NOKERNELS

// NODIR: error: inkling-gpu-write-kernels needs dir=<directory>
// NOKERNELS: error: {{.*}}has no `inkling.kernels` attribute: run inkling-lower-to-nvvm first
func.func @f() {
  return
}
