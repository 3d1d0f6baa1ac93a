//===- EpilogueThreads.cpp - Epilogue rows across threads -----------------===//
//
// The epilogues when the strategy spreads a row over threads (the GPU's
// RowThreads): the same arithmetic as EpilogueLowering.cpp's one-thread
// rows (docs/Design.md section 4, "Epilogues"), the same bits. The fused
// ops' rows come from their conv's values; the unfused sconv.rms_norm and
// sconv.add_rms_norm take the same forms on their input buffer (a
// ThreadRowSource either way).
//
//   sconv.fused_conv_kv_write:
//     scf.parallel (t, h) {                              // blocks
//       the conv's per-(t, h) values
//       scf.parallel (lane) in [0, L) {                  // threads
//         per stream: chunks lane*k .. lane*k + k - 1 of the row
//         normed: p = lane sums; local pairwise tree of its k;
//           butterfly (shuffle xor 1, 2, .., L/2); lane 0's sum to all;
//           then scale and store its chunks
//       }
//     }
//   sconv.fused_conv_add_norm:
//     scf.parallel (t) {                                 // one block a token
//       scf.parallel (lane) in [0, L) {                  // threads
//         head lane / L_h, chunks (lane % L_h) * k ..: h = bf16(y + r)
//         stored, its squares' sum as a K row's across the head's L_h lanes;
//         lane 0 of the head writes it to the block's buffer; barrier;
//         every thread: the pairwise tree over the heads' sums; scale
//       }
//     }
//
// Why the bits are the CPU's: the pairwise tree over P (a power of two >=
// the chunk count) zero-padded leaves splits into each thread's k
// consecutive leaves (a subtree) and the butterfly over the threads, whose
// lane 0 adds left + right at every level, exactly the one-thread tree's
// operands (a missing chunk's leaf is +0, as the CPU pads; a sum of
// squares is never -0, so +0 changes nothing). Lane 0's sum is then
// broadcast, so that every thread scales with the same bits even where
// a + b and b + a differ (NaN payloads on the host).
//
//===----------------------------------------------------------------------===//

#include "EpilogueParts.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace inkling;
using namespace inkling::loops;
using namespace inkling::sconv;

RowThreads::~RowThreads() = default;

namespace {

constexpr int64_t kWarp = 32;

/// How a row of `chunks` chunks lies on `lanes` threads: P leaves (the
/// power of two >= chunks), k consecutive ones per thread, on `threads` =
/// P / k <= lanes threads.
struct RowSplit {
  RowSplit(int64_t chunks, int64_t lanes) : chunks(chunks) {
    int64_t leaves = powerOfTwoAtLeast(chunks);
    threads = std::min(leaves, lanes);
    perThread = leaves / threads;
  }
  int64_t chunks, threads, perThread;
};

/// The thread's chunk i (index) of a row split `split`, thread `lane`
/// (index) of the row.
Value chunkOf(OpBuilder &b, Location loc, Value lane, const RowSplit &split,
              int64_t i) {
  ArithBuilder ab(b, loc);
  return ab.add(ab.mul(lane, cIndex(b, loc, split.perThread)),
                cIndex(b, loc, i));
}

/// `lane` (index) as i32.
Value laneI32(OpBuilder &b, Location loc, Value lane) {
  return arith::IndexCastOp::create(b, loc, b.getI32Type(), lane);
}

/// The row's sum of squares from each thread's `partials` (its k leaves):
/// their tree, the butterfly over the row's `split.threads` threads (lanes
/// `first` .. of the warp, `width` lanes shuffling), then the first lane's
/// bits to all.
Value rowSum(OpBuilder &b, Location loc, const RowThreads &threads,
             ArrayRef<Value> partials, const RowSplit &split, Value first,
             int64_t width) {
  Value s = pairwiseTree(b, loc, partials);
  for (int64_t offset = 1; offset < split.threads; offset *= 2)
    s = arith::AddFOp::create(b, loc, s,
                              threads.shuffleXor(b, loc, s, offset, width));
  if (split.threads == 1)
    return s;
  return threads.shuffleIdx(b, loc, s, first, width);
}

/// A chunk's f32 values and the lane tree of their squares (zeros where
/// `present` is false: a padded leaf).
std::pair<Value, Value>
chunkSquares(OpBuilder &b, Location loc, Value present,
             function_ref<Value(OpBuilder &, Location)> values) {
  Type f32 = b.getF32Type();
  auto vec = VectorType::get({kLanes}, f32);
  auto ifOp = scf::IfOp::create(
      b, loc, present,
      [&](OpBuilder &b, Location loc) {
        Value y = values(b, loc);
        Value p = laneTree(b, loc, arith::MulFOp::create(b, loc, y, y));
        scf::YieldOp::create(b, loc, ValueRange{y, p});
      },
      [&](OpBuilder &b, Location loc) {
        Value zeros = arith::ConstantOp::create(
            b, loc, DenseElementsAttr::get(vec, 0.0f));
        Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
        scf::YieldOp::create(b, loc, ValueRange{zeros, zero});
      });
  return {ifOp.getResult(0), ifOp.getResult(1)};
}

/// scf.parallel (lane) in [0, lanes) { body(lane) }: the block's threads.
void emitLanes(OpBuilder &b, Location loc, int64_t lanes,
               function_ref<void(OpBuilder &, Location, Value)> body) {
  Value c0 = cIndex(b, loc, 0), c1 = cIndex(b, loc, 1);
  scf::ParallelOp::create(b, loc, ValueRange{c0},
                          ValueRange{cIndex(b, loc, lanes)}, ValueRange{c1},
                          [&](OpBuilder &b, Location loc, ValueRange lane) {
                            body(b, loc, lane[0]);
                          });
}

} // namespace

void inkling::loops::emitRowsAcrossThreads(
    OpBuilder &b, Location loc, Value tokens, const inkling::Layout &layout,
    float epsilon, ArrayRef<ThreadRowStream> streams,
    const ThreadRowSource &source, const RowThreads &threads) {
  int64_t maxChunks = 1;
  for (const ThreadRowStream &s : streams)
    maxChunks =
        std::max(maxChunks, numChunks(layout.range(toRuntime(s.stream)).width));
  // One row a block, its chunks on at most one warp's lanes.
  int64_t lanes = std::min(powerOfTwoAtLeast(maxChunks), kWarp);
  emitRowNest(
      b, loc, tokens, layout.headsPerRank,
      [&](OpBuilder &b, Location loc, Value t, Value h) {
        source.begin(b, loc, t, h);
        emitLanes(b, loc, lanes, [&](OpBuilder &b, Location loc, Value lane) {
          Value c0 = cIndex(b, loc, 0);
          emitIf(b, loc, cmp(b, loc, arith::CmpIPredicate::eq, lane, c0),
                 [&](OpBuilder &b, Location loc) { source.report(b, loc); });
          for (const ThreadRowStream &s : streams) {
            sconv::Stream stream = s.stream;
            int64_t width = layout.range(toRuntime(stream)).width;
            RowSplit split(numChunks(width), lanes);
            ThreadRowStream::RowStore store = s.destination(b, loc, t, h);
            Value weight = s.weight;
            if (!weight) {
              for (int64_t k = 0; k < split.perThread; ++k) {
                Value chunk = chunkOf(b, loc, lane, split, k);
                emitIf(b, loc,
                       cmp(b, loc, arith::CmpIPredicate::slt, chunk,
                           cIndex(b, loc, split.chunks)),
                       [&](OpBuilder &b, Location loc) {
                         emitChunk(b, loc, chunk, width,
                                   [&](OpBuilder &b, Location loc, Value c,
                                       int64_t n) {
                                     store(b, loc,
                                           source.value(b, loc, stream, c, n),
                                           c, n);
                                   });
                       });
              }
              continue;
            }
            // A normed row: whole chunks (the verifier's multiple of 8).
            SmallVector<Value> values, partials, present, channels;
            for (int64_t k = 0; k < split.perThread; ++k) {
              Value chunk = chunkOf(b, loc, lane, split, k);
              Value c =
                  arith::MulIOp::create(b, loc, chunk, cIndex(b, loc, kLanes));
              Value in = cmp(b, loc, arith::CmpIPredicate::slt, chunk,
                             cIndex(b, loc, split.chunks));
              auto [y, p] =
                  chunkSquares(b, loc, in, [&](OpBuilder &b, Location loc) {
                    return extToF32(b, loc,
                                    source.value(b, loc, stream, c, kLanes),
                                    kLanes);
                  });
              values.push_back(y);
              partials.push_back(p);
              present.push_back(in);
              channels.push_back(c);
            }
            Value sum =
                rowSum(b, loc, threads, partials, split,
                       arith::ConstantOp::create(b, loc, b.getI32Type(),
                                                 b.getI32IntegerAttr(0)),
                       lanes);
            Value inv = inverseRoot(b, loc, sum, width, epsilon);
            auto weightAlign =
                accessAlign(cast<MemRefType>(weight.getType()), {kLanes});
            for (int64_t k = 0; k < split.perThread; ++k)
              emitIf(b, loc, present[k], [&](OpBuilder &b, Location loc) {
                Value w =
                    extToF32(b, loc,
                             loadLanes(b, loc, weight, ValueRange{channels[k]},
                                       kLanes, weightAlign),
                             kLanes);
                Value out = arith::MulFOp::create(
                    b, loc, arith::MulFOp::create(b, loc, values[k], inv), w);
                store(b, loc, truncToBf16(b, loc, out, kLanes), channels[k],
                      kLanes);
              });
          }
        });
      });
}

void inkling::loops::emitTokenRowsAcrossThreads(OpBuilder &b, Location loc,
                                                Value tokens,
                                                const inkling::Layout &layout,
                                                const TokenRowOutputs &outputs,
                                                const ThreadRowSource &source,
                                                const RowThreads &threads) {
  sconv::Stream stream = outputs.stream;
  int64_t heads = layout.headsPerRank;
  int64_t width = layout.range(toRuntime(stream)).width;
  float epsilon = outputs.epsilon;
  StreamOperand residual(outputs.residual, width), sum(outputs.sum, width),
      out(outputs.out, width);
  // A head's chunks on at most a warp's lanes; the block at most 1024
  // threads, whole warps once it is more than one.
  constexpr int64_t kMaxBlock = 1024;
  int64_t perHead = std::min(powerOfTwoAtLeast(numChunks(width)), kWarp);
  while (perHead > 1 && heads * perHead > kMaxBlock)
    perHead /= 2;
  RowSplit split(numChunks(width), perHead);
  int64_t lanes = heads * perHead;
  if (lanes > kWarp)
    lanes = (lanes + kWarp - 1) / kWarp * kWarp;
  int64_t width32 = std::min(lanes, kWarp);
  int64_t paddedHeads = powerOfTwoAtLeast(heads);
  auto weightAlign = accessAlign(cast<MemRefType>(outputs.weight.getType()),
                                 {flatIndexMultiple(width)});
  emitTokenNest(b, loc, tokens, [&](OpBuilder &b, Location loc, Value t) {
    emitLanes(b, loc, lanes, [&](OpBuilder &b, Location loc, Value lane) {
      ArithBuilder ab(b, loc);
      Value sums = threads.blockBuffer(b, loc, paddedHeads);
      Value perHeadC = cIndex(b, loc, perHead);
      Value head = arith::DivUIOp::create(b, loc, lane, perHeadC);
      Value inHead = arith::RemUIOp::create(b, loc, lane, perHeadC);
      Value real =
          cmp(b, loc, arith::CmpIPredicate::ult, head, cIndex(b, loc, heads));
      // A thread past the last head (whole warps) reads head 0 and
      // stores nothing.
      Value h = arith::SelectOp::create(b, loc, real, head, cIndex(b, loc, 0));
      Value first = arith::AndIOp::create(
          b, loc, real,
          cmp(b, loc, arith::CmpIPredicate::eq, inHead, cIndex(b, loc, 0)));
      source.begin(b, loc, t, h);
      emitIf(b, loc, first,
             [&](OpBuilder &b, Location loc) { source.report(b, loc); });
      SmallVector<Value> values, partials, present, channels;
      for (int64_t k = 0; k < split.perThread; ++k) {
        Value chunk = chunkOf(b, loc, inHead, split, k);
        Value c = arith::MulIOp::create(b, loc, chunk, cIndex(b, loc, kLanes));
        Value in =
            arith::AndIOp::create(b, loc, real,
                                  cmp(b, loc, arith::CmpIPredicate::slt, chunk,
                                      cIndex(b, loc, split.chunks)));
        auto [hf,
              p] = chunkSquares(b, loc, in, [&](OpBuilder &b, Location loc) {
          Value y =
              extToF32(b, loc, source.value(b, loc, stream, c, kLanes), kLanes);
          Value r =
              extToF32(b, loc, residual.load(b, loc, t, h, c, kLanes), kLanes);
          Value hv =
              truncToBf16(b, loc, arith::AddFOp::create(b, loc, y, r), kLanes);
          sum.store(b, loc, hv, t, h, c);
          return extToF32(b, loc, hv, kLanes);
        });
        values.push_back(hf);
        partials.push_back(p);
        present.push_back(in);
        channels.push_back(c);
      }
      // The head's lanes start at its first lane in the warp.
      Value laneInWarp =
          arith::RemUIOp::create(b, loc, lane, cIndex(b, loc, kWarp));
      Value headFirst = ab.sub(laneInWarp, inHead);
      Value headSum = rowSum(b, loc, threads, partials, split,
                             laneI32(b, loc, headFirst), width32);
      emitIf(b, loc, first, [&](OpBuilder &b, Location loc) {
        memref::StoreOp::create(b, loc, headSum, sums, ValueRange{h});
      });
      threads.barrier(b, loc);
      Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
      SmallVector<Value> headSums;
      for (int64_t g = 0; g < paddedHeads; ++g)
        headSums.push_back(
            g < heads ? memref::LoadOp::create(b, loc, sums,
                                               ValueRange{cIndex(b, loc, g)})
                            .getResult()
                      : zero);
      Value inv = inverseRoot(b, loc, pairwiseTree(b, loc, headSums),
                              heads * width, epsilon);
      for (int64_t k = 0; k < split.perThread; ++k)
        emitIf(b, loc, present[k], [&](OpBuilder &b, Location loc) {
          ArithBuilder ab(b, loc);
          Value channel = ab.add(ab.mul(h, cIndex(b, loc, width)), channels[k]);
          Value w =
              extToF32(b, loc,
                       loadLanes(b, loc, outputs.weight, ValueRange{channel},
                                 kLanes, weightAlign),
                       kLanes);
          Value o = arith::MulFOp::create(
              b, loc, arith::MulFOp::create(b, loc, values[k], inv), w);
          out.store(b, loc, truncToBf16(b, loc, o, kLanes), t, h, channels[k]);
        });
    });
  });
}
