//===- StepMetadata.cpp - A token's sequence and slot; reports ------------===//
//
// The bodies of StepMetadata.h.
//
//===----------------------------------------------------------------------===//

#include "inkling/Conversion/SConvToLoops/StepMetadata.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/Support/MathExtras.h"

#include <tuple>

using namespace mlir;
using namespace inkling;
using namespace inkling::loops;

void inkling::loops::emitReport(OpBuilder &b, Location loc, Value bad,
                                Value status, CheckKind kind, Value token,
                                Value value, Value limit, StringRef message) {
  if (!status) {
    Value ok = arith::XOrIOp::create(
        b, loc, bad, arith::ConstantIntOp::create(b, loc, 1, 1));
    cf::AssertOp::create(b, loc, ok, message);
    return;
  }
  emitIf(b, loc, bad, [&](OpBuilder &b, Location loc) {
    Value old = memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addi,
                                            cI64(b, loc, 1), status,
                                            ValueRange{cIndex(b, loc, 0)});
    Value first = cmp(b, loc, arith::CmpIPredicate::eq, old, cI64(b, loc, 0));
    emitIf(b, loc, first, [&](OpBuilder &b, Location loc) {
      Value words[] = {cI64(b, loc, static_cast<int64_t>(kind)),
                       toI64(b, loc, token), toI64(b, loc, value),
                       toI64(b, loc, limit)};
      for (auto [i, word] : llvm::enumerate(words))
        memref::StoreOp::create(b, loc, word, status,
                                ValueRange{cIndex(b, loc, i + 1)});
    });
  });
}

Value inkling::loops::isReporter(OpBuilder &b, Location loc, Value head,
                                 Value channel) {
  Value c0 = cIndex(b, loc, 0);
  return arith::AndIOp::create(
      b, loc, cmp(b, loc, arith::CmpIPredicate::eq, head, c0),
      cmp(b, loc, arith::CmpIPredicate::eq, channel, c0));
}

std::pair<Value, Value> inkling::loops::emitBlockAndRow(OpBuilder &b,
                                                        Location loc, Value q,
                                                        int64_t blockSize) {
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

Value inkling::loops::emitSlotLimit(OpBuilder &b, Location loc, Value cache,
                                    int64_t blockSize) {
  Value numBlocks = memref::DimOp::create(b, loc, cache, 0);
  return toI64(b, loc,
               ArithBuilder(b, loc).mul(numBlocks, cIndex(b, loc, blockSize)));
}

SequenceInfo inkling::loops::emitSequence(OpBuilder &b, Location loc,
                                          Value qslBuf, Value numComputedBuf,
                                          Value batch, Value t) {
  Type idx = b.getIndexType();
  auto loop = scf::WhileOp::create(
      b, loc, TypeRange{idx, idx}, ValueRange{cIndex(b, loc, 0), batch},
      [&](OpBuilder &b, Location loc, ValueRange lohi) {
        Value span = ArithBuilder(b, loc).sub(lohi[1], lohi[0]);
        Value more =
            cmp(b, loc, arith::CmpIPredicate::sgt, span, cIndex(b, loc, 1));
        scf::ConditionOp::create(b, loc, more, lohi);
      },
      [&](OpBuilder &b, Location loc, ValueRange lohi) {
        Value mid = arith::DivUIOp::create(
            b, loc, ArithBuilder(b, loc).add(lohi[0], lohi[1]),
            cIndex(b, loc, 2));
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
  ArithBuilder ab(b, loc);
  info.position = ab.add(info.computed, ab.sub(t, info.start));
  return info;
}

SlotInfo inkling::loops::emitSlot(OpBuilder &b, Location loc, Value slots,
                                  Value token, int64_t blockSize, bool checked,
                                  Value slotLimit, const SequenceInfo *sequence,
                                  Value blockTable) {
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
          ArithBuilder ab(b, loc);
          scf::YieldOp::create(
              b, loc, ab.add(ab.mul(id, cI64(b, loc, blockSize)), row));
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

Value inkling::loops::emitRealTokens(OpBuilder &b, Location loc,
                                     sconv::StepOp step) {
  // qsl has B + 1 entries: its last one, without reading num_computed.
  Value qsl = step.getQueryStartLoc();
  Value last = arith::SubIOp::create(
      b, loc, memref::DimOp::create(b, loc, qsl, 0), cIndex(b, loc, 1));
  return toIndex(b, loc, memref::LoadOp::create(b, loc, qsl, ValueRange{last}));
}

void inkling::loops::maskPaddingSlot(OpBuilder &b, Location loc, SlotInfo &info,
                                     Value isReal) {
  info.valid = arith::AndIOp::create(b, loc, info.valid, isReal);
  if (info.bad)
    info.bad = arith::AndIOp::create(b, loc, info.bad, isReal);
  if (info.notTokens)
    info.notTokens = arith::AndIOp::create(b, loc, info.notTokens, isReal);
}

SequenceInfo inkling::loops::emitTokenSequence(OpBuilder &b, Location loc,
                                               sconv::StepOp step, Value batch,
                                               Value t, bool checked,
                                               Value reporter,
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
          Value end = toIndex(
              b, loc,
              memref::LoadOp::create(
                  b, loc, qslBuf,
                  ValueRange{ArithBuilder(b, loc).add(s, cIndex(b, loc, 1))}));
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
  ArithBuilder ab(b, loc);
  info.position = ab.add(info.computed, ab.sub(t, info.start));
  return info;
}

std::string inkling::loops::slotMessage(Operation *op) {
  return (op->getName().getStringRef() +
          " (checked): a slot_mapping entry is below -1 or addresses a block "
          "at or beyond the cache's num_blocks")
      .str();
}

void inkling::loops::emitSlotReports(OpBuilder &b, Location loc, Operation *op,
                                     const SlotInfo &slot, Value reporter,
                                     Value status, Value token,
                                     Value slotLimit) {
  emitReport(b, loc, arith::AndIOp::create(b, loc, slot.bad, reporter), status,
             CheckKind::Slot, token, slot.slot, slotLimit, slotMessage(op));
  emitReport(b, loc, arith::AndIOp::create(b, loc, slot.notTokens, reporter),
             status, CheckKind::SlotNotTokens, token, slot.slot, slot.expected,
             (op->getName().getStringRef() +
              " (checked): a slot_mapping entry is neither -1 nor the token's "
              "own slot block_table[b][p / N] * N + p % N")
                 .str());
}
