//===- JitEngine.cpp - The CPU JIT, with an on-disk object cache ----------===//

#include "inkling/ExecutionEngine/JitEngine.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ExecutionEngine/Orc/CompileUtils.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h"
#include "llvm/ExecutionEngine/SectionMemoryManager.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <mutex>

using namespace inkling::exec;
using llvm::orc::JITTargetMachineBuilder;

namespace {

/// The name of the packed wrapper of function `name`, as MLIR's
/// ExecutionEngine names it (callers may move between the two).
std::string packedName(llvm::StringRef name) { return ("_mlir_" + name).str(); }

/// Defines `void _mlir_<f>(ptr args)` for every external function `f`:
/// it loads argument i from `*args[i]`, calls `f`, and stores a result
/// through `args[n]`.
void definePackedWrappers(llvm::Module &module) {
  llvm::LLVMContext &ctx = module.getContext();
  llvm::IRBuilder<> builder(ctx);
  llvm::SmallVector<llvm::Function *> functions;
  for (llvm::Function &function : module)
    if (!function.isDeclaration() && !function.hasLocalLinkage())
      functions.push_back(&function);
  auto *wrapperType =
      llvm::FunctionType::get(builder.getVoidTy(), {builder.getPtrTy()}, false);
  for (llvm::Function *function : functions) {
    auto *wrapper =
        llvm::Function::Create(wrapperType, llvm::GlobalValue::ExternalLinkage,
                               packedName(function->getName()), module);
    builder.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", wrapper));
    llvm::Value *args = wrapper->getArg(0);
    auto slot = [&](unsigned index) {
      llvm::Value *address =
          builder.CreateConstGEP1_64(builder.getPtrTy(), args, index);
      return builder.CreateLoad(builder.getPtrTy(), address);
    };
    llvm::SmallVector<llvm::Value *> values;
    for (llvm::Argument &arg : function->args())
      values.push_back(builder.CreateLoad(arg.getType(), slot(arg.getArgNo())));
    llvm::CallInst *call = builder.CreateCall(function, values);
    if (!call->getType()->isVoidTy())
      builder.CreateStore(call, slot(function->arg_size()));
    builder.CreateRetVoid();
  }
}

/// How `create` optimizes and compiles a module, in the cache key: a change
/// to either (another pass pipeline, other target options) must change this
/// string, or the cache would serve the objects of the old way.
constexpr const char *kCompileRecipe =
    "mlir::makeOptimizingTransformer(opt, size 0, no target machine); "
    "TMOwningSimpleCompiler from JITTargetMachineBuilder::detectHost()";

/// What besides the IR decides the object: the recipe, the target machine
/// the JIT's compiler is made like (the same builder) and the levels.
std::string targetDescription(const llvm::TargetMachine &machine,
                              unsigned optLevel) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << kCompileRecipe << '\n'
     << machine.getTargetTriple().str() << '\n'
     << machine.getTargetCPU() << '\n'
     << machine.getTargetFeatureString() << '\n'
     << "opt " << optLevel << ", codegen "
     << static_cast<int>(machine.getOptLevel()) << ", code model "
     << static_cast<int>(machine.getCodeModel()) << ", relocation "
     << static_cast<int>(machine.getRelocationModel()) << ", fp fusion "
     << static_cast<int>(machine.Options.AllowFPOpFusion);
  return text;
}

} // namespace

JitEngine::~JitEngine() = default;

std::string JitEngine::cacheKey() const {
  return cache_ ? cache_->key() : std::string();
}

std::string JitEngine::cacheProblem() const {
  return cache_ ? cache_->problem() : std::string();
}

llvm::Expected<std::unique_ptr<JitEngine>>
JitEngine::create(mlir::ModuleOp module, const JitOptions &options) {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  std::unique_ptr<JitEngine> engine(new JitEngine());

  auto jtmb = JITTargetMachineBuilder::detectHost();
  if (!jtmb)
    return jtmb.takeError();
  auto tm = jtmb->createTargetMachine();
  if (!tm)
    return tm.takeError();

  auto ctx = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> llvmModule =
      mlir::translateModuleToLLVMIR(module, *ctx);
  if (!llvmModule)
    return llvm::createStringError("could not translate the module to "
                                   "LLVM IR");
  llvmModule->setDataLayout((*tm)->createDataLayout());
  llvmModule->setTargetTriple((*tm)->getTargetTriple());
  definePackedWrappers(*llvmModule);
  llvm::DataLayout dataLayout = llvmModule->getDataLayout();

  // The key is the IR as the optimizer would get it.
  if (std::string dir = resolveCacheDir(options.cacheDir); !dir.empty()) {
    std::string irText;
    llvm::raw_string_ostream os(irText);
    llvmModule->print(os, nullptr);
    engine->cache_ = std::make_unique<DiskObjectCache>(
        std::move(dir),
        DiskObjectCache::hashKey(irText,
                                 targetDescription(**tm, options.optLevel)),
        resolveCachePruning(options.cachePruning));
    engine->outcome_ =
        engine->cache_->lookup() ? CacheOutcome::Hit : CacheOutcome::Miss;
  }
  // A hit's object is already optimized: the IR only names its symbols.
  if (engine->outcome_ != CacheOutcome::Hit) {
    auto optimize = mlir::makeOptimizingTransformer(options.optLevel,
                                                    /*sizeLevel=*/0,
                                                    /*targetMachine=*/nullptr);
    if (llvm::Error error = optimize(llvmModule.get()))
      return std::move(error);
  }

  llvm::ObjectCache *cache = engine->cache_.get();
  auto jit =
      llvm::orc::LLJITBuilder()
          .setJITTargetMachineBuilder(*jtmb)
          .setDataLayout(dataLayout)
          .setCompileFunctionCreator(
              [cache](JITTargetMachineBuilder builder)
                  -> llvm::Expected<
                      std::unique_ptr<llvm::orc::IRCompileLayer::IRCompiler>> {
                auto machine = builder.createTargetMachine();
                if (!machine)
                  return machine.takeError();
                return std::make_unique<llvm::orc::TMOwningSimpleCompiler>(
                    std::move(*machine), cache);
              })
          .setObjectLinkingLayerCreator(
              [](llvm::orc::ExecutionSession &session)
                  -> llvm::Expected<std::unique_ptr<llvm::orc::ObjectLayer>> {
                return std::make_unique<llvm::orc::RTDyldObjectLinkingLayer>(
                    session, [](const llvm::MemoryBuffer &) {
                      return std::make_unique<llvm::SectionMemoryManager>();
                    });
              })
          .create();
  if (!jit)
    return jit.takeError();
  engine->jit_ = std::move(*jit);

  // libomp's entry points, libm and the rest come from the process.
  auto processSymbols =
      llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
          dataLayout.getGlobalPrefix());
  if (!processSymbols)
    return processSymbols.takeError();
  engine->jit_->getMainJITDylib().addGenerator(std::move(*processSymbols));

  if (llvm::Error error = engine->jit_->addIRModule(
          llvm::orc::ThreadSafeModule(std::move(llvmModule), std::move(ctx))))
    return std::move(error);
  return engine;
}

llvm::Expected<void *> JitEngine::lookup(llvm::StringRef name) {
  auto address = jit_->lookup(name);
  if (!address)
    return address.takeError();
  return address->toPtr<void *>();
}

llvm::Expected<void (*)(void **)>
JitEngine::lookupPacked(llvm::StringRef name) {
  auto address = lookup(packedName(name));
  if (!address)
    return address.takeError();
  return reinterpret_cast<void (*)(void **)>(*address);
}
