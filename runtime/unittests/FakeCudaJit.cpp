//===- FakeCudaJit.cpp - Compiling host forms for the fake driver ---------===//
//
// loadHostForm: the host form's LLVM IR is parsed, optimized at -O2 and
// compiled for this machine by LLVM's ORC JIT (one JITDylib per module), its
// calls of the emulator (EmulationAbi.h) bound to FakeCudaEmulator.cpp and
// anything else to this process's symbols (libm). Without LLVM (the runtime
// built alone) it reports that it cannot execute.
//
//===----------------------------------------------------------------------===//

#include "FakeCudaEmulator.h"

#include "inkling/Runtime/EmulationAbi.h"

#ifdef INKLING_FAKE_CUDA_EXECUTES
#include "llvm/ExecutionEngine/Orc/AbsoluteSymbols.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IRReader/IRReader.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#endif

#include <mutex>

namespace emu = inkling::emulation;

namespace inkling::fakecuda {

// The emulator's entry points the host forms call (FakeCudaEmulator.cpp).
extern "C" int32_t inklingFakeCudaSreg(int32_t which);
extern "C" void *inklingFakeCudaAccess(void *address, int64_t bytes,
                                       int64_t arguments, int32_t kind);
extern "C" int64_t inklingFakeCudaShuffle(int32_t kind, int32_t mask,
                                          int32_t value, int32_t b, int32_t c);
extern "C" void inklingFakeCudaBarrier();
extern "C" void *inklingFakeCudaWorkgroup(int32_t id, int64_t bytes,
                                          int64_t align);
extern "C" void *inklingFakeCudaSharedAccess(void *address, int64_t bytes,
                                             int32_t kind);

#ifdef INKLING_FAKE_CUDA_EXECUTES

namespace {

/// One process-wide JIT; every module a JITDylib of it.
struct Jit {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::string error;
  uint64_t modules = 0;
};

Jit &jit() {
  static Jit *instance = [] {
    auto *j = new Jit(); // never destroyed: code may run late
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    auto created = llvm::orc::LLJITBuilder().create();
    if (!created) {
      j->error = llvm::toString(created.takeError());
      return j;
    }
    j->jit = std::move(*created);
    llvm::orc::JITDylib &main = j->jit->getMainJITDylib();
    llvm::orc::MangleAndInterner mangle(j->jit->getExecutionSession(),
                                        j->jit->getDataLayout());
    llvm::orc::SymbolMap emulator;
    auto bind = [&](const char *name, auto *function) {
      emulator[mangle(name)] = {llvm::orc::ExecutorAddr::fromPtr(function),
                                llvm::JITSymbolFlags::Exported};
    };
    bind(emu::kSregFunction, &inklingFakeCudaSreg);
    bind(emu::kAccessFunction, &inklingFakeCudaAccess);
    bind(emu::kShuffleFunction, &inklingFakeCudaShuffle);
    bind(emu::kBarrierFunction, &inklingFakeCudaBarrier);
    bind(emu::kWorkgroupFunction, &inklingFakeCudaWorkgroup);
    bind(emu::kSharedAccessFunction, &inklingFakeCudaSharedAccess);
    if (llvm::Error e = main.define(llvm::orc::absoluteSymbols(emulator))) {
      j->error = llvm::toString(std::move(e));
      j->jit.reset();
      return j;
    }
    auto process =
        llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
            j->jit->getDataLayout().getGlobalPrefix());
    if (!process) {
      j->error = llvm::toString(process.takeError());
      j->jit.reset();
      return j;
    }
    main.addGenerator(std::move(*process));
    return j;
  }();
  return *instance;
}

/// The -O2 pipeline, as a real driver optimizes PTX before running it.
void optimize(llvm::Module &module) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder builder;
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2)
      .run(module, mam);
}

class JitModule final : public HostModule {
public:
  JitModule(llvm::orc::JITDylib &dylib) : dylib_(dylib) {}
  ~JitModule() override {
    std::lock_guard<std::mutex> lock(mutex());
    llvm::consumeError(jit().jit->getExecutionSession().removeJITDylib(dylib_));
  }
  const HostKernel *kernel(const std::string &name) const override {
    for (const HostKernel &k : kernels_)
      if (k.name == name)
        return &k;
    return nullptr;
  }
  static std::mutex &mutex() {
    static std::mutex m;
    return m;
  }

  llvm::orc::JITDylib &dylib_;
  std::vector<HostKernel> kernels_;
};

} // namespace

bool canExecute() { return true; }

std::unique_ptr<HostModule>
loadHostForm(const std::string &ir, const std::vector<std::string> &entries,
             std::string &error) {
  std::lock_guard<std::mutex> lock(JitModule::mutex());
  Jit &j = jit();
  if (!j.jit) {
    error = "the host JIT could not be created: " + j.error;
    return nullptr;
  }
  auto context = std::make_unique<llvm::LLVMContext>();
  llvm::SMDiagnostic diagnostic;
  std::unique_ptr<llvm::Module> module = llvm::parseIR(
      llvm::MemoryBufferRef(ir, "host form"), diagnostic, *context);
  if (!module) {
    std::string text;
    llvm::raw_string_ostream os(text);
    diagnostic.print("host form", os, /*ShowColors=*/false);
    error = "the host form does not parse: " + text;
    return nullptr;
  }
  if (llvm::GlobalVariable *list =
          module->getGlobalVariable(emu::kUnsupportedGlobal)) {
    std::string names = "?";
    if (auto *data = llvm::dyn_cast_or_null<llvm::ConstantDataSequential>(
            list->getInitializer()))
      names = data->getAsCString().str();
    error = "the kernel uses what the emulator cannot execute: " + names;
    return nullptr;
  }
  // The emulator executes what the device would: no code of the module may
  // be missing from it.
  for (const std::string &entry : entries)
    if (!module->getFunction(emu::kEntryPrefix + entry) ||
        !module->getGlobalVariable(emu::kArgsPrefix + entry)) {
      error = "the host form has no entry for kernel " + entry;
      return nullptr;
    }
  // A module that declares a warp shuffle or a barrier runs its blocks'
  // threads as fibers.
  auto calls = [&](const char *name) {
    llvm::Function *f = module->getFunction(name);
    return f && !f->use_empty();
  };
  bool synchronizes =
      calls(emu::kShuffleFunction) || calls(emu::kBarrierFunction);
  module->setDataLayout(j.jit->getDataLayout());
  module->setTargetTriple(j.jit->getTargetTriple());
  optimize(*module);

  auto dylib =
      j.jit->createJITDylib("inkling_emu_" + std::to_string(++j.modules));
  if (!dylib) {
    error = llvm::toString(dylib.takeError());
    return nullptr;
  }
  llvm::orc::JITDylib &jd = *dylib;
  jd.addToLinkOrder(j.jit->getMainJITDylib());
  auto loaded = std::make_unique<JitModule>(jd);
  if (llvm::Error e = j.jit->addIRModule(
          jd,
          llvm::orc::ThreadSafeModule(std::move(module), std::move(context)))) {
    error = "the host form does not compile: " + llvm::toString(std::move(e));
    return nullptr;
  }
  for (const std::string &entry : entries) {
    auto fn = j.jit->lookup(jd, emu::kEntryPrefix + entry);
    if (!fn) {
      error = "the host form of " + entry +
              " does not link: " + llvm::toString(fn.takeError());
      return nullptr;
    }
    auto table = j.jit->lookup(jd, emu::kArgsPrefix + entry);
    if (!table) {
      error = "the host form of " + entry +
              " does not link: " + llvm::toString(table.takeError());
      return nullptr;
    }
    HostKernel kernel;
    kernel.name = entry;
    kernel.entry = fn->toPtr<void (*)(void **)>();
    kernel.synchronizes = synchronizes;
    const int64_t *words = table->toPtr<const int64_t *>();
    if (words[0] != emu::kVersion) {
      error = "the host form of " + entry + " has version " +
              std::to_string(words[0]) + ", the emulator reads " +
              std::to_string(emu::kVersion);
      return nullptr;
    }
    for (int64_t a = 0; a < words[1]; ++a)
      kernel.arguments.push_back(
          {words[2 + 3 * a], words[3 + 3 * a], words[4 + 3 * a]});
    loaded->kernels_.push_back(std::move(kernel));
  }
  return loaded;
}

#else // !INKLING_FAKE_CUDA_EXECUTES

bool canExecute() { return false; }

std::unique_ptr<HostModule> loadHostForm(const std::string &,
                                         const std::vector<std::string> &,
                                         std::string &error) {
  error = "this fake CUDA driver was built without LLVM and cannot execute "
          "kernels";
  return nullptr;
}

#endif

} // namespace inkling::fakecuda
