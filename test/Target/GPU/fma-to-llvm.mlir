// inkling-gpu-fma-to-llvm: math.fma, scalar or vector, becomes
// llvm.intr.fma (NVPTX: fma.rn.f32, one rounding, no libdevice call).
// RUN: inkling-opt %s --inkling-gpu-fma-to-llvm | FileCheck %s

// CHECK-LABEL: func.func @scalar
// CHECK-NEXT: %[[R:.*]] = llvm.intr.fma(%arg0, %arg1, %arg2) : (f32, f32, f32) -> f32
// CHECK-NEXT: return %[[R]]
func.func @scalar(%a: f32, %b: f32, %c: f32) -> f32 {
  %r = math.fma %a, %b, %c : f32
  return %r : f32
}

// CHECK-LABEL: func.func @vector
// CHECK-NEXT: llvm.intr.fma(%arg0, %arg1, %arg2) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-NOT: math.fma
func.func @vector(%a: vector<8xf32>, %b: vector<8xf32>, %c: vector<8xf32>) -> vector<8xf32> {
  %r = math.fma %a, %b, %c : vector<8xf32>
  return %r : vector<8xf32>
}
