//===- Nest.cpp - Stream operands and the shared nest ---------------------===//
//
// The bodies of Nest.h.
//
//===----------------------------------------------------------------------===//

#include "inkling/Conversion/SConvToLoops/Nest.h"
#include "inkling/Conversion/SConvToLoops/Alignment.h"
#include "inkling/Conversion/SConvToLoops/Lanes.h"

#include <numeric>

using namespace mlir;
using namespace inkling;
using namespace inkling::loops;

StreamOperand::StreamOperand(Value memref, int64_t width)
    : memref(memref), width(width) {
  auto type = cast<MemRefType>(memref.getType());
  if (type.getRank() == 3) {
    align = accessAlign(type, {1, 1, kLanes});
    lineAligned = loops::lineAligned(type, {1, 1, kLineLanes});
  } else {
    align = accessAlign(type, {1, flatIndexMultiple(width)});
    lineAligned = loops::lineAligned(type, {1, std::gcd(kLineLanes, width)});
  }
}

SmallVector<Value> StreamOperand::indices(OpBuilder &b, Location loc,
                                          Value token, Value head,
                                          Value channel) const {
  if (cast<MemRefType>(memref.getType()).getRank() == 3)
    return {token, head, channel};
  ArithBuilder ab(b, loc);
  return {token, ab.add(ab.mul(head, cIndex(b, loc, width)), channel)};
}

Value StreamOperand::load(OpBuilder &b, Location loc, Value token, Value head,
                          Value channel, int64_t lanes) const {
  return loadLanes(b, loc, memref, indices(b, loc, token, head, channel), lanes,
                   align);
}

Operation *StreamOperand::store(OpBuilder &b, Location loc, Value value,
                                Value token, Value head, Value channel) const {
  return storeLanes(b, loc, value, memref,
                    indices(b, loc, token, head, channel), align);
}

void inkling::loops::emitChunk(OpBuilder &b, Location loc, Value chunk,
                               int64_t width, LanesBody body) {
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
    Value c = ArithBuilder(b, loc).mul(chunk, cIndex(b, loc, kLanes));
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
  emitIfElse(
      b, loc, isTail, [&](OpBuilder &b, Location loc) { scalarTail(b, loc); },
      [&](OpBuilder &b, Location loc) { vectorChunk(b, loc); });
}

int64_t inkling::loops::numChunks(int64_t width) {
  return (width + kLanes - 1) / kLanes;
}

/// Calls `body` for the part whose chunk range [starts[i], starts[i+1])
/// holds `chunk`: a chain of comparisons against the ranges' ends (none for
/// a single part), the part's chunk index relative to its first chunk.
static void dispatchChunk(OpBuilder &b, Location loc, Value token, Value head,
                          Value chunk, ArrayRef<int64_t> starts, unsigned part,
                          PartBody body) {
  unsigned parts = starts.size() - 1;
  auto call = [&](OpBuilder &b, Location loc) {
    Value local =
        starts[part] == 0
            ? chunk
            : ArithBuilder(b, loc).sub(chunk, cIndex(b, loc, starts[part]));
    body(b, loc, token, head, part, local);
  };
  if (part + 1 == parts) {
    call(b, loc);
    return;
  }
  Value inPart = cmp(b, loc, arith::CmpIPredicate::slt, chunk,
                     cIndex(b, loc, starts[part + 1]));
  emitIfElse(
      b, loc, inPart, [&](OpBuilder &b, Location loc) { call(b, loc); },
      [&](OpBuilder &b, Location loc) {
        dispatchChunk(b, loc, token, head, chunk, starts, part + 1, body);
      });
}

void inkling::loops::emitNest(
    OpBuilder &b, Location loc, Value tokens, int64_t heads,
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

SmallVector<unsigned>
inkling::loops::orderByOffset(ArrayRef<StreamRange> ranges) {
  SmallVector<unsigned> order;
  for (unsigned i = 0; i < ranges.size(); ++i)
    order.push_back(i);
  llvm::sort(order, [&](unsigned a, unsigned b) {
    return ranges[a].offset < ranges[b].offset;
  });
  return order;
}
