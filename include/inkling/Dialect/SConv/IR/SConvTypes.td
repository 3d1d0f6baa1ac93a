//===- SConvTypes.td - sconv types -----------------------------*- tablegen -*-===//

#ifndef INKLING_DIALECT_SCONV_IR_SCONVTYPES_TD
#define INKLING_DIALECT_SCONV_IR_SCONVTYPES_TD

include "inkling/Dialect/SConv/IR/SConvBase.td"
include "mlir/IR/AttrTypeBase.td"

def SConv_StepType : TypeDef<SConv_Dialect, "Step"> {
  let mnemonic = "step";
  let summary = "The metadata of one continuous-batching forward step";
  let description = [{
    A reference to the four metadata buffers of one step (see `sconv.step`).
    Ops that take the same `!sconv.step` value provably belong to the same
    step, which is what lets the fusion passes move inserts past convs.

    ```mlir
    !sconv.step
    ```
  }];
}

#endif // INKLING_DIALECT_SCONV_IR_SCONVTYPES_TD
