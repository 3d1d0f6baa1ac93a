//===- Chips.cpp - Which NVPTX chips the GPU lowering can target ----------===//
//
// An unknown chip, or PTX features older than the chip needs, stop the
// process inside LLVM's NVPTX backend (a fatal error, not a diagnostic), so
// callers that take a chip from a user or a device check it first.
//
//===----------------------------------------------------------------------===//

#include "inkling/Target/GPU/Passes.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/TargetParser/Triple.h"

#include <cstdlib>
#include <memory>
#include <mutex>

namespace inkling::gpu {
#define GEN_PASS_DEF_CHECKTARGETPASS
#include "inkling/Target/GPU/Passes.h.inc"
} // namespace inkling::gpu

extern "C" void LLVMInitializeNVPTXTargetInfo();
extern "C" void LLVMInitializeNVPTXTargetMC();

bool inkling::gpu::isKnownNVPTXChip(llvm::StringRef chip) {
  if (!chip.starts_with("sm_"))
    return false;
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTargetMC();
  });
  std::string error;
  llvm::Triple triple("nvptx64-nvidia-cuda");
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return false;
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      target->createMCSubtargetInfo(triple, "", ""));
  return info && info->isCPUStringValid(chip);
}

std::string inkling::gpu::defaultPTXFeatures(llvm::StringRef chip) {
  int number = std::atoi(chip.drop_front(3).str().c_str());
  return number <= 90 ? "+ptx80" : "";
}

namespace {
struct CheckTargetPass
    : inkling::gpu::impl::CheckTargetPassBase<CheckTargetPass> {
  using Base::Base;
  void runOnOperation() override {
    if (!llvm::is_contained({"isa", "bin", "fatbin", "llvm", "offloading"},
                            llvm::StringRef(format))) {
      getOperation().emitError()
          << "GPU format '" << format
          << "': expected isa, bin, fatbin, llvm or offloading";
      signalPassFailure();
      return;
    }
    if (inkling::gpu::isKnownNVPTXChip(chip))
      return;
    getOperation().emitError()
        << "GPU target " << chip
        << ": not a chip LLVM's NVPTX backend knows (e.g. sm_80, sm_90)";
    signalPassFailure();
  }
};
} // namespace
