//===- ConvParts.cpp - A conv's operands, stream by stream ----------------===//

#include "ConvParts.h"

using namespace mlir;

namespace inkling::sconv {

std::optional<ConvParts> ConvParts::of(Operation *op) {
  ConvParts parts;
  if (auto conv = dyn_cast<ConvOp>(op)) {
    parts.inputs = {conv.getX()};
    parts.weights = {conv.getWeights()};
    if (conv.getBias())
      parts.biases = {conv.getBias()};
    parts.outs = {conv.getOut()};
    parts.streams = {conv.getStream()};
    parts.cache = conv.getCache();
    parts.step = conv.getStep();
    parts.layout = conv.getLayout();
    parts.residual = conv.getResidual();
    parts.activation = conv.getActivation();
    return parts;
  }
  if (auto fused = dyn_cast<FusedConvOp>(op)) {
    parts.inputs = llvm::to_vector(fused.getInputs());
    parts.weights = llvm::to_vector(fused.getWeights());
    parts.biases = llvm::to_vector(fused.getBiases());
    parts.outs = llvm::to_vector(fused.getOuts());
    parts.streams = fused.getStreamList();
    parts.cache = fused.getCache();
    parts.step = fused.getStep();
    parts.layout = fused.getLayout();
    parts.residual = fused.getResidual();
    parts.activation = fused.getActivation();
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
