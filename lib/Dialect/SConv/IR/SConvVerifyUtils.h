//===- SConvVerifyUtils.h - Operand checks against a layout -----*- C++ -*-===//
//
// Shared by the sconv op verifiers: each check names the operand and says
// what was expected and what was found.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_LIB_DIALECT_SCONV_IR_SCONVVERIFYUTILS_H
#define INKLING_LIB_DIALECT_SCONV_IR_SCONVVERIFYUTILS_H

#include "inkling/Dialect/SConv/IR/SConvAttrs.h"
#include "mlir/IR/Operation.h"

namespace inkling::sconv::detail {

/// `memref<?x8x4x2048xbf16, strided<[?, 8192, 2048, 1]>>` for `layout`.
mlir::LogicalResult verifyCacheOperand(mlir::Operation *op,
                                       llvm::StringRef name, mlir::Type type,
                                       LayoutAttr layout);

/// A stream's input or output: `[T, H, w]` or `[T, H*w]` with contiguous
/// rows (any token stride).
mlir::LogicalResult verifyStreamOperand(mlir::Operation *op,
                                        llvm::StringRef name, mlir::Type type,
                                        LayoutAttr layout, Stream stream);

/// Weights `[H*w, kernel]`, contiguous.
mlir::LogicalResult verifyWeightsOperand(mlir::Operation *op,
                                         llvm::StringRef name, mlir::Type type,
                                         LayoutAttr layout, Stream stream);

/// A step metadata buffer: a ranked memref of `rank` with signless integer
/// elements of `bitWidth` bits.
mlir::LogicalResult verifyMetadataOperand(mlir::Operation *op,
                                          llvm::StringRef name, mlir::Type type,
                                          unsigned rank, unsigned bitWidth);

/// Checks that `stepValue` is produced by `sconv.step` when it is visible
/// and that its slot mapping (and token_seq) can hold the `tokens`
/// (dynamic: skipped).
mlir::LogicalResult verifyStepCoversTokens(mlir::Operation *op,
                                           mlir::Value stepValue,
                                           int64_t tokens);
/// Checks that a visible step's token_seq, if any, can hold the `tokens`.
mlir::LogicalResult verifyTokenSeqCoversTokens(mlir::Operation *op,
                                               mlir::Value stepValue,
                                               int64_t tokens);

/// The attention layer's paged cache of a stream (issue #29): NHD
/// `[?, block_size, H, w]` with a static block size >= 1 and strides
/// `[block_stride >= block_size*H*w, H*w, w, 1]`.
mlir::LogicalResult verifyKvCacheOperand(mlir::Operation *op,
                                         llvm::StringRef name, mlir::Type type,
                                         LayoutAttr layout, Stream stream);

/// `channels` elements of the layout's type, contiguous: a bias `[H*w]`
/// or a norm weight.
mlir::LogicalResult verifyChannelsOperand(mlir::Operation *op,
                                          llvm::StringRef name, mlir::Type type,
                                          LayoutAttr layout, int64_t channels);

/// The rows a norm runs over: `w` (the stream's width) a multiple of 8,
/// so that every row is whole 16-byte chunks (the reduction order of
/// docs/Design.md section 4, "Epilogues", is stated over chunks).
mlir::LogicalResult verifyNormWidth(mlir::Operation *op, LayoutAttr layout,
                                    Stream stream);

} // namespace inkling::sconv::detail

#endif // INKLING_LIB_DIALECT_SCONV_IR_SCONVVERIFYUTILS_H
