//===- PrintLayouts.cpp - Print derived sconv layouts ---------------------===//

#include "inkling/Dialect/SConv/IR/SConvOps.h"
#include "inkling/Dialect/SConv/Transforms/Passes.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/Support/raw_ostream.h"

namespace inkling::sconv {
#define GEN_PASS_DEF_SCONVPRINTLAYOUTS
#include "inkling/Dialect/SConv/Transforms/Passes.h.inc"
} // namespace inkling::sconv

using namespace mlir;

namespace inkling::sconv {
namespace {

void printLayout(LayoutAttr attr, llvm::raw_ostream &os) {
  inkling::Layout layout = attr.getDerived();
  os << "sconv.layout " << attr << "\n";
  os << "  heads_per_rank = " << layout.headsPerRank << "\n";
  os << "  hidden_per_head = " << layout.hiddenPerHead << "\n";
  os << "  raw_width = " << layout.rawWidth << "\n";
  os << "  head_size = " << layout.headSize << "\n";
  os << "  block_size = " << layout.blockSize << "\n";
  os << "  sliding_window = " << layout.slidingWindow << "\n";
  for (inkling::Stream stream : inkling::kAllStreams) {
    const inkling::StreamRange &range = layout.range(stream);
    os << "  stream " << inkling::streamName(stream) << " = [" << range.offset
       << ", " << range.end() << ")\n";
  }
  os << "  padding = [" << layout.rawWidth << ", " << layout.headSize << ")\n";
  os << "  cache_shape = [num_blocks, " << layout.headsPerRank << ", "
     << layout.blockSize << ", " << layout.headSize << "]\n";
  os << "  cache_strides = [block_stride >= " << layout.pageElements() << ", "
     << layout.headStride() << ", " << layout.headSize << ", 1]\n";
  os << "  page_bytes = " << layout.pageBytes() << "\n";
}

struct SConvPrintLayoutsPass
    : public impl::SConvPrintLayoutsBase<SConvPrintLayoutsPass> {
  using Base::Base;

  void runOnOperation() override {
    llvm::SetVector<LayoutAttr> layouts;
    getOperation()->walk([&](Operation *op) {
      for (NamedAttribute named : op->getAttrs())
        if (auto layout = dyn_cast<LayoutAttr>(named.getValue()))
          layouts.insert(layout);
    });
    for (LayoutAttr layout : layouts)
      printLayout(layout, llvm::outs());
    markAllAnalysesPreserved();
  }
};

} // namespace
} // namespace inkling::sconv
