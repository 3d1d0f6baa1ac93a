//===- EpilogueRuns.cpp - The token-run form of the fused K/V epilogue ----===//
//
// The CPU's forms of `sconv.fused_conv_kv_write` (K: conv -> k_norm -> KV
// write; V: conv -> KV write). The steps that take the token-run nest
// (emitRunsOrDecode) run the nest below; the others (decode) a nest over
// (run of kRunTokens tokens of any sequences, head), buildDecode: a whole
// run whose tokens are live and whose taps are all history rows (the usual
// decode step) takes the streams below with each token's taps from its
// history rows (decodeRunConv: every load of a group before its slot
// stores, as ConvDecodeRuns.cpp orders them); the step's other tokens go
// one by one by the same pieces (decodeToken: the conv decode-run nest's
// form of a token with selected taps, the row's norm in registers). The
// token-run nest:
//
//   scf.parallel (run r of kRunTokens tokens from t0, h) {
//     if the run is whole (kRunTokens real tokens of one sequence, every
//         window in the step: t0 >= the sequence's first token + W - 1):
//       per token: its conv-cache slot and its attention slot, once
//       per stream, 64-byte groups of kRunLanes channels c (then 16-byte
//           chunks), lanes in even-odd order:
//         weights, bias, the window x[t0-W+1..t0-1] once; per token
//           (unrolled): x loaded once, stored at its conv-cache slot,
//           y = bf16(conv) as the conv nest computes it
//         V: y stored into the V cache (a 64-byte store per token)
//         K (normed, head_dim a multiple of kRunLanes): y stored to a
//           stack buffer [kRunTokens, head_dim] (L1), the halving-tree sums
//           of its 8-channel chunks' squares blended into one vector per
//           token (other head_dims: y kept in SSA values, groups unrolled)
//       K, per token: the pairwise tree over its chunk sums, the inverse
//         root; then per group out = bf16((y * inv) * weight), y reloaded
//         from the buffer, into the K cache
//     else (a sequence's first run, a run holding padding or a sequence
//         boundary): per token the shared (t, h) row of the epilogue
//   }
//
// The arithmetic is docs/Design.md section 4's (the same bits as the
// shared nest and the unfused ops): the chunk sums are the same halving
// tree, ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)), its adds done for all of a
// group's chunks at once on shuffled lanes; the chunk tree is level by
// level over the sums, padded with zeros to a power of two. With
// avx512-bf16 the decode nest rounds its 64-byte lines (the convs' and K's
// normed rows) with vcvtne2ps2bf16 where that gives the same bits
// (X86Bf16.h), as the conv's decode-run nest does: 6-13% faster at T = 1
// and 64 (docs/fusion.md); the prefill nest keeps the software rounding.
//
//===----------------------------------------------------------------------===//

#include "inkling/Conversion/SConvToLoops/Alignment.h"
#include "inkling/Conversion/SConvToLoops/ConvNest.h"
#include "inkling/Conversion/SConvToLoops/Epilogue.h"
#include "inkling/Target/CPU/BranchCounters.h"
#include "inkling/Target/CPU/LoopStrategy.h"

#include "RunPieces.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace inkling;
using namespace inkling::loops;
using inkling::cpu::CPULoopOptions;

namespace {

/// Tokens per run: those of the token-run nest (ConvTokenRuns.cpp).
constexpr int64_t kRunTokens = 4;
/// Channels per group: a 64-byte line of bf16 per token.
constexpr int64_t kRunLanes = kLineLanes;

int64_t powerOfTwoAtLeast(int64_t n) {
  int64_t p = 1;
  while (p < n)
    p *= 2;
  return p;
}

/// left[i] + right[i] of `v`'s lanes.
Value addLanes(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> left,
               ArrayRef<int64_t> right) {
  return arith::AddFOp::create(b, loc,
                               vector::ShuffleOp::create(b, loc, v, v, left),
                               vector::ShuffleOp::create(b, loc, v, v, right));
}

/// The sum of squares of each 8-channel chunk of `y` (f32, `lanes` lanes in
/// `order`, lanes a multiple of 8): vector<lanes / 8 x f32>, chunk k's sum
/// the halving tree of docs/Design.md, ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7))
/// (l_i: the square of the chunk's channel i), one level for all chunks.
Value chunkSquareSums(OpBuilder &b, Location loc, Value y, int64_t lanes,
                      LaneOrder order) {
  Value squares = arith::MulFOp::create(b, loc, y, y);
  SmallVector<int64_t> lane(lanes);
  for (int64_t l = 0; l < lanes; ++l)
    lane[laneChannel(order, lanes, l)] = l;
  int64_t chunks = lanes / kLanes;
  // Level 1, per chunk: n0 = l0+l4, n1 = l2+l6, n2 = l1+l5, n3 = l3+l7.
  SmallVector<int64_t> left, right;
  for (int64_t k = 0; k < chunks; ++k)
    for (auto [l, r] :
         {std::pair<int64_t, int64_t>{0, 4}, {2, 6}, {1, 5}, {3, 7}}) {
      left.push_back(lane[k * kLanes + l]);
      right.push_back(lane[k * kLanes + r]);
    }
  Value v = addLanes(b, loc, squares, left, right);
  // Level 2: n0+n1, n2+n3; level 3: their sum.
  for (int64_t width = 4; width >= 2; width /= 2) {
    left.clear();
    right.clear();
    for (int64_t k = 0; k < chunks * width / 2; ++k) {
      left.push_back(2 * k);
      right.push_back(2 * k + 1);
    }
    v = addLanes(b, loc, v, left, right);
  }
  return v;
}

/// `parts` (vectors of f32) as one vector, in order.
Value concat(OpBuilder &b, Location loc, ArrayRef<Value> parts) {
  Value all = parts.front();
  for (Value next : parts.drop_front()) {
    int64_t n = cast<VectorType>(all.getType()).getNumElements() +
                cast<VectorType>(next.getType()).getNumElements();
    all = vector::ShuffleOp::create(b, loc, all, next,
                                    llvm::to_vector(llvm::seq<int64_t>(0, n)));
  }
  return all;
}

/// The pairwise tree of the lanes of `sums` (f32), padded with zeros to a
/// power of two, level by level: ((s0 + s1) + (s2 + s3)) + ...
Value pairwiseTreeOfLanes(OpBuilder &b, Location loc, Value sums) {
  int64_t n = cast<VectorType>(sums.getType()).getNumElements();
  int64_t padded = powerOfTwoAtLeast(n);
  if (padded != n) {
    Value zeros = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(cast<VectorType>(sums.getType()), 0.0f));
    SmallVector<int64_t> mask = llvm::to_vector(llvm::seq<int64_t>(0, n));
    mask.resize(padded, n);
    sums = vector::ShuffleOp::create(b, loc, sums, zeros, mask);
  }
  for (int64_t width = padded; width > 1; width /= 2) {
    SmallVector<int64_t> left, right;
    for (int64_t i = 0; i < width / 2; ++i) {
      left.push_back(2 * i);
      right.push_back(2 * i + 1);
    }
    sums = addLanes(b, loc, sums, left, right);
  }
  return vector::ExtractOp::create(b, loc, sums, ArrayRef<int64_t>{0});
}

/// One chunk of channels c.. of a stream (the groups, then the 16-byte
/// chunks, then a scalar tail).
struct Piece {
  int64_t c, lanes;
};

/// The conv values (bf16, channel order) of channels c.. of the row of
/// each token of a form (kRunTokens for a run, 1 for a row).
using PieceConv =
    function_ref<SmallVector<Value>(OpBuilder &, Location, Value c, int64_t)>;

/// The forms of one fused_conv_kv_write.
class KvRunNest {
public:
  /// `decode`: the nest of buildDecode, whose roundings take
  /// vcvtne2ps2bf16 with avx512-bf16 (round).
  KvRunNest(const ConvNestBuilder &nest, const KvEpilogue &epilogue,
            const CPULoopOptions &options, bool decode = false)
      : nest(nest), epilogue(epilogue), options(options), decode(decode) {}

  /// The token-run nest.
  void build(OpBuilder &b, Location loc, Value realTokens) const;
  /// Row (t, h): the conv by 64-byte groups, then the epilogue.
  void row(OpBuilder &b, Location loc, Value t, Value h) const;
  /// The decode nest: (run of kRunTokens tokens, head), decodeRun per
  /// whole run, the rows of the step's last, partial run.
  void buildDecode(OpBuilder &b, Location loc) const;

private:
  LaneOrder order(int64_t lanes) const {
    return cpu::runLaneOrder(options, lanes);
  }
  /// `v` (f32) rounded to bf16: truncToBf16's bits, by vcvtne2ps2bf16
  /// where that is exact in a decode nest (roundDecodeLine).
  Value round(OpBuilder &b, Location loc, Value v, int64_t lanes,
              LaneOrder laneOrder) const;
  Value wholeRun(OpBuilder &b, Location loc, Value t0, Value realTokens) const;
  SmallVector<Value> runConv(OpBuilder &b, Location loc, const ConvPart &part,
                             Value t0, Value h, Value c, int64_t lanes,
                             ArrayRef<SlotInfo> slots) const;
  void normedStream(OpBuilder &b, Location loc, int64_t width, Value weight,
                    ArrayRef<KvRow> dest, Value h, PieceConv conv) const;
  void stagedNormedStream(OpBuilder &b, Location loc, int64_t width,
                          Value weight, ArrayRef<KvRow> dest, Value h,
                          PieceConv conv) const;
  void plainStream(OpBuilder &b, Location loc, int64_t width,
                   ArrayRef<KvRow> dest, Value h, PieceConv conv) const;
  /// Every stream of the rows of `tokens` (one KvRow each), from `conv`;
  /// `staged`: a whole run's (normed streams of whole groups staged).
  void streams(OpBuilder &b, Location loc, ArrayRef<Value> tokens, Value h,
               bool staged,
               function_ref<SmallVector<Value>(OpBuilder &, Location,
                                               unsigned part, Value c, int64_t)>
                   conv) const;
  void run(OpBuilder &b, Location loc, Value t0, Value h) const;
  Value convolve(OpBuilder &b, Location loc, const cpu::RunChunk &chunk,
                 ArrayRef<Value> taps, Value xt) const;
  SmallVector<Value> decodeRunConv(OpBuilder &b, Location loc,
                                   const ConvPart &part, ArrayRef<ConvRow> rows,
                                   Value h, Value c, int64_t lanes) const;
  void decodeRun(OpBuilder &b, Location loc, Value t0, Value h) const;
  SmallVector<Value> decodeTokenConv(OpBuilder &b, Location loc,
                                     const ConvPart &part, const ConvRow &row,
                                     Value h, Value c, int64_t lanes) const;
  /// One token of a decode step outside a run from the cache (a partial
  /// run's, a run with taps in the step, a padding token), by the run
  /// form's pieces: decodeTokenConv, the row's norm in registers.
  void decodeToken(OpBuilder &b, Location loc, const ConvRow &row,
                   Value h) const;
  /// The nest over (run of kRunTokens tokens, head): `whole` for a run that
  /// `isWhole` (its tokens [t0, t1)), else `rowOf` each of the run's tokens;
  /// each side counted as `wholeBranch` and `rowsBranch`.
  void runsOrRows(
      OpBuilder &b, Location loc,
      function_ref<Value(OpBuilder &, Location, Value t0, Value t1)> isWhole,
      function_ref<void(OpBuilder &, Location, Value t0, Value h)> whole,
      function_ref<void(OpBuilder &, Location, Value t, Value h)> rowOf,
      cpu::Branch wholeBranch, cpu::Branch rowsBranch) const;

  const ConvNestBuilder &nest;
  const KvEpilogue &epilogue;
  const CPULoopOptions &options;
  const bool decode;
};

} // namespace

// Whether tokens [t0, t0 + kRunTokens) are real, of one sequence, and
// every tap of theirs reads x (t0 - (W-1) >= the sequence's first token).
Value KvRunNest::wholeRun(OpBuilder &b, Location loc, Value t0,
                          Value realTokens) const {
  ArithBuilder ab(b, loc);
  Value end = ab.add(t0, cIndex(b, loc, kRunTokens));
  Value real = cmp(b, loc, arith::CmpIPredicate::ule, end, realTokens);
  return emitIfValue(
      b, loc, real,
      [&](OpBuilder &b, Location loc) -> Value {
        ArithBuilder ab(b, loc);
        Value qsl = nest.step().getQueryStartLoc();
        SequenceInfo s =
            emitSequence(b, loc, qsl, nest.numComputed(), nest.batch(), t0);
        Value seqEnd = toIndex(
            b, loc,
            memref::LoadOp::create(
                b, loc, qsl, ValueRange{ab.add(s.seq, cIndex(b, loc, 1))}));
        return arith::AndIOp::create(
            b, loc, cmp(b, loc, arith::CmpIPredicate::ule, end, seqEnd),
            cmp(b, loc, arith::CmpIPredicate::uge, t0,
                ab.add(s.start, cIndex(b, loc, nest.kernel() - 1))));
      },
      [&](OpBuilder &b, Location loc) -> Value {
        return arith::ConstantIntOp::create(b, loc, 0, 1);
      });
}

Value KvRunNest::round(OpBuilder &b, Location loc, Value v, int64_t lanes,
                       LaneOrder laneOrder) const {
  if (!decode)
    return truncToBf16(b, loc, v, lanes, laneOrder);
  return cpu::roundDecodeLine(nest, options, b, loc, v, lanes, laneOrder);
}

// A token's conv output in bf16: the fma chain over its W - 1 earlier
// inputs `taps` (f32, oldest first) and its own x, `xt`.
Value KvRunNest::convolve(OpBuilder &b, Location loc,
                          const cpu::RunChunk &chunk, ArrayRef<Value> taps,
                          Value xt) const {
  Value acc = nest.convResult(
      b, loc, chunk.tapWeights,
      [&](int64_t j) {
        return j < static_cast<int64_t>(taps.size()) ? taps[j] : xt;
      },
      chunk.bias, xt, chunk.lanes);
  return round(b, loc, acc, chunk.lanes, chunk.order);
}

// The conv of channels c.. of head h for the run's tokens (bf16 in channel
// order, one per token): the weights and window once, then per token x
// loaded once, stored at its slot, convolved (the conv nest's arithmetic).
SmallVector<Value> KvRunNest::runConv(OpBuilder &b, Location loc,
                                      const ConvPart &part, Value t0, Value h,
                                      Value c, int64_t lanes,
                                      ArrayRef<SlotInfo> slots) const {
  ArithBuilder ab(b, loc);
  cpu::RunChunk chunk =
      cpu::loadRunChunk(nest, options, b, loc, part, h, c, lanes);
  LaneOrder laneOrder = chunk.order;
  SmallVector<Value> window;
  for (int64_t back = nest.kernel() - 1; back >= 1; --back)
    window.push_back(nest.xTap(b, loc, part, ab.sub(t0, cIndex(b, loc, back)),
                               h, c, lanes, laneOrder));
  SmallVector<Value> values;
  for (int64_t i = 0; i < kRunTokens; ++i) {
    Value t = ab.add(t0, cIndex(b, loc, i));
    Value xRaw = part.x.load(b, loc, t, h, c, lanes);
    if (nest.insert())
      cpu::storeAtSlot(nest, b, loc, part, slots[i], h,
                       nest.cacheCol(b, loc, part, c), xRaw);
    Value xt = extToF32(b, loc, xRaw, lanes, laneOrder);
    values.push_back(convolve(b, loc, chunk, window, xt));
    window.push_back(xt);
    window.erase(window.begin());
  }
  return values;
}

/// The pieces of a stream of `width` channels: groups of kRunLanes, then
/// 16-byte chunks, then single channels.
static SmallVector<Piece> piecesOf(int64_t width) {
  SmallVector<Piece> pieces;
  int64_t c = 0;
  for (; c + kRunLanes <= width; c += kRunLanes)
    pieces.push_back({c, kRunLanes});
  for (; c + kLanes <= width; c += kLanes)
    pieces.push_back({c, kLanes});
  for (; c < width; ++c)
    pieces.push_back({c, 1});
  return pieces;
}

// A normed stream (K), its width a multiple of 8 (the verifier's): per
// piece (unrolled) the conv of every token, kept (SSA values), and the
// chunk sums of its squares; then per stored token the pairwise tree, the
// inverse root and the row scaled into the KV cache. The row form's, and
// the run form's where the width is not whole groups (four tokens' rows
// kept this way spill: stagedNormedStream).
void KvRunNest::normedStream(OpBuilder &b, Location loc, int64_t width,
                             Value weight, ArrayRef<KvRow> dest, Value h,
                             PieceConv conv) const {
  SmallVector<Piece> pieces = piecesOf(width);
  SmallVector<SmallVector<Value>> sums(dest.size()), ys(dest.size());
  for (const Piece &piece : pieces) {
    Value c = cIndex(b, loc, piece.c);
    SmallVector<Value> values = conv(b, loc, c, piece.lanes);
    for (auto [i, row] : llvm::enumerate(dest)) {
      Value y = extToF32(b, loc, values[i], piece.lanes, order(piece.lanes));
      ys[i].push_back(y);
      sums[i].push_back(
          chunkSquareSums(b, loc, y, piece.lanes, order(piece.lanes)));
    }
  }
  auto weightAlign = accessAlign(cast<MemRefType>(weight.getType()), {kLanes});
  SmallVector<Value> weights;
  for (const Piece &piece : pieces)
    weights.push_back(
        extToF32(b, loc,
                 loadLanes(b, loc, weight, ValueRange{cIndex(b, loc, piece.c)},
                           piece.lanes, weightAlign),
                 piece.lanes, order(piece.lanes)));
  // Every row's norm, then the stores of the stored rows: the rows' trees
  // and roots are independent, in one block for the scheduler.
  SmallVector<SmallVector<Value>> outs(dest.size());
  for (size_t i = 0; i < dest.size(); ++i) {
    Value sum = pairwiseTreeOfLanes(b, loc, concat(b, loc, sums[i]));
    for (auto [p, piece] : llvm::enumerate(pieces)) {
      Value inv =
          inverseRoot(b, loc, sum, width, epilogue.epsilon, piece.lanes);
      Value out = arith::MulFOp::create(
          b, loc, arith::MulFOp::create(b, loc, ys[i][p], inv), weights[p]);
      outs[i].push_back(round(b, loc, out, piece.lanes, order(piece.lanes)));
    }
  }
  for (size_t i = 0; i < dest.size(); ++i) {
    const KvRow &row = dest[i];
    emitIf(b, loc, row.stored, [&](OpBuilder &b, Location loc) {
      for (auto [p, piece] : llvm::enumerate(pieces))
        cpu::markLine(row.storeAt(b, loc, outs[i][p], h,
                                  cIndex(b, loc, piece.c), piece.lanes),
                      row.lineAligned);
    });
  }
}

// A normed stream of the run nest (K), its width a multiple of kRunLanes,
// in two loops over the groups with the run's y staged in a stack buffer
// (bf16, in L1; staging it in the KV rows instead read each row's line
// before its streaming store): the conv of every token, stored to the
// buffer, and the chunk sums of its squares, blended into one vector per
// token (a store of them and a wider load back would miss store-to-load
// forwarding); then per token the pairwise tree over its sums and the
// inverse root; then per group every stored token's row, reloaded, scaled
// into the KV cache. The same values in the same order as normedStream's;
// 1.2-1.3x faster at 8192 prefill tokens, where its 32 vectors of y spill
// (docs/fusion.md). The buffer is hoisted to one per thread
// (inkling-cpu-hoist-static-allocas) and its stores stay cached
// (inkling-cpu-streaming-stores).
void KvRunNest::stagedNormedStream(OpBuilder &b, Location loc, int64_t width,
                                   Value weight, ArrayRef<KvRow> dest, Value h,
                                   PieceConv conv) const {
  int64_t tokens = dest.size(), groups = width / kRunLanes;
  int64_t chunks = width / kLanes, groupChunks = kRunLanes / kLanes;
  auto ys = memref::AllocaOp::create(
      b, loc, MemRefType::get({tokens, width}, b.getBF16Type()),
      b.getI64IntegerAttr(64));
  LaneOrder laneOrder = order(kRunLanes);
  auto sumsType = VectorType::get({chunks}, b.getF32Type());
  // Lane k of a token's sums is chunk k's: group g's go to lanes
  // [g * groupChunks, (g + 1) * groupChunks), blended in (no memory).
  SmallVector<int32_t> groupOfLane;
  SmallVector<int64_t> repeat;
  for (int64_t k = 0; k < chunks; ++k) {
    groupOfLane.push_back(k / groupChunks);
    repeat.push_back(k % groupChunks);
  }
  auto laneGroups = arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(VectorType::get({chunks}, b.getI32Type()),
                             ArrayRef<int32_t>(groupOfLane)));
  Value zeros =
      arith::ConstantOp::create(b, loc, DenseElementsAttr::get(sumsType, 0.0f));
  SmallVector<Value> init(tokens, zeros);
  auto pass1 = scf::ForOp::create(
      b, loc, cIndex(b, loc, 0), cIndex(b, loc, groups), cIndex(b, loc, 1),
      init, [&](OpBuilder &b, Location loc, Value g, ValueRange acc) {
        ArithBuilder ab(b, loc);
        Value c = ab.mul(g, cIndex(b, loc, kRunLanes));
        Value gi = arith::IndexCastOp::create(b, loc, b.getI32Type(), g);
        Value mask = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::eq, laneGroups,
            vector::BroadcastOp::create(
                b, loc, VectorType::get({chunks}, b.getI32Type()), gi));
        SmallVector<Value> values = conv(b, loc, c, kRunLanes);
        SmallVector<Value> next;
        for (int64_t i = 0; i < tokens; ++i) {
          storeLanes(b, loc, values[i], ys, ValueRange{cIndex(b, loc, i), c},
                     llvm::Align(64));
          Value y = extToF32(b, loc, values[i], kRunLanes, laneOrder);
          Value s = chunkSquareSums(b, loc, y, kRunLanes, laneOrder);
          next.push_back(arith::SelectOp::create(
              b, loc, mask, vector::ShuffleOp::create(b, loc, s, s, repeat),
              acc[i]));
        }
        scf::YieldOp::create(b, loc, next);
      });
  SmallVector<Value> invs;
  for (int64_t i = 0; i < tokens; ++i)
    invs.push_back(inverseRoot(b, loc,
                               pairwiseTreeOfLanes(b, loc, pass1.getResult(i)),
                               width, epilogue.epsilon, kRunLanes));
  auto weightAlign = accessAlign(cast<MemRefType>(weight.getType()), {kLanes});
  scf::ForOp::create(
      b, loc, cIndex(b, loc, 0), cIndex(b, loc, groups), cIndex(b, loc, 1),
      ValueRange{}, [&](OpBuilder &b, Location loc, Value g, ValueRange) {
        Value c = ArithBuilder(b, loc).mul(g, cIndex(b, loc, kRunLanes));
        Value w = extToF32(
            b, loc,
            loadLanes(b, loc, weight, ValueRange{c}, kRunLanes, weightAlign),
            kRunLanes, laneOrder);
        for (auto [i, row] : llvm::enumerate(dest)) {
          Value y =
              extToF32(b, loc,
                       loadLanes(b, loc, ys, ValueRange{cIndex(b, loc, i), c},
                                 kRunLanes, llvm::Align(64)),
                       kRunLanes, laneOrder);
          Value out = arith::MulFOp::create(
              b, loc, arith::MulFOp::create(b, loc, y, invs[i]), w);
          cpu::markLine(row.store(b, loc,
                                  round(b, loc, out, kRunLanes, laneOrder), h,
                                  c, kRunLanes),
                        row.lineAligned);
        }
        scf::YieldOp::create(b, loc);
      });
}

// A stream without a norm (V): per group (a loop) the conv of every token,
// stored into the KV cache; then the 16-byte chunks and a scalar tail.
void KvRunNest::plainStream(OpBuilder &b, Location loc, int64_t width,
                            ArrayRef<KvRow> dest, Value h,
                            PieceConv conv) const {
  auto store = [&](OpBuilder &b, Location loc, Value c, int64_t lanes) {
    SmallVector<Value> values = conv(b, loc, c, lanes);
    for (auto [i, row] : llvm::enumerate(dest))
      cpu::markLine(row.store(b, loc, values[i], h, c, lanes), row.lineAligned);
  };
  int64_t groups = width / kRunLanes;
  scf::ForOp::create(
      b, loc, cIndex(b, loc, 0), cIndex(b, loc, groups), cIndex(b, loc, 1),
      ValueRange{}, [&](OpBuilder &b, Location loc, Value group, ValueRange) {
        store(b, loc,
              ArithBuilder(b, loc).mul(group, cIndex(b, loc, kRunLanes)),
              kRunLanes);
        scf::YieldOp::create(b, loc);
      });
  for (const Piece &piece : piecesOf(width))
    if (piece.lanes != kRunLanes)
      store(b, loc, cIndex(b, loc, piece.c), piece.lanes);
}

void KvRunNest::streams(OpBuilder &b, Location loc, ArrayRef<Value> tokens,
                        Value h, bool staged,
                        function_ref<SmallVector<Value>(
                            OpBuilder &, Location, unsigned, Value, int64_t)>
                            conv) const {
  for (auto [p, part] : llvm::enumerate(nest.parts())) {
    size_t s = llvm::find(epilogue.streams, nest.partStream(p)) -
               epilogue.streams.begin();
    SmallVector<KvRow> dest;
    for (Value t : tokens)
      dest.emplace_back(b, loc, epilogue.kvCaches[s], epilogue.kvSlots, t);
    auto partConv = [&, p = p](OpBuilder &b, Location loc, Value c,
                               int64_t lanes) {
      return conv(b, loc, p, c, lanes);
    };
    Value weight = epilogue.normWeights[s];
    if (weight && staged && part.range.width % kRunLanes == 0)
      stagedNormedStream(b, loc, part.range.width, weight, dest, h, partConv);
    else if (weight)
      normedStream(b, loc, part.range.width, weight, dest, h, partConv);
    else
      plainStream(b, loc, part.range.width, dest, h, partConv);
  }
}

// A whole run of head h: the tokens' slots once, then every stream.
void KvRunNest::run(OpBuilder &b, Location loc, Value t0, Value h) const {
  ArithBuilder ab(b, loc);
  SmallVector<SlotInfo> slots(kRunTokens);
  SmallVector<Value> tokens;
  for (int64_t i = 0; i < kRunTokens; ++i) {
    tokens.push_back(ab.add(t0, cIndex(b, loc, i)));
    if (nest.insert())
      slots[i] = emitSlot(b, loc, nest.slots(), tokens.back(), nest.blockSize(),
                          /*checked=*/false, nest.slotLimit());
  }
  streams(b, loc, tokens, h, /*staged=*/true,
          [&](OpBuilder &b, Location loc, unsigned p, Value c, int64_t lanes) {
            return runConv(b, loc, nest.parts()[p], t0, h, c, lanes, slots);
          });
}

// Row (t, h) of any token (decode, a sequence's first run, padding): the
// shared nest's per-row values and conv (rowValue), by pieces.
void KvRunNest::row(OpBuilder &b, Location loc, Value t, Value h) const {
  ConvRow row = nest.beginRow(b, loc, t, h);
  streams(b, loc, t, h, /*staged=*/false,
          [&](OpBuilder &b, Location loc, unsigned p, Value c, int64_t lanes) {
            return SmallVector<Value>{
                nest.rowValue(b, loc, row, nest.partStream(p), c, lanes)};
          });
}

// The conv of channels c.. of head h for the decode run's tokens, every one
// live with every tap a history row (bf16 in channel order, one per token):
// the weights once, every token's x and history rows loaded before any
// slot store (loadDecodeRun), then each token convolved as the conv nest
// does.
SmallVector<Value> KvRunNest::decodeRunConv(OpBuilder &b, Location loc,
                                            const ConvPart &part,
                                            ArrayRef<ConvRow> rows, Value h,
                                            Value c, int64_t lanes) const {
  cpu::RunChunk chunk =
      cpu::loadRunChunk(nest, options, b, loc, part, h, c, lanes);
  cpu::DecodeRunLoads loads =
      cpu::loadDecodeRun(nest, b, loc, part, chunk, rows);
  if (nest.insert()) {
    Value col = nest.cacheCol(b, loc, part, c);
    for (auto [row, xRaw] : llvm::zip_equal(rows, loads.xs))
      cpu::storeAtSlot(nest, b, loc, part, row.slot, h, col, xRaw);
  }
  SmallVector<Value> values;
  for (auto [xRaw, history] : llvm::zip_equal(loads.xs, loads.taps))
    values.push_back(convolve(b, loc, chunk, history,
                              extToF32(b, loc, xRaw, lanes, chunk.order)));
  return values;
}

// Decode tokens [t0, t0 + kRunTokens) of head h: when every one is live
// and every tap of theirs a history row (the usual decode step), the run
// form of the prefill nest's streams (each group's weights once for the
// run, K staged for its norm) over decodeRunConv; otherwise, per token,
// the row form.
void KvRunNest::decodeRun(OpBuilder &b, Location loc, Value t0, Value h) const {
  SmallVector<ConvRow> rows;
  SmallVector<Value> tokens;
  for (int64_t i = 0; i < kRunTokens; ++i) {
    tokens.push_back(ArithBuilder(b, loc).add(t0, cIndex(b, loc, i)));
    rows.push_back(cpu::decodeRow(nest, b, loc, tokens.back(), h));
  }
  emitIfElse(
      b, loc, cpu::rowsFromCache(b, loc, rows),
      [&](OpBuilder &b, Location loc) {
        if (options.branchCounters)
          cpu::emitBranchCount(b, loc, nest.op(),
                               cpu::Branch::DecodeRunsFromCache);
        streams(b, loc, tokens, h, /*staged=*/true,
                [&](OpBuilder &b, Location loc, unsigned p, Value c,
                    int64_t lanes) {
                  return decodeRunConv(b, loc, nest.parts()[p], rows, h, c,
                                       lanes);
                });
      },
      [&](OpBuilder &b, Location loc) {
        for (const ConvRow &row : rows)
          decodeToken(b, loc, row, h);
      });
}

// One token's conv of channels c.. of head h, its taps selected (x, the
// cache or 0) as the conv's decode-run nest selects them: x loaded once;
// a live token's taps loaded, then x stored at its slot, then the conv
// rounded; a padding token's value is its x.
SmallVector<Value> KvRunNest::decodeTokenConv(OpBuilder &b, Location loc,
                                              const ConvPart &part,
                                              const ConvRow &row, Value h,
                                              Value c, int64_t lanes) const {
  cpu::RunChunk chunk =
      cpu::loadRunChunk(nest, options, b, loc, part, h, c, lanes);
  Value xRaw = part.x.load(b, loc, row.t, h, c, lanes);
  return {emitIfValue(
      b, loc, row.live,
      [&](OpBuilder &b, Location loc) -> Value {
        SmallVector<Value> taps;
        for (const TapSource &tap : row.taps)
          taps.push_back(cpu::CPUTapHoisting().tapValue(
              nest, b, loc, part, tap, h, c, lanes, chunk.order));
        if (nest.insert())
          cpu::storeAtSlot(nest, b, loc, part, row.slot, h,
                           nest.cacheCol(b, loc, part, c), xRaw);
        return convolve(b, loc, chunk, taps,
                        extToF32(b, loc, xRaw, lanes, chunk.order));
      },
      [&](OpBuilder &b, Location loc) -> Value { return xRaw; })};
}

void KvRunNest::decodeToken(OpBuilder &b, Location loc, const ConvRow &row,
                            Value h) const {
  streams(b, loc, row.t, h, /*staged=*/false,
          [&](OpBuilder &b, Location loc, unsigned p, Value c, int64_t lanes) {
            return decodeTokenConv(b, loc, nest.parts()[p], row, h, c, lanes);
          });
}

void KvRunNest::runsOrRows(
    OpBuilder &b, Location loc,
    function_ref<Value(OpBuilder &, Location, Value, Value)> isWhole,
    function_ref<void(OpBuilder &, Location, Value, Value)> whole,
    function_ref<void(OpBuilder &, Location, Value, Value)> rowOf,
    cpu::Branch wholeBranch, cpu::Branch rowsBranch) const {
  auto count = [&](OpBuilder &b, Location loc, cpu::Branch branch) {
    if (options.branchCounters)
      cpu::emitBranchCount(b, loc, nest.op(), branch);
  };
  cpu::emitRunHeadNest(
      nest, b, loc, kRunTokens,
      [&](OpBuilder &b, Location loc, Value t0, Value t1, Value h) {
        emitIfElse(
            b, loc, isWhole(b, loc, t0, t1),
            [&](OpBuilder &b, Location loc) {
              count(b, loc, wholeBranch);
              whole(b, loc, t0, h);
            },
            [&](OpBuilder &b, Location loc) {
              count(b, loc, rowsBranch);
              scf::ForOp::create(
                  b, loc, t0, t1, cIndex(b, loc, 1), ValueRange{},
                  [&](OpBuilder &b, Location loc, Value t, ValueRange) {
                    rowOf(b, loc, t, h);
                    scf::YieldOp::create(b, loc);
                  });
            });
      });
}

// Runs of kRunTokens tokens of any sequences (decodeRun); the step's last,
// partial run row by row.
void KvRunNest::buildDecode(OpBuilder &b, Location loc) const {
  runsOrRows(
      b, loc,
      [&](OpBuilder &b, Location loc, Value t0, Value t1) {
        return cmp(b, loc, arith::CmpIPredicate::eq,
                   ArithBuilder(b, loc).sub(t1, t0),
                   cIndex(b, loc, kRunTokens));
      },
      [&](OpBuilder &b, Location loc, Value t0, Value h) {
        decodeRun(b, loc, t0, h);
      },
      [&](OpBuilder &b, Location loc, Value t, Value h) {
        decodeToken(b, loc, cpu::decodeRow(nest, b, loc, t, h), h);
      },
      cpu::Branch::DecodeRunsWhole, cpu::Branch::DecodeRunsPartial);
}

void KvRunNest::build(OpBuilder &b, Location loc, Value realTokens) const {
  runsOrRows(
      b, loc,
      [&](OpBuilder &b, Location loc, Value t0, Value) {
        return wholeRun(b, loc, t0, realTokens);
      },
      [&](OpBuilder &b, Location loc, Value t0, Value h) {
        run(b, loc, t0, h);
      },
      [&](OpBuilder &b, Location loc, Value t, Value h) { row(b, loc, t, h); },
      cpu::Branch::RunsUnrolled, cpu::Branch::RunsLooped);
}

void cpu::emitKvRunNest(const ConvNestBuilder &nest, OpBuilder &b, Location loc,
                        Value realTokens, const KvEpilogue &epilogue,
                        const CPULoopOptions &options) {
  KvRunNest(nest, epilogue, options).build(b, loc, realTokens);
}

void cpu::CPULoopStrategy::emitKvWriteNest(ConvNestBuilder &nest, OpBuilder &b,
                                           Location loc,
                                           const KvEpilogue &epilogue) const {
  if (!options.tokenRuns || nest.checked()) {
    LoopStrategy::emitKvWriteNest(nest, b, loc, epilogue);
    return;
  }
  emitRunsOrDecode(
      nest, b, loc, options,
      [&](OpBuilder &b, Location loc, Value realTokens) {
        emitKvRunNest(nest, b, loc, realTokens, epilogue, options);
      },
      [&](OpBuilder &b, Location loc) {
        KvRunNest(nest, epilogue, options, /*decode=*/true).buildDecode(b, loc);
      });
}
