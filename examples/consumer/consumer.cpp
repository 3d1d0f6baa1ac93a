//===- consumer.cpp - An ML compiler that links Inkling -------------------===//
//
// Built against the *installed* package only (find_package(Inkling)): builds
// one layer's sconv IR with the C++ builders, lowers it to PTX (the NVVM
// pipeline, and the cached in-memory kernel bundle the runtime's CUDA
// launcher reads) and to the CPU, JIT-compiles the CPU code with MLIR's
// ExecutionEngine and runs three steps of one sequence through it (prefill
// of 3 tokens, then 2 decode tokens, the second across a block boundary),
// checking every output and the whole cache against the runtime's scalar
// reference (inkling/Runtime/Reference.h).
//
// README's "Use it from your compiler" shows the marked region of main().
//
//===----------------------------------------------------------------------===//

#include "inkling/Dialect/SConv/IR/SConvOps.h"
#include "inkling/InitInkling.h"
#include "inkling/KernelBundle.h"
#include "inkling/Pipelines/Pipelines.h"
#include "inkling/Runtime/KernelManifest.h"
#include "inkling/Runtime/Layout.h"
#include "inkling/Runtime/Reference.h"
#include "inkling/Version.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/ExecutionEngine/CRunnerUtils.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/Support/TargetSelect.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

namespace {

using namespace inkling;

// The layer: 2 KV heads of 16, hidden 64, kernel 4 (head row D = 128,
// block size N = 4); K stream only: conv then insert.
constexpr int64_t kHeads = 2, kHeadDim = 16, kKernel = 4;

/// `func.func @layer(buffer, qsl, num_computed, block_table, slots, k, wk,
/// yk) attributes {llvm.emit_c_interface}` with sconv.bind, sconv.step,
/// sconv.conv and sconv.insert, built with the ops' builders.
mlir::OwningOpRef<mlir::ModuleOp> buildLayer(mlir::MLIRContext &context) {
  mlir::OpBuilder b(&context);
  mlir::Location loc = b.getUnknownLoc();
  auto layout = sconv::LayoutAttr::get(&context, /*kvHeads=*/kHeads,
                                       /*headDim=*/kHeadDim, /*hidden=*/64,
                                       /*kernel=*/kKernel, /*tp=*/1);
  int64_t pageBytes = layout.getDerived().pageBytes();
  int64_t dyn = mlir::ShapedType::kDynamic;
  mlir::Type bf16 = b.getBF16Type();
  auto x = mlir::MemRefType::get({dyn, kHeads, kHeadDim}, bf16);
  auto weights = mlir::MemRefType::get({kHeads * kHeadDim, kKernel}, bf16);
  mlir::Type args[] = {
      mlir::MemRefType::get({dyn}, b.getI8Type()),       // cache buffer
      mlir::MemRefType::get({dyn}, b.getI32Type()),      // query_start_loc
      mlir::MemRefType::get({dyn}, b.getI32Type()),      // num_computed
      mlir::MemRefType::get({dyn, dyn}, b.getI32Type()), // block_table
      mlir::MemRefType::get({dyn}, b.getI64Type()),      // slot_mapping
      x,                                                 // k
      weights,                                           // wk
      x};                                                // yk

  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  auto func =
      mlir::func::FuncOp::create(b, loc, "layer", b.getFunctionType(args, {}));
  func->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    func.setArgAttr(i, "llvm.noalias", b.getUnitAttr()); // distinct buffers
  mlir::Block *body = func.addEntryBlock();
  b.setInsertionPointToStart(body);
  auto arg = [&](int i) { return body->getArgument(i); };

  mlir::Value cache = sconv::BindOp::create(b, loc, arg(0), layout, pageBytes);
  mlir::Value step = sconv::StepOp::create(
      b, loc, sconv::StepType::get(&context), arg(1), arg(2), arg(3), arg(4),
      /*token_seq=*/mlir::Value(), /*status=*/mlir::Value());
  sconv::ConvOp::create(b, loc, arg(5), arg(6), /*bias=*/mlir::Value(), cache,
                        step, arg(7), sconv::Stream::K, layout);
  sconv::InsertOp::create(b, loc, arg(5), cache, sconv::Stream::K, step,
                          layout);
  mlir::func::ReturnOp::create(b, loc);
  return module;
}

int failures = 0;
void check(bool ok, const char *what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what);
  failures += !ok;
}

//===----------------------------------------------------------------------===//
// Data and the reference
//===----------------------------------------------------------------------===//

using reference::floatToBf16;

template <typename T, int N>
StridedMemRefType<T, N> memref(T *data, std::array<int64_t, N> sizes) {
  StridedMemRefType<T, N> d;
  d.basePtr = d.data = data;
  d.offset = 0;
  int64_t stride = 1;
  for (int i = N - 1; i >= 0; --i) {
    d.sizes[i] = sizes[i];
    d.strides[i] = stride;
    stride *= sizes[i];
  }
  return d;
}

using LayerFn = void (*)(
    StridedMemRefType<int8_t, 1> *, StridedMemRefType<int32_t, 1> *,
    StridedMemRefType<int32_t, 1> *, StridedMemRefType<int32_t, 2> *,
    StridedMemRefType<int64_t, 1> *, StridedMemRefType<uint16_t, 3> *,
    StridedMemRefType<uint16_t, 2> *, StridedMemRefType<uint16_t, 3> *);

/// Runs `layer` for one sequence over three steps and compares each output
/// and the whole cache with the runtime's reference run on a copy of the
/// cache (conv, then insert, as the layer does).
void runSteps(LayerFn layer, int64_t pageBytes) {
  LayoutConfig config;
  config.kvHeads = kHeads;
  config.headDim = kHeadDim;
  config.hidden = 64;
  config.kernel = kKernel;
  StatusOr<Layout> layout = Layout::derive(config);
  check(layout.isOk() && layout->pageBytes() == pageBytes,
        "the runtime's layout has the dialect's page size");
  if (!layout.isOk() || layout->pageBytes() != pageBytes)
    return;
  constexpr int64_t channels = kHeads * kHeadDim;
  const int64_t numBlocks = 2, pageElements = pageBytes / 2;
  // The engine's cache allocation, 64-byte aligned.
  std::vector<uint64_t> storage(numBlocks * pageBytes / 8 + 8, 0);
  auto *buffer = reinterpret_cast<int8_t *>(
      (reinterpret_cast<uintptr_t>(storage.data()) + 63) & ~uintptr_t(63));
  auto *cache = reinterpret_cast<uint16_t *>(buffer);
  std::vector<uint16_t> expectedCache(numBlocks * pageElements, 0);
  std::vector<uint16_t> w(channels * kKernel);
  for (int64_t ch = 0; ch < channels; ++ch)
    for (int64_t j = 0; j < kKernel; ++j)
      w[ch * kKernel + j] = floatToBf16(float((ch + 3 * j) % 7 - 3) / 4.0f);

  const int tokensPerStep[] = {3, 1, 1};
  int32_t position = 0;
  for (int tokens : tokensPerStep) {
    std::vector<uint16_t> x(tokens * channels), y(tokens * channels, 0);
    for (int t = 0; t < tokens; ++t)
      for (int64_t ch = 0; ch < channels; ++ch)
        x[t * channels + ch] =
            floatToBf16(float((7 * (position + t) + ch) % 11 - 5) / 8.0f);
    reference::StepMetadata step;
    step.queryStartLoc = {0, tokens};
    step.numComputed = {position};
    step.blockTable = {0, 1};
    step.blockTableWidth = 2;
    for (int t = 0; t < tokens; ++t)
      step.slotMapping.push_back(position + t); // blocks 0, 1: slot == position

    auto mBuffer = memref<int8_t, 1>(buffer, {numBlocks * pageBytes});
    auto mQsl = memref<int32_t, 1>(step.queryStartLoc.data(), {2});
    auto mComputed = memref<int32_t, 1>(step.numComputed.data(), {1});
    auto mTable = memref<int32_t, 2>(step.blockTable.data(), {1, 2});
    auto mSlots = memref<int64_t, 1>(step.slotMapping.data(), {tokens});
    auto mX = memref<uint16_t, 3>(x.data(), {tokens, kHeads, kHeadDim});
    auto mW = memref<uint16_t, 2>(w.data(), {channels, kKernel});
    auto mY = memref<uint16_t, 3>(y.data(), {tokens, kHeads, kHeadDim});
    layer(&mBuffer, &mQsl, &mComputed, &mTable, &mSlots, &mX, &mW, &mY);

    std::vector<uint16_t> expected(tokens * channels, 0);
    reference::CacheBuffer refCache{expectedCache.data(), pageElements,
                                    numBlocks};
    reference::referenceConv(*layout, Stream::K, {x.data(), channels}, w.data(),
                             step, refCache, {}, {expected.data(), channels});
    reference::referenceInsert(*layout, Stream::K, {x.data(), channels}, step,
                               refCache);
    int mismatches = 0;
    for (int64_t e = 0; e < tokens * channels; ++e)
      mismatches += y[e] != expected[e];
    std::printf("  step at position %d: %d tokens, %d mismatches\n", position,
                tokens, mismatches);
    check(mismatches == 0, "CPU conv output equals the reference");
    position += tokens;
  }
  // The cache holds every position's K row, at offset 0 of head row h, and
  // nothing else changed.
  check(std::equal(expectedCache.begin(), expectedCache.end(), cache),
        "CPU insert wrote the reference's cache");
}

} // namespace

int main() {
  std::printf("Inkling %s (MLIR %s), headers %s\n", inkling::getVersion(),
              inkling::getMLIRVersion(), INKLING_VERSION);
  check(std::strcmp(inkling::getVersion(), INKLING_VERSION) == 0,
        "library and header versions agree");
  check(std::strcmp(inkling::getMLIRVersion(), LLVM_VERSION_STRING) == 0,
        "Inkling was built against this program's MLIR");

  // [readme-snippet-begin]
  // Once per process: Inkling's passes and pipelines in MLIR's registries,
  // its dialects (and those its lowerings produce) in your context.
  inkling::registerAllPasses();
  mlir::MLIRContext context;
  inkling::registerAllDialects(context);
  context.loadAllAvailableDialects();

  // A layer's sconv IR, built with the ops' builders (see buildLayer).
  mlir::OwningOpRef<mlir::ModuleOp> layer = buildLayer(context);

  // GPU: the NVVM pipeline with typed options, in your PassManager.
  mlir::OwningOpRef<mlir::ModuleOp> gpu = layer->clone();
  mlir::PassManager gpuPm(&context);
  inkling::LowerToNVVMOptions gpuOptions;
  gpuOptions.chip = "sm_90";
  gpuOptions.format = "isa"; // PTX text; "bin" runs ptxas for a cubin
  inkling::buildLowerToNVVMPipeline(gpuPm, gpuOptions);
  bool gpuOk = mlir::succeeded(gpuPm.run(*gpu));

  // ... or a kernel bundle in memory (objects + manifest.json for the
  // runtime's CUDA launcher), compiled once per layout and op.
  inkling::KernelCompiler kernels(context);
  llvm::Expected<std::shared_ptr<const inkling::KernelBundle>> bundle =
      kernels.compile(*layer);

  // CPU: the CPU pipeline, then MLIR's ExecutionEngine.
  mlir::OwningOpRef<mlir::ModuleOp> cpu = layer->clone();
  mlir::PassManager cpuPm(&context);
  inkling::LowerToCPUOptions cpuOptions;
  cpuOptions.emitCInterface = true; // _mlir_ciface_layer(memref*...)
  inkling::buildLowerToCPUPipeline(cpuPm, cpuOptions);
  bool cpuOk = mlir::succeeded(cpuPm.run(*cpu));
  // [readme-snippet-end]

  // The PTX of the NVVM pipeline.
  check(gpuOk, "inkling-lower-to-nvvm ran");
  std::string ptx;
  gpu->walk([&](mlir::gpu::BinaryOp binary) {
    for (mlir::Attribute object : binary.getObjects())
      ptx += mlir::cast<mlir::gpu::ObjectAttr>(object).getObject().str();
  });
  check(ptx.find(".target sm_90") != std::string::npos &&
            ptx.find(".entry") != std::string::npos,
        "the NVVM pipeline produced sm_90 PTX with kernel entries");

  // The bundle: PTX objects, a manifest the runtime accepts; a second,
  // separately built identical layer is a cache hit.
  if (!bundle) {
    std::printf("FAILED: kernel bundle: %s\n",
                llvm::toString(bundle.takeError()).c_str());
    return 1;
  }
  const inkling::KernelBundle &kb = **bundle;
  inkling::StatusOr<inkling::KernelManifest> manifest =
      inkling::KernelManifest::parse(kb.manifest);
  // Per kernel two objects: its PTX and its host form (what the fake CUDA
  // driver of the tests executes).
  check(manifest.isOk() && manifest->format == "ptx" &&
            manifest->findHost("layer") != nullptr &&
            2 * manifest->kernels.size() == kb.objects.size(),
        "the bundle's manifest parses with the runtime's reader");
  bool objectsOk = manifest.isOk() && !manifest->kernels.empty();
  for (const inkling::KernelSpec &kernel :
       manifest.isOk() ? manifest->kernels
                       : std::vector<inkling::KernelSpec>()) {
    const inkling::KernelObject *ptxObject = kb.find(kernel.file);
    const inkling::KernelObject *hostForm = kb.find(kernel.hostForm);
    objectsOk &=
        ptxObject && ptxObject->bytes.find(".entry") != std::string::npos &&
        hostForm &&
        hostForm->bytes.find("__inkling_emu_entry_") != std::string::npos;
  }
  check(objectsOk, "every kernel's object is PTX with an entry, beside its "
                   "host form");
  std::printf("  bundle: %zu kernels, manifest %zu bytes\n", kb.objects.size(),
              kb.manifest.size());
  mlir::OwningOpRef<mlir::ModuleOp> sameLayer = buildLayer(context);
  auto again = kernels.compile(*sameLayer);
  check(again && again->get() == bundle->get() && kernels.hits() == 1 &&
            kernels.misses() == 1,
        "an identical layer is a cache hit (compiled once)");
  if (!again)
    llvm::consumeError(again.takeError());

  // A chip the NVPTX backend does not know is an error, not a crash.
  inkling::KernelCompilerOptions unknownChip;
  unknownChip.chip = "sm_999";
  inkling::KernelCompiler badTarget(context, unknownChip);
  auto rejected = badTarget.compile(*layer);
  std::string why =
      rejected ? std::string() : llvm::toString(rejected.takeError());
  check(why.find("GPU target sm_999") != std::string::npos,
        "an unknown GPU chip is a compile error");

  // JIT the CPU code and run it on data.
  check(cpuOk, "inkling-lower-to-cpu ran");
  if (!cpuOk)
    return 1;
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  // `transformer` is a function_ref: the std::function must outlive create.
  std::function<llvm::Error(llvm::Module *)> optimize =
      mlir::makeOptimizingTransformer(3, 0, nullptr);
  mlir::ExecutionEngineOptions engineOptions;
  engineOptions.transformer = optimize;
  auto engine = mlir::ExecutionEngine::create(*cpu, engineOptions);
  if (!engine) {
    std::printf("FAILED: ExecutionEngine: %s\n",
                llvm::toString(engine.takeError()).c_str());
    return 1;
  }
  auto symbol = (*engine)->lookup("_mlir_ciface_layer");
  if (!symbol) {
    std::printf("FAILED: %s\n", llvm::toString(symbol.takeError()).c_str());
    return 1;
  }
  auto layout =
      sconv::LayoutAttr::get(&context, kHeads, kHeadDim, 64, kKernel, 1);
  runSteps(reinterpret_cast<LayerFn>(*symbol), layout.getDerived().pageBytes());

  std::printf("%s\n", failures ? "inkling-consumer: FAILED"
                               : "inkling-consumer: all checks passed");
  return failures ? 1 : 0;
}
