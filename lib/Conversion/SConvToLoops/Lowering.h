//===- Lowering.h - Shared pieces of the sconv loop lowering ----*- C++ -*-===//
//
// IR helpers, alignment facts, stream operands, the chunk loop, the loop
// nest over (token, head) x (the concatenated 16-byte chunks of one or more
// streams), and checked-mode reports: what the insert and conv lowerings
// (single-stream and fused) share. Internal to lib/Conversion/SConvToLoops.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_LIB_CONVERSION_SCONVTOLOOPS_LOWERING_H
#define INKLING_LIB_CONVERSION_SCONVTOLOOPS_LOWERING_H

#include "inkling/Conversion/SConvToLoops/SConvToLoops.h"
#include "inkling/Dialect/SConv/IR/SConvOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

namespace inkling::loops {

using namespace mlir;

/// Channels per vector access: 16 bytes of bf16.
constexpr int64_t kLanes = 8;
constexpr uint64_t kAlignBytes = 16;

/// Kinds reported in the step's status buffer (see sconv.step).
enum class CheckKind : int64_t {
  Slot = 1,
  BlockId = 2,
  LogicalBlock = 3,
  TokenSeq = 4
};

constexpr const char *kNoStepMessage =
    "cannot be lowered: its step operand is not produced by a visible "
    "'sconv.step' op (e.g. it is a block argument); the lowering reads the "
    "step's metadata buffers from that op";

//===----------------------------------------------------------------------===//
// Small IR helpers
//===----------------------------------------------------------------------===//

inline Value cIndex(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

inline Value cI64(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIntOp::create(b, loc, v, 64);
}

inline Value toIndex(OpBuilder &b, Location loc, Value v) {
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
}

inline Value toI64(OpBuilder &b, Location loc, Value v) {
  if (v.getType().isInteger(64))
    return v;
  if (v.getType().isIndex())
    return arith::IndexCastOp::create(b, loc, b.getI64Type(), v);
  return arith::ExtSIOp::create(b, loc, b.getI64Type(), v);
}

inline Value cmp(OpBuilder &b, Location loc, arith::CmpIPredicate pred,
                 Value lhs, Value rhs) {
  return arith::CmpIOp::create(b, loc, pred, lhs, rhs);
}

inline Value add(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  return arith::AddIOp::create(b, loc, lhs, rhs);
}

inline Value mul(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  return arith::MulIOp::create(b, loc, lhs, rhs);
}

/// `f32` or `vector<lanes x f32>` (lanes == 1: scalar).
inline Type laneType(Type element, int64_t lanes) {
  if (lanes == 1)
    return element;
  return VectorType::get({lanes}, element);
}

inline Value splatF32(OpBuilder &b, Location loc, float value, int64_t lanes) {
  Type type = laneType(b.getF32Type(), lanes);
  if (lanes == 1)
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
  return arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(cast<ShapedType>(type),
                             b.getF32FloatAttr(value).getValue()));
}

/// Loads `lanes` consecutive elements of the innermost dim (a scalar for 1).
inline Value loadLanes(OpBuilder &b, Location loc, Value memref,
                       ValueRange indices, int64_t lanes, bool aligned) {
  if (lanes == 1)
    return memref::LoadOp::create(b, loc, memref, indices);
  Type element = cast<MemRefType>(memref.getType()).getElementType();
  return vector::LoadOp::create(
      b, loc, VectorType::get({lanes}, element), memref, indices,
      /*nontemporal=*/false,
      aligned ? llvm::MaybeAlign(kAlignBytes) : llvm::MaybeAlign());
}

inline void storeLanes(OpBuilder &b, Location loc, Value value, Value memref,
                       ValueRange indices, bool aligned) {
  if (!isa<VectorType>(value.getType())) {
    memref::StoreOp::create(b, loc, value, memref, indices);
    return;
  }
  vector::StoreOp::create(b, loc, value, memref, indices, /*nontemporal=*/false,
                          aligned ? llvm::MaybeAlign(kAlignBytes)
                                  : llvm::MaybeAlign());
}

inline Value extToF32(OpBuilder &b, Location loc, Value v, int64_t lanes) {
  return arith::ExtFOp::create(b, loc, laneType(b.getF32Type(), lanes), v);
}

//===----------------------------------------------------------------------===//
// Alignment facts
//===----------------------------------------------------------------------===//

inline bool staticMultiple(int64_t v, int64_t m) {
  return !ShapedType::isDynamic(v) && v % m == 0;
}

/// True when, given a 16-byte aligned base, the element at any index whose
/// innermost component is a multiple of 8 is 16-byte aligned: the offset and
/// every stride except the innermost (unit) one are static multiples of 8.
inline bool rowsAligned(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return false;
  if (!staticMultiple(offset, kLanes))
    return false;
  for (int64_t stride : ArrayRef<int64_t>(strides).drop_back())
    if (!staticMultiple(stride, kLanes))
      return false;
  return true;
}

/// The most static type known for `cache`: a `memref.cast` (e.g. from the
/// statically strided `sconv.bind` result to a dynamic block stride) keeps
/// the strides of its source.
inline MemRefType staticCacheType(Value cache) {
  auto type = cast<MemRefType>(cache.getType());
  while (auto castOp = cache.getDefiningOp<memref::CastOp>()) {
    cache = castOp.getSource();
    auto source = dyn_cast<MemRefType>(cache.getType());
    if (!source)
      break;
    type = source;
  }
  return type;
}

//===----------------------------------------------------------------------===//
// Stream operands: [T, H, w] or [T, H*w]
//===----------------------------------------------------------------------===//

struct StreamOperand {
  Value memref;
  int64_t width;
  bool aligned; ///< Chunk-start accesses are provably 16-byte aligned.

  StreamOperand(Value memref, int64_t width) : memref(memref), width(width) {
    auto type = cast<MemRefType>(memref.getType());
    aligned = rowsAligned(type) &&
              (type.getRank() == 3 || staticMultiple(width, kLanes));
  }

  SmallVector<Value> indices(OpBuilder &b, Location loc, Value token,
                             Value head, Value channel) const {
    if (cast<MemRefType>(memref.getType()).getRank() == 3)
      return {token, head, channel};
    return {token,
            add(b, loc, mul(b, loc, head, cIndex(b, loc, width)), channel)};
  }

  Value load(OpBuilder &b, Location loc, Value token, Value head, Value channel,
             int64_t lanes) const {
    return loadLanes(b, loc, memref, indices(b, loc, token, head, channel),
                     lanes, aligned && lanes > 1);
  }

  void store(OpBuilder &b, Location loc, Value value, Value token, Value head,
             Value channel) const {
    storeLanes(b, loc, value, memref, indices(b, loc, token, head, channel),
               aligned);
  }
};

//===----------------------------------------------------------------------===//
// The chunk loop
//===----------------------------------------------------------------------===//

/// Emits the body for chunk `chunk` of a stream of `width` channels: one
/// 8-lane call for full chunks; for the last chunk of a width that is not a
/// multiple of 8, a scalar loop over its channels (1-lane calls).
using LanesBody =
    function_ref<void(OpBuilder &, Location, Value channel, int64_t lanes)>;

inline void emitChunk(OpBuilder &b, Location loc, Value chunk, int64_t width,
                      LanesBody body) {
  int64_t full = width / kLanes;
  int64_t tail = width % kLanes;
  auto scalarTail = [&](OpBuilder &b, Location loc) {
    scf::ForOp::create(b, loc, cIndex(b, loc, full * kLanes),
                       cIndex(b, loc, width), cIndex(b, loc, 1), ValueRange{},
                       [&](OpBuilder &b, Location loc, Value c, ValueRange) {
                         body(b, loc, c, 1);
                         scf::YieldOp::create(b, loc);
                       });
  };
  auto vectorChunk = [&](OpBuilder &b, Location loc) {
    Value c = mul(b, loc, chunk, cIndex(b, loc, kLanes));
    body(b, loc, c, kLanes);
  };
  if (tail == 0) {
    vectorChunk(b, loc);
    return;
  }
  if (full == 0) {
    scalarTail(b, loc);
    return;
  }
  Value isTail =
      cmp(b, loc, arith::CmpIPredicate::eq, chunk, cIndex(b, loc, full));
  scf::IfOp::create(
      b, loc, isTail,
      [&](OpBuilder &b, Location loc) {
        scalarTail(b, loc);
        scf::YieldOp::create(b, loc);
      },
      [&](OpBuilder &b, Location loc) {
        vectorChunk(b, loc);
        scf::YieldOp::create(b, loc);
      });
}

inline int64_t numChunks(int64_t width) {
  return (width + kLanes - 1) / kLanes;
}

/// The inner loop body of one stream (`part`) of a nest, for its chunk
/// `chunk` (counted from the stream's own first chunk).
using PartBody = function_ref<void(OpBuilder &, Location, Value token,
                                   Value head, unsigned part, Value chunk)>;

/// Calls `body` for the part whose chunk range [starts[i], starts[i+1])
/// holds `chunk`: a chain of comparisons against the ranges' ends (none for
/// a single part), the part's chunk index relative to its first chunk.
inline void dispatchChunk(OpBuilder &b, Location loc, Value token, Value head,
                          Value chunk, ArrayRef<int64_t> starts, unsigned part,
                          PartBody body) {
  unsigned parts = starts.size() - 1;
  auto call = [&](OpBuilder &b, Location loc) {
    Value local =
        starts[part] == 0
            ? chunk
            : arith::SubIOp::create(b, loc, chunk, cIndex(b, loc, starts[part]))
                  .getResult();
    body(b, loc, token, head, part, local);
  };
  if (part + 1 == parts) {
    call(b, loc);
    return;
  }
  Value inPart = cmp(b, loc, arith::CmpIPredicate::slt, chunk,
                     cIndex(b, loc, starts[part + 1]));
  scf::IfOp::create(
      b, loc, inPart,
      [&](OpBuilder &b, Location loc) {
        call(b, loc);
        scf::YieldOp::create(b, loc);
      },
      [&](OpBuilder &b, Location loc) {
        dispatchChunk(b, loc, token, head, chunk, starts, part + 1, body);
        scf::YieldOp::create(b, loc);
      });
}

/// The loop nest of one op over one or more streams of widths `widths`:
///
///   scf.parallel (t, h) in [0, T) x [0, H) {
///     outer(t, h)
///     scf.parallel chunk in [0, sum of the streams' chunks) {
///       part i whose chunk range holds chunk: inner(t, h, i, chunk - start_i)
///   } }
///
/// The outer loop maps to GPU blocks, the inner one to threads. The streams'
/// chunks are concatenated in the order given (callers order the streams by
/// their offset in the head row), so consecutive inner iterations touch
/// consecutive 16-byte chunks of a packed row.
///
/// With `splitStreams` (the CPU's form) the outer body instead runs one
/// inner scf.parallel per stream, in the same order: the same chunks in the
/// same sequence, without the per-chunk dispatch, so that each inner loop is
/// a plain strided copy or conv that LLVM vectorizes (still one nest).
inline void
emitNest(OpBuilder &b, Location loc, Value tokens, int64_t heads,
         ArrayRef<int64_t> widths, bool splitStreams, PartBody inner,
         function_ref<void(OpBuilder &, Location, Value, Value)> outer) {
  SmallVector<int64_t> starts = {0};
  for (int64_t width : widths)
    starts.push_back(starts.back() + numChunks(width));
  Value c0 = cIndex(b, loc, 0), c1 = cIndex(b, loc, 1);
  scf::ParallelOp::create(
      b, loc, ValueRange{c0, c0}, ValueRange{tokens, cIndex(b, loc, heads)},
      ValueRange{c1, c1}, [&](OpBuilder &b, Location loc, ValueRange th) {
        outer(b, loc, th[0], th[1]);
        Value c0 = cIndex(b, loc, 0), c1 = cIndex(b, loc, 1);
        if (splitStreams && widths.size() > 1) {
          for (unsigned i = 0; i < widths.size(); ++i)
            scf::ParallelOp::create(
                b, loc, ValueRange{c0},
                ValueRange{cIndex(b, loc, numChunks(widths[i]))},
                ValueRange{c1},
                [&](OpBuilder &b, Location loc, ValueRange chunk) {
                  inner(b, loc, th[0], th[1], i, chunk[0]);
                });
          return;
        }
        scf::ParallelOp::create(
            b, loc, ValueRange{c0}, ValueRange{cIndex(b, loc, starts.back())},
            ValueRange{c1}, [&](OpBuilder &b, Location loc, ValueRange chunk) {
              dispatchChunk(b, loc, th[0], th[1], chunk[0], starts, 0, inner);
            });
      });
}

/// The order of `ranges` by offset in the head row.
inline SmallVector<unsigned> orderByOffset(ArrayRef<StreamRange> ranges) {
  SmallVector<unsigned> order;
  for (unsigned i = 0; i < ranges.size(); ++i)
    order.push_back(i);
  llvm::sort(order, [&](unsigned a, unsigned b) {
    return ranges[a].offset < ranges[b].offset;
  });
  return order;
}

//===----------------------------------------------------------------------===//
// Checked mode
//===----------------------------------------------------------------------===//

/// Reports an out-of-range id when `bad` holds: into the step's status
/// buffer when it has one (count, then the first report's details), else
/// through `cf.assert` with `message`.
inline void emitReport(OpBuilder &b, Location loc, Value bad, Value status,
                       CheckKind kind, Value token, Value value, Value limit,
                       StringRef message) {
  if (!status) {
    Value ok = arith::XOrIOp::create(
        b, loc, bad, arith::ConstantIntOp::create(b, loc, 1, 1));
    cf::AssertOp::create(b, loc, ok, message);
    return;
  }
  scf::IfOp::create(b, loc, bad, [&](OpBuilder &b, Location loc) {
    Value old = memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addi,
                                            cI64(b, loc, 1), status,
                                            ValueRange{cIndex(b, loc, 0)});
    Value first = cmp(b, loc, arith::CmpIPredicate::eq, old, cI64(b, loc, 0));
    scf::IfOp::create(b, loc, first, [&](OpBuilder &b, Location loc) {
      Value words[] = {cI64(b, loc, static_cast<int64_t>(kind)),
                       toI64(b, loc, token), toI64(b, loc, value),
                       toI64(b, loc, limit)};
      for (auto [i, word] : llvm::enumerate(words))
        memref::StoreOp::create(b, loc, word, status,
                                ValueRange{cIndex(b, loc, i + 1)});
      scf::YieldOp::create(b, loc);
    });
    scf::YieldOp::create(b, loc);
  });
}

/// True for the one (head 0, channel 0) lane that reports for a token.
inline Value isReporter(OpBuilder &b, Location loc, Value head, Value channel) {
  Value c0 = cIndex(b, loc, 0);
  return arith::AndIOp::create(
      b, loc, cmp(b, loc, arith::CmpIPredicate::eq, head, c0),
      cmp(b, loc, arith::CmpIPredicate::eq, channel, c0));
}

//===----------------------------------------------------------------------===//
// sconv.bind

//===----------------------------------------------------------------------===//
// The step's slot of a token (inserts)
//===----------------------------------------------------------------------===//

/// The number of slots of the cache, as i64: a valid slot is below it.
inline Value emitSlotLimit(OpBuilder &b, Location loc, Value cache,
                           int64_t blockSize) {
  Value numBlocks = memref::DimOp::create(b, loc, cache, 0);
  return toI64(b, loc, mul(b, loc, numBlocks, cIndex(b, loc, blockSize)));
}

/// Where token t is stored: `valid` (slot >= 0, and in checked mode below
/// the limit), `bad` (checked mode: slot < -1 or beyond the cache), the
/// cache block and row.
struct SlotInfo {
  Value slot, valid, bad, block, row;
};

inline SlotInfo emitSlot(OpBuilder &b, Location loc, Value slots, Value token,
                         int64_t blockSize, bool checked, Value slotLimit) {
  SlotInfo info;
  info.slot = memref::LoadOp::create(b, loc, slots, ValueRange{token});
  Value slot = info.slot;
  info.valid = cmp(b, loc, arith::CmpIPredicate::sge, slot, cI64(b, loc, 0));
  if (checked) {
    Value inRange = cmp(b, loc, arith::CmpIPredicate::slt, slot, slotLimit);
    info.bad = arith::OrIOp::create(
        b, loc, cmp(b, loc, arith::CmpIPredicate::slt, slot, cI64(b, loc, -1)),
        arith::AndIOp::create(
            b, loc, info.valid,
            arith::XOrIOp::create(b, loc, inRange,
                                  arith::ConstantIntOp::create(b, loc, 1, 1))));
    info.valid = arith::AndIOp::create(b, loc, info.valid, inRange);
  }
  Value index = toIndex(b, loc, slot);
  Value n = cIndex(b, loc, blockSize);
  info.block = arith::DivSIOp::create(b, loc, index, n);
  info.row = arith::RemSIOp::create(b, loc, index, n);
  return info;
}

/// The step's real token count `qsl[B]`: tokens at or past it are padding
/// (see sconv.step). Loaded in the nest (per token), so that a GPU kernel
/// reads it itself rather than taking a host-computed value.
inline Value emitRealTokens(OpBuilder &b, Location loc, sconv::StepOp step) {
  // qsl has B + 1 entries: its last one, without reading num_computed.
  Value qsl = step.getQueryStartLoc();
  Value last = arith::SubIOp::create(
      b, loc, memref::DimOp::create(b, loc, qsl, 0), cIndex(b, loc, 1));
  return toIndex(b, loc, memref::LoadOp::create(b, loc, qsl, ValueRange{last}));
}

/// Masks a padding token's slot: it writes nothing and is not reported,
/// whatever its slot_mapping entry holds.
inline void maskPaddingSlot(OpBuilder &b, Location loc, SlotInfo &info,
                            Value isReal) {
  info.valid = arith::AndIOp::create(b, loc, info.valid, isReal);
  if (info.bad)
    info.bad = arith::AndIOp::create(b, loc, info.bad, isReal);
}

/// The message of a rejected slot for `op` (checked mode).
inline std::string slotMessage(Operation *op) {
  return (op->getName().getStringRef() +
          " (checked): a slot_mapping entry is below -1 or addresses a block "
          "at or beyond the cache's num_blocks")
      .str();
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

/// sconv.insert and sconv.insert_packed (InsertLowering.cpp).
void populateInsertLoweringPatterns(RewritePatternSet &patterns,
                                    const SConvToLoopsOptions &options);
/// sconv.conv and sconv.fused_conv (ConvLowering.cpp).
void populateConvLoweringPatterns(RewritePatternSet &patterns,
                                  const SConvToLoopsOptions &options);

} // namespace inkling::loops

#endif // INKLING_LIB_CONVERSION_SCONVTOLOOPS_LOWERING_H
