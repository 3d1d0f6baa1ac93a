//===- WriteKernels.cpp - inkling-gpu-write-kernels -----------------------===//
//
// Writes the serialized kernels of a module lowered by `inkling-lower-to-nvvm`
// to a directory, one file per distinct kernel, and `manifest.json`, which
// the runtime's CUDA launcher reads (runtime/include/inkling/Runtime/Cuda.h;
// the format is documented in docs/gpu.md).
//
//===----------------------------------------------------------------------===//

#include "inkling/Runtime/ManifestSchema.h"
#include "inkling/Target/GPU/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <set>

using namespace mlir;

namespace inkling::gpu {
namespace mk = inkling::manifest;
#define GEN_PASS_DEF_WRITEKERNELSPASS
#include "inkling/Target/GPU/Passes.h.inc"

namespace {

int64_t countMatches(StringRef text, StringRef pattern) {
  llvm::Regex regex(pattern);
  int64_t count = 0;
  SmallVector<StringRef> matches;
  while (regex.match(text, &matches)) {
    ++count;
    text = text.drop_front(matches[0].data() - text.data() +
                           std::max<size_t>(1, matches[0].size()));
  }
  return count;
}

/// Writes `value` as llvm::json's indented form does (object keys sorted),
/// except that an array holding no object or array goes on one line:
/// `[16, 1, 1]` rather than five lines.
void writeManifestValue(llvm::json::OStream &out,
                        const llvm::json::Value &value) {
  if (const llvm::json::Object *object = value.getAsObject()) {
    SmallVector<StringRef> keys;
    for (const auto &member : *object)
      keys.push_back(member.first);
    llvm::sort(keys);
    out.object([&] {
      for (StringRef key : keys) {
        out.attributeBegin(key);
        writeManifestValue(out, *object->get(key));
        out.attributeEnd();
      }
    });
    return;
  }
  const llvm::json::Array *array = value.getAsArray();
  if (!array) {
    out.value(value);
    return;
  }
  if (llvm::any_of(*array, [](const llvm::json::Value &e) {
        return e.getAsObject() || e.getAsArray();
      })) {
    out.array([&] {
      for (const llvm::json::Value &e : *array)
        writeManifestValue(out, e);
    });
    return;
  }
  out.rawValue([&](raw_ostream &os) {
    os << '[';
    llvm::interleave(
        *array, os, [&](const llvm::json::Value &e) { os << e; }, ", ");
    os << ']';
  });
}

llvm::json::Array toJson(ArrayAttr array) {
  llvm::json::Array out;
  for (Attribute attr : array) {
    if (auto i = dyn_cast<IntegerAttr>(attr))
      out.push_back(i.getInt());
    else if (auto s = dyn_cast<StringAttr>(attr))
      out.push_back(s.getValue().str());
  }
  return out;
}

/// A scratch buffer of the manifest (`hosts[i].scratch[j]`) from its
/// record.
llvm::json::Object scratchJson(DictionaryAttr d) {
  llvm::json::Object out{
      {mk::kType, cast<StringAttr>(d.get(mk::kType)).getValue().str()},
      {mk::kElement, cast<StringAttr>(d.get(mk::kElement)).getValue().str()},
      {mk::kElementBytes, cast<IntegerAttr>(d.get(mk::kElementBytes)).getInt()},
      {mk::kShape, toJson(cast<ArrayAttr>(d.get(mk::kShape)))}};
  for (StringRef key : {mk::kSizeHostArg, mk::kSizeDim})
    if (auto i = dyn_cast_or_null<IntegerAttr>(d.get(key)))
      out[key] = i.getInt();
  return out;
}

/// Adds the scratch buffers an entry of `host` uses to the host's, checking
/// that each index means one buffer and that every negative host argument
/// (-1 - index) has one.
LogicalResult
collectScratch(ModuleOp module, StringRef name, DictionaryAttr entry,
               std::map<int64_t, llvm::json::Object> &hostScratch) {
  std::set<int64_t> described;
  if (auto scratch = dyn_cast_or_null<ArrayAttr>(entry.get(mk::kScratch)))
    for (Attribute a : scratch) {
      auto d = cast<DictionaryAttr>(a);
      int64_t index = cast<IntegerAttr>(d.get(mk::kIndex)).getInt();
      llvm::json::Object buffer = scratchJson(d);
      auto [it, fresh] = hostScratch.try_emplace(index, buffer);
      if (index < 0 ||
          (!fresh && llvm::json::Value(llvm::json::Object(it->second)) !=
                         llvm::json::Value(std::move(buffer))))
        return module.emitError()
               << "kernel " << name << ": scratch buffer " << index
               << " is negative or described otherwise by another launch";
      described.insert(index);
    }
  for (Attribute a : cast<ArrayAttr>(entry.get(mk::kHostArgs))) {
    int64_t arg = cast<IntegerAttr>(a).getInt();
    if (arg < 0 && !described.count(-1 - arg))
      return module.emitError() << "kernel " << name << ": host argument "
                                << arg << " names scratch buffer " << -1 - arg
                                << ", which the entry does not describe";
  }
  return success();
}

} // namespace

LogicalResult serializeKernelBundle(
    ModuleOp module, std::string &manifestText,
    llvm::function_ref<void(StringRef file, StringRef bytes)> addObject) {
  FailureOr<ArrayAttr> kernels = getKernelRecords(module);
  if (failed(kernels))
    return failure();

  llvm::json::Array kernelList;
  llvm::StringMap<std::string> byKey; // dedupe key -> kernel name
  // host -> its launches in order.
  llvm::StringMap<llvm::json::Array> hostLaunches;
  // host -> its scratch buffers by index.
  llvm::StringMap<std::map<int64_t, llvm::json::Object>> hostScratch;
  SmallVector<std::string> hostOrder;
  llvm::json::Object target;

  for (Attribute attr : *kernels) {
    auto entry = cast<DictionaryAttr>(attr);
    auto str = [&](StringRef key) -> std::string {
      auto s = dyn_cast_or_null<StringAttr>(entry.get(key));
      return s ? s.getValue().str() : std::string();
    };
    std::string name = str(mk::kName);
    std::string host = str(mk::kHost);
    std::string key = str(mk::kKey);

    if (!hostLaunches.count(host))
      hostOrder.push_back(host);
    auto it = byKey.find(key);
    bool fresh = it == byKey.end();
    std::string kernelName = fresh ? name : it->second;
    llvm::json::Object launch{
        {mk::kKernel, kernelName},
        {mk::kHostArgs, toJson(cast<ArrayAttr>(entry.get(mk::kHostArgs)))}};
    hostLaunches[host].push_back(std::move(launch));
    if (failed(collectScratch(module, name, entry, hostScratch[host])))
      return failure();
    if (!fresh)
      continue;
    byKey[key] = name;

    auto binary = module.lookupSymbol<mlir::gpu::BinaryOp>(name);
    if (!binary || binary.getObjects().size() != 1)
      return module.emitError() << "kernel " << name
                                << " has no gpu.binary with exactly one object";
    auto object = cast<mlir::gpu::ObjectAttr>(binary.getObjects()[0]);
    StringRef format, extension;
    switch (object.getFormat()) {
    case mlir::gpu::CompilationTarget::Assembly:
      format = mk::kPtx;
      extension = ".ptx";
      break;
    case mlir::gpu::CompilationTarget::Binary:
      format = mk::kCubin;
      extension = ".cubin";
      break;
    case mlir::gpu::CompilationTarget::Fatbin:
      format = mk::kFatbin;
      extension = ".fatbin";
      break;
    default:
      return module.emitError() << "kernel " << name
                                << " is LLVM bitcode (format=llvm): the driver "
                                   "loads ptx, cubin or fatbin only";
    }
    if (auto nvvm = dyn_cast<NVVM::NVVMTargetAttr>(object.getTarget()))
      target = llvm::json::Object{{mk::kChip, nvvm.getChip().str()},
                                  {mk::kFeatures, nvvm.getFeatures().str()},
                                  {mk::kOptLevel, nvvm.getO()},
                                  {mk::kFormat, format.str()}};
    std::string file = name + extension.str();
    StringRef bytes = object.getObject().getValue();
    addObject(file, bytes);

    llvm::json::Array args;
    for (Attribute a : cast<ArrayAttr>(entry.get(mk::kArgs))) {
      auto d = cast<DictionaryAttr>(a);
      auto i = [&](StringRef k) {
        return cast<IntegerAttr>(d.get(k)).getInt();
      };
      args.push_back(llvm::json::Object{
          {mk::kType, cast<StringAttr>(d.get(mk::kType)).getValue().str()},
          {mk::kElement,
           cast<StringAttr>(d.get(mk::kElement)).getValue().str()},
          {mk::kElementBytes, i(mk::kElementBytes)},
          {mk::kAlign, i(mk::kAlign)},
          {mk::kRank, i(mk::kRank)},
          {mk::kShape, toJson(cast<ArrayAttr>(d.get(mk::kShape)))},
          {mk::kStrides, toJson(cast<ArrayAttr>(d.get(mk::kStrides)))},
          {mk::kOffset, i(mk::kOffset)},
          {mk::kIdentity, cast<BoolAttr>(d.get(mk::kIdentity)).getValue()},
          {mk::kParams, i(mk::kParams)}});
    }
    llvm::json::Object kernel{
        {mk::kName, name},
        {mk::kEntry, name},
        {mk::kFile, file},
        {mk::kFormat, format.str()},
        {mk::kHost, host},
        {mk::kOp, str(mk::kOp)},
        {mk::kStreams, entry.get(mk::kStreams)
                           ? toJson(cast<ArrayAttr>(entry.get(mk::kStreams)))
                           : llvm::json::Array()},
        {mk::kLayout, str(mk::kLayout)},
        {mk::kAttributes, str(mk::kAttributes)},
        {mk::kKey, key},
        {mk::kGrid, toJson(cast<ArrayAttr>(entry.get(mk::kGrid)))},
        {mk::kBlock, toJson(cast<ArrayAttr>(entry.get(mk::kBlock)))},
        {mk::kArgs, std::move(args)},
        {mk::kParams, entry.get(mk::kParams)
                          ? toJson(cast<ArrayAttr>(entry.get(mk::kParams)))
                          : llvm::json::Array()},
    };
    if (auto tokens = dyn_cast_or_null<IntegerAttr>(entry.get(mk::kTokensArg)))
      kernel[mk::kTokensArg] = tokens.getInt();
    if (auto hostForm =
            dyn_cast_or_null<StringAttr>(entry.get(mk::kHostForm))) {
      std::string hostFile = name + ".host.ll";
      addObject(hostFile, hostForm.getValue());
      kernel[mk::kHostForm] = hostFile;
    }
    if (format == mk::kPtx) {
      // 16-byte global accesses, and scalar 2-byte ones (which a row copy
      // must not have).
      kernel[mk::kPtxGlobalV4Loads] =
          countMatches(bytes, "ld\\.global(\\.nc)?\\.v4\\.");
      kernel[mk::kPtxGlobalV4Stores] =
          countMatches(bytes, "st\\.global\\.v4\\.");
      kernel[mk::kPtxGlobalB16Accesses] =
          countMatches(bytes, "(ld\\.global(\\.nc)?|st\\.global)\\.[bu]16");
    }
    kernelList.push_back(std::move(kernel));
  }

  llvm::json::Array hosts;
  for (const std::string &host : hostOrder) {
    llvm::json::Object spec{{mk::kName, host},
                            {mk::kLaunches, std::move(hostLaunches[host])}};
    // Scratch buffers 0 .. n-1, in index order (only where there are any).
    std::map<int64_t, llvm::json::Object> &buffers = hostScratch[host];
    if (!buffers.empty()) {
      llvm::json::Array scratch;
      for (auto &[index, buffer] : buffers) {
        if (index != static_cast<int64_t>(scratch.size()))
          return module.emitError() << "host " << host << " has no scratch "
                                    << "buffer " << scratch.size();
        scratch.push_back(std::move(buffer));
      }
      spec[mk::kScratch] = std::move(scratch);
    }
    hosts.push_back(std::move(spec));
  }
  llvm::json::Object manifest{
      {mk::kVersion, mk::kFormatVersion}, {mk::kGenerator, mk::kGeneratorName},
      {mk::kTarget, std::move(target)},   {mk::kKernels, std::move(kernelList)},
      {mk::kHosts, std::move(hosts)},
  };
  manifestText.clear();
  llvm::raw_string_ostream os(manifestText);
  llvm::json::OStream out(os, /*IndentSize=*/2);
  writeManifestValue(out, llvm::json::Value(std::move(manifest)));
  os << '\n';
  return success();
}

namespace {

struct WriteKernelsPass : impl::WriteKernelsPassBase<WriteKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (dir.empty()) {
      module.emitError("inkling-gpu-write-kernels needs dir=<directory>");
      return signalPassFailure();
    }
    if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
      module.emitError() << "cannot create " << dir << ": " << ec.message();
      return signalPassFailure();
    }
    bool written = true;
    auto write = [&](StringRef file, StringRef bytes) {
      SmallString<256> path(dir.getValue());
      llvm::sys::path::append(path, file);
      std::error_code ec;
      llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
      if (ec) {
        module.emitError() << "cannot write " << path << ": " << ec.message();
        written = false;
        return;
      }
      os << bytes;
    };
    std::string manifest;
    if (failed(serializeKernelBundle(module, manifest, write)) || !written)
      return signalPassFailure();
    write("manifest.json", manifest);
    if (!written)
      return signalPassFailure();
  }
};

} // namespace

} // namespace inkling::gpu
