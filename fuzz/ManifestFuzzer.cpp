//===- ManifestFuzzer.cpp - The kernel manifest parser on hostile JSON ----===//
//
// libFuzzer target: the input is the text of a kernel bundle's
// manifest.json, parsed by the public entry point the CUDA launcher uses
// (`KernelManifest::parse`; the parser behind it may change). A parse must
// never crash, hang or leak; it returns a manifest or an error with a
// message. What a successful parse returns must be usable as the launcher
// uses it: every kernel's parameters are packed for arguments that match
// its argument specs, and the packed count is the manifest's own count.
// A violation traps, which libFuzzer reports as a finding.
//
// Seeds: the manifests of test/Target/GPU and the build's kernel bundle
// (scripts/fuzz.sh), plus a dictionary of the manifest's keys.
//
//===----------------------------------------------------------------------===//

#include "inkling/Runtime/KernelManifest.h"

#include <cstdint>
#include <cstdio>
#include <string_view>
#include <vector>

using namespace inkling;

namespace {

[[noreturn]] void violation(const char *what) {
  std::fprintf(stderr, "manifest fuzzer: invariant violated: %s\n", what);
  __builtin_trap();
}

void require(bool condition, const char *what) {
  if (!condition)
    violation(what);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  StatusOr<KernelManifest> manifest = KernelManifest::parse(text);
  if (!manifest) {
    require(!manifest.status().message().empty(),
            "a rejected manifest has no message");
    return 0;
  }
  // Arguments as the launcher builds them from the specs: static sizes
  // where the type has them, else 1; a 256-byte aligned address.
  for (const KernelSpec &kernel : manifest->kernels) {
    std::vector<MemRefArg> args;
    for (const KernelArgSpec &spec : kernel.args) {
      MemRefArg arg;
      arg.address = 0x10000;
      if (spec.rank < 0 || spec.rank > 16 ||
          spec.shape.size() != static_cast<size_t>(spec.rank))
        violation("a parsed argument's rank disagrees with its shape");
      for (int64_t d = 0; d < spec.rank; ++d)
        arg.sizes.push_back(spec.shape[d] >= 0 ? spec.shape[d] : 1);
      args.push_back(arg);
    }
    // Packing may refuse (e.g. a dynamic stride without strides), but
    // never crash, and a success has the manifest's parameter count.
    auto params = packKernelParams(kernel, args);
    if (params)
      require(params->size() == kernel.params.size(),
              "packed parameters differ from the manifest's count");
    else
      require(!params.status().message().empty(),
              "a refused packing has no message");
    (void)tokenCount(kernel, args);
    (void)kernel.gridFor(7);
  }
  for (const HostSpec &host : manifest->hosts) {
    for (const LaunchSpec &launch : host.launches) {
      const KernelSpec *kernel = manifest->findKernel(launch.kernel);
      require(kernel != nullptr,
              "a parsed launch names a kernel the manifest lacks");
      require(launch.hostArgs.size() == kernel->args.size(),
              "a parsed launch binds another count of arguments");
      for (size_t a = 0; a < launch.hostArgs.size(); ++a) {
        int64_t bound = launch.hostArgs[a];
        if (bound >= 0)
          continue;
        require(-1 - bound < static_cast<int64_t>(host.scratch.size()),
                "a parsed launch names a scratch buffer the host lacks");
        const ScratchSpec &buffer = host.scratch[-1 - bound];
        require(buffer.type == kernel->args[a].type &&
                    buffer.elementBytes == kernel->args[a].elementBytes &&
                    buffer.shape == kernel->args[a].shape,
                "a parsed launch binds a scratch buffer of another type");
      }
    }
    // A scratch buffer's sizes for a call with 8 host arguments of rank 2
    // and size 3: an error or the shape with dim 0 filled in.
    std::vector<MemRefArg> hostArgs(8);
    for (MemRefArg &arg : hostArgs)
      arg.sizes = {3, 3};
    for (const ScratchSpec &scratch : host.scratch) {
      auto sizes = scratchSizes(scratch, hostArgs);
      if (sizes)
        require(sizes->size() == scratch.shape.size() && (*sizes)[0] >= 0,
                "a scratch buffer's sizes disagree with its shape");
      else
        require(!sizes.status().message().empty(),
                "a refused scratch buffer has no message");
    }
  }
  return 0;
}
