//===- KernelPasses.cpp - Passes around the GPU outlining -----------------===//
//
// The small passes `inkling-lower-to-nvvm` runs between upstream MLIR's GPU
// passes: tagging sconv ops, mapping the loop nests to blocks and threads,
// sinking the host-side index and view computations into the launches, and
// recording each outlined kernel's ABI for the manifest (docs/gpu.md).
//
//===----------------------------------------------------------------------===//

#include "inkling/Target/GPU/Passes.h"

#include "inkling/Dialect/SConv/IR/SConvDialect.h"
#include "inkling/Dialect/SConv/IR/SConvInterfaces.h"
#include "inkling/Dialect/SConv/IR/SConvOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace inkling::gpu {
#define GEN_PASS_DEF_TAGSCONVOPSPASS
#define GEN_PASS_DEF_MAPSCONVNESTSPASS
#define GEN_PASS_DEF_SINKINTOLAUNCHPASS
#define GEN_PASS_DEF_FMATOLLVMPASS
#define GEN_PASS_DEF_RECORDKERNELSPASS
#define GEN_PASS_DEF_RECORDKERNELPARAMSPASS
#include "inkling/Target/GPU/Passes.h.inc"

namespace {

std::string printed(Attribute attr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  attr.print(os);
  return text;
}

std::string printed(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

/// The op metadata `inkling-gpu-tag-ops` put into `loc`, if any.
DictionaryAttr findOpInfo(Location loc) {
  DictionaryAttr found;
  loc->walk([&](Location inner) {
    if (auto fused = dyn_cast<FusedLoc>(inner))
      if (auto dict = dyn_cast_or_null<DictionaryAttr>(fused.getMetadata()))
        if (dict.get(kOpInfoKey)) {
          found = dict;
          return WalkResult::interrupt();
        }
    return WalkResult::advance();
  });
  return found;
}

//===----------------------------------------------------------------------===//
// inkling-gpu-tag-ops
//===----------------------------------------------------------------------===//

/// The streams an op names (`stream` or `streams`), e.g. {"k", "v"}.
SmallVector<std::string> streamNames(Operation *op) {
  SmallVector<std::string> names;
  auto add = [&](Attribute attr) {
    if (auto stream = dyn_cast<sconv::StreamAttr>(attr))
      names.push_back(sconv::stringifyStream(stream.getValue()).str());
  };
  if (Attribute one = op->getAttr("stream"))
    add(one);
  if (auto many = dyn_cast_or_null<ArrayAttr>(op->getAttr("streams")))
    for (Attribute attr : many)
      add(attr);
  return names;
}

struct TagSConvOpsPass : impl::TagSConvOpsPassBase<TagSConvOpsPass> {

  void runOnOperation() override {
    MLIRContext *context = &getContext();
    getOperation().walk([&](sconv::StepCacheAccessOpInterface access) {
      Operation *op = access.getOperation();
      if (findOpInfo(op->getLoc()))
        return;
      Builder b(context);
      SmallVector<Attribute> streams;
      for (const std::string &name : streamNames(op))
        streams.push_back(b.getStringAttr(name));
      // The op's attributes, less the layout (kept on its own) and the
      // streams; what remains (residual, activation, and_insert ...) is part
      // of what the kernel computes.
      SmallVector<NamedAttribute> rest;
      for (NamedAttribute attr : op->getAttrDictionary())
        if (attr.getName() != "layout" && attr.getName() != "stream" &&
            attr.getName() != "streams" &&
            attr.getName() != "operandSegmentSizes")
          rest.push_back(attr);
      std::string signature;
      llvm::raw_string_ostream os(signature);
      llvm::interleaveComma(op->getOperandTypes(), os);
      Attribute layout = op->getAttr("layout");
      NamedAttribute entries[] = {
          b.getNamedAttr(kOpInfoKey,
                         b.getStringAttr(op->getName().getStringRef())),
          b.getNamedAttr("streams", b.getArrayAttr(streams)),
          b.getNamedAttr("layout",
                         b.getStringAttr(layout ? printed(layout) : "")),
          b.getNamedAttr("attributes",
                         b.getStringAttr(printed(b.getDictionaryAttr(rest)))),
          b.getNamedAttr("signature", b.getStringAttr(signature)),
      };
      op->setLoc(
          FusedLoc::get(context, {op->getLoc()}, b.getDictionaryAttr(entries)));
    });
  }
};

//===----------------------------------------------------------------------===//
// inkling-gpu-map-nests
//===----------------------------------------------------------------------===//

struct MapSConvNestsPass : impl::MapSConvNestsPassBase<MapSConvNestsPass> {

  /// Sets the mapping of `loop` to `level` (0 blocks, 1 threads, 2+
  /// sequential) and recurses into the scf.parallel ops of its body.
  LogicalResult map(scf::ParallelOp loop, int level) {
    using mlir::gpu::Processor;
    MLIRContext *context = loop.getContext();
    static const Processor blocks[] = {Processor::BlockX, Processor::BlockY,
                                       Processor::BlockZ};
    static const Processor threads[] = {Processor::ThreadX, Processor::ThreadY,
                                        Processor::ThreadZ};
    SmallVector<mlir::gpu::ParallelLoopDimMappingAttr> mapping;
    AffineMap identity = AffineMap::getMultiDimIdentityMap(1, context);
    for (unsigned dim = 0; dim < loop.getNumLoops(); ++dim) {
      Processor processor = Processor::Sequential;
      if (level == 0 && dim < 3)
        processor = blocks[dim];
      else if (level == 1 && dim < 3)
        processor = threads[dim];
      mapping.push_back(mlir::gpu::ParallelLoopDimMappingAttr::get(
          context, processor, identity, identity));
    }
    if (failed(mlir::gpu::setMappingAttr(loop, mapping)))
      return loop.emitOpError("could not be mapped to the GPU");
    WalkResult result = loop.getBody()->walk([&](scf::ParallelOp inner) {
      if (inner->getParentOfType<scf::ParallelOp>() != loop)
        return WalkResult::skip();
      if (failed(map(inner, level + 1)))
        return WalkResult::interrupt();
      return WalkResult::skip();
    });
    return failure(result.wasInterrupted());
  }

  void runOnOperation() override {
    SmallVector<scf::ParallelOp> roots;
    getOperation().walk([&](scf::ParallelOp loop) {
      if (!loop->getParentOfType<scf::ParallelOp>())
        roots.push_back(loop);
    });
    for (scf::ParallelOp root : roots)
      if (failed(map(root, 0)))
        return signalPassFailure();
  }
};

//===----------------------------------------------------------------------===//
// inkling-gpu-sink
//===----------------------------------------------------------------------===//

struct SinkIntoLaunchPass : impl::SinkIntoLaunchPassBase<SinkIntoLaunchPass> {

  static bool sinkable(Operation *op) {
    return op->getNumRegions() == 0 && op->getNumResults() > 0 &&
           isMemoryEffectFree(op);
  }

  /// Clones the sinkable producers of values the launch uses from above
  /// into its body, until only block arguments (the host function's) and
  /// results of ops with effects remain. Unlike upstream's
  /// sinkOperationsIntoLaunchOp this also sinks ops whose operands are not
  /// used in the launch yet (a memref.view of a host argument).
  static void sink(mlir::gpu::LaunchOp launch) {
    Region &body = launch.getBody();
    OpBuilder builder(&body.front(), body.front().begin());
    while (true) {
      SetVector<Value> above;
      getUsedValuesDefinedAbove(body, above);
      SmallVector<Operation *> producers;
      for (Value v : above)
        if (Operation *op = v.getDefiningOp())
          if (sinkable(op) && !llvm::is_contained(producers, op))
            producers.push_back(op);
      if (producers.empty())
        return;
      // This round sinks only producers that use none of the others (each
      // clone then depends only on values from above, and goes to the start
      // of the body); the others follow in later rounds, before them.
      SmallVector<Operation *> ready;
      for (Operation *op : producers)
        if (llvm::none_of(op->getOperands(), [&](Value operand) {
              return llvm::is_contained(producers, operand.getDefiningOp());
            }))
          ready.push_back(op);
      producers = std::move(ready);
      for (Operation *op : producers) {
        Operation *clone = builder.clone(*op);
        for (auto [from, to] : llvm::zip(op->getResults(), clone->getResults()))
          replaceAllUsesInRegionWith(from, to, body);
      }
      builder.setInsertionPoint(&body.front(), body.front().begin());
    }
  }

  void runOnOperation() override {
    getOperation().walk([&](mlir::gpu::LaunchOp launch) { sink(launch); });
  }
};

//===----------------------------------------------------------------------===//
// inkling-gpu-fma-to-llvm
//===----------------------------------------------------------------------===//

struct FmaToLLVMPass : impl::FmaToLLVMPassBase<FmaToLLVMPass> {
  void runOnOperation() override {
    getOperation()->walk([](math::FmaOp fma) {
      OpBuilder b(fma);
      Value fused = LLVM::FMAOp::create(b, fma.getLoc(), fma.getA(), fma.getB(),
                                        fma.getC());
      fma.replaceAllUsesWith(fused);
      fma.erase();
    });
  }
};

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
      b.getNamedAttr("type", b.getStringAttr(printed(type))),
      b.getNamedAttr("element",
                     b.getStringAttr(elementName(memref.getElementType()))),
      b.getNamedAttr("element_bytes", b.getI64IntegerAttr(elementBytes(
                                          memref.getElementType()))),
      b.getNamedAttr("rank", b.getI64IntegerAttr(memref.getRank())),
      b.getNamedAttr("shape", b.getI64ArrayAttr(dyn(memref.getShape()))),
      b.getNamedAttr("strides", b.getI64ArrayAttr(dyn(strides))),
      b.getNamedAttr(
          "offset",
          b.getI64IntegerAttr(ShapedType::isDynamic(offset) ? -1 : offset)),
      b.getNamedAttr("identity",
                     b.getBoolAttr(memref.getLayout().isIdentity())),
      b.getNamedAttr("params", b.getI64IntegerAttr(3 + 2 * memref.getRank())),
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
              cast<IntegerAttr>(described.get("element_bytes")).getInt(),
              claimedAlignment(kernel.getArgument(args.size())));
          described.set("align", b.getI64IntegerAttr(align));
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
          grid.push_back(b.getStringAttr("T"));
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
          if (cast<StringAttr>(d.get("host")).getValue() == host.getName() &&
              cast<StringAttr>(d.get("op_key")).getValue() == key)
            ++part;
        }
        std::string fullKey = key + "|part" + std::to_string(part) + "|" +
                              printed(kernel.getFunctionType()) + "|" +
                              printed(b.getArrayAttr(block));

        SmallVector<NamedAttribute> entry = {
            b.getNamedAttr("name", b.getStringAttr(name)),
            b.getNamedAttr("host", b.getStringAttr(host.getName())),
            b.getNamedAttr("launch_index", b.getI64IntegerAttr(index)),
            b.getNamedAttr("op_key", b.getStringAttr(key)),
            b.getNamedAttr("key", b.getStringAttr(fullKey)),
            b.getNamedAttr("args", b.getArrayAttr(args)),
            b.getNamedAttr("host_args", b.getI64ArrayAttr(hostIndex)),
            b.getNamedAttr("grid", b.getArrayAttr(grid)),
            b.getNamedAttr("block", b.getArrayAttr(block)),
        };
        if (tokens)
          entry.push_back(
              b.getNamedAttr("tokens_arg", b.getI64IntegerAttr(tokens->first)));
        if (info) {
          entry.push_back(b.getNamedAttr("op", info.get(kOpInfoKey)));
          entry.push_back(b.getNamedAttr("streams", info.get("streams")));
          entry.push_back(b.getNamedAttr("layout", info.get("layout")));
          entry.push_back(b.getNamedAttr("attributes", info.get("attributes")));
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

//===----------------------------------------------------------------------===//
// inkling-gpu-record-params
//===----------------------------------------------------------------------===//

struct RecordKernelParamsPass
    : impl::RecordKernelParamsPassBase<RecordKernelParamsPass> {

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto kernels = module->getAttrOfType<ArrayAttr>(kKernelsAttrName);
    if (!kernels)
      return;
    Builder b(&getContext());
    SmallVector<Attribute> updated;
    for (Attribute attr : kernels) {
      auto entry = cast<DictionaryAttr>(attr);
      StringRef name = cast<StringAttr>(entry.get("name")).getValue();
      auto gpuModule = module.lookupSymbol<mlir::gpu::GPUModuleOp>(name);
      auto func =
          gpuModule ? gpuModule.lookupSymbol<LLVM::LLVMFuncOp>(name) : nullptr;
      if (!func) {
        module.emitError() << "kernel " << name
                           << " is not an llvm.func in its gpu.module after "
                              "the NVVM lowering";
        return signalPassFailure();
      }
      SmallVector<Attribute> params;
      for (Type type : func.getFunctionType().getParams()) {
        if (isa<LLVM::LLVMPointerType>(type))
          params.push_back(b.getStringAttr("ptr"));
        else
          params.push_back(b.getStringAttr(printed(type)));
      }
      // The descriptors must expand to exactly these parameters.
      int64_t expected = 0;
      for (Attribute arg : cast<ArrayAttr>(entry.get("args")))
        expected +=
            cast<IntegerAttr>(cast<DictionaryAttr>(arg).get("params")).getInt();
      if (expected != static_cast<int64_t>(params.size())) {
        func.emitError() << "has " << params.size()
                         << " parameters, but its memref arguments expand to "
                         << expected
                         << " (allocated ptr, aligned ptr, offset, sizes, "
                            "strides each)";
        return signalPassFailure();
      }
      // Each descriptor's allocated pointer (never dereferenced by a kernel)
      // declares the element size as its alignment, a true fact that puts
      // the element size into the PTX (`.ptr .align N`): a checker that sees
      // only the PTX (the fake CUDA driver) can then bound the bytes each
      // descriptor reaches.
      unsigned param = 0;
      for (Attribute arg : cast<ArrayAttr>(entry.get("args"))) {
        auto d = cast<DictionaryAttr>(arg);
        func.setArgAttr(
            param, LLVM::LLVMDialect::getAlignAttrName(),
            b.getI64IntegerAttr(
                cast<IntegerAttr>(d.get("element_bytes")).getInt()));
        param += cast<IntegerAttr>(d.get("params")).getInt();
      }
      NamedAttrList list(entry);
      list.set("params", b.getArrayAttr(params));
      updated.push_back(list.getDictionary(&getContext()));
    }
    module->setAttr(kKernelsAttrName, b.getArrayAttr(updated));
  }
};

} // namespace

} // namespace inkling::gpu
