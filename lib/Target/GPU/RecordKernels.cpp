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

struct RecordKernelsPass : impl::RecordKernelsPassBase<RecordKernelsPass> {

  void runOnOperation() override {
    ModuleOp module = getOperation();
    Builder b(&getContext());
    SymbolTable symbols(module);
    SmallVector<Attribute> entries;
    llvm::StringSet<> used;
    bool bad = false;

    module.walk([&](FunctionOpInterface host) {
      if (bad)
        return;
      int index = 0;
      host.walk([&](mlir::gpu::LaunchFuncOp launch) {
        if (bad)
          return;
        auto err = [&]() { return launch.emitOpError(); };
        auto gpuModule = symbols.lookup<mlir::gpu::GPUModuleOp>(
            launch.getKernelModuleName());
        auto kernel = gpuModule ? gpuModule.lookupSymbol<mlir::gpu::GPUFuncOp>(
                                      launch.getKernelName())
                                : nullptr;
        if (!kernel) {
          err() << "refers to no outlined gpu.func";
          bad = true;
          return;
        }
        DictionaryAttr info = findOpInfo(launch.getLoc());
        if (!info)
          info = findOpInfo(kernel.getLoc());

        // A readable, unique name: <host>_k<i>_<op>_<streams>.
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
        if (failed(symbols.rename(gpuModule, name))) {
          err() << "could not rename its kernel module to " << name;
          bad = true;
          return;
        }
        SymbolTable::setSymbolName(kernel, name);
        launch.setKernelAttr(SymbolRefAttr::get(
            b.getStringAttr(name),
            {FlatSymbolRefAttr::get(b.getStringAttr(name))}));

        // The argument ABI: every kernel argument is a host argument.
        auto hostArgs = host.getArguments();
        SmallVector<Attribute> args;
        SmallVector<int64_t> hostIndex;
        for (Value operand : launch.getKernelOperands()) {
          auto arg = dyn_cast<BlockArgument>(operand);
          if (!arg || arg.getOwner() != &host.getFunctionBody().front()) {
            err() << "passes a value that is not an argument of "
                  << host.getName()
                  << " to its kernel; the manifest's ABI binds host "
                     "arguments only (is an op with side effects computing "
                     "it on the host?)";
            bad = true;
            return;
          }
          FailureOr<DictionaryAttr> desc =
              describeArg(b, operand.getType(), err);
          if (::mlir::failed(desc)) {
            bad = true;
            return;
          }
          // The base alignment the kernel's accesses assume (the
          // lowering's contract: 16 bytes where it emits aligned vector
          // accesses), at least the element size; the launcher checks it.
          NamedAttrList described(*desc);
          int64_t align = std::max<int64_t>(
              cast<IntegerAttr>(described.get(mk::kElementBytes)).getInt(),
              claimedAlignment(kernel.getArgument(args.size())));
          described.set(mk::kAlign, b.getI64IntegerAttr(align));
          args.push_back(described.getDictionary(b.getContext()));
          hostIndex.push_back(arg.getArgNumber());
        }
        (void)hostArgs;

        // The grid rule: constants, or T, the size of dim 0 of a kernel
        // argument (the stream input's token count).
        SmallVector<Attribute> grid, block;
        std::optional<std::pair<int64_t, int64_t>> tokens;
        Value gridValues[] = {launch.getGridSizeX(), launch.getGridSizeY(),
                              launch.getGridSizeZ()};
        for (Value v : gridValues) {
          if (std::optional<int64_t> c = constantOf(v)) {
            grid.push_back(b.getI64IntegerAttr(*c));
            continue;
          }
          auto dim = v.getDefiningOp<memref::DimOp>();
          std::optional<int64_t> dimIndex =
              dim ? constantOf(dim.getIndex()) : std::nullopt;
          auto kernelOperands = launch.getKernelOperands();
          auto it = dim ? llvm::find(kernelOperands, dim.getSource())
                        : kernelOperands.end();
          if (!dimIndex || *dimIndex != 0 || it == kernelOperands.end() ||
              (tokens && tokens->first != it - kernelOperands.begin())) {
            err() << "has a grid size that is neither a constant nor the "
                     "token count (dim 0 of a kernel argument)";
            bad = true;
            return;
          }
          tokens = std::make_pair(
              static_cast<int64_t>(it - kernelOperands.begin()), int64_t(0));
          grid.push_back(b.getStringAttr(mk::kTokensGrid));
        }
        Value blockValues[] = {launch.getBlockSizeX(), launch.getBlockSizeY(),
                               launch.getBlockSizeZ()};
        for (Value v : blockValues) {
          std::optional<int64_t> c = constantOf(v);
          if (!c) {
            err() << "has a block size that is not a constant";
            bad = true;
            return;
          }
          block.push_back(b.getI64IntegerAttr(*c));
        }

        // Dedupe key: what the kernel computes and its ABI, not where.
        std::string key;
        if (info) {
          key = cast<StringAttr>(info.get(kOpInfoKey)).getValue().str() + "|" +
                printed(info.get("streams")) + "|" +
                cast<StringAttr>(info.get("layout")).getValue().str() + "|" +
                cast<StringAttr>(info.get("attributes")).getValue().str() +
                "|" + cast<StringAttr>(info.get("signature")).getValue().str();
        } else {
          key = "unknown:" + name;
        }
        // Several nests of one op: the i-th kernel of that op.
        int64_t part = 0;
        for (Attribute e : entries) {
          auto d = cast<DictionaryAttr>(e);
          if (cast<StringAttr>(d.get(mk::kHost)).getValue() == host.getName() &&
              cast<StringAttr>(d.get("op_key")).getValue() == key)
            ++part;
        }
        std::string fullKey = key + "|part" + std::to_string(part) + "|" +
                              printed(kernel.getFunctionType()) + "|" +
                              printed(b.getArrayAttr(block));

        SmallVector<NamedAttribute> entry = {
            b.getNamedAttr(mk::kName, b.getStringAttr(name)),
            b.getNamedAttr(mk::kHost, b.getStringAttr(host.getName())),
            b.getNamedAttr("launch_index", b.getI64IntegerAttr(index)),
            b.getNamedAttr("op_key", b.getStringAttr(key)),
            b.getNamedAttr(mk::kKey, b.getStringAttr(fullKey)),
            b.getNamedAttr(mk::kArgs, b.getArrayAttr(args)),
            b.getNamedAttr(mk::kHostArgs, b.getI64ArrayAttr(hostIndex)),
            b.getNamedAttr(mk::kGrid, b.getArrayAttr(grid)),
            b.getNamedAttr(mk::kBlock, b.getArrayAttr(block)),
        };
        if (tokens)
          entry.push_back(b.getNamedAttr(mk::kTokensArg,
                                         b.getI64IntegerAttr(tokens->first)));
        if (info) {
          entry.push_back(b.getNamedAttr(mk::kOp, info.get(kOpInfoKey)));
          entry.push_back(b.getNamedAttr(mk::kStreams, info.get("streams")));
          entry.push_back(b.getNamedAttr(mk::kLayout, info.get("layout")));
          entry.push_back(
              b.getNamedAttr(mk::kAttributes, info.get("attributes")));
        }
        entries.push_back(b.getDictionaryAttr(entry));
        ++index;
      });
    });
    if (bad)
      return signalPassFailure();
    module->setAttr(kKernelsAttrName, b.getArrayAttr(entries));
  }
};

} // namespace

} // namespace inkling::gpu
