//===- SConvBase.td - The sconv dialect ------------------------*- tablegen -*-===//

#ifndef INKLING_DIALECT_SCONV_IR_SCONVBASE_TD
#define INKLING_DIALECT_SCONV_IR_SCONVBASE_TD

include "mlir/IR/OpBase.td"

def SConv_Dialect : Dialect {
  let name = "sconv";
  let cppNamespace = "::inkling::sconv";
  let summary = "The paged conv-state cache of Inkling short convolutions";
  let description = [{
    Inkling decoder layers run a short causal depthwise convolution on four
    streams (K, V, attention output, MLP output). Serving keeps each stream's
    last `kernel - 1` inputs in a paged cache shared by the four streams: one
    page of `[H, N, D]` bf16 per block, where the packed head row `D` holds
    the four stream ranges. This dialect models that cache (`#sconv.layout`),
    the step metadata of a continuous-batching forward step (`sconv.step`),
    and the ops that insert into the cache and convolve over it.

    All ops work on memrefs: the cache is mutable, paged memory addressed
    through a block table, which has no useful value semantics.
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
    void registerTypes();
  }];
}

#endif // INKLING_DIALECT_SCONV_IR_SCONVBASE_TD
