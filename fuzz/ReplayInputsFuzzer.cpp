//===- ReplayInputsFuzzer.cpp - .npy files and replay's input checks ------===//
//
// libFuzzer target: the input is one replay of the small example layer
// (examples/small_layer.mlir, embedded at build time): a byte choosing the
// op, then the op's input files, each as a 4-byte little-endian length and
// that many bytes of a .npy file (in the order of the op's sorted input
// names; missing ones are empty files). The files go through inkling-run's
// own replay: the .npy reader, every check of the tensors against the
// layout, the IR's static sizes and each other, then (for inputs that pass)
// the checked kernel. It must never crash, hang, leak or read out of
// bounds (ASan, UBSan), and must end in 0 (outputs written) or 1 (one
// error line). A violation traps, which libFuzzer reports as a finding.
//
// Seeds: fuzz/make_npy_corpus.py packs the inputs that
// test/tools/inkling-run/npy_replay.py writes (valid ones and bad ones).
//
//===----------------------------------------------------------------------===//

#include "../tools/inkling-run/Npy.h"
#include "../tools/inkling-run/Run.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <unistd.h>

using namespace inkling;

#ifndef INKLING_FUZZ_MODEL
#error "INKLING_FUZZ_MODEL: the path of examples/small_layer.mlir"
#endif

// inkling-run's own fail() prints; the fuzzer keeps quiet.
int run::fail(const std::string &) { return 1; }

namespace {

[[noreturn]] void violation(const char *what) {
  std::fprintf(stderr, "replay fuzzer: invariant violated: %s\n", what);
  __builtin_trap();
}

/// A private directory for this process's input and output files.
const std::string &workDir() {
  static std::string dir = [] {
    llvm::SmallString<128> path;
    if (llvm::sys::fs::createUniqueDirectory("inkling-replay-fuzz", path))
      violation("cannot create a work directory");
    return std::string(path);
  }();
  return dir;
}

bool writeFile(const std::string &path, const uint8_t *data, size_t size) {
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return false;
  bool ok = std::fwrite(data, 1, size, f) == size;
  return std::fclose(f) == 0 && ok;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  auto loaded = exec::LayerProgram::load(INKLING_FUZZ_MODEL, "");
  if (!loaded)
    violation("the embedded model does not load");
  std::unique_ptr<exec::LayerProgram> program = std::move(*loaded);
  const exec::LayerSignature &sig = program->signature();
  int64_t opIndex = data[0] % sig.ops.size();
  const exec::OpInfo &op = sig.ops[opIndex];
  // The op's input names, as replay spells them (one stream: x, weights,
  // bias; the metadata by role), sorted.
  std::set<std::string> names;
  for (int arg : op.arguments) {
    bool output = false;
    for (int out : op.outputs)
      output |= out == arg;
    const exec::ArgInfo &info = sig.args[arg];
    if (output || info.role == exec::ArgRole::Status)
      continue;
    switch (info.role) {
    case exec::ArgRole::Input:
      names.insert("x");
      break;
    case exec::ArgRole::Weights:
      names.insert("weights");
      break;
    case exec::ArgRole::Bias:
      names.insert("bias");
      break;
    default:
      names.insert(exec::argRoleName(info.role));
    }
  }
  run::ReplayOptions options;
  options.modelPath = INKLING_FUZZ_MODEL;
  options.opIndex = opIndex;
  options.outputDir = workDir() + "/out";
  size_t pos = 1;
  for (const std::string &name : names) {
    size_t length = 0;
    if (pos + 4 <= size) {
      length = size_t(data[pos]) | size_t(data[pos + 1]) << 8 |
               size_t(data[pos + 2]) << 16 | size_t(data[pos + 3]) << 24;
      pos += 4;
    }
    length = std::min(length, size - std::min(pos, size));
    std::string path = workDir() + "/" + name + ".npy";
    if (!writeFile(path, data + std::min(pos, size), length))
      violation("cannot write an input file");
    pos += length;
    options.inputs.push_back(name + "=" + path);
  }
  // The .npy parser on its own, on every section: no crash, a message on
  // failure.
  for (const std::string &item : options.inputs) {
    npy::Array array;
    std::string npyError;
    if (!npy::read(item.substr(item.find('=') + 1), array, npyError) &&
        npyError.empty())
      violation("a rejected .npy file has no message");
  }
  int rc = run::replay(*program, options);
  if (rc != 0 && rc != 1)
    violation("replay ended with neither 0 nor 1");
  return 0;
}
