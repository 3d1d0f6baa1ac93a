//===- LayerProgram.cpp - JIT-compile and call a model's sconv layer
//-------===//

#include "inkling/ExecutionEngine/LayerProgram.h"

#include "inkling/Dialect/SConv/IR/SConvDialect.h"
#include "inkling/Dialect/SConv/IR/SConvOps.h"
#include "inkling/Dialect/SConv/Transforms/Passes.h"
#include "inkling/InitInkling.h"
#include "inkling/Pipelines/Pipelines.h"
#include "inkling/Target/GPU/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <mutex>
#include <omp.h>

using namespace inkling;
using namespace inkling::exec;

const char *exec::elementKindName(ElementKind kind) {
  switch (kind) {
  case ElementKind::I8:
    return "i8";
  case ElementKind::I32:
    return "i32";
  case ElementKind::I64:
    return "i64";
  case ElementKind::BF16:
    return "bf16";
  }
  return "?";
}

int64_t exec::elementBytes(ElementKind kind) {
  switch (kind) {
  case ElementKind::I8:
    return 1;
  case ElementKind::I32:
    return 4;
  case ElementKind::I64:
    return 8;
  case ElementKind::BF16:
    return 2;
  }
  return 1;
}

const char *exec::argRoleName(ArgRole role) {
  switch (role) {
  case ArgRole::Cache:
    return "cache";
  case ArgRole::QueryStartLoc:
    return "query_start_loc";
  case ArgRole::NumComputed:
    return "num_computed";
  case ArgRole::BlockTable:
    return "block_table";
  case ArgRole::SlotMapping:
    return "slot_mapping";
  case ArgRole::TokenSeq:
    return "token_seq";
  case ArgRole::Status:
    return "status";
  case ArgRole::Input:
    return "input";
  case ArgRole::Weights:
    return "weights";
  case ArgRole::Bias:
    return "bias";
  case ArgRole::Output:
    return "output";
  }
  return "?";
}

namespace {

/// Parses a --fusion value; empty leaves `strategy` unset (the pipeline's
/// default).
bool parseFusion(const std::string &name,
                 std::optional<sconv::FusionStrategy> &strategy,
                 std::string &error) {
  if (name.empty())
    return true;
  strategy = sconv::parseFusionStrategy(name);
  if (!strategy)
    error = "--fusion=" + name +
            ": unknown strategy (conv-insert, packed-inserts, none)";
  return strategy.has_value();
}

std::string locationString(mlir::Location loc) {
  if (auto file = llvm::dyn_cast<mlir::FileLineColLoc>(loc))
    return (file.getFilename().str() + ":" + std::to_string(file.getLine()) +
            ":" + std::to_string(file.getColumn()));
  std::string text;
  llvm::raw_string_ostream os(text);
  os << loc;
  return text;
}

std::string typeString(mlir::Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return text;
}

mlir::MLIRContext &context() {
  // One context for the process, never destroyed: JIT-ed code and the
  // modules of every program live until exit.
  static mlir::MLIRContext *ctx = [] {
    // Every dialect and translation of the CPU and the GPU pipelines.
    mlir::DialectRegistry registry;
    registerAllDialects(registry);
    auto *c = new mlir::MLIRContext(registry);
    c->loadAllAvailableDialects();
    c->printOpOnDiagnostic(false);
    return c;
  }();
  return *ctx;
}

/// Collects the first error diagnostic as one line "loc: error: message".
struct FirstError {
  explicit FirstError(mlir::MLIRContext &ctx)
      : handler(&ctx, [this](mlir::Diagnostic &d) {
          if (d.getSeverity() == mlir::DiagnosticSeverity::Error &&
              message.empty()) {
            std::string text;
            llvm::raw_string_ostream os(text);
            os << locationString(d.getLocation()) << ": error: " << d.str();
            message = text;
            // One line: notes and multi-line messages are cut.
            if (size_t nl = message.find('\n'); nl != std::string::npos)
              message.resize(nl);
          }
          return mlir::success();
        }) {}
  std::string message;
  mlir::ScopedDiagnosticHandler handler;
};

} // namespace

struct LayerProgram::Impl {
  std::string path;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp func;
  LayerSignature sig;
  std::unique_ptr<mlir::ExecutionEngine> engine;
  void (*packed)(void **) = nullptr;
  // Per-call scratch, reused.
  std::vector<std::vector<int64_t>> descriptors;
  std::vector<void *> descriptorPtrs;
  std::vector<void *> packedArgs;

  bool analyze(std::string &error);
  bool addStatusArgument(std::string &error);
};

LayerProgram::LayerProgram() : impl_(std::make_unique<Impl>()) {}
LayerProgram::~LayerProgram() = default;

const LayerSignature &LayerProgram::signature() const { return impl_->sig; }

std::unique_ptr<LayerProgram> LayerProgram::load(const std::string &path,
                                                 const std::string &entry,
                                                 std::string &error) {
  // A directory or a device (e.g. /dev/zero, which never ends) is an
  // error, not an endless read.
  llvm::sys::fs::file_status status;
  if (!llvm::sys::fs::status(path, status) &&
      status.type() != llvm::sys::fs::file_type::regular_file) {
    error = path + ": cannot read the file: not a regular file";
    return nullptr;
  }
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!file) {
    error = path + ": cannot read the file: " + file.getError().message();
    return nullptr;
  }
  return fromBuffer(std::move(*file), path, entry, error);
}

std::unique_ptr<LayerProgram>
LayerProgram::fromSource(const std::string &source, const std::string &name,
                         const std::string &entry, std::string &error) {
  return fromBuffer(llvm::MemoryBuffer::getMemBufferCopy(source, name), name,
                    entry, error);
}

std::unique_ptr<LayerProgram>
LayerProgram::fromBuffer(std::unique_ptr<llvm::MemoryBuffer> buffer,
                         const std::string &path, const std::string &entry,
                         std::string &error) {
  mlir::MLIRContext &ctx = context();
  auto sourceMgr = std::make_shared<llvm::SourceMgr>();
  sourceMgr->AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  FirstError diag(ctx);
  mlir::ParserConfig config(&ctx);
  auto module = mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, config);
  if (!module) {
    error =
        diag.message.empty() ? path + ": cannot parse the IR" : diag.message;
    return nullptr;
  }
  std::unique_ptr<LayerProgram> program(new LayerProgram());
  Impl &impl = *program->impl_;
  impl.path = path;
  impl.module = std::move(module);

  // The entry: --entry, else the only function with a body.
  llvm::SmallVector<mlir::func::FuncOp> candidates;
  for (auto func : impl.module->getOps<mlir::func::FuncOp>())
    if (!func.isExternal())
      candidates.push_back(func);
  if (!entry.empty()) {
    auto func = impl.module->lookupSymbol<mlir::func::FuncOp>(entry);
    if (!func || func.isExternal()) {
      error = path + ": no function @" + entry + " with a body";
      return nullptr;
    }
    impl.func = func;
  } else if (candidates.size() == 1) {
    impl.func = candidates.front();
  } else if (candidates.empty()) {
    error = path + ": no function with a body";
    return nullptr;
  } else {
    error = path + ": " + std::to_string(candidates.size()) +
            " functions with a body (@" + candidates[0].getName().str() +
            ", @" + candidates[1].getName().str() +
            ", ...): choose one with --entry";
    return nullptr;
  }
  if (auto layers =
          impl.module->getOperation()->getAttrOfType<mlir::IntegerAttr>(
              "inkling.num_layers"))
    impl.sig.numLayers = layers.getInt();
  if (!impl.analyze(error))
    return nullptr;
  return program;
}

bool LayerProgram::Impl::analyze(std::string &error) {
  mlir::func::FuncOp f = func;
  sig = LayerSignature();
  if (auto layers = module->getOperation()->getAttrOfType<mlir::IntegerAttr>(
          "inkling.num_layers"))
    sig.numLayers = layers.getInt();
  sig.function = f.getName().str();
  sig.location = locationString(f.getLoc());
  std::string where = path + ": @" + sig.function;
  auto fail = [&](mlir::Location loc, const std::string &message) {
    error = locationString(loc) + ": error: " + message;
    return false;
  };

  if (f.getNumResults() != 0)
    return fail(f.getLoc(), "@" + sig.function +
                                " returns values; inkling-run drives functions "
                                "that write their outputs into arguments");
  if (!f.getBody().hasOneBlock())
    return fail(f.getLoc(), "@" + sig.function +
                                " has more than one block; inkling-run drives "
                                "straight-line layer functions");

  unsigned numArgs = f.getNumArguments();
  sig.args.resize(numArgs);
  std::vector<bool> assigned(numArgs, false);
  for (unsigned i = 0; i < numArgs; ++i) {
    mlir::Type type = f.getArgument(i).getType();
    sig.args[i].type = typeString(type);
    auto memref = llvm::dyn_cast<mlir::MemRefType>(type);
    if (!memref)
      return fail(f.getLoc(), "argument " + std::to_string(i) + " of @" +
                                  sig.function + " has type " +
                                  sig.args[i].type +
                                  "; inkling-run passes only memrefs");
    mlir::Type element = memref.getElementType();
    if (element.isBF16())
      sig.args[i].element = ElementKind::BF16;
    else if (element.isInteger(8))
      sig.args[i].element = ElementKind::I8;
    else if (element.isInteger(32))
      sig.args[i].element = ElementKind::I32;
    else if (element.isInteger(64))
      sig.args[i].element = ElementKind::I64;
    else
      return fail(f.getLoc(), "argument " + std::to_string(i) + " of @" +
                                  sig.function + " has element type " +
                                  typeString(element) +
                                  "; inkling-run supports bf16, i8, i32, i64");
    for (int64_t size : memref.getShape())
      sig.args[i].shape.push_back(mlir::ShapedType::isDynamic(size) ? kDynamic
                                                                    : size);
    llvm::SmallVector<int64_t> strides;
    int64_t offset = 0;
    if (mlir::failed(memref.getStridesAndOffset(strides, offset)))
      return fail(f.getLoc(), "argument " + std::to_string(i) + " of @" +
                                  sig.function + " (" + sig.args[i].type +
                                  ") has no strided layout");
    for (int64_t stride : strides)
      sig.args[i].strides.push_back(
          mlir::ShapedType::isDynamic(stride) ? kDynamic : stride);
    sig.args[i].offset =
        mlir::ShapedType::isDynamic(offset) ? kDynamic : offset;
  }

  // The argument behind an operand, or -1.
  auto argOf = [&](mlir::Value value) -> int {
    auto arg = llvm::dyn_cast<mlir::BlockArgument>(value);
    if (!arg || arg.getOwner()->getParentOp() != f.getOperation())
      return -1;
    return static_cast<int>(arg.getArgNumber());
  };
  // Gives argument `index` (of `value`) a role; one role per argument.
  auto assign = [&](mlir::Operation *op, mlir::Value value, const char *what,
                    ArgRole role, std::optional<Stream> stream) -> int {
    int index = argOf(value);
    if (index < 0) {
      fail(op->getLoc(), std::string("the ") + what + " operand of " +
                             op->getName().getStringRef().str() +
                             " is not an argument of @" + sig.function +
                             "; inkling-run allocates every buffer itself");
      return -1;
    }
    ArgInfo &arg = sig.args[index];
    auto describe = [](ArgRole r, std::optional<Stream> s) {
      std::string text = argRoleName(r);
      if (s)
        text = std::string(streamName(*s)) + " " + text;
      return text;
    };
    if (assigned[index] && (arg.role != role || arg.stream != stream)) {
      fail(op->getLoc(), "argument " + std::to_string(index) + " of @" +
                             sig.function + " is both the " +
                             describe(arg.role, arg.stream) + " and the " +
                             describe(role, stream) +
                             "; inkling-run needs one buffer per role");
      return -1;
    }
    if (assigned[index] &&
        (role == ArgRole::Output || role == ArgRole::Cache)) {
      // Two convs writing one output would make the check ambiguous.
      if (role == ArgRole::Output) {
        fail(op->getLoc(), "argument " + std::to_string(index) + " of @" +
                               sig.function + " is the output of two convs");
        return -1;
      }
    }
    assigned[index] = true;
    arg.role = role;
    arg.stream = stream;
    return index;
  };

  sconv::BindOp bind;
  sconv::StepOp step;
  sconv::LayoutAttr layoutAttr;
  bool ok = true;
  auto sameLayout = [&](mlir::Operation *op, sconv::LayoutAttr layout) {
    if (layout != layoutAttr) {
      fail(op->getLoc(), "the layout of " + op->getName().getStringRef().str() +
                             " differs from its sconv.bind's; inkling-run "
                             "drives one layout per function");
      return false;
    }
    return true;
  };
  auto checkCacheAndStep = [&](mlir::Operation *op, mlir::Value cache,
                               mlir::Value stepValue) {
    if (!bind || cache.getDefiningOp() != bind.getOperation()) {
      fail(op->getLoc(), op->getName().getStringRef().str() +
                             ": the cache is not the result of the function's "
                             "sconv.bind");
      return false;
    }
    if (!step || stepValue.getDefiningOp() != step.getOperation()) {
      fail(op->getLoc(), op->getName().getStringRef().str() +
                             ": the step is not the function's sconv.step");
      return false;
    }
    return true;
  };
  auto addOp = [&](mlir::Operation *op, std::vector<Stream> streams,
                   bool writesCache, std::vector<int> outputs,
                   std::vector<int> operands) {
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
    info.arguments.insert(info.arguments.end(), operands.begin(),
                          operands.end());
    info.location = locationString(op->getLoc());
    sig.ops.push_back(std::move(info));
  };

  for (mlir::Operation &opRef : f.getBody().front()) {
    mlir::Operation *op = &opRef;
    if (!ok)
      break;
    if (auto b = llvm::dyn_cast<sconv::BindOp>(op)) {
      if (bind)
        return fail(op->getLoc(), "a second sconv.bind; inkling-run drives "
                                  "one cache per layer function");
      bind = b;
      layoutAttr = b.getLayout();
      sig.layout = layoutAttr.getDerived();
      sig.pageBytes = b.getPageBytes();
      sig.crossLayers = b.getLayers().value_or(1);
      auto stride = sig.layout.blockStrideForPageBytes(sig.pageBytes);
      if (!stride)
        return fail(op->getLoc(), stride.status().message());
      sig.blockStride = *stride;
      sig.cache = assign(op, b.getBuffer(), "buffer", ArgRole::Cache, {});
      ok = sig.cache >= 0;
      continue;
    }
    if (auto s = llvm::dyn_cast<sconv::StepOp>(op)) {
      if (step)
        return fail(op->getLoc(), "a second sconv.step; inkling-run drives "
                                  "one step per layer function");
      step = s;
      sig.queryStartLoc = assign(op, s.getQueryStartLoc(), "query_start_loc",
                                 ArgRole::QueryStartLoc, {});
      sig.numComputed = assign(op, s.getNumComputed(), "num_computed",
                               ArgRole::NumComputed, {});
      sig.blockTable =
          assign(op, s.getBlockTable(), "block_table", ArgRole::BlockTable, {});
      sig.slotMapping = assign(op, s.getSlotMapping(), "slot_mapping",
                               ArgRole::SlotMapping, {});
      ok = sig.queryStartLoc >= 0 && sig.numComputed >= 0 &&
           sig.blockTable >= 0 && sig.slotMapping >= 0;
      if (ok && s.getTokenSeq()) {
        sig.tokenSeq =
            assign(op, s.getTokenSeq(), "token_seq", ArgRole::TokenSeq, {});
        ok = sig.tokenSeq >= 0;
      }
      if (ok && s.getStatus()) {
        sig.status = assign(op, s.getStatus(), "status", ArgRole::Status, {});
        ok = sig.status >= 0;
      }
      continue;
    }
    auto noteInput = [&](Stream stream, int index) {
      int &slot = sig.input[static_cast<int>(stream)];
      if (slot >= 0 && slot != index) {
        fail(op->getLoc(), std::string("two different ") + streamName(stream) +
                               " inputs (arguments " + std::to_string(slot) +
                               " and " + std::to_string(index) +
                               "); inkling-run feeds one input per stream");
        return false;
      }
      slot = index;
      return true;
    };
    if (auto insert = llvm::dyn_cast<sconv::InsertOp>(op)) {
      if (!checkCacheAndStep(op, insert.getCache(), insert.getStep()) ||
          !sameLayout(op, insert.getLayout()))
        return false;
      Stream stream = sconv::toRuntime(insert.getStream());
      int x = assign(op, insert.getX(), "x", ArgRole::Input, stream);
      if (x < 0 || !noteInput(stream, x))
        return false;
      sig.inserted[static_cast<int>(stream)] = true;
      addOp(op, {stream}, true, {}, {x});
      continue;
    }
    if (auto conv = llvm::dyn_cast<sconv::ConvOp>(op)) {
      if (!checkCacheAndStep(op, conv.getCache(), conv.getStep()) ||
          !sameLayout(op, conv.getLayout()))
        return false;
      Stream stream = sconv::toRuntime(conv.getStream());
      ConvInfo info;
      info.stream = stream;
      info.x = assign(op, conv.getX(), "x", ArgRole::Input, stream);
      if (info.x < 0 || !noteInput(stream, info.x))
        return false;
      info.weights =
          assign(op, conv.getWeights(), "weights", ArgRole::Weights, stream);
      if (info.weights < 0)
        return false;
      if (conv.getBias()) {
        info.bias = assign(op, conv.getBias(), "bias", ArgRole::Bias, stream);
        if (info.bias < 0)
          return false;
      }
      info.out = assign(op, conv.getOut(), "out", ArgRole::Output, stream);
      if (info.out < 0)
        return false;
      info.residual = conv.getResidual();
      info.silu = conv.getActivation() == sconv::Activation::Silu;
      sig.convs.push_back(info);
      std::vector<int> operands = {info.x, info.weights};
      if (info.bias >= 0)
        operands.push_back(info.bias);
      operands.push_back(info.out);
      addOp(op, {stream}, false, {info.out}, operands);
      continue;
    }
    if (auto packed = llvm::dyn_cast<sconv::InsertPackedOp>(op)) {
      if (!checkCacheAndStep(op, packed.getCache(), packed.getStep()) ||
          !sameLayout(op, packed.getLayout()))
        return false;
      std::vector<Stream> streams;
      std::vector<int> operands;
      auto list = packed.getStreamList();
      for (auto [value, s] : llvm::zip(packed.getInputs(), list)) {
        Stream stream = sconv::toRuntime(s);
        int x = assign(op, value, "input", ArgRole::Input, stream);
        if (x < 0 || !noteInput(stream, x))
          return false;
        sig.inserted[static_cast<int>(stream)] = true;
        streams.push_back(stream);
        operands.push_back(x);
      }
      addOp(op, streams, true, {}, operands);
      continue;
    }
    if (auto fused = llvm::dyn_cast<sconv::FusedConvOp>(op)) {
      if (!checkCacheAndStep(op, fused.getCache(), fused.getStep()) ||
          !sameLayout(op, fused.getLayout()))
        return false;
      std::vector<Stream> streams;
      std::vector<int> operands, outputs;
      auto list = fused.getStreamList();
      bool hasBias = !fused.getBiases().empty();
      for (size_t i = 0; i < list.size(); ++i) {
        Stream stream = sconv::toRuntime(list[i]);
        ConvInfo info;
        info.stream = stream;
        info.x =
            assign(op, fused.getInputs()[i], "input", ArgRole::Input, stream);
        if (info.x < 0 || !noteInput(stream, info.x))
          return false;
        info.weights = assign(op, fused.getWeights()[i], "weights",
                              ArgRole::Weights, stream);
        if (info.weights < 0)
          return false;
        if (hasBias) {
          info.bias =
              assign(op, fused.getBiases()[i], "bias", ArgRole::Bias, stream);
          if (info.bias < 0)
            return false;
        }
        info.out =
            assign(op, fused.getOuts()[i], "out", ArgRole::Output, stream);
        if (info.out < 0)
          return false;
        info.residual = fused.getResidual();
        info.silu = fused.getActivation() == sconv::Activation::Silu;
        sig.convs.push_back(info);
        if (fused.getInsert())
          sig.inserted[static_cast<int>(stream)] = true;
        streams.push_back(stream);
        operands.push_back(info.x);
        operands.push_back(info.weights);
        if (info.bias >= 0)
          operands.push_back(info.bias);
        operands.push_back(info.out);
        outputs.push_back(info.out);
      }
      addOp(op, streams, fused.getInsert(), outputs, operands);
      continue;
    }
    if (llvm::isa<mlir::func::ReturnOp>(op))
      continue;
    if (mlir::isMemoryEffectFree(op) && op->getNumRegions() == 0) {
      for (mlir::Value operand : op->getOperands())
        if (int index = argOf(operand); index >= 0)
          return fail(op->getLoc(),
                      "argument " + std::to_string(index) + " of @" +
                          sig.function + " is used by " +
                          op->getName().getStringRef().str() +
                          "; inkling-run drives arguments of sconv ops only");
      continue;
    }
    return fail(op->getLoc(), "@" + sig.function + " contains " +
                                  op->getName().getStringRef().str() +
                                  "; inkling-run drives layer functions made "
                                  "of sconv ops");
  }
  if (!ok)
    return false;
  if (!bind)
    return fail(f.getLoc(),
                "@" + sig.function + " has no sconv.bind: no cache to drive");
  if (!step)
    return fail(f.getLoc(),
                "@" + sig.function +
                    " has no sconv.step: no step metadata to drive");
  if (sig.ops.empty())
    return fail(f.getLoc(), "@" + sig.function +
                                " has no sconv op that "
                                "inserts or convolves");
  for (unsigned i = 0; i < numArgs; ++i)
    if (!assigned[i])
      return fail(f.getLoc(), "argument " + std::to_string(i) + " of @" +
                                  sig.function + " is not used by an sconv op");
  // A stream convolved but never stored would read stale history.
  for (const ConvInfo &conv : sig.convs)
    if (!sig.inserted[static_cast<int>(conv.stream)])
      return fail(f.getLoc(),
                  std::string("@") + sig.function + " convolves stream " +
                      streamName(conv.stream) +
                      " but never inserts it: its history would never be "
                      "written");
  // Stream inputs and outputs: bf16, the token dimension first, the rows
  // [H, w] or [H*w] contiguous (what the fill and the check assume).
  for (unsigned i = 0; i < numArgs; ++i) {
    ArgInfo &arg = sig.args[i];
    if (arg.role != ArgRole::Input && arg.role != ArgRole::Output)
      continue;
    size_t rank = arg.strides.size();
    int64_t w = sig.layout.range(*arg.stream).width;
    bool contiguous = arg.strides.back() == 1 &&
                      (rank == 2 || (rank == 3 && arg.strides[1] == w));
    if (!contiguous)
      return fail(f.getLoc(), "argument " + std::to_string(i) + " of @" +
                                  sig.function + " (" + arg.type +
                                  "): inkling-run needs contiguous head rows");
  }
  return true;
}

/// Checked mode reports into a status buffer: gives the step one, as a new
/// last argument of the function, when it has none.
bool LayerProgram::Impl::addStatusArgument(std::string &error) {
  if (sig.status >= 0)
    return true;
  mlir::MLIRContext &ctx = context();
  sconv::StepOp step;
  func.walk([&](sconv::StepOp s) { step = s; });
  auto type = mlir::MemRefType::get({mlir::ShapedType::kDynamic},
                                    mlir::IntegerType::get(&ctx, 64));
  unsigned index = func.getNumArguments();
  if (mlir::failed(func.insertArgument(
          index, type, mlir::DictionaryAttr::get(&ctx), func.getLoc()))) {
    error = path + ": cannot add a status argument to @" + sig.function;
    return false;
  }
  step.getStatusMutable().assign(func.getArgument(index));
  ArgInfo arg;
  arg.role = ArgRole::Status;
  arg.element = ElementKind::I64;
  arg.shape = {kDynamic};
  arg.strides = {1};
  arg.type = typeString(type);
  sig.args.push_back(arg);
  sig.status = static_cast<int>(index);
  return true;
}

bool LayerProgram::keepOnlyOp(int64_t index, std::string &error) {
  Impl &impl = *impl_;
  int64_t count = static_cast<int64_t>(impl.sig.ops.size());
  if (index < 0 || index >= count) {
    error = "--replay=" + std::to_string(index) + ": @" + impl.sig.function +
            " has " + std::to_string(count) + " sconv ops (0.." +
            std::to_string(count - 1) + ")";
    return false;
  }
  int64_t i = 0;
  llvm::SmallVector<mlir::Operation *> erase;
  for (mlir::Operation &op : impl.func.getBody().front()) {
    if (!llvm::isa<sconv::InsertOp, sconv::ConvOp, sconv::InsertPackedOp,
                   sconv::FusedConvOp>(op))
      continue;
    if (i++ != index)
      erase.push_back(&op);
  }
  for (mlir::Operation *op : erase)
    op->erase();
  return true;
}

std::string exec::describeCheckedStatus(const int64_t status[5]) {
  // Indexed by the kind (Lowering.h's CheckKind).
  static const char *kinds[] = {
      "?",        "slot",
      "block id", "logical block beyond the block table",
      "slot",     "token_seq entry"};
  int64_t kind = status[1] >= 0 && status[1] <= 5 ? status[1] : 0;
  std::string limit =
      kind == 4 ? ", not its own slot block_table[b][p / N] * N + p % N = "
                : ", limit ";
  return "rejected " + std::to_string(status[0]) +
         " accesses (first: " + kinds[kind] + " " + std::to_string(status[3]) +
         " of token " + std::to_string(status[2]) + limit +
         std::to_string(status[4]) + ")";
}

// The threaded nests call libomp's __kmpc_* entry points, which the JIT
// resolves among the process's global symbols: this library links libomp
// (and this call keeps the link); `makeOpenMPVisible` covers a process that
// loaded this library with local symbols.
int LayerProgram::defaultThreadCount() { return omp_get_max_threads(); }

namespace {
/// Makes libomp's symbols global in the process (LLVM loads it
/// RTLD_GLOBAL), once.
bool makeOpenMPVisible(std::string &error) {
  static std::string loadError = [] {
    std::string message;
    if (llvm::sys::DynamicLibrary::LoadLibraryPermanently(
            INKLING_OPENMP_LIBRARY, &message))
      return "cannot load LLVM's OpenMP runtime " +
             std::string(INKLING_OPENMP_LIBRARY) + " (" + message +
             "): compile with threads = 1, or install libomp-22-dev";
    return std::string();
  }();
  error = loadError;
  return loadError.empty();
}
} // namespace

bool LayerProgram::setCacheGeometry(int64_t blockSize, int64_t layers,
                                    std::string &error) {
  Impl &impl = *impl_;
  sconv::BindOp bind;
  impl.func.walk([&](sconv::BindOp b) { bind = b; });
  if (!bind) {
    error = impl.path + ": @" + impl.sig.function + " has no sconv.bind";
    return false;
  }
  sconv::LayoutAttr oldLayout = bind.getLayout();
  inkling::Layout oldDerived = oldLayout.getDerived();
  if (blockSize == 0)
    blockSize = oldDerived.blockSize;
  LayoutConfig config = oldLayout.getConfig();
  config.blockSize = blockSize;
  StatusOr<Layout> derived = Layout::derive(config);
  if (blockSize < 1 || !derived) {
    error = "block size (" + std::to_string(blockSize) + ") is not valid for " +
            impl.path + "'s layout: " +
            (derived ? std::string("block_size must be >= 1")
                     : derived.status().message());
    return false;
  }
  if (layers < 0 || layers > (int64_t(1) << 20)) {
    error = "cross-layer page count (" + std::to_string(layers) +
            ") must be in [0, 2^20]";
    return false;
  }
  sconv::LayoutAttr newLayout = oldLayout.withBlockSize(blockSize);
  // A layer's page keeps its padding; cross-layer pages put `layers` pages
  // side by side in one block stride (0: as many as the IR's bind has).
  int64_t oldLayers = bind.getLayers().value_or(1);
  if (layers == 0)
    layers = oldLayers;
  int64_t oldPage = static_cast<int64_t>(bind.getPageBytes()) / oldLayers;
  int64_t pageBytes = derived->pageBytes() + (oldPage - oldDerived.pageBytes());
  if (layers > 1 && __builtin_mul_overflow(pageBytes, layers, &pageBytes)) {
    error = "cross-layer block stride overflows";
    return false;
  }
  if (StatusOr<int64_t> stride = derived->blockStrideForPageBytes(pageBytes);
      !stride) {
    error = "block size (" + std::to_string(blockSize) +
            "): " + stride.status().message();
    return false;
  }
  mlir::MemRefType oldType = bind.getCache().getType();
  mlir::MemRefType newType = sconv::BindOp::getCacheType(newLayout, pageBytes);
  if (!oldType.isDynamicDim(0))
    newType =
        mlir::MemRefType::get({oldType.getDimSize(0), newType.getDimSize(1),
                               newType.getDimSize(2), newType.getDimSize(3)},
                              newType.getElementType(), newType.getLayout());
  // Every use of the layout and of the cache type follows the bind.
  mlir::AttrTypeReplacer replacer;
  replacer.addReplacement(
      [&](sconv::LayoutAttr attr) -> std::optional<mlir::Attribute> {
        if (attr == oldLayout)
          return newLayout;
        return std::nullopt;
      });
  replacer.addReplacement(
      [&](mlir::MemRefType type) -> std::optional<mlir::Type> {
        if (type == oldType)
          return newType;
        return std::nullopt;
      });
  replacer.recursivelyReplaceElementsIn(impl.func, /*replaceAttrs=*/true,
                                        /*replaceLocs=*/false,
                                        /*replaceTypes=*/true);
  mlir::Builder builder(&context());
  bind.setPageBytesAttr(builder.getI64IntegerAttr(pageBytes));
  if (layers > 1)
    bind.setLayersAttr(builder.getI64IntegerAttr(layers));
  else
    bind.removeLayersAttr();
  FirstError diag(context());
  if (mlir::failed(mlir::verify(impl.func))) {
    error = impl.path + ": the IR at block size " + std::to_string(blockSize) +
            " does not verify: " + diag.message;
    return false;
  }
  std::optional<int64_t> numLayers = impl.sig.numLayers;
  if (!impl.analyze(error))
    return false;
  impl.sig.numLayers = numLayers;
  return true;
}

bool LayerProgram::compile(const CompileOptions &options, std::string &error) {
  Impl &impl = *impl_;
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  mlir::MLIRContext &ctx = context();
  FirstError diag(ctx);

  if (options.checked && options.addStatus && !impl.addStatusArgument(error))
    return false;
  std::optional<sconv::FusionStrategy> strategy;
  if (!parseFusion(options.fusion, strategy, error))
    return false;
  if (options.threads != 1 && !makeOpenMPVisible(error))
    return false;
  mlir::PassManager pm(&ctx);
  LowerToCPUOptions lower;
  lower.checked = options.checked;
  lower.emitCInterface = true;
  lower.threads = options.threads;
  lower.minParallelIterations = options.minParallelIterations;
  if (strategy)
    lower.fusion = *strategy;
  buildLowerToCPUPipeline(pm, lower);
  if (mlir::failed(pm.run(*impl.module))) {
    error = diag.message.empty() ? impl.path + ": inkling-lower-to-cpu failed"
                                 : diag.message;
    return false;
  }
  // The transformer outlives create() (the options hold a function_ref).
  std::function<llvm::Error(llvm::Module *)> transformer =
      mlir::makeOptimizingTransformer(options.optLevel, 0, nullptr);
  mlir::ExecutionEngineOptions engineOptions;
  engineOptions.transformer = transformer;
  auto engine = mlir::ExecutionEngine::create(*impl.module, engineOptions);
  if (!engine) {
    llvm::raw_string_ostream os(error);
    os << impl.path << ": ExecutionEngine: " << engine.takeError();
    return false;
  }
  impl.engine = std::move(*engine);
  auto fn = impl.engine->lookupPacked("_mlir_ciface_" + impl.sig.function);
  if (!fn) {
    llvm::raw_string_ostream os(error);
    os << impl.path << ": no C interface for @" << impl.sig.function << ": "
       << fn.takeError();
    return false;
  }
  impl.packed = *fn;
  return true;
}

bool LayerProgram::compileKernels(const CompileOptions &options,
                                  const KernelTarget &target,
                                  KernelFiles &bundle, std::string &error) {
  Impl &impl = *impl_;
  mlir::MLIRContext &ctx = context();
  FirstError diag(ctx);
  if (!gpu::isKnownNVPTXChip(target.chip)) {
    error = "GPU target " + target.chip +
            ": not a chip LLVM's NVPTX backend knows (e.g. sm_80, sm_90)";
    return false;
  }
  if (options.checked && options.addStatus && !impl.addStatusArgument(error))
    return false;
  std::optional<sconv::FusionStrategy> strategy;
  if (!parseFusion(options.fusion, strategy, error))
    return false;

  // The GPU lowering with the same fusion as the CPU path (both pipelines
  // default to conv-insert). A clone is lowered: the module stays sconv IR.
  mlir::OwningOpRef<mlir::ModuleOp> clone(impl.module->clone());
  mlir::PassManager pm(&ctx);
  LowerToNVVMOptions nvvm;
  if (strategy)
    nvvm.fusion = *strategy;
  nvvm.chip = target.chip;
  nvvm.features = target.features.empty() ? gpu::defaultPTXFeatures(target.chip)
                                          : target.features;
  nvvm.format = target.format;
  nvvm.toolkit = target.toolkit;
  nvvm.checked = options.checked;
  buildLowerToNVVMPipeline(pm, nvvm);
  bundle = KernelFiles();
  if (mlir::failed(pm.run(*clone)) ||
      mlir::failed(gpu::serializeKernelBundle(
          *clone, bundle.manifest,
          [&](llvm::StringRef file, llvm::StringRef bytes) {
            bundle.objects[file.str()] = bytes.str();
          }))) {
    error = diag.message.empty() ? impl.path + ": inkling-lower-to-nvvm failed"
                                 : diag.message;
    return false;
  }
  return true;
}

bool LayerProgram::checkArguments(const std::vector<MemRefArg> &args,
                                  std::string &error) const {
  const LayerSignature &sig = impl_->sig;
  if (args.size() != sig.args.size()) {
    error = "@" + sig.function + " takes " + std::to_string(sig.args.size()) +
            " arguments, got " + std::to_string(args.size());
    return false;
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgInfo &info = sig.args[i];
    const MemRefArg &a = args[i];
    auto bad = [&](const std::string &what) {
      error = "argument " + std::to_string(i) + " of @" + sig.function + " (" +
              (info.stream ? std::string(streamName(*info.stream)) + " " : "") +
              argRoleName(info.role) + ", " + info.type + "): " + what;
      return false;
    };
    size_t rank = info.shape.size();
    if (a.sizes.size() != rank || a.strides.size() != rank)
      return bad("expected " + std::to_string(rank) + " sizes and strides");
    for (size_t d = 0; d < rank; ++d) {
      if (a.sizes[d] < 0)
        return bad("size " + std::to_string(d) + " is " +
                   std::to_string(a.sizes[d]));
      if (info.shape[d] != kDynamic && info.shape[d] != a.sizes[d])
        return bad("size " + std::to_string(d) + " is " +
                   std::to_string(a.sizes[d]) + ", the type says " +
                   std::to_string(info.shape[d]));
    }
    for (size_t d = 0; d < rank; ++d) {
      if (info.strides[d] != kDynamic && info.strides[d] != a.strides[d])
        return bad("stride " + std::to_string(d) + " is " +
                   std::to_string(a.strides[d]) + ", the type says " +
                   std::to_string(info.strides[d]));
    }
    if (info.offset != kDynamic && info.offset != a.offset)
      return bad("offset " + std::to_string(a.offset) + ", the type says " +
                 std::to_string(info.offset));
    // The cache and the bf16 tensors are accessed with vectors; the
    // metadata with scalars.
    bool vectors =
        info.element == ElementKind::BF16 || info.role == ArgRole::Cache;
    uintptr_t align = vectors ? 16 : elementBytes(info.element);
    if (reinterpret_cast<uintptr_t>(a.data) % align != 0)
      return bad(vectors ? "the data pointer is not 16-byte aligned (the "
                           "kernels' vector accesses assume a 16-byte "
                           "aligned base)"
                         : "the data pointer is not aligned to its elements");
  }
  return true;
}

void LayerProgram::invoke(const std::vector<MemRefArg> &args) {
  Impl &impl = *impl_;
  size_t n = args.size();
  impl.descriptors.resize(n);
  impl.descriptorPtrs.resize(n);
  impl.packedArgs.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const MemRefArg &a = args[i];
    size_t rank = a.sizes.size();
    std::vector<int64_t> &d = impl.descriptors[i];
    d.resize(3 + 2 * rank);
    d[0] = static_cast<int64_t>(reinterpret_cast<intptr_t>(a.data));
    d[1] = d[0];
    d[2] = a.offset;
    for (size_t r = 0; r < rank; ++r) {
      d[3 + r] = a.sizes[r];
      d[3 + rank + r] = a.strides[r];
    }
    impl.descriptorPtrs[i] = d.data();
    impl.packedArgs[i] = &impl.descriptorPtrs[i];
  }
  impl.packed(impl.packedArgs.data());
}
