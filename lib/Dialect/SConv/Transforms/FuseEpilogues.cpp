//===- FuseEpilogues.cpp - A conv's row-local consumers into its nest -----===//
//
// sconv-fuse-epilogues (Passes.td): a conv whose outputs only feed
// sconv.rms_norm / sconv.kv_write becomes one sconv.fused_conv_kv_write.
// Legality from the ops' memory effects (ReorderingOracle), never from
// where the ops sit; anything not proven stays unfused (a remark says why).
//
//===----------------------------------------------------------------------===//

#include "ConvParts.h"
#include "inkling/Dialect/SConv/IR/SConvOps.h"
#include "inkling/Dialect/SConv/Transforms/Passes.h"
#include "inkling/Dialect/SConv/Transforms/Reordering.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace inkling::sconv {
#define GEN_PASS_DEF_SCONVFUSEEPILOGUES
#include "inkling/Dialect/SConv/Transforms/Passes.h.inc"

namespace {

using namespace mlir;

/// One stream's epilogue: [norm] then the KV write.
struct Epilogue {
  mutable RmsNormOp norm; ///< Null for V (no norm).
  mutable KvWriteOp write;
  /// The buffers that carry the rows between the ops (y, the norm's out):
  /// allocs that disappear with the fusion.
  SmallVector<Value> temporaries;
};

/// Why a conv is not fused; empty: it is.
using Reason = std::string;

std::string describe(Operation *op) {
  return "'" + op->getName().getStringRef().str() + "'";
}

/// The one consumer of `buffer` besides `producer` and deallocs, when
/// `buffer` is an alloc of this function read by nothing else.
FailureOr<Operation *> soleConsumer(Value buffer, Operation *producer,
                                    const std::string &name, Reason &why) {
  if (!buffer.getDefiningOp<memref::AllocOp>()) {
    why = "output '" + name +
          "' is not a buffer of this function (memref.alloc): a reader "
          "outside it may need the rows";
    return failure();
  }
  Operation *consumer = nullptr;
  for (Operation *user : buffer.getUsers()) {
    if (user == producer || isa<memref::DeallocOp>(user))
      continue;
    if (consumer && consumer != user) {
      why = "output '" + name + "' has two readers, " + describe(consumer) +
            " and " + describe(user);
      return failure();
    }
    consumer = user;
  }
  if (!consumer) {
    why = "output '" + name + "' is not read";
    return failure();
  }
  return consumer;
}

/// The epilogue of stream `stream` whose rows the conv writes to `y`.
FailureOr<Epilogue> matchEpilogue(Operation *conv, Value y, Stream stream,
                                  LayoutAttr layout, const std::string &name,
                                  Reason &why) {
  Epilogue epilogue;
  FailureOr<Operation *> first = soleConsumer(y, conv, name, why);
  if (failed(first))
    return failure();
  epilogue.temporaries.push_back(y);
  Operation *next = *first;
  if (auto norm = dyn_cast<RmsNormOp>(next)) {
    if (norm.getX() != y || norm.getStream() != stream ||
        norm.getLayout() != layout) {
      why = "output '" + name +
            "' is normalized by an rms_norm of another "
            "stream or layout, or written by it";
      return failure();
    }
    epilogue.norm = norm;
    FailureOr<Operation *> after =
        soleConsumer(norm.getOut(), norm, name + "'s norm", why);
    if (failed(after))
      return failure();
    epilogue.temporaries.push_back(norm.getOut());
    next = *after;
  }
  auto write = dyn_cast<KvWriteOp>(next);
  if (!write) {
    why = "output '" + name + "' is read by " + describe(next) +
          " (only sconv.rms_norm / sconv.kv_write fuse)";
    return failure();
  }
  if (write.getX() != epilogue.temporaries.back() ||
      write.getStream() != stream || write.getLayout() != layout) {
    why = "output '" + name +
          "' goes to a kv_write of another stream or layout, or is its cache";
    return failure();
  }
  epilogue.write = write;
  return epilogue;
}

/// True if `value` is available just before `conv` (defined above it in
/// its block, or outside the block).
bool definedAbove(Value value, Operation *conv) {
  Operation *def = value.getDefiningOp();
  return !def || def->getBlock() != conv->getBlock() ||
         def->isBeforeInBlock(conv);
}

struct SConvFuseEpiloguesPass
    : public impl::SConvFuseEpiloguesBase<SConvFuseEpiloguesPass> {
  using Base::Base;

  /// Whether every epilogue op may run inside the conv's nest: see the
  /// pass description.
  Reason checkLegal(ReorderingOracle &oracle, Operation *conv,
                    const ConvParts &parts, ArrayRef<Epilogue> epilogues) {
    SmallPtrSet<Operation *, 8> chain;
    for (const Epilogue &e : epilogues) {
      if (e.norm)
        chain.insert(e.norm);
      chain.insert(e.write);
    }
    // What the fused nest reads or writes besides the KV caches.
    SmallVector<Value> touched(parts.inputs);
    touched.append(parts.weights);
    touched.push_back(parts.cache);
    // The step stands for its metadata buffers (unknown ones when it is
    // not built in view: a null value, which may alias any non-noalias
    // buffer).
    if (auto step = parts.step.getDefiningOp<StepOp>())
      touched.append(step->getOperands().begin(), step->getOperands().end());
    else
      touched.push_back(Value());
    for (const Epilogue &e : epilogues) {
      touched.push_back(e.write.getSlots());
      if (e.norm)
        touched.push_back(e.norm.getWeight());
    }
    for (auto [i, e] : llvm::enumerate(epilogues)) {
      for (Operation *op : chain) {
        if (op->getBlock() != conv->getBlock() || !conv->isBeforeInBlock(op))
          return describe(op) + " is not after the conv in its block";
        for (Operation *it = conv->getNextNode(); it != op;
             it = it->getNextNode())
          if (!chain.contains(it) && !oracle.commute(it, op))
            return describe(op) +
                   " cannot move up to the conv: it does not "
                   "commute with " +
                   describe(it);
      }
      Value kv = e.write.getKvCache();
      SmallVector<Value> others = {e.write.getSlots(), kv};
      if (e.norm)
        others.push_back(e.norm.getWeight());
      for (Value v : others)
        if (!definedAbove(v, conv))
          return "an operand of " + describe(e.write) +
                 " is defined after the conv";
      for (Value v : touched)
        if (oracle.mayAlias(kv, v))
          return "KV cache 'kv_caches[" + std::to_string(i) +
                 "]' may alias a buffer the conv reads";
      for (auto [j, other] : llvm::enumerate(epilogues))
        if (j != i && oracle.mayAlias(kv, other.write.getKvCache()))
          return "KV caches 'kv_caches[" + std::to_string(i) + "]' and '" +
                 "kv_caches[" + std::to_string(j) + "]' may alias";
    }
    return {};
  }

  /// A one-stream conv whose output feeds sconv.add_rms_norm (ATTN, MLP):
  /// one sconv.fused_conv_add_norm. Empty when fused; else why not.
  Reason tryFuseAddNorm(ReorderingOracle &oracle, Operation *conv,
                        const ConvParts &parts, AddRmsNormOp norm) {
    if (parts.streams.size() != 1)
      return "the convs of several streams feed sconv.add_rms_norm (only a "
             "one-stream conv fuses with it)";
    Value y = parts.outs.front();
    if (norm.getY() != y || norm.getResidual() == y ||
        norm.getStream() != parts.streams.front() ||
        norm.getLayout() != parts.layout)
      return "output 'outs[0]' is the residual of an add_rms_norm, or feeds "
             "one of another stream or layout";
    if (norm->getBlock() != conv->getBlock() || !conv->isBeforeInBlock(norm))
      return "'sconv.add_rms_norm' is not after the conv in its block";
    for (Operation *it = conv->getNextNode(); it != norm;
         it = it->getNextNode())
      if (!oracle.commute(it, norm))
        return "'sconv.add_rms_norm' cannot move up to the conv: it does not "
               "commute with " +
               describe(it);
    for (Value v :
         {norm.getResidual(), norm.getWeight(), norm.getSum(), norm.getOut()})
      if (!definedAbove(v, conv))
        return "an operand of 'sconv.add_rms_norm' is defined after the conv";
    SmallVector<Value> touched = {parts.inputs.front(), parts.weights.front(),
                                  parts.cache};
    if (auto step = parts.step.getDefiningOp<StepOp>())
      touched.append(step->getOperands().begin(), step->getOperands().end());
    else
      touched.push_back(Value());
    for (auto [name, written] :
         {std::pair<const char *, Value>{"sum", norm.getSum()},
          {"out", norm.getOut()}})
      for (Value v : touched)
        if (oracle.mayAlias(written, v))
          return std::string("add_rms_norm's '") + name +
                 "' may alias a buffer the conv reads";
    OpBuilder builder(conv);
    FusedConvAddNormOp::create(
        builder, builder.getFusedLoc({conv->getLoc(), norm.getLoc()}),
        parts.inputs.front(), parts.weights.front(), parts.cache, parts.step,
        norm.getResidual(), norm.getWeight(), norm.getSum(), norm.getOut(),
        StreamAttr::get(builder.getContext(), parts.streams.front()),
        parts.layout, norm.getEpsilonAttr(),
        builder.getBoolAttr(parts.residual),
        ActivationAttr::get(builder.getContext(), parts.activation),
        parts.insert ? builder.getUnitAttr() : UnitAttr());
    norm->erase();
    conv->erase();
    for (Operation *user : llvm::make_early_inc_range(y.getUsers()))
      user->erase();
    y.getDefiningOp()->erase();
    return {};
  }

  Reason tryFuse(ReorderingOracle &oracle, Operation *conv) {
    std::optional<ConvParts> parts = ConvParts::of(conv);
    if (!parts->biases.empty())
      return "the conv has a bias (the fused op takes none)";
    {
      Reason why;
      FailureOr<Operation *> consumer =
          soleConsumer(parts->outs.front(), conv, "outs[0]", why);
      if (failed(consumer))
        return why;
      if (auto norm = dyn_cast<AddRmsNormOp>(*consumer))
        return tryFuseAddNorm(oracle, conv, *parts, norm);
      if (hiddenRowOnly)
        return "hidden-row-only: the consumer " + describe(*consumer) +
               " waits for the second run";
    }
    SmallVector<Epilogue> epilogues;
    for (auto [i, y] : llvm::enumerate(parts->outs)) {
      Reason why;
      FailureOr<Epilogue> e =
          matchEpilogue(conv, y, parts->streams[i], parts->layout,
                        "outs[" + std::to_string(i) + "]", why);
      if (failed(e))
        return why;
      epilogues.push_back(*e);
    }
    Value slots = epilogues.front().write.getSlots();
    std::optional<APFloat> epsilon;
    for (const Epilogue &e : epilogues) {
      if (e.write.getSlots() != slots)
        return "the KV writes use different slot mappings";
      if (!e.norm)
        continue;
      if (epsilon && *epsilon != e.norm.getEpsilon())
        return "the norms use different epsilons";
      epsilon = e.norm.getEpsilon();
    }
    if (Reason why = checkLegal(oracle, conv, *parts, epilogues); !why.empty())
      return why;

    OpBuilder builder(conv);
    SmallVector<Value> normWeights, kvCaches;
    SmallVector<bool> normed;
    SmallVector<Location> locs = {conv->getLoc()};
    for (const Epilogue &e : epilogues) {
      normed.push_back(static_cast<bool>(e.norm));
      if (e.norm) {
        normWeights.push_back(e.norm.getWeight());
        locs.push_back(e.norm.getLoc());
      }
      kvCaches.push_back(e.write.getKvCache());
      locs.push_back(e.write.getLoc());
    }
    SmallVector<Attribute> streamAttrs =
        llvm::map_to_vector(parts->streams, [&](Stream s) -> Attribute {
          return StreamAttr::get(builder.getContext(), s);
        });
    FusedConvKvWriteOp::create(
        builder, builder.getFusedLoc(locs), parts->inputs, parts->weights,
        parts->cache, parts->step, normWeights, kvCaches, slots,
        builder.getArrayAttr(streamAttrs), parts->layout,
        builder.getDenseBoolArrayAttr(normed),
        builder.getF32FloatAttr(
            epsilon ? static_cast<float>(epsilon->convertToDouble()) : 0.0f),
        builder.getBoolAttr(parts->residual),
        ActivationAttr::get(builder.getContext(), parts->activation),
        parts->insert ? builder.getUnitAttr() : UnitAttr());
    for (const Epilogue &e : epilogues) {
      e.write->erase();
      if (e.norm)
        e.norm->erase();
    }
    conv->erase();
    // The rows' buffers: only their deallocs are left.
    for (const Epilogue &e : epilogues)
      for (Value buffer : e.temporaries) {
        for (Operation *user : llvm::make_early_inc_range(buffer.getUsers()))
          user->erase();
        buffer.getDefiningOp()->erase();
      }
    return {};
  }

  void runOnOperation() override {
    ReorderingOracle oracle(getAnalysis<AliasAnalysis>());
    SmallVector<Operation *> convs;
    getOperation()->walk([&](Operation *op) {
      if (isa<ConvOp, FusedConvOp>(op))
        convs.push_back(op);
    });
    for (Operation *conv : convs) {
      Location loc = conv->getLoc();
      Reason why = tryFuse(oracle, conv);
      if (!why.empty() && remarks)
        emitRemark(loc) << "conv not fused with its epilogue: " << why;
    }
  }
};

} // namespace
} // namespace inkling::sconv
