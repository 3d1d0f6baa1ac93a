//===- Compile.cpp - Lower and JIT a layer function, or emit its kernels --===//
//
// LayerProgram::compile (`inkling-lower-to-cpu` and the JIT, JitEngine.h)
// and LayerProgram::compileKernels (`inkling-lower-to-nvvm` and the kernel
// bundle), with what both share: the fusion option and checked mode's
// status argument.
//
//===----------------------------------------------------------------------===//

#include "LayerProgramImpl.h"

#include "inkling/Dialect/SConv/IR/SConvOps.h"
#include "inkling/Dialect/SConv/Transforms/Passes.h"
#include "inkling/KernelBundle.h"
#include "inkling/Pipelines/Pipelines.h"
#include "inkling/Target/CPU/LoopStrategy.h"
#include "inkling/Target/GPU/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/raw_ostream.h"

#include <omp.h>

using namespace inkling;
using namespace inkling::exec;

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

/// What compile and compileKernels do first: checked mode's status
/// argument and the fusion strategy.
bool LayerProgram::Impl::prepareLowering(
    const CompileOptions &options,
    std::optional<sconv::FusionStrategy> &strategy, std::string &error) {
  if (options.checked && options.addStatus && !addStatusArgument(error))
    return false;
  return parseFusion(options.fusion, strategy, error);
}

// The threaded nests call libomp's __kmpc_* entry points, which the JIT
// resolves among the process's global symbols: this library links libomp
// (and this call keeps the link); `makeOpenMPVisible` covers a process that
// loaded this library with local symbols.
int LayerProgram::defaultThreadCount() { return omp_get_max_threads(); }

bool LayerProgram::compile(const CompileOptions &options, std::string &error) {
  Impl &impl = *impl_;
  mlir::MLIRContext &ctx = impl.context();
  FirstError diag(ctx);

  if (Status s = checkThreadCount(options.threads); !s) {
    error = s.message();
    return false;
  }
  std::optional<sconv::FusionStrategy> strategy;
  if (!impl.prepareLowering(options, strategy, error))
    return false;
  if (options.threads != 1 && !makeOpenMPVisible(error))
    return false;
  mlir::PassManager pm(&ctx);
  LowerToCPUOptions lower;
  lower.checked = options.checked;
  lower.emitCInterface = true;
  lower.threads = options.threads;
  lower.minParallelIterations = options.minParallelIterations;
  // The ExecutionEngine compiles for the host CPU and its features.
  lower.avx512Bf16 = cpu::hostHasAvx512Bf16();
  if (strategy)
    lower.fusion = *strategy;
  lower.blockSize = impl.geometryBlockSize;
  lower.crossLayers = impl.geometryLayers;
  buildLowerToCPUPipeline(pm, lower);
  if (mlir::failed(pm.run(*impl.module))) {
    error = diag.message.empty() ? impl.path + ": inkling-lower-to-cpu failed"
                                 : diag.message;
    return false;
  }
  JitOptions jitOptions;
  jitOptions.optLevel = options.optLevel;
  jitOptions.cacheDir = options.cacheDir;
  auto engine = JitEngine::create(*impl.module, jitOptions);
  if (!engine) {
    llvm::raw_string_ostream os(error);
    os << impl.path << ": JIT: " << engine.takeError();
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

CacheOutcome LayerProgram::cacheOutcome() const {
  return impl_->engine ? impl_->engine->cacheOutcome() : CacheOutcome::Off;
}

std::string LayerProgram::cacheProblem() const {
  return impl_->engine ? impl_->engine->cacheProblem() : std::string();
}

bool LayerProgram::compileKernels(const CompileOptions &options,
                                  const KernelTarget &target,
                                  KernelBundle &bundle, std::string &error) {
  Impl &impl = *impl_;
  FirstError diag(impl.context());
  if (error = checkKernelTarget(target); !error.empty())
    return false;
  std::optional<sconv::FusionStrategy> strategy;
  if (!impl.prepareLowering(options, strategy, error))
    return false;
  // The GPU lowering with the same fusion as the CPU path (both pipelines
  // default to conv-insert). The module stays sconv IR.
  KernelCompilerOptions nvvm;
  static_cast<KernelTarget &>(nvvm) = target;
  if (strategy)
    nvvm.fusion = *strategy;
  nvvm.checked = options.checked;
  nvvm.blockSize = impl.geometryBlockSize;
  nvvm.crossLayers = impl.geometryLayers;
  mlir::FailureOr<KernelBundle> compiled =
      compileKernelBundle(*impl.module, nvvm);
  if (mlir::failed(compiled)) {
    error = diag.message.empty() ? impl.path + ": inkling-lower-to-nvvm failed"
                                 : diag.message;
    return false;
  }
  bundle = std::move(*compiled);
  return true;
}

llvm::Error LayerProgram::compile(const CompileOptions &options) {
  std::string error;
  if (!compile(options, error))
    return llvm::createStringError(error);
  return llvm::Error::success();
}

llvm::Expected<KernelBundle>
LayerProgram::compileKernels(const CompileOptions &options,
                             const KernelTarget &target) {
  std::string error;
  KernelBundle bundle;
  if (!compileKernels(options, target, bundle, error))
    return llvm::createStringError(error);
  return bundle;
}
