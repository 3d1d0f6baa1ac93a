//===- X86Bf16.cpp - bf16 rounding with AVX512-BF16 -----------------------===//
//
// Rounds a 64-byte line of f32 lanes to bf16 with one vcvtne2ps2bf16 where
// it gives the bits truncToBf16's expansion gives (round to nearest even
// on the bits): every lane but a NaN or a denormal. The instruction treats
// a denormal input as zero and keeps a NaN's payload, where the expansion
// rounds the denormal's bits and writes 0x7fc0; a line holding either
// takes the expansion instead (one vfpclassps per 16 lanes, an or and one
// predictable branch). x86's own vfpclassps intrinsic, because LLVM 22
// expands the generic llvm.is.fpclass on x86 into integer compares.
//
//===----------------------------------------------------------------------===//

#include "X86Bf16.h"

#include "inkling/Target/CPU/LoopStrategy.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;
using namespace inkling;
using namespace inkling::loops;

namespace {

/// Lanes one vcvtne2ps2bf16 rounds: two zmm of f32.
constexpr int64_t kConvertLanes = 32;

/// vfpclassps's quiet NaN, denormal and signalling NaN: the lanes
/// vcvtne2ps2bf16 rounds otherwise.
constexpr int32_t kX86NanOrDenormal = 0x01 | 0x20 | 0x80;

} // namespace

bool inkling::cpu::hostHasAvx512Bf16() {
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  for (llvm::StringRef feature :
       {"avx512f", "avx512bw", "avx512dq", "avx512bf16"})
    if (!features.lookup(feature))
      return false;
  return true;
}

Value inkling::cpu::truncToBf16Avx512(
    OpBuilder &b, Location loc, Value v, int64_t laneCount, LaneOrder order,
    llvm::function_ref<void(OpBuilder &, Location, bool)> inBranch) {
  if (laneCount != kConvertLanes)
    return truncToBf16(b, loc, v, laneCount, order);
  int64_t half = laneCount / 2;
  auto flags = VectorType::get({half}, b.getI1Type());
  Value imm = LLVM::ConstantOp::create(b, loc, b.getI32Type(),
                                       b.getI32IntegerAttr(kX86NanOrDenormal));
  auto classify = [&](Value part) {
    return LLVM::CallIntrinsicOp::create(
               b, loc, flags, b.getStringAttr("llvm.x86.avx512.fpclass.ps.512"),
               ValueRange{part, imm})
        .getResult(0);
  };
  Value low = laneRange(b, loc, v, 0, half);
  Value high = laneRange(b, loc, v, half, half);
  Value special = arith::OrIOp::create(b, loc, classify(low), classify(high));
  Value anySpecial =
      vector::ReductionOp::create(b, loc, vector::CombiningKind::OR, special);
  return emitIfValue(
      b, loc, anySpecial,
      [&](OpBuilder &b, Location loc) {
        if (inBranch)
          inBranch(b, loc, /*software=*/true);
        return truncToBf16(b, loc, v, laneCount, order);
      },
      [&](OpBuilder &b, Location loc) -> Value {
        if (inBranch)
          inBranch(b, loc, /*software=*/false);
        // The instruction's low half rounds its second operand.
        Value packed =
            LLVM::CallIntrinsicOp::create(
                b, loc, VectorType::get({laneCount}, b.getBF16Type()),
                b.getStringAttr("llvm.x86.avx512bf16.cvtne2ps2bf16.512"),
                ValueRange{high, low})
                .getResult(0);
        if (order == LaneOrder::Natural)
          return packed;
        // Lanes in even-odd order: channel 2i is lane i, 2i + 1 lane
        // half + i (one vpermw).
        SmallVector<int64_t> interleave;
        for (int64_t i = 0; i < half; ++i) {
          interleave.push_back(i);
          interleave.push_back(half + i);
        }
        return vector::ShuffleOp::create(b, loc, packed, packed, interleave);
      });
}
