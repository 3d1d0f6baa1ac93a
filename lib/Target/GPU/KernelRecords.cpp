//===- KernelRecords.cpp - Checks the `inkling.kernels` attribute ---------===//
//
// The recording passes write `inkling.kernels`; the parameter pass and the
// bundle writer read it back. A module may also come from a file, so the
// readers check its shape first (every key the manifest needs, of the type
// it needs) and report the entry and key rather than assert on a cast.
//
//===----------------------------------------------------------------------===//

#include "inkling/Runtime/ManifestSchema.h"
#include "inkling/Target/GPU/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <string>

using namespace mlir;

namespace inkling::gpu {
namespace mk = inkling::manifest;

namespace {

bool isString(Attribute a) { return isa<StringAttr>(a); }
bool isInteger(Attribute a) { return isa<IntegerAttr>(a); }
bool isBool(Attribute a) { return isa<BoolAttr>(a); }
/// An array of integers and strings (a shape, a grid, host arguments).
bool isScalarArray(Attribute a) {
  auto array = dyn_cast<ArrayAttr>(a);
  return array && llvm::all_of(array, [](Attribute e) {
           return isa<IntegerAttr, StringAttr>(e);
         });
}
bool isStringArray(Attribute a) {
  auto array = dyn_cast<ArrayAttr>(a);
  return array && llvm::all_of(array, isString);
}

struct KeyRule {
  const char *key;
  bool (*holds)(Attribute);
  const char *what;
  bool required;
};

/// The keys of an entry and of one of its `args`, as the recording passes
/// write them.
constexpr KeyRule kEntryRules[] = {
    {mk::kName, isString, "a string", true},
    {mk::kHost, isString, "a string", true},
    {mk::kKey, isString, "a string", true},
    {mk::kOp, isString, "a string", false},
    {mk::kLayout, isString, "a string", false},
    {mk::kAttributes, isString, "a string", false},
    {mk::kHostArgs, isScalarArray, "an array of integers", true},
    {mk::kGrid, isScalarArray, "an array of integers and \"T\"", true},
    {mk::kBlock, isScalarArray, "an array of integers", true},
    {mk::kStreams, isStringArray, "an array of strings", false},
    {mk::kTokensArg, isInteger, "an integer", false},
    // Added by inkling-gpu-record-params, after the NVVM lowering.
    {mk::kParams, isStringArray, "an array of strings", false},
    // Added by inkling-gpu-emit-host-form.
    {mk::kHostForm, isString, "a string", false},
};
/// A scratch buffer of an entry (`scratch[i]`).
constexpr KeyRule kScratchRules[] = {
    {mk::kIndex, isInteger, "an integer", true},
    {mk::kType, isString, "a string", true},
    {mk::kElement, isString, "a string", true},
    {mk::kElementBytes, isInteger, "an integer", true},
    {mk::kShape, isScalarArray, "an array of integers", true},
    {mk::kSizeHostArg, isInteger, "an integer", false},
    {mk::kSizeDim, isInteger, "an integer", false},
};
constexpr KeyRule kArgRules[] = {
    {mk::kType, isString, "a string", true},
    {mk::kElement, isString, "a string", true},
    {mk::kElementBytes, isInteger, "an integer", true},
    {mk::kAlign, isInteger, "an integer", true},
    {mk::kRank, isInteger, "an integer", true},
    {mk::kShape, isScalarArray, "an array of integers", true},
    {mk::kStrides, isScalarArray, "an array of integers", true},
    {mk::kOffset, isInteger, "an integer", true},
    {mk::kIdentity, isBool, "a bool", true},
    {mk::kParams, isInteger, "an integer", true},
};

/// The first rule `dict` breaks, as an error on `module` that starts with
/// `place` (the entry, and the argument).
LogicalResult checkKeys(ModuleOp module, DictionaryAttr dict,
                        ArrayRef<KeyRule> rules, StringRef place) {
  for (const KeyRule &rule : rules) {
    Attribute value = dict.get(rule.key);
    if (value ? rule.holds(value) : !rule.required)
      continue;
    return module.emitError()
           << place << ": `" << rule.key << "` "
           << (value ? "must be " : "is missing; expected ") << rule.what;
  }
  return success();
}

} // namespace

FailureOr<ArrayAttr> getKernelRecords(ModuleOp module) {
  Attribute attr = module->getAttr(kKernelsAttrName);
  if (!attr)
    return module.emitError() << "has no `" << kKernelsAttrName
                              << "` attribute: run inkling-lower-to-nvvm first";
  auto kernels = dyn_cast<ArrayAttr>(attr);
  if (!kernels)
    return module.emitError()
           << "`" << kKernelsAttrName << "` must be an array of dictionaries";
  for (auto [index, element] : llvm::enumerate(kernels)) {
    std::string place = "`" + std::string(kKernelsAttrName) + "` entry " +
                        std::to_string(index);
    auto entry = dyn_cast<DictionaryAttr>(element);
    if (!entry)
      return module.emitError() << place << " must be a dictionary";
    if (auto name = dyn_cast_or_null<StringAttr>(entry.get(mk::kName)))
      place += " (" + name.getValue().str() + ")";
    if (failed(checkKeys(module, entry, kEntryRules, place)))
      return failure();
    auto args = dyn_cast_or_null<ArrayAttr>(entry.get(mk::kArgs));
    if (!args)
      return module.emitError() << place << ": `" << mk::kArgs
                                << "` must be an array of dictionaries";
    for (auto [argIndex, argAttr] : llvm::enumerate(args)) {
      std::string argPlace = place + " argument " + std::to_string(argIndex);
      auto arg = dyn_cast<DictionaryAttr>(argAttr);
      if (!arg)
        return module.emitError() << argPlace << " must be a dictionary";
      if (failed(checkKeys(module, arg, kArgRules, argPlace)))
        return failure();
    }
    Attribute scratchAttr = entry.get(mk::kScratch);
    if (!scratchAttr)
      continue;
    auto scratch = dyn_cast<ArrayAttr>(scratchAttr);
    if (!scratch)
      return module.emitError() << place << ": `" << mk::kScratch
                                << "` must be an array of dictionaries";
    for (auto [bufferIndex, bufferAttr] : llvm::enumerate(scratch)) {
      std::string bufferPlace =
          place + " scratch buffer " + std::to_string(bufferIndex);
      auto buffer = dyn_cast<DictionaryAttr>(bufferAttr);
      if (!buffer)
        return module.emitError() << bufferPlace << " must be a dictionary";
      if (failed(checkKeys(module, buffer, kScratchRules, bufferPlace)))
        return failure();
    }
  }
  return kernels;
}

LogicalResult updateKernelRecords(
    ModuleOp module,
    llvm::function_ref<LogicalResult(
        DictionaryAttr entry, LLVM::LLVMFuncOp kernel, NamedAttrList &update)>
        update) {
  // A module without kernels (nothing was outlined) has nothing to update.
  if (!module->hasAttr(kKernelsAttrName))
    return success();
  FailureOr<ArrayAttr> kernels = getKernelRecords(module);
  if (failed(kernels))
    return failure();
  SmallVector<Attribute> updated;
  for (Attribute attr : *kernels) {
    auto entry = cast<DictionaryAttr>(attr);
    StringRef name = cast<StringAttr>(entry.get(mk::kName)).getValue();
    auto gpuModule = module.lookupSymbol<mlir::gpu::GPUModuleOp>(name);
    auto func =
        gpuModule ? gpuModule.lookupSymbol<LLVM::LLVMFuncOp>(name) : nullptr;
    if (!func)
      return module.emitError() << "kernel " << name
                                << " is not an llvm.func in its gpu.module "
                                   "after the NVVM lowering";
    NamedAttrList list(entry);
    if (failed(update(entry, func, list)))
      return failure();
    updated.push_back(list.getDictionary(module.getContext()));
  }
  module->setAttr(kKernelsAttrName,
                  ArrayAttr::get(module.getContext(), updated));
  return success();
}

} // namespace inkling::gpu
