//===- AnalyzeSignature.cpp - The roles of a layer function's arguments ---===//
//
// LayerProgram::Impl::analyze: walks the entry function's ops once and
// gives every argument its role (the cache of `sconv.bind`, the step
// metadata of `sconv.step`, each conv's input, weights, bias and output and
// each insert's input, with their stream; the epilogues' KV caches,
// attention slots, norm weights, residuals, sums and normed rows, each
// epilogue in the replay unit of the conv whose rows it reads). IR the host
// cannot drive is rejected with one line that names the op or argument and says
// why.
//
//===----------------------------------------------------------------------===//

#include "LayerProgramImpl.h"

#include "inkling/Dialect/SConv/IR/SConvDialect.h"
#include "inkling/Dialect/SConv/IR/SConvOps.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>

using namespace inkling;
using namespace inkling::exec;

namespace {

/// "k input", "cache": a role and its stream, for messages.
std::string describeRole(ArgRole role, std::optional<Stream> stream) {
  std::string text = argRoleName(role);
  if (stream)
    text = std::string(streamName(*stream)) + " " + text;
  return text;
}

/// One analysis of one function: fills `sig` or sets `error`.
class SignatureAnalyzer {
public:
  SignatureAnalyzer(mlir::func::FuncOp func, LayerSignature &sig,
                    std::string &error)
      : func(func), sig(sig), error(error) {}

  bool run() {
    sig.function = func.getName().str();
    sig.location = locationString(func.getLoc());
    if (!checkStraightLine() || !describeArguments())
      return false;
    for (mlir::Operation &op : func.getBody().front())
      if (!visit(&op))
        return false;
    return checkComplete() && checkStreamRows();
  }

private:
  bool fail(mlir::Location loc, const std::string &message) {
    error = locationString(loc) + ": error: " + message;
    return false;
  }
  bool failArgument(unsigned index, const std::string &message) {
    return fail(func.getLoc(), "argument " + std::to_string(index) + " of @" +
                                   sig.function + message);
  }

  bool checkStraightLine();
  bool describeArguments();
  bool describeArgument(unsigned index);

  int argOf(mlir::Value value);
  int assign(mlir::Operation *op, mlir::Value value, const char *what,
             ArgRole role, std::optional<Stream> stream);
  bool noteInput(mlir::Operation *op, Stream stream, int index);
  bool checkCacheAndStep(mlir::Operation *op, mlir::Value cache,
                         mlir::Value step, sconv::LayoutAttr layout);
  template <typename OpT> bool checkCacheAndStep(OpT op) {
    return checkCacheAndStep(op, op.getCache(), op.getStep(), op.getLayout());
  }
  bool addConv(mlir::Operation *op, Stream stream, mlir::Value x,
               const char *xName, mlir::Value weights, mlir::Value bias,
               mlir::Value out, bool residual, sconv::Activation activation,
               std::vector<int> &operands);
  void addOp(mlir::Operation *op, std::vector<Stream> streams, bool writesCache,
             std::vector<int> outputs, const std::vector<int> &operands);

  bool visit(mlir::Operation *op);
  bool visitOp(sconv::BindOp bind);
  bool visitOp(sconv::StepOp step);
  bool visitOp(sconv::InsertOp insert);
  bool visitOp(sconv::ConvOp conv);
  bool visitOp(sconv::InsertPackedOp packed);
  bool visitOp(sconv::FusedConvOp fused);
  bool visitOp(sconv::RmsNormOp norm);
  bool visitOp(sconv::KvWriteOp write);
  bool visitOp(sconv::AddRmsNormOp add);
  bool visitOp(sconv::FusedConvKvWriteOp fused);
  bool visitOp(sconv::FusedConvAddNormOp fused);
  bool visitOther(mlir::Operation *op);

  /// Where an epilogue op's rows come from: a conv's output (an argument,
  /// or a buffer of the function), optionally through a head-row RMSNorm.
  struct Rows {
    int conv = -1;
    int normWeight = -1;
    float epsilon = 0;
  };
  /// The rows `value` holds, or null with the error set.
  const Rows *rowsOf(mlir::Operation *op, mlir::Value value, const char *what);
  /// A buffer of the function (memref.alloc): a conv's or norm's
  /// intermediate rows, which the host never sees.
  static bool isLocalBuffer(mlir::Value value) {
    return value.getDefiningOp<mlir::memref::AllocOp>() != nullptr;
  }
  /// The KV write (with its optional k_norm) and its arguments' roles.
  bool addKvWrite(mlir::Operation *op, Stream stream, const Rows &rows,
                  mlir::Value kvCache, mlir::Value slots);
  /// The residual add and hidden norm and their arguments' roles.
  bool addAddNorm(mlir::Operation *op, Stream stream, int conv,
                  mlir::Value residual, mlir::Value weight, mlir::Value sum,
                  mlir::Value out, float epsilon);
  /// Records `e` as an epilogue of its conv's replay unit with `operands`.
  void addEpilogue(const EpilogueInfo &e, const std::vector<int> &operands);

  bool checkComplete();
  bool checkStreamRows();

  mlir::func::FuncOp func;
  LayerSignature &sig;
  std::string &error;
  std::vector<bool> assigned;
  sconv::BindOp bind;
  sconv::StepOp step;
  /// The rows of each conv output and normed buffer.
  llvm::DenseMap<mlir::Value, Rows> rows;
  /// The replay unit (index into sig.ops) of each conv.
  std::vector<int> convOp;
};

bool SignatureAnalyzer::checkStraightLine() {
  if (func.getNumResults() != 0)
    return fail(func.getLoc(),
                "@" + sig.function +
                    " returns values; a layer call drives functions "
                    "that write their outputs into arguments");
  if (!func.getBody().hasOneBlock())
    return fail(func.getLoc(), "@" + sig.function +
                                   " has more than one block; a layer call "
                                   "drives straight-line layer functions");
  return true;
}

bool SignatureAnalyzer::describeArguments() {
  unsigned numArgs = func.getNumArguments();
  sig.args.resize(numArgs);
  assigned.assign(numArgs, false);
  for (unsigned i = 0; i < numArgs; ++i)
    if (!describeArgument(i))
      return false;
  return true;
}

/// The element, static sizes, strides and offset of argument `index`.
bool SignatureAnalyzer::describeArgument(unsigned index) {
  ArgInfo &arg = sig.args[index];
  mlir::Type type = func.getArgument(index).getType();
  arg.type = typeString(type);
  auto memref = llvm::dyn_cast<mlir::MemRefType>(type);
  if (!memref)
    return failArgument(index, " has type " + arg.type +
                                   "; a layer call passes only memrefs");
  mlir::Type element = memref.getElementType();
  if (element.isBF16())
    arg.element = ElementKind::BF16;
  else if (element.isInteger(8))
    arg.element = ElementKind::I8;
  else if (element.isInteger(32))
    arg.element = ElementKind::I32;
  else if (element.isInteger(64))
    arg.element = ElementKind::I64;
  else
    return failArgument(index,
                        " has element type " + typeString(element) +
                            "; a layer call supports bf16, i8, i32, i64");
  auto staticOrDynamic = [](int64_t value) {
    return mlir::ShapedType::isDynamic(value) ? kDynamic : value;
  };
  for (int64_t size : memref.getShape())
    arg.shape.push_back(staticOrDynamic(size));
  llvm::SmallVector<int64_t> strides;
  int64_t offset = 0;
  if (mlir::failed(memref.getStridesAndOffset(strides, offset)))
    return failArgument(index, " (" + arg.type + ") has no strided layout");
  for (int64_t stride : strides)
    arg.strides.push_back(staticOrDynamic(stride));
  arg.offset = staticOrDynamic(offset);
  return true;
}

/// The argument behind an operand, or -1.
int SignatureAnalyzer::argOf(mlir::Value value) {
  auto arg = llvm::dyn_cast<mlir::BlockArgument>(value);
  if (!arg || arg.getOwner()->getParentOp() != func.getOperation())
    return -1;
  return static_cast<int>(arg.getArgNumber());
}

/// Gives the argument behind `value` a role (one role per argument) and
/// returns its index, or -1 with the error set.
int SignatureAnalyzer::assign(mlir::Operation *op, mlir::Value value,
                              const char *what, ArgRole role,
                              std::optional<Stream> stream) {
  std::string opName = op->getName().getStringRef().str();
  int index = argOf(value);
  if (index < 0) {
    fail(op->getLoc(), std::string("the ") + what + " operand of " + opName +
                           " is not an argument of @" + sig.function +
                           "; a layer call binds every buffer to an argument");
    return -1;
  }
  ArgInfo &arg = sig.args[index];
  std::string argument =
      "argument " + std::to_string(index) + " of @" + sig.function;
  if (assigned[index] && (arg.role != role || arg.stream != stream)) {
    fail(op->getLoc(), argument + " is both the " +
                           describeRole(arg.role, arg.stream) + " and the " +
                           describeRole(role, stream) +
                           "; a layer call takes one buffer per role");
    return -1;
  }
  // Two convs writing one output would make the check ambiguous.
  if (assigned[index] && role == ArgRole::Output) {
    fail(op->getLoc(), argument + " is the output of two convs");
    return -1;
  }
  assigned[index] = true;
  arg.role = role;
  arg.stream = stream;
  return index;
}

/// Records argument `index` as the input of `stream`: one per stream.
bool SignatureAnalyzer::noteInput(mlir::Operation *op, Stream stream,
                                  int index) {
  int &slot = sig.input[static_cast<int>(stream)];
  if (slot >= 0 && slot != index)
    return fail(op->getLoc(), std::string("two different ") +
                                  streamName(stream) + " inputs (arguments " +
                                  std::to_string(slot) + " and " +
                                  std::to_string(index) +
                                  "); a layer call takes one input per stream");
  slot = index;
  return true;
}

/// An insert or conv reads the function's one bind and step, and its
/// layout is the bind's.
bool SignatureAnalyzer::checkCacheAndStep(mlir::Operation *op,
                                          mlir::Value cache,
                                          mlir::Value stepValue,
                                          sconv::LayoutAttr layout) {
  std::string opName = op->getName().getStringRef().str();
  if (!bind || cache.getDefiningOp() != bind.getOperation())
    return fail(op->getLoc(), opName + ": the cache is not the result of the "
                                       "function's sconv.bind");
  if (!step || stepValue.getDefiningOp() != step.getOperation())
    return fail(op->getLoc(),
                opName + ": the step is not the function's sconv.step");
  if (layout != bind.getLayout())
    return fail(op->getLoc(),
                "the layout of " + opName +
                    " differs from its sconv.bind's; "
                    "a layer call drives one layout per function");
  return true;
}

/// One convolution (of an sconv.conv, or one stream of an
/// sconv.fused_conv): its arguments' roles, a ConvInfo, and its operands
/// (x, weights, bias if any, out) appended to `operands`.
bool SignatureAnalyzer::addConv(mlir::Operation *op, Stream stream,
                                mlir::Value x, const char *xName,
                                mlir::Value weights, mlir::Value bias,
                                mlir::Value out, bool residual,
                                sconv::Activation activation,
                                std::vector<int> &operands) {
  ConvInfo info;
  info.stream = stream;
  info.x = assign(op, x, xName, ArgRole::Input, stream);
  if (info.x < 0 || !noteInput(op, stream, info.x))
    return false;
  info.weights = assign(op, weights, "weights", ArgRole::Weights, stream);
  if (info.weights < 0)
    return false;
  if (bias) {
    info.bias = assign(op, bias, "bias", ArgRole::Bias, stream);
    if (info.bias < 0)
      return false;
  }
  // A conv whose rows only its epilogues read writes a buffer of the
  // function (or, fused, no buffer at all): no output argument.
  if (out && !isLocalBuffer(out)) {
    info.out = assign(op, out, "out", ArgRole::Output, stream);
    if (info.out < 0)
      return false;
  }
  info.residual = residual;
  info.silu = activation == sconv::Activation::Silu;
  sig.convs.push_back(info);
  operands.push_back(info.x);
  operands.push_back(info.weights);
  if (info.bias >= 0)
    operands.push_back(info.bias);
  if (info.out >= 0)
    operands.push_back(info.out);
  if (out)
    rows[out] = Rows{static_cast<int>(sig.convs.size()) - 1, -1, 0};
  return true;
}

/// A replay unit: the op with the bind's and step's arguments and its own.
void SignatureAnalyzer::addOp(mlir::Operation *op, std::vector<Stream> streams,
                              bool writesCache, std::vector<int> outputs,
                              const std::vector<int> &operands) {
  OpInfo info;
  info.name = op->getName().getStringRef().str();
  info.streams = std::move(streams);
  info.writesCache = writesCache;
  info.outputs = std::move(outputs);
  info.arguments = {sig.cache, sig.queryStartLoc, sig.numComputed,
                    sig.blockTable, sig.slotMapping};
  if (sig.status >= 0)
    info.arguments.push_back(sig.status);
  if (sig.tokenSeq >= 0)
    info.arguments.push_back(sig.tokenSeq);
  info.arguments.insert(info.arguments.end(), operands.begin(), operands.end());
  info.location = locationString(op->getLoc());
  sig.ops.push_back(std::move(info));
  convOp.resize(sig.convs.size(), static_cast<int>(sig.ops.size()) - 1);
}

bool SignatureAnalyzer::visit(mlir::Operation *op) {
  return llvm::TypeSwitch<mlir::Operation *, bool>(op)
      .Case<sconv::BindOp, sconv::StepOp, sconv::InsertOp, sconv::ConvOp,
            sconv::InsertPackedOp, sconv::FusedConvOp, sconv::RmsNormOp,
            sconv::KvWriteOp, sconv::AddRmsNormOp, sconv::FusedConvKvWriteOp,
            sconv::FusedConvAddNormOp>(
          [&](auto sconvOp) { return visitOp(sconvOp); })
      .Default([&](mlir::Operation *other) { return visitOther(other); });
}

bool SignatureAnalyzer::visitOp(sconv::BindOp b) {
  if (bind)
    return fail(b.getLoc(), "a second sconv.bind; a layer call drives "
                            "one cache per layer function");
  bind = b;
  sig.layout = b.getLayout().getDerived();
  sig.pageBytes = b.getPageBytes();
  sig.crossLayers = b.getLayers().value_or(1);
  auto stride = sig.layout.blockStrideForPageBytes(sig.pageBytes);
  if (!stride)
    return fail(b.getLoc(), stride.status().message());
  sig.blockStride = *stride;
  sig.cache = assign(b, b.getBuffer(), "buffer", ArgRole::Cache, {});
  return sig.cache >= 0;
}

bool SignatureAnalyzer::visitOp(sconv::StepOp s) {
  if (step)
    return fail(s.getLoc(), "a second sconv.step; a layer call drives "
                            "one step per layer function");
  step = s;
  sig.queryStartLoc = assign(s, s.getQueryStartLoc(), "query_start_loc",
                             ArgRole::QueryStartLoc, {});
  sig.numComputed =
      assign(s, s.getNumComputed(), "num_computed", ArgRole::NumComputed, {});
  sig.blockTable =
      assign(s, s.getBlockTable(), "block_table", ArgRole::BlockTable, {});
  sig.slotMapping =
      assign(s, s.getSlotMapping(), "slot_mapping", ArgRole::SlotMapping, {});
  if (sig.queryStartLoc < 0 || sig.numComputed < 0 || sig.blockTable < 0 ||
      sig.slotMapping < 0)
    return false;
  if (s.getTokenSeq()) {
    sig.tokenSeq =
        assign(s, s.getTokenSeq(), "token_seq", ArgRole::TokenSeq, {});
    if (sig.tokenSeq < 0)
      return false;
  }
  if (s.getStatus()) {
    sig.status = assign(s, s.getStatus(), "status", ArgRole::Status, {});
    if (sig.status < 0)
      return false;
  }
  return true;
}

bool SignatureAnalyzer::visitOp(sconv::InsertOp insert) {
  if (!checkCacheAndStep(insert))
    return false;
  Stream stream = sconv::toRuntime(insert.getStream());
  int x = assign(insert, insert.getX(), "x", ArgRole::Input, stream);
  if (x < 0 || !noteInput(insert, stream, x))
    return false;
  sig.inserted[static_cast<int>(stream)] = true;
  addOp(insert, {stream}, true, {}, {x});
  return true;
}

bool SignatureAnalyzer::visitOp(sconv::ConvOp conv) {
  if (!checkCacheAndStep(conv))
    return false;
  Stream stream = sconv::toRuntime(conv.getStream());
  std::vector<int> operands;
  if (!addConv(conv, stream, conv.getX(), "x", conv.getWeights(),
               conv.getBias(), conv.getOut(), conv.getResidual(),
               conv.getActivation(), operands))
    return false;
  std::vector<int> outputs;
  if (sig.convs.back().out >= 0)
    outputs.push_back(sig.convs.back().out);
  addOp(conv, {stream}, false, outputs, operands);
  return true;
}

bool SignatureAnalyzer::visitOp(sconv::InsertPackedOp packed) {
  if (!checkCacheAndStep(packed))
    return false;
  std::vector<Stream> streams;
  std::vector<int> operands;
  for (auto [value, s] :
       llvm::zip(packed.getInputs(), packed.getStreamList())) {
    Stream stream = sconv::toRuntime(s);
    int x = assign(packed, value, "input", ArgRole::Input, stream);
    if (x < 0 || !noteInput(packed, stream, x))
      return false;
    sig.inserted[static_cast<int>(stream)] = true;
    streams.push_back(stream);
    operands.push_back(x);
  }
  addOp(packed, streams, true, {}, operands);
  return true;
}

bool SignatureAnalyzer::visitOp(sconv::FusedConvOp fused) {
  if (!checkCacheAndStep(fused))
    return false;
  std::vector<Stream> streams;
  std::vector<int> operands, outputs;
  auto list = fused.getStreamList();
  bool hasBias = !fused.getBiases().empty();
  for (size_t i = 0; i < list.size(); ++i) {
    Stream stream = sconv::toRuntime(list[i]);
    if (!addConv(
            fused, stream, fused.getInputs()[i], "input", fused.getWeights()[i],
            hasBias ? fused.getBiases()[i] : mlir::Value(), fused.getOuts()[i],
            fused.getResidual(), fused.getActivation(), operands))
      return false;
    if (fused.getInsert())
      sig.inserted[static_cast<int>(stream)] = true;
    streams.push_back(stream);
    outputs.push_back(sig.convs.back().out);
  }
  addOp(fused, streams, fused.getInsert(), outputs, operands);
  return true;
}

float epsilonOf(mlir::FloatAttr attr) {
  return static_cast<float>(attr.getValueAsDouble());
}

const SignatureAnalyzer::Rows *SignatureAnalyzer::rowsOf(mlir::Operation *op,
                                                         mlir::Value value,
                                                         const char *what) {
  auto found = rows.find(value);
  if (found != rows.end())
    return &found->second;
  std::string opName = op->getName().getStringRef().str();
  fail(op->getLoc(), std::string("the ") + what + " operand of " + opName +
                         " is not the output of an earlier sconv.conv (or "
                         "its sconv.rms_norm); a layer call drives epilogues "
                         "of the layer's convs");
  return nullptr;
}

void SignatureAnalyzer::addEpilogue(const EpilogueInfo &e,
                                    const std::vector<int> &operands) {
  sig.epilogues.push_back(e);
  OpInfo &unit = sig.ops[convOp[e.conv]];
  unit.epilogues.push_back(static_cast<int>(sig.epilogues.size()) - 1);
  for (int index : operands)
    if (std::find(unit.arguments.begin(), unit.arguments.end(), index) ==
        unit.arguments.end())
      unit.arguments.push_back(index);
}

bool SignatureAnalyzer::addKvWrite(mlir::Operation *op, Stream stream,
                                   const Rows &from, mlir::Value kvCache,
                                   mlir::Value slots) {
  EpilogueInfo e;
  e.kind = EpilogueInfo::Kind::KvWrite;
  e.stream = stream;
  e.conv = from.conv;
  e.normWeight = from.normWeight;
  e.epsilon = from.epsilon;
  e.kvCache = assign(op, kvCache, "kv_cache", ArgRole::KvCache, stream);
  if (e.kvCache < 0)
    return false;
  int slotArg = assign(op, slots, "slots", ArgRole::AttnSlotMapping, {});
  if (slotArg < 0)
    return false;
  if (sig.attnSlotMapping >= 0 && sig.attnSlotMapping != slotArg)
    return fail(op->getLoc(), "two attention slot mappings (arguments " +
                                  std::to_string(sig.attnSlotMapping) +
                                  " and " + std::to_string(slotArg) +
                                  "); a layer call drives one attention layer");
  sig.attnSlotMapping = slotArg;
  // The verifier keeps the block size (dim 1) static.
  int64_t blockSize = sig.args[e.kvCache].shape[1];
  if (sig.attnBlockSize != 0 && sig.attnBlockSize != blockSize)
    return fail(op->getLoc(), "KV caches of block sizes " +
                                  std::to_string(sig.attnBlockSize) + " and " +
                                  std::to_string(blockSize) +
                                  "; one slot mapping addresses both");
  sig.attnBlockSize = blockSize;
  std::vector<int> operands = {e.kvCache, slotArg};
  if (e.normWeight >= 0)
    operands.insert(operands.begin(), e.normWeight);
  addEpilogue(e, operands);
  return true;
}

bool SignatureAnalyzer::addAddNorm(mlir::Operation *op, Stream stream, int conv,
                                   mlir::Value residual, mlir::Value weight,
                                   mlir::Value sum, mlir::Value out,
                                   float epsilon) {
  EpilogueInfo e;
  e.kind = EpilogueInfo::Kind::AddNorm;
  e.stream = stream;
  e.conv = conv;
  e.epsilon = epsilon;
  // The residual is read: a stream of its own, or the sum an earlier
  // epilogue wrote (the MLP path reads the ATTN path's h1). One argument
  // for both is how the IR orders the write before the read.
  int index = argOf(residual);
  bool earlierSum =
      index >= 0 && assigned[index] && sig.args[index].role == ArgRole::Sum;
  e.residual =
      earlierSum ? index
                 : assign(op, residual, "residual", ArgRole::Residual, stream);
  if (e.residual < 0)
    return false;
  e.normWeight = assign(op, weight, "weight", ArgRole::NormWeight, stream);
  if (e.normWeight < 0)
    return false;
  sig.args[e.normWeight].hiddenRow = true;
  e.sum = assign(op, sum, "sum", ArgRole::Sum, stream);
  if (e.sum < 0)
    return false;
  e.out = assign(op, out, "out", ArgRole::Normed, stream);
  if (e.out < 0)
    return false;
  addEpilogue(e, {e.residual, e.normWeight, e.sum, e.out});
  return true;
}

bool SignatureAnalyzer::visitOp(sconv::RmsNormOp norm) {
  const Rows *from = rowsOf(norm, norm.getX(), "x");
  if (!from)
    return false;
  if (from->normWeight >= 0)
    return fail(norm.getLoc(), "sconv.rms_norm of rows already normalized; a "
                               "layer call drives one norm per conv");
  if (!isLocalBuffer(norm.getOut()))
    return fail(norm.getLoc(),
                "the out operand of sconv.rms_norm is an argument of @" +
                    sig.function +
                    "; a layer call drives a head-row norm whose rows "
                    "sconv.kv_write stores (a buffer of the function)");
  Stream stream = sconv::toRuntime(norm.getStream());
  int weight =
      assign(norm, norm.getWeight(), "weight", ArgRole::NormWeight, stream);
  if (weight < 0)
    return false;
  rows[norm.getOut()] =
      Rows{from->conv, weight, epsilonOf(norm.getEpsilonAttr())};
  return true;
}

bool SignatureAnalyzer::visitOp(sconv::KvWriteOp write) {
  const Rows *from = rowsOf(write, write.getX(), "x");
  if (!from)
    return false;
  return addKvWrite(write, sconv::toRuntime(write.getStream()), *from,
                    write.getKvCache(), write.getSlots());
}

bool SignatureAnalyzer::visitOp(sconv::AddRmsNormOp add) {
  const Rows *from = rowsOf(add, add.getY(), "y");
  if (!from)
    return false;
  if (from->normWeight >= 0)
    return fail(add.getLoc(), "sconv.add_rms_norm of normalized rows; a "
                              "layer call drives one norm per conv");
  return addAddNorm(add, sconv::toRuntime(add.getStream()), from->conv,
                    add.getResidual(), add.getWeight(), add.getSum(),
                    add.getOut(), epsilonOf(add.getEpsilonAttr()));
}

bool SignatureAnalyzer::visitOp(sconv::FusedConvKvWriteOp fused) {
  if (!checkCacheAndStep(fused))
    return false;
  std::vector<Stream> streams;
  std::vector<int> operands;
  auto list = fused.getStreamList();
  for (size_t i = 0; i < list.size(); ++i) {
    Stream stream = sconv::toRuntime(list[i]);
    if (!addConv(fused, stream, fused.getInputs()[i], "input",
                 fused.getWeights()[i], mlir::Value(), mlir::Value(),
                 fused.getResidual(), fused.getActivation(), operands))
      return false;
    if (fused.getInsert())
      sig.inserted[static_cast<int>(stream)] = true;
    streams.push_back(stream);
  }
  addOp(fused, streams, fused.getInsert(), {}, operands);
  float epsilon = epsilonOf(fused.getEpsilonAttr());
  for (size_t i = 0; i < list.size(); ++i) {
    Stream stream = sconv::toRuntime(list[i]);
    Rows from{static_cast<int>(sig.convs.size() - list.size() + i), -1,
              epsilon};
    if (mlir::Value weight = fused.getNormWeightOf(i)) {
      from.normWeight =
          assign(fused, weight, "norm weight", ArgRole::NormWeight, stream);
      if (from.normWeight < 0)
        return false;
    }
    if (!addKvWrite(fused, stream, from, fused.getKvCaches()[i],
                    fused.getKvSlots()))
      return false;
  }
  return true;
}

bool SignatureAnalyzer::visitOp(sconv::FusedConvAddNormOp fused) {
  if (!checkCacheAndStep(fused))
    return false;
  Stream stream = sconv::toRuntime(fused.getStream());
  std::vector<int> operands;
  if (!addConv(fused, stream, fused.getX(), "x", fused.getWeights(),
               mlir::Value(), mlir::Value(), fused.getResidualConv(),
               fused.getActivation(), operands))
    return false;
  if (fused.getInsert())
    sig.inserted[static_cast<int>(stream)] = true;
  addOp(fused, {stream}, fused.getInsert(), {}, operands);
  return addAddNorm(fused, stream, static_cast<int>(sig.convs.size()) - 1,
                    fused.getResidual(), fused.getNormWeight(), fused.getSum(),
                    fused.getOut(), epsilonOf(fused.getEpsilonAttr()));
}

/// The return, and pure ops that touch no argument, are passed over;
/// anything else is not a layer function the host can drive.
bool SignatureAnalyzer::visitOther(mlir::Operation *op) {
  if (llvm::isa<mlir::func::ReturnOp>(op))
    return true;
  // The epilogues' intermediate rows: buffers of the function, sized by a
  // stream argument's token dimension.
  if (llvm::isa<mlir::memref::AllocOp>(op))
    return true;
  if (auto dealloc = llvm::dyn_cast<mlir::memref::DeallocOp>(op))
    if (isLocalBuffer(dealloc.getMemref()))
      return true;
  if (llvm::isa<mlir::memref::DimOp>(op))
    return true;
  std::string opName = op->getName().getStringRef().str();
  if (!mlir::isMemoryEffectFree(op) || op->getNumRegions() != 0)
    return fail(op->getLoc(), "@" + sig.function + " contains " + opName +
                                  "; a layer call drives layer functions made "
                                  "of sconv ops");
  for (mlir::Value operand : op->getOperands())
    if (int index = argOf(operand); index >= 0)
      return fail(op->getLoc(),
                  "argument " + std::to_string(index) + " of @" + sig.function +
                      " is used by " + opName +
                      "; a layer call drives arguments of sconv ops only");
  return true;
}

/// A bind, a step, an op to run, every argument used, and every stream
/// that is convolved also inserted.
bool SignatureAnalyzer::checkComplete() {
  if (!bind)
    return fail(func.getLoc(),
                "@" + sig.function + " has no sconv.bind: no cache to drive");
  if (!step)
    return fail(func.getLoc(),
                "@" + sig.function +
                    " has no sconv.step: no step metadata to drive");
  if (sig.ops.empty())
    return fail(func.getLoc(), "@" + sig.function +
                                   " has no sconv op that "
                                   "inserts or convolves");
  for (unsigned i = 0; i < assigned.size(); ++i)
    if (!assigned[i])
      return failArgument(i, " is not used by an sconv op");
  // A stream convolved but never stored would read stale history.
  for (const ConvInfo &conv : sig.convs)
    if (!sig.inserted[static_cast<int>(conv.stream)])
      return fail(func.getLoc(),
                  std::string("@") + sig.function + " convolves stream " +
                      streamName(conv.stream) +
                      " but never inserts it: its history would never be "
                      "written");
  return true;
}

/// Stream inputs and outputs: bf16, the token dimension first, the rows
/// [H, w] or [H*w] contiguous (what the fill and the check assume).
bool SignatureAnalyzer::checkStreamRows() {
  for (unsigned i = 0; i < sig.args.size(); ++i) {
    const ArgInfo &arg = sig.args[i];
    if (!arg.perTokenStream())
      continue;
    size_t rank = arg.strides.size();
    int64_t w = sig.layout.range(*arg.stream).width;
    bool contiguous = arg.strides.back() == 1 &&
                      (rank == 2 || (rank == 3 && arg.strides[1] == w));
    if (!contiguous)
      return failArgument(i, " (" + arg.type +
                                 "): a layer call needs contiguous head rows");
  }
  return true;
}

} // namespace

bool LayerProgram::Impl::analyze(std::string &error) {
  sig = LayerSignature();
  if (auto layers = module->getOperation()->getAttrOfType<mlir::IntegerAttr>(
          "inkling.num_layers"))
    sig.numLayers = layers.getInt();
  return SignatureAnalyzer(func, sig, error).run();
}
