//===- WriteKernels.cpp - inkling-write-kernels ---------------------------===//
//
// Writes the serialized kernels of a module lowered by `inkling-lower-to-nvvm`
// to a directory, one file per distinct kernel, and `manifest.json`, which
// the runtime's CUDA launcher reads (runtime/include/inkling/Runtime/Cuda.h;
// the format is documented in docs/gpu.md).
//
//===----------------------------------------------------------------------===//

#include "inkling/Target/GPU/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace inkling::gpu {
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

/// `text` (llvm::json's indented form) with every array that holds no
/// object or array on one line: `[16, 1, 1]` rather than five lines.
std::string collapseScalarArrays(StringRef text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '[') {
      out += text[i];
      continue;
    }
    size_t end = text.find_first_of("[]{", i + 1);
    if (end == StringRef::npos || text[end] != ']') {
      out += text[i];
      continue;
    }
    // Whitespace outside strings goes; a ',' gets one space after it.
    std::string inner;
    bool inString = false;
    for (size_t j = i + 1; j < end; ++j) {
      char c = text[j];
      if (c == '"' && (j == 0 || text[j - 1] != '\\'))
        inString = !inString;
      if (!inString && (c == ' ' || c == '\n'))
        continue;
      inner += c;
      if (!inString && c == ',')
        inner += ' ';
    }
    out += "[" + inner + "]";
    i = end;
  }
  return out;
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

} // namespace

LogicalResult serializeKernelBundle(
    ModuleOp module, std::string &manifestText,
    llvm::function_ref<void(StringRef file, StringRef bytes)> addObject) {
  auto kernels = module->getAttrOfType<ArrayAttr>(kKernelsAttrName);
  if (!kernels)
    return module.emitError() << "has no `" << kKernelsAttrName
                              << "` attribute: run inkling-lower-to-nvvm first";

  llvm::json::Array kernelList;
  llvm::StringMap<std::string> byKey; // dedupe key -> kernel name
  // host -> its launches in order.
  llvm::StringMap<llvm::json::Array> hostLaunches;
  SmallVector<std::string> hostOrder;
  llvm::json::Object target;

  for (Attribute attr : kernels) {
    auto entry = cast<DictionaryAttr>(attr);
    auto str = [&](StringRef key) -> std::string {
      auto s = dyn_cast_or_null<StringAttr>(entry.get(key));
      return s ? s.getValue().str() : std::string();
    };
    std::string name = str("name");
    std::string host = str("host");
    std::string key = str("key");

    if (!hostLaunches.count(host))
      hostOrder.push_back(host);
    auto it = byKey.find(key);
    bool fresh = it == byKey.end();
    std::string kernelName = fresh ? name : it->second;
    llvm::json::Object launch{
        {"kernel", kernelName},
        {"host_args", toJson(cast<ArrayAttr>(entry.get("host_args")))}};
    hostLaunches[host].push_back(std::move(launch));
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
      format = "ptx";
      extension = ".ptx";
      break;
    case mlir::gpu::CompilationTarget::Binary:
      format = "cubin";
      extension = ".cubin";
      break;
    case mlir::gpu::CompilationTarget::Fatbin:
      format = "fatbin";
      extension = ".fatbin";
      break;
    default:
      return module.emitError() << "kernel " << name
                                << " is LLVM bitcode (format=llvm): the driver "
                                   "loads ptx, cubin or fatbin only";
    }
    if (auto nvvm = dyn_cast<NVVM::NVVMTargetAttr>(object.getTarget()))
      target = llvm::json::Object{{"chip", nvvm.getChip().str()},
                                  {"features", nvvm.getFeatures().str()},
                                  {"opt_level", nvvm.getO()},
                                  {"format", format.str()}};
    std::string file = name + extension.str();
    StringRef bytes = object.getObject().getValue();
    addObject(file, bytes);

    llvm::json::Array args;
    for (Attribute a : cast<ArrayAttr>(entry.get("args"))) {
      auto d = cast<DictionaryAttr>(a);
      auto i = [&](StringRef k) {
        return cast<IntegerAttr>(d.get(k)).getInt();
      };
      args.push_back(llvm::json::Object{
          {"type", cast<StringAttr>(d.get("type")).getValue().str()},
          {"element", cast<StringAttr>(d.get("element")).getValue().str()},
          {"element_bytes", i("element_bytes")},
          {"align", i("align")},
          {"rank", i("rank")},
          {"shape", toJson(cast<ArrayAttr>(d.get("shape")))},
          {"strides", toJson(cast<ArrayAttr>(d.get("strides")))},
          {"offset", i("offset")},
          {"identity", cast<BoolAttr>(d.get("identity")).getValue()},
          {"params", i("params")}});
    }
    llvm::json::Object kernel{
        {"name", name},
        {"entry", name},
        {"file", file},
        {"format", format.str()},
        {"host", host},
        {"op", str("op")},
        {"streams", entry.get("streams")
                        ? toJson(cast<ArrayAttr>(entry.get("streams")))
                        : llvm::json::Array()},
        {"layout", str("layout")},
        {"attributes", str("attributes")},
        {"key", key},
        {"grid", toJson(cast<ArrayAttr>(entry.get("grid")))},
        {"block", toJson(cast<ArrayAttr>(entry.get("block")))},
        {"args", std::move(args)},
        {"params", entry.get("params")
                       ? toJson(cast<ArrayAttr>(entry.get("params")))
                       : llvm::json::Array()},
    };
    if (auto tokens = dyn_cast_or_null<IntegerAttr>(entry.get("tokens_arg")))
      kernel["tokens_arg"] = tokens.getInt();
    if (format == "ptx") {
      // 16-byte global accesses, and scalar 2-byte ones (which a row copy
      // must not have).
      kernel["ptx_global_v4_loads"] =
          countMatches(bytes, "ld\\.global(\\.nc)?\\.v4\\.");
      kernel["ptx_global_v4_stores"] =
          countMatches(bytes, "st\\.global\\.v4\\.");
      kernel["ptx_global_b16_accesses"] =
          countMatches(bytes, "(ld\\.global(\\.nc)?|st\\.global)\\.[bu]16");
    }
    kernelList.push_back(std::move(kernel));
  }

  llvm::json::Array hosts;
  for (const std::string &host : hostOrder)
    hosts.push_back(llvm::json::Object{
        {"name", host}, {"launches", std::move(hostLaunches[host])}});
  llvm::json::Object manifest{
      {"version", 1},
      {"generator", "inkling-write-kernels"},
      {"target", std::move(target)},
      {"kernels", std::move(kernelList)},
      {"hosts", std::move(hosts)},
  };
  manifestText =
      collapseScalarArrays(
          llvm::formatv("{0:2}", llvm::json::Value(std::move(manifest)))
              .str()) +
      "\n";
  return success();
}

namespace {

struct WriteKernelsPass : impl::WriteKernelsPassBase<WriteKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (dir.empty()) {
      module.emitError("inkling-write-kernels needs dir=<directory>");
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
