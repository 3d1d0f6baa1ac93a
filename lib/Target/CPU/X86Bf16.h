//===- X86Bf16.h - bf16 rounding with AVX512-BF16 ---------------*- C++ -*-===//

#ifndef INKLING_LIB_TARGET_CPU_X86BF16_H
#define INKLING_LIB_TARGET_CPU_X86BF16_H

#include "inkling/Conversion/SConvToLoops/Lanes.h"

#include "llvm/ADT/STLFunctionalExtras.h"

namespace inkling::cpu {

/// loops::truncToBf16's bits, rounded by vcvtne2ps2bf16 (AVX512-BF16 and
/// AVX512-BW) where that is exact: a whole 64-byte line (32 lanes) without
/// a NaN or a denormal; otherwise (and for other lane counts) by
/// truncToBf16's expansion. `inBranch`, if given,
/// is called at the start of each branch (`software`: the expansion's).
mlir::Value truncToBf16Avx512(
    mlir::OpBuilder &b, mlir::Location loc, mlir::Value v, int64_t lanes,
    loops::LaneOrder order,
    llvm::function_ref<void(mlir::OpBuilder &, mlir::Location, bool software)>
        inBranch = {});

} // namespace inkling::cpu

#endif // INKLING_LIB_TARGET_CPU_X86BF16_H
