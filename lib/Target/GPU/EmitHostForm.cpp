//===- EmitHostForm.cpp - inkling-gpu-emit-host-form ----------------------===//
//
// Gives every kernel a host form: its LLVM IR after the NVVM lowering (what
// gpu-module-to-binary turns into PTX), with the NVVM special registers read
// through the emulator, every global access reported to it first, warp
// shuffles and barriers executed by it, and workgroup memory its per-block
// buffers, each access of them reported too
// (inkling/Runtime/EmulationAbi.h). The fake CUDA driver compiles it for the
// host and runs it over the launch grid (docs/gpu.md).
//
//===----------------------------------------------------------------------===//

#include "inkling/Runtime/EmulationAbi.h"
#include "inkling/Runtime/ManifestSchema.h"
#include "inkling/Target/GPU/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/raw_ostream.h"

#include <set>
#include <vector>

using namespace mlir;

namespace inkling::gpu {
namespace mk = inkling::manifest;
namespace emu = inkling::emulation;
#define GEN_PASS_DEF_EMITHOSTFORMPASS
#include "inkling/Target/GPU/Passes.h.inc"

namespace {

/// Where a pointer may point: into kernel arguments (a mask of memref
/// descriptors), into the thread's own stack (an alloca), or somewhere the
/// analysis cannot tell.
struct Provenance {
  uint64_t arguments = 0;
  bool stack = false;
  bool unknown = false;
  bool shared = false; ///< The block's workgroup memory.

  bool merge(const Provenance &other) {
    Provenance before = *this;
    arguments |= other.arguments;
    stack |= other.stack;
    unknown |= other.unknown;
    shared |= other.shared;
    return before.arguments != arguments || before.stack != stack ||
           before.unknown != unknown || before.shared != shared;
  }
};

/// The provenance of every pointer (and aggregate holding pointers) of
/// `func`, to a fixpoint over its control flow. `argumentOf[p]` is the
/// descriptor parameter p belongs to.
DenseMap<Value, Provenance> analyzeProvenance(LLVM::LLVMFuncOp func,
                                              ArrayRef<int> argumentOf) {
  DenseMap<Value, Provenance> prov;
  for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
    Provenance p;
    if (isa<LLVM::LLVMPointerType>(arg.getType()) && argumentOf[i] >= 0 &&
        argumentOf[i] < emu::kMaxMaskedArguments)
      p.arguments = uint64_t(1) << argumentOf[i];
    else if (isa<LLVM::LLVMPointerType>(arg.getType()))
      p.unknown = true;
    prov[arg] = p;
  }
  auto of = [&](Value v) { return prov.lookup(v); };
  for (bool changed = true; changed;) {
    changed = false;
    func.walk([&](Operation *op) {
      auto set = [&](Value result, Provenance p) {
        changed |= prov[result].merge(p);
      };
      auto call = dyn_cast<LLVM::CallOp>(op);
      if (isa<LLVM::AllocaOp>(op)) {
        Provenance p;
        p.stack = true;
        set(op->getResult(0), p);
      } else if (call && call.getCallee() == emu::kWorkgroupFunction) {
        Provenance p;
        p.shared = true;
        set(call.getResult(), p);
      } else if (isa<LLVM::GEPOp, LLVM::AddrSpaceCastOp, LLVM::BitcastOp,
                     LLVM::ExtractValueOp>(op)) {
        set(op->getResult(0), of(op->getOperand(0)));
      } else if (auto insert = dyn_cast<LLVM::InsertValueOp>(op)) {
        Provenance p = of(insert.getContainer());
        p.merge(of(insert.getValue()));
        set(insert.getResult(), p);
      } else if (auto select = dyn_cast<LLVM::SelectOp>(op)) {
        Provenance p = of(select.getTrueValue());
        p.merge(of(select.getFalseValue()));
        set(select.getResult(), p);
      } else if (isa<LLVM::PoisonOp, LLVM::UndefOp, LLVM::ZeroOp,
                     LLVM::ConstantOp>(op)) {
        // Holds no pointer into memory.
      } else {
        // Loaded, cast from an integer, returned by a call: unknown.
        for (Value result : op->getResults())
          if (LLVM::isCompatibleType(result.getType()) &&
              !result.getType().isIntOrFloat() &&
              !isa<VectorType>(result.getType())) {
            Provenance p;
            p.unknown = true;
            set(result, p);
          }
      }
      // Successor block arguments take what each branch passes.
      if (auto branch = dyn_cast<BranchOpInterface>(op))
        for (unsigned s = 0; s < op->getNumSuccessors(); ++s) {
          SuccessorOperands operands = branch.getSuccessorOperands(s);
          Block *dest = op->getSuccessor(s);
          for (unsigned i = 0; i < operands.size(); ++i)
            if (Value passed = operands[i])
              changed |= prov[dest->getArgument(i)].merge(of(passed));
        }
    });
  }
  return prov;
}

/// The emulator's code of an NVVM special-register op, if it is one.
std::optional<emu::Sreg> sregOf(Operation *op) {
  StringRef name = op->getName().getStringRef();
  if (!name.consume_front("nvvm.read.ptx.sreg."))
    return std::nullopt;
  return llvm::StringSwitch<std::optional<emu::Sreg>>(name)
      .Case("tid.x", emu::Sreg::TidX)
      .Case("tid.y", emu::Sreg::TidY)
      .Case("tid.z", emu::Sreg::TidZ)
      .Case("ntid.x", emu::Sreg::NtidX)
      .Case("ntid.y", emu::Sreg::NtidY)
      .Case("ntid.z", emu::Sreg::NtidZ)
      .Case("ctaid.x", emu::Sreg::CtaidX)
      .Case("ctaid.y", emu::Sreg::CtaidY)
      .Case("ctaid.z", emu::Sreg::CtaidZ)
      .Case("nctaid.x", emu::Sreg::NctaidX)
      .Case("nctaid.y", emu::Sreg::NctaidY)
      .Case("nctaid.z", emu::Sreg::NctaidZ)
      .Case("laneid", emu::Sreg::LaneId)
      .Case("warpsize", emu::Sreg::WarpSize)
      .Default(std::nullopt);
}

/// The C library function that computes what libdevice's `__nv_<name>`
/// does, with the same signature, or "" when there is none. The correctly
/// rounded ones (`fsqrt_rn`: IEEE sqrt) give the device's bits exactly.
StringRef hostMathFunction(StringRef name) {
  static const std::pair<const char *, const char *> kCorrectlyRounded[] = {
      {"fsqrt_rn", "sqrtf"}, {"dsqrt_rn", "sqrt"}, {"fmaf", "fmaf"},
      {"fma", "fma"},        {"fabsf", "fabsf"},   {"floorf", "floorf"},
      {"ceilf", "ceilf"}};
  for (auto [device, hostName] : kCorrectlyRounded)
    if (name == device)
      return hostName;
  static const char *const kSameName[] = {
      "expf",  "exp2f", "expm1f", "logf", "log2f", "log1pf",
      "sqrtf", "tanhf", "powf",   "erff", "sinf",  "cosf",
      "exp",   "log",   "sqrt",   "tanh", "pow"};
  for (const char *same : kSameName)
    if (name == same)
      return same;
  return "";
}

/// What one kernel argument's descriptor looks like in the parameters.
struct ArgumentLayout {
  int64_t firstParam, rank, elementBytes;
};

class HostFormBuilder {
public:
  HostFormBuilder(ModuleOp host, StringRef kernel,
                  ArrayRef<ArgumentLayout> arguments)
      : host(host), kernel(kernel), arguments(arguments), b(host.getContext()) {
  }

  LogicalResult build() {
    auto func = host.lookupSymbol<LLVM::LLVMFuncOp>(kernel);
    if (!func || func.isExternal())
      return host.emitError() << "kernel " << kernel << " has no body";
    b.setInsertionPointToEnd(host.getBody());
    Location loc = func.getLoc();
    auto i32 = b.getI32Type(), i64 = b.getI64Type();
    auto ptr = LLVM::LLVMPointerType::get(b.getContext());
    auto declare = [&](StringRef name, Type result, ArrayRef<Type> params) {
      auto fn = LLVM::LLVMFuncOp::create(
          b, loc, name, LLVM::LLVMFunctionType::get(result, params));
      hooks.insert(fn);
      return fn;
    };
    auto voidType = LLVM::LLVMVoidType::get(b.getContext());
    sregFn = declare(emu::kSregFunction, i32, {i32});
    accessFn = declare(emu::kAccessFunction, ptr, {ptr, i64, i64, i32});
    shuffleFn = declare(emu::kShuffleFunction, i64, {i32, i32, i32, i32, i32});
    barrierFn = declare(emu::kBarrierFunction, voidType, {});
    workgroupFn = declare(emu::kWorkgroupFunction, ptr, {i32, i64, i64});
    sharedAccessFn = declare(emu::kSharedAccessFunction, ptr, {ptr, i64, i32});
    if (failed(replaceWorkgroupGlobals()))
      return failure();

    std::vector<int> argumentOf(func.getNumArguments(), -1);
    for (auto [i, a] : llvm::enumerate(arguments))
      for (int64_t p = 0; p < 3 + 2 * a.rank; ++p)
        if (a.firstParam + p < static_cast<int64_t>(argumentOf.size()))
          argumentOf[a.firstParam + p] = static_cast<int>(i);
    provenance = analyzeProvenance(func, argumentOf);

    for (auto fn : host.getOps<LLVM::LLVMFuncOp>())
      if (!hooks.contains(fn))
        rewriteFunction(fn);
    // A kernel attribute of the device (nvvm.kernel, maxntid, known block
    // size) means nothing on the host.
    for (auto fn : host.getOps<LLVM::LLVMFuncOp>())
      for (NamedAttribute attr : llvm::to_vector(fn->getDiscardableAttrs()))
        if (attr.getName().strref().starts_with("nvvm.") ||
            attr.getName().strref().starts_with("gpu."))
          fn->removeAttr(attr.getName());
    for (LLVM::LLVMFuncOp fn :
         llvm::to_vector(host.getOps<LLVM::LLVMFuncOp>())) {
      if (!fn.isExternal() || hooks.contains(fn) ||
          fn.getSymName().starts_with("llvm."))
        continue;
      // A libdevice function with a C library twin (silu's __nv_expf) calls
      // the host's; its last bits may differ from the device's, as they do
      // between libm and libdevice (docs/gpu.md: silu has a tolerance).
      StringRef name = fn.getSymName();
      StringRef twin =
          name.consume_front("__nv_") ? hostMathFunction(name) : StringRef();
      if (!twin.empty()) {
        if (failed(SymbolTable::replaceAllSymbolUses(fn, b.getStringAttr(twin),
                                                     host)))
          return failure();
        fn.setSymName(twin);
        continue;
      }
      unsupported.insert("call of " + fn.getSymName().str());
    }

    // The new hooks only where used: a kernel that declares a shuffle or a
    // barrier runs its blocks as fibers.
    for (LLVM::LLVMFuncOp fn :
         {shuffleFn, barrierFn, workgroupFn, sharedAccessFn})
      if (SymbolTable::symbolKnownUseEmpty(fn, host))
        fn.erase();
    b.setInsertionPointToEnd(host.getBody());
    buildEntry(func);
    buildArgumentTable(loc);
    if (!unsupported.empty()) {
      std::string list = llvm::join(unsupported, ", ");
      auto type = LLVM::LLVMArrayType::get(b.getI8Type(), list.size() + 1);
      LLVM::GlobalOp::create(b, loc, type, /*isConstant=*/true,
                             LLVM::Linkage::External, emu::kUnsupportedGlobal,
                             b.getStringAttr(list + '\0'));
    }
    return success();
  }

private:
  /// Each workgroup (address space 3) global becomes the emulator's buffer
  /// of the running block: its `addressof`s calls of kWorkgroupFunction.
  LogicalResult replaceWorkgroupGlobals() {
    int32_t id = 0;
    for (LLVM::GlobalOp global :
         llvm::to_vector(host.getOps<LLVM::GlobalOp>())) {
      if (global.getAddrSpace() != 3)
        continue;
      int64_t bytes =
          static_cast<int64_t>(DataLayout::closest(global)
                                   .getTypeSize(global.getGlobalType())
                                   .getFixedValue());
      if (bytes == 0) {
        // Dynamic shared memory: its size is the launch's, which the
        // emulator is not told.
        unsupported.insert("dynamic workgroup memory " +
                           global.getSymName().str());
        continue;
      }
      int64_t align = global.getAlignment().value_or(16);
      SmallVector<LLVM::AddressOfOp> uses;
      host.walk([&](LLVM::AddressOfOp a) {
        if (a.getGlobalName() == global.getSymName())
          uses.push_back(a);
      });
      for (LLVM::AddressOfOp a : uses) {
        b.setInsertionPoint(a);
        Location loc = a.getLoc();
        Value args[] = {
            LLVM::ConstantOp::create(b, loc, b.getI32Type(), id),
            LLVM::ConstantOp::create(b, loc, b.getI64Type(), bytes),
            LLVM::ConstantOp::create(b, loc, b.getI64Type(), align)};
        Value buffer =
            LLVM::CallOp::create(b, loc, workgroupFn, args).getResult();
        Value cast = LLVM::AddrSpaceCastOp::create(b, loc, a.getType(), buffer);
        a.getResult().replaceAllUsesWith(cast);
        a.erase();
      }
      global.erase();
      ++id;
    }
    return success();
  }

  /// `op`'s `nvvm.shfl.sync` as a call of kShuffleFunction.
  void replaceShuffle(NVVM::ShflOp op) {
    b.setInsertionPoint(op);
    Location loc = op.getLoc();
    auto i32 = b.getI32Type();
    Value value = op.getVal();
    bool isFloat = !value.getType().isInteger(32);
    if (isFloat)
      value = LLVM::BitcastOp::create(b, loc, i32, value);
    Value args[] = {LLVM::ConstantOp::create(
                        b, loc, i32, static_cast<int32_t>(op.getKind())),
                    op.getThreadMask(), value, op.getOffset(),
                    op.getMaskAndClamp()};
    Value answer = LLVM::CallOp::create(b, loc, shuffleFn, args).getResult();
    Value bits = LLVM::TruncOp::create(b, loc, i32, answer);
    Value result = bits;
    if (isFloat)
      result = LLVM::BitcastOp::create(b, loc, op.getVal().getType(), bits);
    if (op.getReturnValueAndIsValid()) {
      Value shifted = LLVM::LShrOp::create(
          b, loc, answer,
          LLVM::ConstantOp::create(b, loc, b.getI64Type(), int64_t(32)));
      Value valid = LLVM::TruncOp::create(b, loc, b.getI1Type(), shifted);
      Value pair = LLVM::UndefOp::create(b, loc, op.getType());
      pair = LLVM::InsertValueOp::create(b, loc, pair, result,
                                         ArrayRef<int64_t>{0});
      result = LLVM::InsertValueOp::create(b, loc, pair, valid,
                                           ArrayRef<int64_t>{1});
    }
    op.getResult().replaceAllUsesWith(result);
    op.erase();
  }

  /// Whether `op` is a barrier of every thread of the block, barrier 0
  /// (what `gpu.barrier` lowers to).
  static bool isBlockBarrier(Operation *op) {
    if (isa<NVVM::Barrier0Op>(op))
      return true;
    auto barrier = dyn_cast<NVVM::BarrierOp>(op);
    if (!barrier || barrier.getNumberOfThreads() || barrier.getReductionOp() ||
        barrier.getReductionPredicate() || barrier->getNumResults())
      return false;
    if (Value id = barrier.getBarrierId()) {
      auto constant = id.getDefiningOp<LLVM::ConstantOp>();
      auto value =
          constant ? dyn_cast<IntegerAttr>(constant.getValue()) : IntegerAttr();
      return value && value.getInt() == 0;
    }
    return true;
  }

  void rewriteFunction(LLVM::LLVMFuncOp fn) {
    SmallVector<Operation *> ops;
    fn.walk([&](Operation *op) { ops.push_back(op); });
    for (Operation *op : ops) {
      if (std::optional<emu::Sreg> sreg = sregOf(op)) {
        b.setInsertionPoint(op);
        Value code = LLVM::ConstantOp::create(b, op->getLoc(), b.getI32Type(),
                                              static_cast<int32_t>(*sreg));
        auto call = LLVM::CallOp::create(b, op->getLoc(), sregFn, code);
        Value value = call.getResult();
        Type type = op->getResult(0).getType();
        if (type != value.getType())
          value = LLVM::ZExtOp::create(b, op->getLoc(), type, value);
        op->getResult(0).replaceAllUsesWith(value);
        op->erase();
        continue;
      }
      if (auto shuffle = dyn_cast<NVVM::ShflOp>(op)) {
        replaceShuffle(shuffle);
        continue;
      }
      if (isBlockBarrier(op)) {
        b.setInsertionPoint(op);
        LLVM::CallOp::create(b, op->getLoc(), barrierFn, ValueRange{});
        op->erase();
        continue;
      }
      if (op->getDialect() && op->getDialect()->getNamespace() ==
                                  NVVM::NVVMDialect::getDialectNamespace()) {
        unsupported.insert(op->getName().getStringRef().str());
        b.setInsertionPoint(op);
        for (Value result : op->getResults())
          result.replaceAllUsesWith(
              LLVM::PoisonOp::create(b, op->getLoc(), result.getType()));
        op->erase();
        continue;
      }
      if (auto load = dyn_cast<LLVM::LoadOp>(op))
        instrument(op, load.getAddr(), load.getType(), emu::Access::Load,
                   load.getAddrMutable());
      else if (auto store = dyn_cast<LLVM::StoreOp>(op))
        instrument(op, store.getAddr(), store.getValue().getType(),
                   emu::Access::Store, store.getAddrMutable());
      else if (auto rmw = dyn_cast<LLVM::AtomicRMWOp>(op))
        instrument(op, rmw.getPtr(), rmw.getVal().getType(),
                   emu::Access::Atomic, rmw.getPtrMutable());
      else if (auto cas = dyn_cast<LLVM::AtomicCmpXchgOp>(op))
        instrument(op, cas.getPtr(), cas.getVal().getType(),
                   emu::Access::Atomic, cas.getPtrMutable());
      else if (isa<LLVM::MemcpyOp, LLVM::MemmoveOp, LLVM::MemsetOp,
                   LLVM::MaskedLoadOp, LLVM::MaskedStoreOp, LLVM::masked_gather,
                   LLVM::masked_scatter>(op))
        unsupported.insert(op->getName().getStringRef().str());
    }
  }

  /// Reports the access of `op` (of a `type` value at `address`) to the
  /// emulator first and makes `op` use the address it returns. Accesses of
  /// the thread's own stack are not global memory: left alone.
  void instrument(Operation *op, Value address, Type type, emu::Access kind,
                  OpOperand &operand) {
    Provenance p = provenance.lookup(address);
    if (p.stack && !p.unknown && !p.shared && p.arguments == 0)
      return;
    b.setInsertionPoint(op);
    Location loc = op->getLoc();
    // The bytes the access moves (LLVM's store size): MLIR's data layout
    // rounds a vector's size up to a power of two of elements (a
    // vector<40xbf16> of a 5-tap conv's weights moves 80 bytes, not 128).
    int64_t bytes;
    if (auto vector = dyn_cast<VectorType>(type))
      bytes = vector.getNumElements() *
              static_cast<int64_t>(DataLayout::closest(op).getTypeSizeInBits(
                  vector.getElementType())) /
              8;
    else
      bytes = static_cast<int64_t>(
          DataLayout::closest(op).getTypeSize(type).getFixedValue());
    // The hooks take and return generic pointers.
    auto ptr = LLVM::LLVMPointerType::get(b.getContext());
    Value generic = address;
    if (address.getType() != ptr)
      generic = LLVM::AddrSpaceCastOp::create(b, loc, ptr, address);
    Value bytesValue = LLVM::ConstantOp::create(b, loc, b.getI64Type(), bytes);
    Value kindValue = LLVM::ConstantOp::create(b, loc, b.getI32Type(),
                                               static_cast<int32_t>(kind));
    Value checked;
    if (p.shared && !p.unknown && !p.stack && p.arguments == 0) {
      Value args[] = {generic, bytesValue, kindValue};
      checked = LLVM::CallOp::create(b, loc, sharedAccessFn, args).getResult();
    } else {
      // A pointer that may be the stack, workgroup or global memory: the
      // emulator cannot bound it by the arguments, only by what it can
      // reach.
      uint64_t mask = p.unknown || p.stack || p.shared ? 0 : p.arguments;
      Value args[] = {generic, bytesValue,
                      LLVM::ConstantOp::create(b, loc, b.getI64Type(),
                                               static_cast<int64_t>(mask)),
                      kindValue};
      checked = LLVM::CallOp::create(b, loc, accessFn, args).getResult();
    }
    if (address.getType() != ptr)
      checked =
          LLVM::AddrSpaceCastOp::create(b, loc, address.getType(), checked);
    operand.set(checked);
  }

  /// `void entry(void **params)`: unpacks cuLaunchKernel's parameter array
  /// and calls the kernel.
  void buildEntry(LLVM::LLVMFuncOp func) {
    Location loc = func.getLoc();
    auto ptr = LLVM::LLVMPointerType::get(b.getContext());
    auto entry = LLVM::LLVMFuncOp::create(
        b, loc, emu::kEntryPrefix + kernel.str(),
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(b.getContext()),
                                    {ptr}));
    Block *body = entry.addEntryBlock(b);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(body);
    SmallVector<Value> params;
    for (auto [i, type] : llvm::enumerate(func.getFunctionType().getParams())) {
      Value slot =
          LLVM::GEPOp::create(b, loc, ptr, ptr, body->getArgument(0),
                              ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
      Value address = LLVM::LoadOp::create(b, loc, ptr, slot);
      params.push_back(LLVM::LoadOp::create(b, loc, type, address));
    }
    LLVM::CallOp::create(b, loc, func, params);
    LLVM::ReturnOp::create(b, loc, ValueRange{});
  }

  void buildArgumentTable(Location loc) {
    SmallVector<int64_t> table = {emu::kVersion,
                                  static_cast<int64_t>(arguments.size())};
    for (const ArgumentLayout &a : arguments)
      table.append({a.firstParam, a.rank, a.elementBytes});
    auto i64 = b.getI64Type();
    auto type = LLVM::LLVMArrayType::get(i64, table.size());
    auto value = DenseElementsAttr::get(
        RankedTensorType::get({static_cast<int64_t>(table.size())}, i64),
        ArrayRef<int64_t>(table));
    LLVM::GlobalOp::create(b, loc, type, /*isConstant=*/true,
                           LLVM::Linkage::External,
                           emu::kArgsPrefix + kernel.str(), value);
  }

  ModuleOp host;
  StringRef kernel;
  ArrayRef<ArgumentLayout> arguments;
  OpBuilder b;
  LLVM::LLVMFuncOp sregFn, accessFn, shuffleFn, barrierFn, workgroupFn,
      sharedAccessFn;
  /// The emulator's functions (declared, never rewritten).
  llvm::SmallPtrSet<Operation *, 8> hooks;
  DenseMap<Value, Provenance> provenance;
  llvm::SetVector<std::string, std::vector<std::string>, std::set<std::string>>
      unsupported;
};

struct EmitHostFormPass : impl::EmitHostFormPassBase<EmitHostFormPass> {
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<LLVM::LLVMDialect>();
    registerBuiltinDialectTranslation(registry);
    registerLLVMDialectTranslation(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    Builder attrs(&getContext());
    auto record = [&](DictionaryAttr entry, LLVM::LLVMFuncOp kernel,
                      NamedAttrList &update) -> LogicalResult {
      SmallVector<ArgumentLayout> arguments;
      int64_t param = 0;
      for (Attribute a : cast<ArrayAttr>(entry.get(mk::kArgs))) {
        auto d = cast<DictionaryAttr>(a);
        auto i = [&](StringRef k) {
          return cast<IntegerAttr>(d.get(k)).getInt();
        };
        arguments.push_back({param, i(mk::kRank), i(mk::kElementBytes)});
        param += i(mk::kParams);
      }
      std::string text;
      if (failed(hostForm(kernel->getParentOfType<mlir::gpu::GPUModuleOp>(),
                          kernel.getSymName(), arguments, text)))
        return failure();
      update.set(mk::kHostForm, attrs.getStringAttr(text));
      return success();
    };
    if (failed(updateKernelRecords(module, record)))
      signalPassFailure();
  }

  /// The host form of kernel `name` of `gpuModule`, as LLVM IR text.
  LogicalResult hostForm(mlir::gpu::GPUModuleOp gpuModule, StringRef name,
                         ArrayRef<ArgumentLayout> arguments,
                         std::string &text) {
    OwningOpRef<ModuleOp> host = ModuleOp::create(gpuModule.getLoc(), name);
    OpBuilder b(&getContext());
    b.setInsertionPointToEnd(host->getBody());
    for (Operation &op : gpuModule.getBody()->getOperations())
      b.clone(op);
    if (failed(HostFormBuilder(*host, name, arguments).build()))
      return failure();
    llvm::LLVMContext context;
    std::unique_ptr<llvm::Module> ir =
        translateModuleToLLVMIR(*host, context, name);
    if (!ir)
      return gpuModule.emitError()
             << "kernel " << name
             << ": its host form does not translate to LLVM IR";
    text.clear();
    llvm::raw_string_ostream os(text);
    ir->print(os, nullptr);
    return success();
  }
};

} // namespace

} // namespace inkling::gpu
