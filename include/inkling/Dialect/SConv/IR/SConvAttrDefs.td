//===- SConvAttrDefs.td - sconv attributes and enums -----------*- tablegen -*-===//

#ifndef INKLING_DIALECT_SCONV_IR_SCONVATTRDEFS_TD
#define INKLING_DIALECT_SCONV_IR_SCONVATTRDEFS_TD

include "inkling/Dialect/SConv/IR/SConvBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def SConv_StreamK : I32EnumAttrCase<"K", 0, "k">;
def SConv_StreamV : I32EnumAttrCase<"V", 1, "v">;
def SConv_StreamAttn : I32EnumAttrCase<"Attn", 2, "attn">;
def SConv_StreamMlp : I32EnumAttrCase<"Mlp", 3, "mlp">;

def SConv_StreamEnum : I32EnumAttr<"Stream",
    "one of the four streams packed into the cache's head row", [
      SConv_StreamK, SConv_StreamV, SConv_StreamAttn, SConv_StreamMlp]> {
  let cppNamespace = "::inkling::sconv";
  let genSpecializedAttr = 0;
}

def SConv_StreamAttr : EnumAttr<SConv_Dialect, SConv_StreamEnum, "stream"> {
  let summary = "A stream of the packed head row: k, v, attn or mlp";
}

def SConv_StreamArrayAttr :
    TypedArrayAttrBase<SConv_StreamAttr, "array of sconv streams">;

def SConv_ActNone : I32EnumAttrCase<"None", 0, "none">;
def SConv_ActSilu : I32EnumAttrCase<"Silu", 1, "silu">;

def SConv_ActivationEnum : I32EnumAttr<"Activation",
    "activation applied to the conv sum before the residual add", [
      SConv_ActNone, SConv_ActSilu]> {
  let cppNamespace = "::inkling::sconv";
  let genSpecializedAttr = 0;
}

def SConv_ActivationAttr :
    EnumAttr<SConv_Dialect, SConv_ActivationEnum, "activation"> {
  let summary = "The conv's activation: none or silu";
}

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

def SConv_LayoutAttr : AttrDef<SConv_Dialect, "Layout"> {
  let mnemonic = "layout";
  let summary = "The packed conv-state cache layout of one decoder layer";
  let description = [{
    What a layer declares; everything else (heads per rank `H`, head size
    `D`, block size `N`, the stream ranges, the page) is derived by the
    runtime's layout math (`inkling/Runtime/Layout.h`), the one place that
    holds the formulas.

    ```mlir
    #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
    #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 2, dtype = bf16>
    #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1, block_size = 16>
    ```

    `block_size` (N, tokens per cache block) is the serving engine's choice
    and independent of the kernel; it defaults to the kernel and is printed
    only when it differs. `dtype` defaults to bf16 and is printed only when
    it differs. The verifier rejects any other element type, sizes below 1,
    `tp > kv_heads`, `kv_heads % tp != 0`, `hidden % kv_heads != 0` and a
    page `H*N*D*2` over 2^40 bytes.
  }];
  let parameters = (ins
    "int64_t":$kvHeads,
    "int64_t":$headDim,
    "int64_t":$hidden,
    "int64_t":$kernel,
    "int64_t":$tp,
    "int64_t":$blockSize,
    "::mlir::Type":$dtype
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilder<(ins "int64_t":$kvHeads, "int64_t":$headDim,
                     "int64_t":$hidden, "int64_t":$kernel, "int64_t":$tp), [{
      return $_get($_ctxt, kvHeads, headDim, hidden, kernel, tp,
                   /*blockSize=*/kernel, ::mlir::BFloat16Type::get($_ctxt));
    }]>,
    AttrBuilder<(ins "int64_t":$kvHeads, "int64_t":$headDim,
                     "int64_t":$hidden, "int64_t":$kernel, "int64_t":$tp,
                     "int64_t":$blockSize), [{
      return $_get($_ctxt, kvHeads, headDim, hidden, kernel, tp, blockSize,
                   ::mlir::BFloat16Type::get($_ctxt));
    }]>
  ];
  let extraClassDeclaration = [{
    /// The derived layout. Valid for every attribute that passed its
    /// verifier, which is all of them once constructed.
    ::inkling::Layout getDerived() const;
    /// The runtime's view of the parameters.
    ::inkling::LayoutConfig getConfig() const;
    /// This layout with block size `blockSize` (verified; null if invalid).
    LayoutAttr withBlockSize(int64_t blockSize) const;

    int64_t getHeadsPerRank() const { return getDerived().headsPerRank; }
    int64_t getHeadSize() const { return getDerived().headSize; }
    /// (offset, width) of `stream` inside the head row.
    ::inkling::StreamRange getRange(Stream stream) const;
    /// Width of `stream` (head_dim for k/v, hidden per head for attn/mlp).
    int64_t getStreamWidth(Stream stream) const {
      return getRange(stream).width;
    }
  }];
}

#endif // INKLING_DIALECT_SCONV_IR_SCONVATTRDEFS_TD
