//===- SConvInterfaces.td - sconv op interfaces ----------------*- tablegen -*-===//

#ifndef INKLING_DIALECT_SCONV_IR_SCONVINTERFACES_TD
#define INKLING_DIALECT_SCONV_IR_SCONVINTERFACES_TD

include "mlir/IR/OpBase.td"

def SConv_StepCacheAccessOpInterface
    : OpInterface<"StepCacheAccessOpInterface"> {
  let cppNamespace = "::inkling::sconv";
  let description = [{
    An op that accesses a conv-state cache addressed by one step's metadata,
    and says *which positions* it touches. This is what the fusion passes use
    to prove that two accesses to the same cache commute:

    - a history read reads only positions below `num_computed[b]` (through
      the block table);
    - a step write writes only positions at or above `num_computed[b]`
      (through the slot mapping), in the channel ranges of its streams.

    Within one step the runtime never maps a written and a read position to
    the same slot, so with the same step value, cache and layout a history
    read commutes with a step write, and step writes of disjoint streams
    commute with each other. The op's memory effects still say which buffers
    it touches; this interface only refines effects on the cache.
  }];
  let methods = [
    InterfaceMethod<"The cache the op accesses.", "::mlir::Value",
                    "getCacheValue", (ins), [{}],
                    [{ return $_op.getCache(); }]>,
    InterfaceMethod<"The step whose metadata addresses the cache.",
                    "::mlir::Value", "getStepValue", (ins), [{}],
                    [{ return $_op.getStep(); }]>,
    InterfaceMethod<"The cache layout.", "::inkling::sconv::LayoutAttr",
                    "getLayoutAttr", (ins), [{}],
                    [{ return $_op.getLayout(); }]>,
    InterfaceMethod<[{True if the op's reads of the cache are history reads
                      (positions below num_computed) only.}],
                    "bool", "readsOnlyHistory">,
    InterfaceMethod<[{The streams the op writes at the step's own positions
                      (empty when the op does not write the cache).}],
                    "::llvm::SmallVector<::inkling::sconv::Stream>",
                    "getStepWrittenStreams">,
  ];
}

#endif // INKLING_DIALECT_SCONV_IR_SCONVINTERFACES_TD
