//===- RecordKernels.cpp - inkling-gpu-record-kernels ---------------------===//
//
// Records each outlined kernel's ABI, grid and launches in the
// `inkling.kernels` module attribute, which the manifest is written from.
// docs/gpu.md describes the pipeline.
//
//===----------------------------------------------------------------------===//

#include "KernelInfo.h"
#include "inkling/Runtime/ManifestSchema.h"
#include "inkling/Target/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace inkling::gpu {
namespace mk = inkling::manifest;
#define GEN_PASS_DEF_RECORDKERNELSPASS
#include "inkling/Target/GPU/Passes.h.inc"

namespace {

//===----------------------------------------------------------------------===//
// inkling-gpu-record-kernels
//===----------------------------------------------------------------------===//

std::string elementName(Type type) {
  if (type.isBF16())
    return "bf16";
  return printed(type);
}

int64_t elementBytes(Type type) {
  if (type.isIndex())
    return 8;
  return std::max<int64_t>(1, type.getIntOrFloatBitWidth() / 8);
}

/// A constant of the launch's host-side grid or block operand.
std::optional<int64_t> constantOf(Value value) {
  APInt v;
  if (matchPattern(value, m_ConstantInt(&v)))
    return v.getSExtValue();
  return std::nullopt;
}

/// The widest `alignment` an access through `memref` (or a view of it)
/// claims: the base alignment the kernel assumes, which the launcher must
/// check. 0 when no access claims one.
int64_t claimedAlignment(Value memref) {
  int64_t align = 0;
  SmallVector<Value> worklist = {memref};
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (!seen.insert(user).second)
        continue;
      if (auto a = user->getAttrOfType<IntegerAttr>("alignment"))
        align = std::max<int64_t>(align, a.getInt());
      // Views (subview, reinterpret_cast, cast, expand/collapse_shape ...)
      // reach the same bytes.
      if (!isa<ViewLikeOpInterface>(user) &&
          !isa_and_nonnull<memref::MemRefDialect>(user->getDialect()))
        continue;
      for (Value result : user->getResults())
        if (isa<MemRefType>(result.getType()))
          worklist.push_back(result);
    }
  }
  return align;
}

/// Describes a kernel argument's memref type: element, shape, strides and
/// offset (-1 for dynamic), whether its layout is the identity (row-major
/// contiguous: the launcher derives dynamic strides from the sizes), and how
/// many driver parameters its descriptor expands to.
FailureOr<DictionaryAttr> describeArg(Builder &b, Type type,
                                      function_ref<InFlightDiagnostic()> err) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref) {
    err() << "kernel argument of type " << type
          << " is not a memref: the launcher passes host buffers only";
    return failure();
  }
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(memref.getStridesAndOffset(strides, offset))) {
    err() << "kernel argument of type " << type << " has no strided layout";
    return failure();
  }
  auto dyn = [](ArrayRef<int64_t> values) {
    SmallVector<int64_t> out;
    for (int64_t v : values)
      out.push_back(ShapedType::isDynamic(v) ? -1 : v);
    return out;
  };
  NamedAttribute entries[] = {
      b.getNamedAttr(mk::kType, b.getStringAttr(printed(type))),
      b.getNamedAttr(mk::kElement,
                     b.getStringAttr(elementName(memref.getElementType()))),
      b.getNamedAttr(mk::kElementBytes, b.getI64IntegerAttr(elementBytes(
                                            memref.getElementType()))),
      b.getNamedAttr(mk::kRank, b.getI64IntegerAttr(memref.getRank())),
      b.getNamedAttr(mk::kShape, b.getI64ArrayAttr(dyn(memref.getShape()))),
      b.getNamedAttr(mk::kStrides, b.getI64ArrayAttr(dyn(strides))),
      b.getNamedAttr(
          mk::kOffset,
          b.getI64IntegerAttr(ShapedType::isDynamic(offset) ? -1 : offset)),
      b.getNamedAttr(mk::kIdentity,
                     b.getBoolAttr(memref.getLayout().isIdentity())),
      b.getNamedAttr(mk::kParams,
                     b.getI64IntegerAttr(3 + 2 * memref.getRank())),
  };
  return b.getDictionaryAttr(entries);
}

/// The scratch buffer `alloc` of host function `host` (an unfused op's
/// output that a later kernel reads): what the launcher allocates on the
/// device in its place. It must be row-major in the default memory space,
/// dim 0 static or the size of a dim of a host argument, the rest static,
/// and only kernels may touch it (the host function's own code never runs:
/// the launcher runs its launches).
FailureOr<NamedAttrList>
describeScratch(Builder &b, FunctionOpInterface host, memref::AllocOp alloc,
                function_ref<InFlightDiagnostic()> err) {
  MemRefType type = alloc.getType();
  if (!type.getLayout().isIdentity() || type.getMemorySpace() ||
      type.getRank() < 1) {
    err() << "passes " << type
          << " that the host allocates to its kernel: a scratch buffer must be "
             "a row-major memref of rank >= 1 in the default memory space";
    return failure();
  }
  if (llvm::any_of(type.getShape().drop_front(), ShapedType::isDynamic)) {
    err() << "passes " << type
          << " that the host allocates to its kernel: only dim 0 of a scratch "
             "buffer may be dynamic";
    return failure();
  }
  // cuMemAlloc's base alignment.
  constexpr int64_t kDeviceAlign = 256;
  if (alloc.getAlignment() && *alloc.getAlignment() > kDeviceAlign) {
    err() << "passes a scratch buffer aligned to " << *alloc.getAlignment()
          << " bytes; the device allocates at " << kDeviceAlign;
    return failure();
  }
  for (Operation *user : alloc->getUsers())
    if (!isa<mlir::gpu::LaunchFuncOp, memref::DeallocOp>(user)) {
      err() << "passes a scratch buffer (" << type
            << ") that the host function also uses in '" << user->getName()
            << "': the launcher runs only the launches, so the host's own "
               "code never sees it";
      return failure();
    }
  NamedAttrList d;
  d.set(mk::kType, b.getStringAttr(printed(type)));
  d.set(mk::kElement, b.getStringAttr(elementName(type.getElementType())));
  d.set(mk::kElementBytes,
        b.getI64IntegerAttr(elementBytes(type.getElementType())));
  SmallVector<int64_t> shape(type.getShape());
  if (ShapedType::isDynamic(shape[0])) {
    shape[0] = -1;
    auto dim = alloc.getDynamicSizes()[0].getDefiningOp<memref::DimOp>();
    std::optional<int64_t> dimIndex =
        dim ? constantOf(dim.getIndex()) : std::nullopt;
    auto arg = dim ? dyn_cast<BlockArgument>(dim.getSource()) : nullptr;
    if (!dimIndex || !arg ||
        arg.getOwner() != &host.getFunctionBody().front()) {
      err() << "passes a scratch buffer (" << type
            << ") whose dim 0 is not the size of a dim of a host argument";
      return failure();
    }
    d.set(mk::kSizeHostArg, b.getI64IntegerAttr(arg.getArgNumber()));
    d.set(mk::kSizeDim, b.getI64IntegerAttr(*dimIndex));
  }
  d.set(mk::kShape, b.getI64ArrayAttr(shape));
  return d;
}

/// A launch's grid and block: constants, or the token count T (dim 0 of
/// kernel argument `tokensArg`) for a grid size.
struct LaunchShape {
  SmallVector<Attribute> grid, block;
  std::optional<int64_t> tokensArg;
};

/// Records the launches of one module into `inkling.kernels` entries, one
/// launch at a time; each step emits its own error on the launch.
class KernelRecorder {
public:
  explicit KernelRecorder(ModuleOp module)
      : b(module.getContext()), symbols(module) {}

  LogicalResult record(FunctionOpInterface host, mlir::gpu::LaunchFuncOp launch,
                       int index);
  ArrayAttr entries() { return b.getArrayAttr(recorded); }

private:
  FailureOr<std::string> renameKernel(FunctionOpInterface host,
                                      mlir::gpu::LaunchFuncOp launch,
                                      mlir::gpu::GPUModuleOp gpuModule,
                                      mlir::gpu::GPUFuncOp kernel,
                                      DictionaryAttr info, int index);
  LogicalResult describeArgs(FunctionOpInterface host,
                             mlir::gpu::LaunchFuncOp launch,
                             mlir::gpu::GPUFuncOp kernel,
                             SmallVectorImpl<Attribute> &args,
                             SmallVectorImpl<int64_t> &hostIndex,
                             SmallVectorImpl<Attribute> &scratch);
  FailureOr<LaunchShape> describeShape(mlir::gpu::LaunchFuncOp launch);
  std::string opKey(DictionaryAttr info, StringRef name);
  std::string fullKey(FunctionOpInterface host, StringRef key,
                      mlir::gpu::GPUFuncOp kernel, ArrayRef<Attribute> block);

  Builder b;
  SymbolTable symbols;
  SmallVector<Attribute> recorded;
  llvm::StringSet<> used;
  /// Each host's scratch buffers, numbered in the order of first use.
  llvm::DenseMap<Value, int64_t> scratchIndex;
  llvm::DenseMap<Operation *, int64_t> scratchCount;
};

LogicalResult KernelRecorder::record(FunctionOpInterface host,
                                     mlir::gpu::LaunchFuncOp launch,
                                     int index) {
  auto gpuModule =
      symbols.lookup<mlir::gpu::GPUModuleOp>(launch.getKernelModuleName());
  auto kernel =
      gpuModule
          ? gpuModule.lookupSymbol<mlir::gpu::GPUFuncOp>(launch.getKernelName())
          : nullptr;
  if (!kernel)
    return launch.emitOpError() << "refers to no outlined gpu.func";
  DictionaryAttr info = findOpInfo(launch.getLoc());
  if (!info)
    info = findOpInfo(kernel.getLoc());

  FailureOr<std::string> name =
      renameKernel(host, launch, gpuModule, kernel, info, index);
  if (failed(name))
    return failure();
  SmallVector<Attribute> args;
  SmallVector<int64_t> hostIndex;
  SmallVector<Attribute> scratch;
  if (failed(describeArgs(host, launch, kernel, args, hostIndex, scratch)))
    return failure();
  FailureOr<LaunchShape> shape = describeShape(launch);
  if (failed(shape))
    return failure();
  std::string key = opKey(info, *name);

  SmallVector<NamedAttribute> entry = {
      b.getNamedAttr(mk::kName, b.getStringAttr(*name)),
      b.getNamedAttr(mk::kHost, b.getStringAttr(host.getName())),
      b.getNamedAttr("launch_index", b.getI64IntegerAttr(index)),
      b.getNamedAttr("op_key", b.getStringAttr(key)),
      b.getNamedAttr(mk::kKey,
                     b.getStringAttr(fullKey(host, key, kernel, shape->block))),
      b.getNamedAttr(mk::kArgs, b.getArrayAttr(args)),
      b.getNamedAttr(mk::kHostArgs, b.getI64ArrayAttr(hostIndex)),
      b.getNamedAttr(mk::kGrid, b.getArrayAttr(shape->grid)),
      b.getNamedAttr(mk::kBlock, b.getArrayAttr(shape->block)),
  };
  if (shape->tokensArg)
    entry.push_back(
        b.getNamedAttr(mk::kTokensArg, b.getI64IntegerAttr(*shape->tokensArg)));
  if (!scratch.empty())
    entry.push_back(b.getNamedAttr(mk::kScratch, b.getArrayAttr(scratch)));
  if (info) {
    entry.push_back(b.getNamedAttr(mk::kOp, info.get(kOpInfoKey)));
    entry.push_back(b.getNamedAttr(mk::kStreams, info.get("streams")));
    entry.push_back(b.getNamedAttr(mk::kLayout, info.get("layout")));
    entry.push_back(b.getNamedAttr(mk::kAttributes, info.get("attributes")));
  }
  recorded.push_back(b.getDictionaryAttr(entry));
  return success();
}

/// Gives the kernel and its module a readable, unique name,
/// <host>_k<i>_<op>_<streams>, and points the launch at it.
FailureOr<std::string> KernelRecorder::renameKernel(
    FunctionOpInterface host, mlir::gpu::LaunchFuncOp launch,
    mlir::gpu::GPUModuleOp gpuModule, mlir::gpu::GPUFuncOp kernel,
    DictionaryAttr info, int index) {
  std::string name = (host.getName() + "_k" + Twine(index)).str();
  if (info) {
    StringRef op = cast<StringAttr>(info.get(kOpInfoKey)).getValue();
    op.consume_front("sconv.");
    name += "_" + op.str();
    for (Attribute s : cast<ArrayAttr>(info.get("streams")))
      name += "_" + cast<StringAttr>(s).getValue().str();
  }
  while (used.contains(name) ||
         (symbols.lookup(name) && symbols.lookup(name) != gpuModule))
    name += "_";
  used.insert(name);
  if (failed(symbols.rename(gpuModule, name)))
    return launch.emitOpError()
           << "could not rename its kernel module to " << name;
  SymbolTable::setSymbolName(kernel, name);
  launch.setKernelAttr(SymbolRefAttr::get(
      b.getStringAttr(name), {FlatSymbolRefAttr::get(b.getStringAttr(name))}));
  return name;
}

/// The argument ABI: every kernel argument is a host argument or a scratch
/// buffer the host allocates (-1 - its index in `hostIndex`, its
/// description in `scratch`), described with the base alignment the
/// kernel's accesses assume.
LogicalResult KernelRecorder::describeArgs(
    FunctionOpInterface host, mlir::gpu::LaunchFuncOp launch,
    mlir::gpu::GPUFuncOp kernel, SmallVectorImpl<Attribute> &args,
    SmallVectorImpl<int64_t> &hostIndex, SmallVectorImpl<Attribute> &scratch) {
  auto err = [&]() { return launch.emitOpError(); };
  for (Value operand : launch.getKernelOperands()) {
    auto arg = dyn_cast<BlockArgument>(operand);
    auto alloc = operand.getDefiningOp<memref::AllocOp>();
    bool hostArg = arg && arg.getOwner() == &host.getFunctionBody().front();
    if (!hostArg && !alloc)
      return err() << "passes a value that is not an argument of "
                   << host.getName()
                   << " to its kernel; the manifest's ABI binds host "
                      "arguments and the host's scratch buffers "
                      "(memref.alloc) only (is an op with side effects "
                      "computing it on the host?)";
    FailureOr<DictionaryAttr> desc = describeArg(b, operand.getType(), err);
    if (failed(desc))
      return failure();
    // The lowering's contract: 16 bytes where it emits aligned vector
    // accesses; at least the element size. The launcher checks it.
    NamedAttrList described(*desc);
    int64_t align = std::max<int64_t>(
        cast<IntegerAttr>(described.get(mk::kElementBytes)).getInt(),
        claimedAlignment(kernel.getArgument(args.size())));
    described.set(mk::kAlign, b.getI64IntegerAttr(align));
    args.push_back(described.getDictionary(b.getContext()));
    if (hostArg) {
      hostIndex.push_back(arg.getArgNumber());
      continue;
    }
    FailureOr<NamedAttrList> buffer = describeScratch(b, host, alloc, err);
    if (failed(buffer))
      return failure();
    auto [it, fresh] = scratchIndex.try_emplace(operand, 0);
    if (fresh)
      it->second = scratchCount[host.getOperation()]++;
    buffer->set(mk::kIndex, b.getI64IntegerAttr(it->second));
    scratch.push_back(buffer->getDictionary(b.getContext()));
    hostIndex.push_back(-1 - it->second);
  }
  return success();
}

/// The grid rule: constants, or T, the size of dim 0 of a kernel argument
/// (the stream input's token count); the block: constants.
FailureOr<LaunchShape>
KernelRecorder::describeShape(mlir::gpu::LaunchFuncOp launch) {
  LaunchShape shape;
  auto kernelOperands = launch.getKernelOperands();
  Value gridValues[] = {launch.getGridSizeX(), launch.getGridSizeY(),
                        launch.getGridSizeZ()};
  for (Value v : gridValues) {
    if (std::optional<int64_t> c = constantOf(v)) {
      shape.grid.push_back(b.getI64IntegerAttr(*c));
      continue;
    }
    auto dim = v.getDefiningOp<memref::DimOp>();
    std::optional<int64_t> dimIndex =
        dim ? constantOf(dim.getIndex()) : std::nullopt;
    auto it = dim ? llvm::find(kernelOperands, dim.getSource())
                  : kernelOperands.end();
    // A scratch buffer's dim 0 folds to its alloc's size operand, which
    // need not be a dim of a kernel argument.
    if (it == kernelOperands.end())
      it = llvm::find_if(kernelOperands, [&](Value operand) {
        auto alloc = operand.getDefiningOp<memref::AllocOp>();
        return alloc && alloc.getType().isDynamicDim(0) &&
               alloc.getDynamicSizes()[0] == v;
      });
    if (it != kernelOperands.end() && !dim)
      dimIndex = 0;
    int64_t position = it - kernelOperands.begin();
    if (!dimIndex || *dimIndex != 0 || it == kernelOperands.end() ||
        (shape.tokensArg && *shape.tokensArg != position))
      return launch.emitOpError()
             << "has a grid size that is neither a constant nor the "
                "token count (dim 0 of a kernel argument)";
    shape.tokensArg = position;
    shape.grid.push_back(b.getStringAttr(mk::kTokensGrid));
  }
  Value blockValues[] = {launch.getBlockSizeX(), launch.getBlockSizeY(),
                         launch.getBlockSizeZ()};
  for (Value v : blockValues) {
    std::optional<int64_t> c = constantOf(v);
    if (!c)
      return launch.emitOpError() << "has a block size that is not a constant";
    shape.block.push_back(b.getI64IntegerAttr(*c));
  }
  return shape;
}

/// What the kernel computes and its ABI, not where.
std::string KernelRecorder::opKey(DictionaryAttr info, StringRef name) {
  if (!info)
    return "unknown:" + name.str();
  return cast<StringAttr>(info.get(kOpInfoKey)).getValue().str() + "|" +
         printed(info.get("streams")) + "|" +
         cast<StringAttr>(info.get("layout")).getValue().str() + "|" +
         cast<StringAttr>(info.get("attributes")).getValue().str() + "|" +
         cast<StringAttr>(info.get("signature")).getValue().str();
}

/// The dedupe key: the op key, which of that op's nests on this host this
/// kernel is (several nests of one op: the i-th kernel of that op), and the
/// kernel's type and block.
std::string KernelRecorder::fullKey(FunctionOpInterface host, StringRef key,
                                    mlir::gpu::GPUFuncOp kernel,
                                    ArrayRef<Attribute> block) {
  int64_t part = 0;
  for (Attribute e : recorded) {
    auto d = cast<DictionaryAttr>(e);
    if (cast<StringAttr>(d.get(mk::kHost)).getValue() == host.getName() &&
        cast<StringAttr>(d.get("op_key")).getValue() == key)
      ++part;
  }
  return key.str() + "|part" + std::to_string(part) + "|" +
         printed(kernel.getFunctionType()) + "|" +
         printed(b.getArrayAttr(block));
}

struct RecordKernelsPass : impl::RecordKernelsPassBase<RecordKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    KernelRecorder recorder(module);
    WalkResult result = module.walk([&](FunctionOpInterface host) {
      int index = 0;
      return host.walk([&](mlir::gpu::LaunchFuncOp launch) {
        return failed(recorder.record(host, launch, index++))
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      });
    });
    if (result.wasInterrupted())
      return signalPassFailure();
    module->setAttr(kKernelsAttrName, recorder.entries());
  }
};

} // namespace

} // namespace inkling::gpu
