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
#include "llvm/Support/MathExtras.h"

#include <tuple>

#include <numeric>

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
  /// A slot in range that is not block_table[b][p / N] * N + p % N.
  SlotNotTokens = 4,
  /// A token_seq entry that is not the sequence (below B) holding the token.
  TokenSeq = 5
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

/// Loads `lanes` consecutive elements of the innermost dim (a scalar for 1),
/// claiming `align` (see accessAlign) for a vector.
inline Value loadLanes(OpBuilder &b, Location loc, Value memref,
                       ValueRange indices, int64_t lanes,
                       llvm::MaybeAlign align) {
  if (lanes == 1)
    return memref::LoadOp::create(b, loc, memref, indices);
  Type element = cast<MemRefType>(memref.getType()).getElementType();
  return vector::LoadOp::create(b, loc, VectorType::get({lanes}, element),
                                memref, indices,
                                /*nontemporal=*/false, align);
}

inline void storeLanes(OpBuilder &b, Location loc, Value value, Value memref,
                       ValueRange indices, llvm::MaybeAlign align) {
  if (!isa<VectorType>(value.getType())) {
    memref::StoreOp::create(b, loc, value, memref, indices);
    return;
  }
  vector::StoreOp::create(b, loc, value, memref, indices, /*nontemporal=*/false,
                          align);
}

inline Value extToF32(OpBuilder &b, Location loc, Value v, int64_t lanes) {
  return arith::ExtFOp::create(b, loc, laneType(b.getF32Type(), lanes), v);
}

//===----------------------------------------------------------------------===//
// Alignment facts
//===----------------------------------------------------------------------===//

/// The largest divisor of kLanes that every element offset
/// `offset + sum_k(i_k * stride_k)` of `type` provably has when index k is a
/// multiple of `indexMultiples[k]` (1: anything, 0: always 0). A dynamic
/// offset proves nothing; a dynamic stride keeps only its index's multiple.
inline int64_t offsetMultiple(MemRefType type,
                              ArrayRef<int64_t> indexMultiples) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset))
    return 1;
  int64_t multiple = std::gcd(kLanes, offset);
  for (auto [stride, index] : llvm::zip_equal(strides, indexMultiples)) {
    int64_t term = ShapedType::isDynamic(stride) ? index : stride * index;
    multiple = std::gcd(multiple, term);
  }
  return multiple;
}

/// The alignment a vector access to `type` at such indices may claim, under
/// the contract that the base (aligned pointer) of every memref operand is
/// 16-byte aligned (stated in the pass description; checked where buffers
/// enter a JIT-ed layer by LayerProgram::checkArguments, which inkling-run's
/// replay and CPU serving call; cuMemAlloc gives 256-byte aligned device
/// buffers). kAlignBytes only for offsets that are multiples of 8 elements;
/// else the proven power of two (4 or 8 bytes); none when only the
/// element's own alignment is known (the lowering's default: an unaligned
/// vector).
inline llvm::MaybeAlign accessAlign(MemRefType type,
                                    ArrayRef<int64_t> indexMultiples) {
  int64_t elementBytes = type.getElementTypeBitWidth() / 8;
  int64_t bytes = offsetMultiple(type, indexMultiples) * elementBytes;
  if (bytes <= elementBytes)
    return llvm::MaybeAlign();
  return llvm::MaybeAlign(std::min<uint64_t>(kAlignBytes, bytes));
}

/// What an index `h * width + c` (c a multiple of kLanes) is a multiple of.
inline int64_t flatIndexMultiple(int64_t width) {
  return std::gcd(kLanes, width);
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
  /// What a chunk-start access may claim: [t, h, c] or [t, h*w + c] with c
  /// a multiple of kLanes.
  llvm::MaybeAlign align;

  StreamOperand(Value memref, int64_t width) : memref(memref), width(width) {
    auto type = cast<MemRefType>(memref.getType());
    if (type.getRank() == 3)
      align = accessAlign(type, {1, 1, kLanes});
    else
      align = accessAlign(type, {1, flatIndexMultiple(width)});
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
                     lanes, align);
  }

  void store(OpBuilder &b, Location loc, Value value, Value token, Value head,
             Value channel) const {
    storeLanes(b, loc, value, memref, indices(b, loc, token, head, channel),
               align);
  }
};

/// What a chunk-start access to the cache at column `offset + c` may claim.
inline llvm::MaybeAlign cacheAlign(MemRefType cacheType, int64_t offset) {
  return accessAlign(cacheType, {1, 1, 1, std::gcd(kLanes, offset)});
}

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

/// (q / N, q % N) of a non-negative index q (a position or a slot) for
/// any block size N: a shift and a mask when N is a power of two (the
/// common engine choices), else a division.
inline std::pair<Value, Value> emitBlockAndRow(OpBuilder &b, Location loc,
                                               Value q, int64_t blockSize) {
  if (llvm::isPowerOf2_64(blockSize)) {
    Value shift = cIndex(b, loc, llvm::Log2_64(blockSize));
    Value mask = cIndex(b, loc, blockSize - 1);
    return {arith::ShRUIOp::create(b, loc, q, shift),
            arith::AndIOp::create(b, loc, q, mask)};
  }
  Value n = cIndex(b, loc, blockSize);
  return {arith::DivUIOp::create(b, loc, q, n),
          arith::RemUIOp::create(b, loc, q, n)};
}

/// The number of slots of the cache, as i64: a valid slot is below it.
inline Value emitSlotLimit(OpBuilder &b, Location loc, Value cache,
                           int64_t blockSize) {
  Value numBlocks = memref::DimOp::create(b, loc, cache, 0);
  return toI64(b, loc, mul(b, loc, numBlocks, cIndex(b, loc, blockSize)));
}

/// The sequence b of token t (the largest b < B with qsl[b] <= t: a binary
/// search; empty sequences resolve to the later, non-empty one), its first
/// token, its num_computed and the position p of t.
struct SequenceInfo {
  Value seq, start, computed, position;
  /// Null: a real token (the search). Else whether t is live: a real token
  /// (t < qsl[B]) and, checked, one whose token_seq entry holds it; the
  /// other fields are 0 for a token that is not (see emitTokenSequence).
  Value live;
};

inline SequenceInfo emitSequence(OpBuilder &b, Location loc, Value qslBuf,
                                 Value numComputedBuf, Value batch, Value t) {
  Type idx = b.getIndexType();
  auto loop = scf::WhileOp::create(
      b, loc, TypeRange{idx, idx}, ValueRange{cIndex(b, loc, 0), batch},
      [&](OpBuilder &b, Location loc, ValueRange lohi) {
        Value span = arith::SubIOp::create(b, loc, lohi[1], lohi[0]);
        Value more =
            cmp(b, loc, arith::CmpIPredicate::sgt, span, cIndex(b, loc, 1));
        scf::ConditionOp::create(b, loc, more, lohi);
      },
      [&](OpBuilder &b, Location loc, ValueRange lohi) {
        Value mid = arith::DivUIOp::create(
            b, loc, add(b, loc, lohi[0], lohi[1]), cIndex(b, loc, 2));
        Value start = toIndex(
            b, loc, memref::LoadOp::create(b, loc, qslBuf, ValueRange{mid}));
        Value le = cmp(b, loc, arith::CmpIPredicate::sle, start, t);
        Value lo = arith::SelectOp::create(b, loc, le, mid, lohi[0]);
        Value hi = arith::SelectOp::create(b, loc, le, lohi[1], mid);
        scf::YieldOp::create(b, loc, ValueRange{lo, hi});
      });
  SequenceInfo info;
  info.seq = loop.getResult(0);
  info.start = toIndex(
      b, loc, memref::LoadOp::create(b, loc, qslBuf, ValueRange{info.seq}));
  info.computed = toIndex(
      b, loc,
      memref::LoadOp::create(b, loc, numComputedBuf, ValueRange{info.seq}));
  info.position =
      add(b, loc, info.computed, arith::SubIOp::create(b, loc, t, info.start));
  return info;
}

/// Where token t is stored: `valid` (slot >= 0, and in checked mode below
/// the limit and the token's own slot), `bad` (checked mode: slot < -1 or
/// beyond the cache), `notTokens` (checked mode: in range, but not
/// block_table[b][p / N] * N + p % N: it would overwrite a row that other
/// tokens or the convs read, and fused and unfused programs would
/// disagree), `expected` (that slot, -1 when p / N is beyond the table),
/// the cache block and row.
struct SlotInfo {
  Value slot, valid, bad, notTokens, expected, block, row;
};

/// `sequence` and `blockTable` are needed in checked mode only.
inline SlotInfo emitSlot(OpBuilder &b, Location loc, Value slots, Value token,
                         int64_t blockSize, bool checked, Value slotLimit,
                         const SequenceInfo *sequence = nullptr,
                         Value blockTable = {}) {
  SlotInfo info;
  info.slot = memref::LoadOp::create(b, loc, slots, ValueRange{token});
  Value slot = info.slot;
  info.valid = cmp(b, loc, arith::CmpIPredicate::sge, slot, cI64(b, loc, 0));
  Value n = cIndex(b, loc, blockSize);
  if (checked) {
    Value yes = arith::ConstantIntOp::create(b, loc, 1, 1);
    Value inRange = cmp(b, loc, arith::CmpIPredicate::slt, slot, slotLimit);
    info.bad = arith::OrIOp::create(
        b, loc, cmp(b, loc, arith::CmpIPredicate::slt, slot, cI64(b, loc, -1)),
        arith::AndIOp::create(b, loc, info.valid,
                              arith::XOrIOp::create(b, loc, inRange, yes)));
    info.valid = arith::AndIOp::create(b, loc, info.valid, inRange);
    // The token's own slot: block_table[b][p / N] * N + p % N.
    Value logical =
        arith::DivUIOp::create(b, loc, sequence->position, n).getResult();
    Value width = memref::DimOp::create(b, loc, blockTable, 1);
    Value inTable = cmp(b, loc, arith::CmpIPredicate::ult, logical, width);
    // A padding token reads no block table row.
    if (sequence->live)
      inTable = arith::AndIOp::create(b, loc, inTable, sequence->live);
    auto expected = scf::IfOp::create(
        b, loc, inTable,
        [&](OpBuilder &b, Location loc) {
          Value id =
              toI64(b, loc,
                    memref::LoadOp::create(b, loc, blockTable,
                                           ValueRange{sequence->seq, logical}));
          Value row = toI64(
              b, loc, arith::RemUIOp::create(b, loc, sequence->position, n));
          scf::YieldOp::create(
              b, loc,
              add(b, loc, mul(b, loc, id, cI64(b, loc, blockSize)), row));
        },
        [&](OpBuilder &b, Location loc) {
          scf::YieldOp::create(b, loc, cI64(b, loc, -1));
        });
    info.expected = expected.getResult(0);
    Value own = cmp(b, loc, arith::CmpIPredicate::eq, slot, info.expected);
    info.notTokens = arith::AndIOp::create(
        b, loc, info.valid, arith::XOrIOp::create(b, loc, own, yes));
    info.valid = arith::AndIOp::create(b, loc, info.valid, own);
  }
  // Only used where valid (slot >= 0): unsigned division is exact there.
  std::tie(info.block, info.row) =
      emitBlockAndRow(b, loc, toIndex(b, loc, slot), blockSize);
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
  if (info.notTokens)
    info.notTokens = arith::AndIOp::create(b, loc, info.notTokens, isReal);
}

/// The sequence of token t for a nest, with `live` set: loaded only for a
/// real token (padding tokens read no metadata of a sequence), from the
/// step's token_seq when it has one (no search) and else by emitSequence.
/// Checked, a token_seq entry must name a sequence of the step holding t;
/// one that does not makes t not live and, where `reporter` is given, is
/// reported (kind 5; value: the entry, limit: B).
inline SequenceInfo emitTokenSequence(OpBuilder &b, Location loc,
                                      sconv::StepOp step, Value batch, Value t,
                                      bool checked, Value reporter,
                                      StringRef opName) {
  Value qslBuf = step.getQueryStartLoc();
  Value numComputedBuf = step.getNumComputed();
  Value tokenSeqBuf = step.getTokenSeq();
  Value isReal =
      cmp(b, loc, arith::CmpIPredicate::slt, t, emitRealTokens(b, loc, step));
  auto meta = scf::IfOp::create(
      b, loc, isReal,
      [&](OpBuilder &b, Location loc) {
        Value ok = arith::ConstantIntOp::create(b, loc, 1, 1);
        if (!tokenSeqBuf) {
          SequenceInfo found =
              emitSequence(b, loc, qslBuf, numComputedBuf, batch, t);
          scf::YieldOp::create(
              b, loc, ValueRange{ok, found.seq, found.start, found.computed});
          return;
        }
        Value entry =
            memref::LoadOp::create(b, loc, tokenSeqBuf, ValueRange{t});
        Value s = toIndex(b, loc, entry), first;
        if (checked) {
          // The entry must name a sequence of the step holding t.
          Value inRange = cmp(b, loc, arith::CmpIPredicate::ult, s, batch);
          s = arith::SelectOp::create(b, loc, inRange, s, cIndex(b, loc, 0));
          first = toIndex(
              b, loc, memref::LoadOp::create(b, loc, qslBuf, ValueRange{s}));
          Value end =
              toIndex(b, loc,
                      memref::LoadOp::create(
                          b, loc, qslBuf,
                          ValueRange{add(b, loc, s, cIndex(b, loc, 1))}));
          ok = arith::AndIOp::create(
              b, loc, inRange,
              arith::AndIOp::create(
                  b, loc, cmp(b, loc, arith::CmpIPredicate::sle, first, t),
                  cmp(b, loc, arith::CmpIPredicate::slt, t, end)));
          if (reporter) {
            Value bad = arith::XOrIOp::create(
                b, loc, ok, arith::ConstantIntOp::create(b, loc, 1, 1));
            emitReport(b, loc, arith::AndIOp::create(b, loc, bad, reporter),
                       step.getStatus(), CheckKind::TokenSeq, t, entry, batch,
                       (opName + " (checked): a token_seq entry is not the "
                                 "sequence (below B) whose tokens hold the "
                                 "token")
                           .str());
          }
        } else {
          first = toIndex(
              b, loc, memref::LoadOp::create(b, loc, qslBuf, ValueRange{s}));
        }
        Value done = toIndex(
            b, loc,
            memref::LoadOp::create(b, loc, numComputedBuf, ValueRange{s}));
        scf::YieldOp::create(b, loc, ValueRange{ok, s, first, done});
      },
      [&](OpBuilder &b, Location loc) {
        Value zero = cIndex(b, loc, 0);
        scf::YieldOp::create(
            b, loc,
            ValueRange{arith::ConstantIntOp::create(b, loc, 0, 1), zero, zero,
                       zero});
      });
  SequenceInfo info;
  info.live = meta.getResult(0);
  info.seq = meta.getResult(1);
  info.start = meta.getResult(2);
  info.computed = meta.getResult(3);
  info.position =
      add(b, loc, info.computed, arith::SubIOp::create(b, loc, t, info.start));
  return info;
}

/// The message of a rejected slot for `op` (checked mode).
inline std::string slotMessage(Operation *op) {
  return (op->getName().getStringRef() +
          " (checked): a slot_mapping entry is below -1 or addresses a block "
          "at or beyond the cache's num_blocks")
      .str();
}

/// Reports a rejected slot of token t once (when `reporter`): out of range
/// (kind 1; limit: num_blocks * N) or not the token's own (kind 4; limit:
/// the expected slot).
inline void emitSlotReports(OpBuilder &b, Location loc, Operation *op,
                            const SlotInfo &slot, Value reporter, Value status,
                            Value token, Value slotLimit) {
  emitReport(b, loc, arith::AndIOp::create(b, loc, slot.bad, reporter), status,
             CheckKind::Slot, token, slot.slot, slotLimit, slotMessage(op));
  emitReport(b, loc, arith::AndIOp::create(b, loc, slot.notTokens, reporter),
             status, CheckKind::SlotNotTokens, token, slot.slot, slot.expected,
             (op->getName().getStringRef() +
              " (checked): a slot_mapping entry is neither -1 nor the token's "
              "own slot block_table[b][p / N] * N + p % N")
                 .str());
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
