//===- Passes.td - sconv passes --------------------------------*- tablegen -*-===//

#ifndef INKLING_DIALECT_SCONV_TRANSFORMS_PASSES_TD
#define INKLING_DIALECT_SCONV_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def SConvPrintLayouts : Pass<"sconv-print-layouts"> {
  let summary = "Print the derived values of every sconv layout in the IR";
  let description = [{
    Prints, once per distinct `#sconv.layout` used by an op, everything the
    runtime derives from it: heads per rank, hidden per head, raw width,
    head size D, block size, sliding window, the four stream ranges, the
    padding, the cache shape and strides, and the page bytes. The IR is left
    unchanged.

    ```
    inkling-opt examples/decoder_layer.mlir --sconv-print-layouts -o /dev/null
    ```
  }];
}

#endif // INKLING_DIALECT_SCONV_TRANSFORMS_PASSES_TD
