//===- ConvParts.cpp - A conv's operands, stream by stream ----------------===//

#include "ConvParts.h"

using namespace mlir;

namespace inkling::sconv {

/// The operands and attributes sconv.conv and sconv.fused_conv share.
template <typename Op> static void setSharedParts(ConvParts &parts, Op op) {
  parts.cache = op.getCache();
  parts.step = op.getStep();
  parts.layout = op.getLayout();
  parts.residual = op.getResidual();
  parts.activation = op.getActivation();
}

std::optional<ConvParts> ConvParts::of(Operation *op) {
  ConvParts parts;
  if (auto conv = dyn_cast<ConvOp>(op)) {
    parts.inputs = {conv.getX()};
    parts.weights = {conv.getWeights()};
    if (conv.getBias())
      parts.biases = {conv.getBias()};
    parts.outs = {conv.getOut()};
    parts.streams = {conv.getStream()};
    setSharedParts(parts, conv);
    return parts;
  }
  if (auto fused = dyn_cast<FusedConvOp>(op)) {
    parts.inputs = llvm::to_vector(fused.getInputs());
    parts.weights = llvm::to_vector(fused.getWeights());
    parts.biases = llvm::to_vector(fused.getBiases());
    parts.outs = llvm::to_vector(fused.getOuts());
    parts.streams = fused.getStreamList();
    setSharedParts(parts, fused);
    parts.insert = fused.getInsert();
    return parts;
  }
  return std::nullopt;
}

bool ConvParts::canMergeWith(const ConvParts &other) const {
  if (cache != other.cache || step != other.step || layout != other.layout ||
      residual != other.residual || activation != other.activation ||
      insert != other.insert || biases.empty() != other.biases.empty())
    return false;
  for (Stream stream : other.streams)
    if (llvm::is_contained(streams, stream))
      return false;
  return true;
}

void ConvParts::append(const ConvParts &other) {
  inputs.append(other.inputs);
  weights.append(other.weights);
  biases.append(other.biases);
  outs.append(other.outs);
  streams.append(other.streams);
}

FusedConvOp ConvParts::build(OpBuilder &builder, Location loc) const {
  SmallVector<Attribute> streamAttrs =
      llvm::map_to_vector(streams, [&](Stream s) -> Attribute {
        return StreamAttr::get(builder.getContext(), s);
      });
  auto op = FusedConvOp::create(
      builder, loc, inputs, weights, biases, cache, step, outs,
      builder.getArrayAttr(streamAttrs), layout, builder.getBoolAttr(residual),
      ActivationAttr::get(builder.getContext(), activation),
      insert ? builder.getUnitAttr() : UnitAttr());
  return op;
}

} // namespace inkling::sconv
