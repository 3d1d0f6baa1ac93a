//===- EpilogueLowering.cpp - rms_norm, kv_write, fused_conv_kv_write -----===//
//
// The loop nests of the conv's neighbours (issue #29):
//
//   sconv.rms_norm, sconv.kv_write:
//     scf.parallel (t, h) { the row's norm / its KV-cache store }
//   sconv.fused_conv_kv_write:
//     scf.parallel (t, h) {
//       the conv's per-(t, h) values (ConvNestBuilder::beginRow)
//       per stream: the conv's row value chunk by chunk (rowValue, which
//         also stores x into the conv cache with and_insert), normalized
//         (normed streams) and stored into the stream's KV cache
//     }
//   (a strategy may build its own nest for it from the same row body and
//   the pieces of Epilogue.h: LoopStrategy::emitKvWriteNest; the CPU's
//   token-run and group forms, lib/Target/CPU/EpilogueRuns.cpp)
//
// One row norm for the standalone op and the fused one (emitRowNorm): the
// arithmetic of docs/Design.md section 4, "Epilogues":
//   per 16-byte chunk i (unrolled): y (bf16, as stored) widened to f32,
//     kept in registers; p[i] = halving tree of its squares
//     ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7));
//   p[chunks..P) = 0 (P: the power of two >= chunks); pairwise tree over
//     p: ((p0 + p1) + (p2 + p3)) + ...;
//   r = sqrt(p[0] / w + eps); inv = 1 / r; out = bf16((y * inv) * weight).
// The squares of bf16 values are exact in f32, so a backend that contracts
// a square and an add into an fma gives the same bits.
//
//===----------------------------------------------------------------------===//

#include "EpilogueParts.h"
#include "Patterns.h"
#include "inkling/Conversion/SConvToLoops/Alignment.h"
#include "inkling/Conversion/SConvToLoops/ConvNest.h"
#include "inkling/Conversion/SConvToLoops/Epilogue.h"
#include "inkling/Conversion/SConvToLoops/LoopStrategy.h"

#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace inkling;
using namespace inkling::loops;
using namespace inkling::sconv;

KvRow::KvRow(OpBuilder &b, Location loc, Value kvCache, Value slots, Value t)
    : kvCache(kvCache) {
  auto type = cast<MemRefType>(kvCache.getType());
  int64_t blockSize = type.getDimSize(1);
  align = accessAlign(type, {1, 1, 1, kLanes});
  lineAligned = loops::lineAligned(type, {1, 1, 1, kLineLanes});
  Value slot = memref::LoadOp::create(b, loc, slots, ValueRange{t});
  Value limit = arith::MulIOp::create(
      b, loc, toI64(b, loc, memref::DimOp::create(b, loc, kvCache, 0)),
      cI64(b, loc, blockSize));
  stored = arith::AndIOp::create(
      b, loc, cmp(b, loc, arith::CmpIPredicate::sge, slot, cI64(b, loc, 0)),
      cmp(b, loc, arith::CmpIPredicate::slt, slot, limit));
  // Only used where stored holds (slot >= 0).
  std::tie(block, row) =
      emitBlockAndRow(b, loc, toIndex(b, loc, slot), blockSize);
}

Operation *KvRow::store(OpBuilder &b, Location loc, Value value, Value h,
                        Value c, int64_t lanes) const {
  Operation *op = nullptr;
  emitIf(b, loc, stored, [&](OpBuilder &b, Location loc) {
    op = storeAt(b, loc, value, h, c, lanes);
  });
  return op;
}

Operation *KvRow::storeAt(OpBuilder &b, Location loc, Value value, Value h,
                          Value c, int64_t lanes) const {
  return storeLanes(b, loc, value, kvCache, ValueRange{block, row, h, c},
                    lanes == 1 ? llvm::MaybeAlign() : align);
}

Value inkling::loops::inverseRoot(OpBuilder &b, Location loc, Value sum,
                                  int64_t count, float epsilon, int64_t lanes) {
  Value mean = arith::DivFOp::create(
      b, loc, sum,
      arith::ConstantOp::create(b, loc,
                                b.getF32FloatAttr(static_cast<float>(count))));
  Value root = math::SqrtOp::create(
      b, loc,
      arith::AddFOp::create(
          b, loc, mean,
          arith::ConstantOp::create(b, loc, b.getF32FloatAttr(epsilon))));
  Value inv = arith::DivFOp::create(
      b, loc, arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1)), root);
  return vector::BroadcastOp::create(
      b, loc, VectorType::get({lanes}, b.getF32Type()), inv);
}

void inkling::loops::emitRowNest(
    OpBuilder &b, Location loc, Value tokens, int64_t heads,
    function_ref<void(OpBuilder &, Location, Value, Value)> body) {
  Value c0 = cIndex(b, loc, 0), c1 = cIndex(b, loc, 1);
  scf::ParallelOp::create(
      b, loc, ValueRange{c0, c0}, ValueRange{tokens, cIndex(b, loc, heads)},
      ValueRange{c1, c1}, [&](OpBuilder &b, Location loc, ValueRange th) {
        body(b, loc, th[0], th[1]);
      });
}

void LoopStrategy::emitKvWriteNest(ConvNestBuilder &nest, OpBuilder &b,
                                   Location loc,
                                   const KvEpilogue &epilogue) const {
  emitRowNest(b, loc, nest.tokens(), nest.heads(), epilogue.row);
}

namespace {

/// Where a row's values come from, chunk by chunk (bf16, `lanes` lanes).
using RowSource =
    function_ref<Value(OpBuilder &, Location, Value c, int64_t lanes)>;
/// Where a row's results go.
using RowSink = function_ref<void(OpBuilder &, Location, Value c, Value value,
                                  int64_t lanes)>;

} // namespace

namespace inkling::loops {

int64_t powerOfTwoAtLeast(int64_t n) {
  int64_t p = 1;
  while (p < n)
    p *= 2;
  return p;
}

/// The halving tree of an 8-lane f32 vector: lanes l + 4, then l + 2, then
/// l + 1 added to lane l.
Value laneTree(OpBuilder &b, Location loc, Value v) {
  for (int64_t half = kLanes / 2; half >= 1; half /= 2) {
    SmallVector<int64_t> low, high;
    for (int64_t l = 0; l < half; ++l) {
      low.push_back(l);
      high.push_back(l + half);
    }
    v = arith::AddFOp::create(b, loc,
                              vector::ShuffleOp::create(b, loc, v, v, low),
                              vector::ShuffleOp::create(b, loc, v, v, high));
  }
  return vector::ExtractOp::create(b, loc, v, ArrayRef<int64_t>{0});
}

/// The pairwise tree of `sums`, zeros up to a power of two.
/// The same tree built as the sums arrive: a stack of finished subtrees
/// (at most log2 of them), two of one size merged at once, so that only
/// those stay live while a row is computed (fewer registers on the GPU).
class PairwiseTree {
public:
  PairwiseTree(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  void push(Value sum) {
    stack.push_back({sum, 1});
    merge();
  }

  /// The root. The subtrees' sizes fall from the bottom of the stack to its
  /// top; the top one is completed with a zero subtree of its size (which
  /// sums to +0: one add of 0) and merged, until one is left: the tree over
  /// the sums padded with zeros to the next power of two.
  Value finish() {
    Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
    if (stack.empty())
      return zero;
    while (stack.size() > 1) {
      stack.back().first =
          arith::AddFOp::create(b, loc, stack.back().first, zero);
      stack.back().second *= 2;
      merge();
    }
    return stack.front().first;
  }

private:
  /// Merges the two top subtrees while they have one size.
  void merge() {
    while (stack.size() > 1 &&
           stack[stack.size() - 2].second == stack.back().second) {
      auto [right, size] = stack.pop_back_val();
      stack.back().first =
          arith::AddFOp::create(b, loc, stack.back().first, right);
      stack.back().second = 2 * size;
    }
  }

  OpBuilder &b;
  Location loc;
  SmallVector<std::pair<Value, int64_t>> stack;
};

/// The pairwise tree of `sums`, zeros up to a power of two, level by
/// level (the same bits as PairwiseTree; the order of the ops differs).
Value pairwiseTree(OpBuilder &b, Location loc, ArrayRef<Value> values) {
  SmallVector<Value> sums(values);
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
  sums.resize(powerOfTwoAtLeast(sums.size()), zero);
  while (sums.size() > 1) {
    SmallVector<Value> next;
    for (size_t i = 0; i < sums.size(); i += 2)
      next.push_back(arith::AddFOp::create(b, loc, sums[i], sums[i + 1]));
    sums = std::move(next);
  }
  return sums.front();
}

} // namespace inkling::loops

namespace {

/// The row norm of docs/Design.md section 4 ("Epilogues") over `width`
/// channels (a multiple of 8; the verifiers check it), unrolled over the
/// row's chunks: the row stays in registers (SSA values) between the sum
/// and the scaling, so that nothing but the result is stored. (A head row
/// of the real model is 16 chunks.)
void emitRowNorm(OpBuilder &b, Location loc, int64_t width, Value weight,
                 float epsilon, RowSource source, RowSink sink) {
  int64_t chunks = width / kLanes;
  auto weightAlign = accessAlign(cast<MemRefType>(weight.getType()), {kLanes});
  SmallVector<Value> row, sums;
  for (int64_t i = 0; i < chunks; ++i) {
    Value y = extToF32(
        b, loc, source(b, loc, cIndex(b, loc, i * kLanes), kLanes), kLanes);
    row.push_back(y);
    sums.push_back(laneTree(b, loc, arith::MulFOp::create(b, loc, y, y)));
  }
  Value invLanes =
      inverseRoot(b, loc, pairwiseTree(b, loc, sums), width, epsilon);
  for (int64_t i = 0; i < chunks; ++i) {
    Value c = cIndex(b, loc, i * kLanes);
    Value w = extToF32(
        b, loc, loadLanes(b, loc, weight, ValueRange{c}, kLanes, weightAlign),
        kLanes);
    Value out = arith::MulFOp::create(
        b, loc, arith::MulFOp::create(b, loc, row[i], invLanes), w);
    sink(b, loc, c, truncToBf16(b, loc, out, kLanes), kLanes);
  }
}

/// What a token-row norm reads and writes (sconv.add_rms_norm).
struct TokenRow {
  int64_t heads, width;
  /// The row's values y (bf16) of head h, chunk c; called after `beginHead`.
  function_ref<Value(OpBuilder &, Location, Value h, Value c)> source;
  function_ref<void(OpBuilder &, Location, Value h)> beginHead;
  const StreamOperand &residual, &sum, &out;
  Value weight;
  float epsilon;
};

/// The residual add and the hidden-row norm of token t (docs/Design.md
/// section 4, "Epilogues"): per head (a loop), the chunks unrolled: h =
/// bf16(y + residual) stored, the head's sum of squares as a K row's; the
/// heads' sums in a vector, then their pairwise tree; then per head and
/// chunk h is read back (this token's own row, just written) and scaled.
void emitTokenRowNorm(OpBuilder &b, Location loc, Value t,
                      const TokenRow &row) {
  int64_t chunks = row.width / kLanes;
  int64_t paddedHeads = powerOfTwoAtLeast(row.heads);
  auto weightAlign = accessAlign(cast<MemRefType>(row.weight.getType()),
                                 {flatIndexMultiple(row.width)});
  Type f32 = b.getF32Type();
  Value c0 = cIndex(b, loc, 0), c1 = cIndex(b, loc, 1);
  Value heads = cIndex(b, loc, row.heads);
  Value zeros = arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(VectorType::get({paddedHeads}, f32), 0.0f));
  auto perHead = scf::ForOp::create(
      b, loc, c0, heads, c1, ValueRange{zeros},
      [&](OpBuilder &b, Location loc, Value h, ValueRange acc) {
        row.beginHead(b, loc, h);
        PairwiseTree sums(b, loc);
        for (int64_t i = 0; i < chunks; ++i) {
          Value c = cIndex(b, loc, i * kLanes);
          Value y = extToF32(b, loc, row.source(b, loc, h, c), kLanes);
          Value r = extToF32(b, loc, row.residual.load(b, loc, t, h, c, kLanes),
                             kLanes);
          Value hv =
              truncToBf16(b, loc, arith::AddFOp::create(b, loc, y, r), kLanes);
          row.sum.store(b, loc, hv, t, h, c);
          Value hf = extToF32(b, loc, hv, kLanes);
          sums.push(laneTree(b, loc, arith::MulFOp::create(b, loc, hf, hf)));
        }
        Value next = vector::InsertOp::create(b, loc, sums.finish(), acc[0],
                                              OpFoldResult(h));
        scf::YieldOp::create(b, loc, next);
      });
  SmallVector<Value> headSums;
  for (int64_t i = 0; i < paddedHeads; ++i)
    headSums.push_back(vector::ExtractOp::create(b, loc, perHead.getResult(0),
                                                 ArrayRef<int64_t>{i}));
  Value inv = inverseRoot(b, loc, pairwiseTree(b, loc, headSums),
                          row.heads * row.width, row.epsilon);
  scf::ForOp::create(
      b, loc, c0, heads, c1, ValueRange{},
      [&](OpBuilder &b, Location loc, Value h, ValueRange) {
        for (int64_t i = 0; i < chunks; ++i) {
          Value c = cIndex(b, loc, i * kLanes);
          Value hf =
              extToF32(b, loc, row.sum.load(b, loc, t, h, c, kLanes), kLanes);
          ArithBuilder ab(b, loc);
          Value channel = ab.add(ab.mul(h, cIndex(b, loc, row.width)), c);
          Value w = extToF32(b, loc,
                             loadLanes(b, loc, row.weight, ValueRange{channel},
                                       kLanes, weightAlign),
                             kLanes);
          Value o = arith::MulFOp::create(
              b, loc, arith::MulFOp::create(b, loc, hf, inv), w);
          row.out.store(b, loc, truncToBf16(b, loc, o, kLanes), t, h, c);
        }
        scf::YieldOp::create(b, loc);
      });
}

/// The chunks of a row of `width` channels, any width (a scalar tail): an
/// scf.parallel (GPU threads) when `parallel`, else an scf.for. The fused
/// nests use the for: code of a (t, h) iteration outside an inner parallel
/// loop would run in every thread of the GPU block (the K row's norm and
/// stores repeated), so each fused row is one thread's work.
void emitRowChunks(OpBuilder &b, Location loc, int64_t width, LanesBody body,
                   bool parallel = true) {
  Value c0 = cIndex(b, loc, 0), c1 = cIndex(b, loc, 1);
  if (!parallel) {
    scf::ForOp::create(
        b, loc, c0, cIndex(b, loc, numChunks(width)), c1, ValueRange{},
        [&](OpBuilder &b, Location loc, Value chunk, ValueRange) {
          emitChunk(b, loc, chunk, width, body);
          scf::YieldOp::create(b, loc);
        });
    return;
  }
  scf::ParallelOp::create(
      b, loc, ValueRange{c0}, ValueRange{cIndex(b, loc, numChunks(width))},
      ValueRange{c1}, [&](OpBuilder &b, Location loc, ValueRange chunk) {
        emitChunk(b, loc, chunk[0], width, body);
      });
}

/// The (t, h) nest of a one-stream row op reading `x` [T, H, w]: `body`
/// gets x, the stream's width w, t and h; the op is erased.
using RowBody = function_ref<void(OpBuilder &, Location, const StreamOperand &x,
                                  int64_t width, Value t, Value h)>;
LogicalResult lowerRowOp(PatternRewriter &rewriter, Operation *op, Value x,
                         LayoutAttr layoutAttr, sconv::Stream stream,
                         RowBody body) {
  Location loc = op->getLoc();
  inkling::Layout layout = layoutAttr.getDerived();
  int64_t width = layout.range(toRuntime(stream)).width;
  StreamOperand input(x, width);
  Value tokens = memref::DimOp::create(rewriter, loc, x, 0);
  emitRowNest(rewriter, loc, tokens, layout.headsPerRank,
              [&](OpBuilder &b, Location loc, Value t, Value h) {
                body(b, loc, input, width, t, h);
              });
  rewriter.eraseOp(op);
  return success();
}

/// An unfused op's rows as a ThreadRowSource: the values of `input` at the row
/// begun.
struct BufferRowSource {
  explicit BufferRowSource(const StreamOperand &input) : input(input) {}
  ThreadRowSource get() {
    return {[this](OpBuilder &, Location, Value t, Value h) {
              token = t;
              head = h;
            },
            [](OpBuilder &, Location) {},
            [this](OpBuilder &b, Location loc, sconv::Stream, Value c,
                   int64_t lanes) {
              return input.load(b, loc, token, head, c, lanes);
            }};
  }
  StreamOperand input;
  Value token, head;
};

struct RmsNormLowering : OptionsPattern<RmsNormOp> {
  using OptionsPattern::OptionsPattern;

  LogicalResult matchAndRewrite(RmsNormOp op,
                                PatternRewriter &rewriter) const override {
    float epsilon = op.getEpsilon().convertToFloat();
    if (const RowThreads *threads = rowThreadsOf(options)) {
      // The GPU's: a row's chunks across a block's threads, as the fused
      // K row's.
      inkling::Layout layout = op.getLayout().getDerived();
      int64_t width = layout.range(toRuntime(op.getStream())).width;
      BufferRowSource rows(StreamOperand(op.getX(), width));
      StreamOperand out(op.getOut(), width);
      ThreadRowStream stream{op.getStream(), op.getWeight(),
                             [&](OpBuilder &, Location, Value t, Value h) {
                               return [&out, t, h](OpBuilder &b, Location loc,
                                                   Value v, Value c, int64_t) {
                                 out.store(b, loc, v, t, h, c);
                               };
                             }};
      Location loc = op.getLoc();
      emitRowsAcrossThreads(rewriter, loc,
                            memref::DimOp::create(rewriter, loc, op.getX(), 0),
                            layout, epsilon, stream, rows.get(), *threads);
      rewriter.eraseOp(op);
      return success();
    }
    return lowerRowOp(
        rewriter, op, op.getX(), op.getLayout(), op.getStream(),
        [&](OpBuilder &b, Location loc, const StreamOperand &x, int64_t width,
            Value t, Value h) {
          StreamOperand out(op.getOut(), width);
          emitRowNorm(
              b, loc, width, op.getWeight(), epsilon,
              [&](OpBuilder &b, Location loc, Value c, int64_t lanes) {
                return x.load(b, loc, t, h, c, lanes);
              },
              [&](OpBuilder &b, Location loc, Value c, Value v, int64_t) {
                out.store(b, loc, v, t, h, c);
              });
        });
  }
};

struct KvWriteLowering : OpRewritePattern<KvWriteOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(KvWriteOp op,
                                PatternRewriter &rewriter) const override {
    return lowerRowOp(
        rewriter, op, op.getX(), op.getLayout(), op.getStream(),
        [&](OpBuilder &b, Location loc, const StreamOperand &x, int64_t width,
            Value t, Value h) {
          KvRow dest(b, loc, op.getKvCache(), op.getSlots(), t);
          emitRowChunks(
              b, loc, width,
              [&](OpBuilder &b, Location loc, Value c, int64_t lanes) {
                dest.store(b, loc, x.load(b, loc, t, h, c, lanes), h, c, lanes);
              });
        });
  }
};

} // namespace

namespace inkling::loops {

/// scf.parallel (t) { body(t) }.
void emitTokenNest(OpBuilder &b, Location loc, Value tokens,
                   function_ref<void(OpBuilder &, Location, Value)> body) {
  Value c0 = cIndex(b, loc, 0), c1 = cIndex(b, loc, 1);
  scf::ParallelOp::create(
      b, loc, ValueRange{c0}, ValueRange{tokens}, ValueRange{c1},
      [&](OpBuilder &b, Location loc, ValueRange t) { body(b, loc, t[0]); });
}

} // namespace inkling::loops

namespace {

struct AddRmsNormLowering : OptionsPattern<AddRmsNormOp> {
  using OptionsPattern::OptionsPattern;

  LogicalResult matchAndRewrite(AddRmsNormOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    inkling::Layout layout = op.getLayout().getDerived();
    int64_t width = layout.range(toRuntime(op.getStream())).width;
    StreamOperand y(op.getY(), width), residual(op.getResidual(), width),
        sum(op.getSum(), width), out(op.getOut(), width);
    Value tokens = memref::DimOp::create(rewriter, loc, op.getY(), 0);
    if (const RowThreads *threads = rowThreadsOf(options)) {
      // The GPU's: one block a token, as the fused op's.
      BufferRowSource rows(y);
      emitTokenRowsAcrossThreads(
          rewriter, loc, tokens, layout,
          TokenRowOutputs{op.getStream(), op.getResidual(), op.getSum(),
                          op.getOut(), op.getWeight(),
                          op.getEpsilon().convertToFloat()},
          rows.get(), *threads);
      rewriter.eraseOp(op);
      return success();
    }
    emitTokenNest(
        rewriter, loc, tokens, [&](OpBuilder &b, Location loc, Value t) {
          emitTokenRowNorm(
              b, loc, t,
              TokenRow{layout.headsPerRank, width,
                       [&](OpBuilder &b, Location loc, Value h, Value c) {
                         return y.load(b, loc, t, h, c, kLanes);
                       },
                       [](OpBuilder &, Location, Value) {}, residual, sum, out,
                       op.getWeight(), op.getEpsilon().convertToFloat()});
        });
    rewriter.eraseOp(op);
    return success();
  }
};

/// The conv of a fused epilogue op: its streams have no outputs (the
/// epilogue consumes rowValue instead).
template <typename Op>
ConvSpec epilogueConvSpec(Op op, ArrayRef<ConvStream> streams, bool residual) {
  return ConvSpec{op,
                  op.getCache(),
                  op.getLayout(),
                  streams,
                  residual,
                  op.getActivation() == Activation::Silu,
                  op.getInsert()};
}

struct FusedConvAddNormLowering : OptionsPattern<FusedConvAddNormOp> {
  using OptionsPattern::OptionsPattern;

  LogicalResult matchAndRewrite(FusedConvAddNormOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    sconv::Stream stream = op.getStream();
    ConvStream convStream{stream, op.getX(), op.getWeights(), Value(), Value()};
    ConvSpec spec = epilogueConvSpec(op, convStream, op.getResidualConv());
    return lowerWithConvNest(
        rewriter, spec, op.getStep(), options, [&](ConvNestBuilder &conv) {
          if (const RowThreads *threads = rowThreadsOf(options)) {
            ConvRowSource rows(conv);
            emitTokenRowsAcrossThreads(
                rewriter, loc,
                memref::DimOp::create(rewriter, loc, op.getX(), 0),
                op.getLayout().getDerived(),
                TokenRowOutputs{stream, op.getResidual(), op.getSum(),
                                op.getOut(), op.getNormWeight(),
                                op.getEpsilon().convertToFloat()},
                rows.get(), *threads);
            return;
          }
          inkling::Layout layout = op.getLayout().getDerived();
          int64_t width = layout.range(toRuntime(stream)).width;
          StreamOperand residual(op.getResidual(), width),
              sum(op.getSum(), width), out(op.getOut(), width);
          Value tokens = memref::DimOp::create(rewriter, loc, op.getX(), 0);
          emitTokenNest(
              rewriter, loc, tokens, [&](OpBuilder &b, Location loc, Value t) {
                // The conv's values of the head being normed.
                ConvRow row;
                emitTokenRowNorm(
                    b, loc, t,
                    TokenRow{layout.headsPerRank, width,
                             [&](OpBuilder &b, Location loc, Value, Value c) {
                               return conv.rowValue(b, loc, row, stream, c,
                                                    kLanes);
                             },
                             [&](OpBuilder &b, Location loc, Value h) {
                               row = conv.beginRow(b, loc, t, h);
                               conv.reportRowSlot(b, loc, row);
                             },
                             residual, sum, out, op.getNormWeight(),
                             op.getEpsilon().convertToFloat()});
              });
        });
  }
};

struct FusedConvKvWriteLowering : OptionsPattern<FusedConvKvWriteOp> {
  using OptionsPattern::OptionsPattern;

  LogicalResult matchAndRewrite(FusedConvKvWriteOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SmallVector<sconv::Stream> streamList = op.getStreamList();
    SmallVector<ConvStream> streams;
    for (auto [i, stream] : llvm::enumerate(streamList))
      streams.push_back(
          {stream, op.getInputs()[i], op.getWeights()[i], Value(), Value()});
    ConvSpec spec = epilogueConvSpec(op, streams, op.getResidual());
    return lowerWithConvNest(
        rewriter, spec, op.getStep(), options, [&](ConvNestBuilder &conv) {
          inkling::Layout layout = op.getLayout().getDerived();
          float epsilon = op.getEpsilon().convertToFloat();
          if (const RowThreads *threads = rowThreadsOf(options)) {
            ConvRowSource rows(conv);
            SmallVector<ThreadRowStream> rowStreams;
            for (auto [i, stream] : llvm::enumerate(streamList))
              rowStreams.push_back(
                  {stream, op.getNormWeightOf(i),
                   [&, i = i](OpBuilder &b, Location loc, Value t,
                              Value h) -> ThreadRowStream::RowStore {
                     KvRow dest(b, loc, op.getKvCaches()[i], op.getKvSlots(),
                                t);
                     return [dest, h](OpBuilder &b, Location loc, Value v,
                                      Value c, int64_t lanes) {
                       dest.store(b, loc, v, h, c, lanes);
                     };
                   }});
            emitRowsAcrossThreads(rewriter, loc, conv.tokens(), layout, epsilon,
                                  rowStreams, rows.get(), *threads);
            return;
          }
          auto rowBody = [&](OpBuilder &b, Location loc, Value t, Value h) {
            ConvRow row = conv.beginRow(b, loc, t, h);
            conv.reportRowSlot(b, loc, row);
            for (auto [i, stream] : llvm::enumerate(streamList)) {
              int64_t width = layout.range(toRuntime(stream)).width;
              KvRow dest(b, loc, op.getKvCaches()[i], op.getKvSlots(), t);
              auto source = [&, stream = stream](OpBuilder &b, Location loc,
                                                 Value c, int64_t lanes) {
                return conv.rowValue(b, loc, row, stream, c, lanes);
              };
              auto sink = [&](OpBuilder &b, Location loc, Value c, Value v,
                              int64_t lanes) {
                dest.store(b, loc, v, h, c, lanes);
              };
              if (Value weight = op.getNormWeightOf(i)) {
                emitRowNorm(b, loc, width, weight, epsilon, source, sink);
                continue;
              }
              emitRowChunks(
                  b, loc, width,
                  [&](OpBuilder &b, Location loc, Value c, int64_t lanes) {
                    sink(b, loc, c, source(b, loc, c, lanes), lanes);
                  },
                  /*parallel=*/false);
            }
          };
          SmallVector<Value> kvCaches(op.getKvCaches()), normWeights;
          for (size_t i = 0; i < streamList.size(); ++i)
            normWeights.push_back(op.getNormWeightOf(i));
          KvEpilogue epilogue{streamList,      kvCaches, normWeights,
                              op.getKvSlots(), epsilon,  rowBody};
          // The strategy's nest (the CPU's token runs), else the shared
          // (t, h) nest of rowBody.
          if (options.strategy)
            options.strategy->emitKvWriteNest(conv, rewriter, loc, epilogue);
          else
            emitRowNest(rewriter, loc, conv.tokens(), layout.headsPerRank,
                        rowBody);
        });
  }
};

} // namespace

void inkling::loops::populateEpilogueLoweringPatterns(
    RewritePatternSet &patterns, const SConvToLoopsOptions &options) {
  patterns.add<KvWriteLowering>(patterns.getContext());
  patterns.add<RmsNormLowering, AddRmsNormLowering, FusedConvKvWriteLowering,
               FusedConvAddNormLowering>(patterns.getContext(), options);
}
