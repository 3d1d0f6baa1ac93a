//===- SConvOps.cpp - sconv operations ------------------------------------===//

#include "inkling/Dialect/SConv/IR/SConvOps.h"
#include "SConvVerifyUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/CastInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include <cmath>

using namespace mlir;
using namespace inkling::sconv;
using namespace inkling::sconv::detail;

//===----------------------------------------------------------------------===//
// Custom directives
//===----------------------------------------------------------------------===//

/// `k`, `v`, `attn` or `mlp` as a bare keyword (`%cache[k]`).
static ParseResult parseStreamRef(OpAsmParser &parser, StreamAttr &stream) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return failure();
  std::optional<Stream> value = symbolizeStream(keyword);
  if (!value)
    return parser.emitError(loc) << "expected a stream (k, v, attn or mlp), "
                                    "found '"
                                 << keyword << "'";
  stream = StreamAttr::get(parser.getContext(), *value);
  return success();
}

static void printStreamRef(OpAsmPrinter &printer, Operation *,
                           StreamAttr stream) {
  printer << stringifyStream(stream.getValue());
}

/// `activation silu`, or nothing for the default (none).
static ParseResult parseOptionalActivation(OpAsmParser &parser,
                                           ActivationAttr &activation) {
  if (failed(parser.parseOptionalKeyword("activation")))
    return success();
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return failure();
  std::optional<Activation> value = symbolizeActivation(keyword);
  if (!value)
    return parser.emitError(loc)
           << "expected an activation (none or silu), found '" << keyword
           << "'";
  activation = ActivationAttr::get(parser.getContext(), *value);
  return success();
}

static void printOptionalActivation(OpAsmPrinter &printer, Operation *,
                                    ActivationAttr activation) {
  if (activation && activation.getValue() != Activation::None)
    printer << " activation " << stringifyActivation(activation.getValue());
}

/// `k, v, attn` as bare keywords.
static ParseResult parseStreamList(OpAsmParser &parser, ArrayAttr &streams) {
  SmallVector<Attribute> list;
  auto parseOne = [&]() -> ParseResult {
    StreamAttr stream;
    if (parseStreamRef(parser, stream))
      return failure();
    list.push_back(stream);
    return success();
  };
  if (parser.parseCommaSeparatedList(parseOne))
    return failure();
  streams = ArrayAttr::get(parser.getContext(), list);
  return success();
}

static void printStreamList(OpAsmPrinter &printer, Operation *op,
                            ArrayAttr streams) {
  llvm::interleaveComma(streams, printer, [&](Attribute stream) {
    printStreamRef(printer, op, cast<StreamAttr>(stream));
  });
}

static SmallVector<Stream> streamsOf(ArrayAttr streams) {
  return llvm::map_to_vector(streams, [](Attribute stream) {
    return cast<StreamAttr>(stream).getValue();
  });
}

/// Each stream at most once: fused ops write disjoint channel ranges.
static LogicalResult verifyDistinctStreams(Operation *op, ArrayAttr streams) {
  unsigned seen = 0;
  for (Stream stream : streamsOf(streams)) {
    unsigned bit = 1u << static_cast<unsigned>(stream);
    if (seen & bit)
      return op->emitOpError() << "attribute 'streams': stream '"
                               << stringifyStream(stream) << "' appears twice";
    seen |= bit;
  }
  return success();
}

/// H*w: the channels of a bias (or of a hidden-row norm's weight).
static int64_t channelsOf(LayoutAttr layout, Stream stream) {
  return layout.getHeadsPerRank() * layout.getStreamWidth(stream);
}

static std::string indexedName(StringRef name, size_t index) {
  return (name + "[" + Twine(index) + "]").str();
}

/// Folds the static token count of operand `name` (of `type`) into
/// `tokens` (dynamic: none seen yet): every input of a fused op has the
/// tokens of 'inputs[0]'.
static LogicalResult sameTokens(Operation *op, StringRef name, Type type,
                                int64_t &tokens) {
  int64_t count = cast<MemRefType>(type).getDimSize(0);
  if (ShapedType::isDynamic(count))
    return success();
  if (!ShapedType::isDynamic(tokens) && count != tokens)
    return op->emitOpError() << "operand '" << name << "': expected " << tokens
                             << " tokens like 'inputs[0]', found " << count;
  tokens = count;
  return success();
}

/// Stream `stream`'s input and weights of a fused conv.
static LogicalResult verifyConvStream(Operation *op, LayoutAttr layout,
                                      Stream stream, ValueRange inputs,
                                      ValueRange weights, size_t i) {
  return failure(
      failed(verifyStreamOperand(op, indexedName("inputs", i),
                                 inputs[i].getType(), layout, stream)) ||
      failed(verifyWeightsOperand(op, indexedName("weights", i),
                                  weights[i].getType(), layout, stream)));
}

using EffectList =
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>;

/// The effects of a fused conv (FusedConvOp, FusedConvKvWriteOp): it reads
/// every operand of `reads`, then the cache and the step (and `extraRead`),
/// writes the cache when it inserts, then every operand of `writes`.
static void addFusedConvEffects(EffectList &effects, OpOperand &cache,
                                OpOperand &step, OpOperand *extraRead,
                                bool insert,
                                ArrayRef<MutableOperandRange> reads,
                                ArrayRef<MutableOperandRange> writes) {
  auto *read = MemoryEffects::Read::get();
  auto *write = MemoryEffects::Write::get();
  for (MutableOperandRange range : reads)
    for (OpOperand &operand : range)
      effects.emplace_back(read, &operand);
  effects.emplace_back(read, &cache);
  effects.emplace_back(read, &step);
  if (extraRead)
    effects.emplace_back(read, extraRead);
  if (insert)
    effects.emplace_back(write, &cache);
  for (MutableOperandRange range : writes)
    for (OpOperand &operand : range)
      effects.emplace_back(write, &operand);
}

#define GET_OP_CLASSES
#include "inkling/Dialect/SConv/IR/SConvOps.cpp.inc"

//===----------------------------------------------------------------------===//
// BindOp
//===----------------------------------------------------------------------===//

MemRefType BindOp::getCacheType(LayoutAttr layout, int64_t pageBytes) {
  inkling::Layout derived = layout.getDerived();
  int64_t blockStride = pageBytes / derived.elementBytes;
  auto strides = derived.cacheStrides(blockStride);
  auto shape = derived.cacheShape(ShapedType::kDynamic);
  auto stridedLayout =
      StridedLayoutAttr::get(layout.getContext(), /*offset=*/0, strides);
  return MemRefType::get(shape, layout.getDtype(), stridedLayout);
}

void BindOp::build(OpBuilder &builder, OperationState &state, Value buffer,
                   LayoutAttr layout, int64_t pageBytes) {
  build(builder, state, getCacheType(layout, pageBytes), buffer, layout,
        builder.getI64IntegerAttr(pageBytes), /*layers=*/nullptr);
}

Value BindOp::getViewSource() { return getBuffer(); }

LogicalResult BindOp::verify() {
  auto bufferType = dyn_cast<MemRefType>(getBuffer().getType());
  Type i8 = IntegerType::get(getContext(), 8);
  if (!bufferType || bufferType.getRank() != 1 ||
      bufferType.getElementType() != i8 || !bufferType.getLayout().isIdentity())
    return emitOpError() << "operand 'buffer': expected a contiguous "
                            "memref<?xi8>, found "
                         << getBuffer().getType();
  inkling::StatusOr<int64_t> blockStride =
      getLayout().getDerived().blockStrideForPageBytes(getPageBytes());
  if (!blockStride.isOk())
    return emitOpError() << "attribute 'page_bytes': "
                         << blockStride.status().message();
  inkling::Layout derived = getLayout().getDerived();
  if (std::optional<int64_t> layers = getLayers()) {
    // Cross-layer pages: the block stride holds the pages of all layers.
    if (*layers < 1 || *layers > (int64_t(1) << 20))
      return emitOpError() << "attribute 'layers': expected a layer count in "
                              "[1, 2^20], found "
                           << *layers;
    if (static_cast<int64_t>(getPageBytes()) / *layers < derived.pageBytes())
      return emitOpError() << "attribute 'page_bytes': the block stride of "
                           << getPageBytes() << " bytes cannot hold layers ("
                           << *layers << ") pages of " << derived.pageBytes()
                           << " bytes";
  }
  MemRefType expected = getCacheType(getLayout(), getPageBytes());
  MemRefType found = getCache().getType();
  int64_t bufferBytes = bufferType.getDimSize(0);
  int64_t foundBlocks = found.getRank() == 4 ? found.getDimSize(0) : 0;
  bool blocksMatch =
      ShapedType::isDynamic(foundBlocks) ||
      (!ShapedType::isDynamic(bufferBytes) &&
       foundBlocks == derived.blocksInBuffer(bufferBytes, getPageBytes()));
  if (found.getRank() != 4 ||
      found.getShape().drop_front() != expected.getShape().drop_front() ||
      found.getElementType() != expected.getElementType() ||
      found.getLayout() != expected.getLayout() || !blocksMatch)
    return emitOpError() << "result 'cache': expected " << expected
                         << " (the block count may be static when the "
                            "buffer size is), found "
                         << found;
  return success();
}

//===----------------------------------------------------------------------===//
// StepOp
//===----------------------------------------------------------------------===//

LogicalResult StepOp::verify() {
  if (failed(verifyMetadataOperand(*this, "query_start_loc",
                                   getQueryStartLoc().getType(), 1, 32)) ||
      failed(verifyMetadataOperand(*this, "num_computed",
                                   getNumComputed().getType(), 1, 32)) ||
      failed(verifyMetadataOperand(*this, "block_table",
                                   getBlockTable().getType(), 2, 32)) ||
      failed(verifyMetadataOperand(*this, "slot_mapping",
                                   getSlotMapping().getType(), 1, 64)) ||
      (getTokenSeq() &&
       failed(verifyMetadataOperand(*this, "token_seq", getTokenSeq().getType(),
                                    1, 32))) ||
      (getStatus() && failed(verifyMetadataOperand(
                          *this, "status", getStatus().getType(), 1, 64))))
    return failure();
  if (getStatus()) {
    int64_t words = cast<MemRefType>(getStatus().getType()).getDimSize(0);
    if (!ShapedType::isDynamic(words) && words < 5)
      return emitOpError() << "operand 'status': expected at least 5 "
                              "entries (count, kind, token, value, limit), "
                              "found "
                           << words;
  }
  int64_t qsl = getQueryStartLoc().getType().getDimSize(0);
  int64_t batch = getNumComputed().getType().getDimSize(0);
  int64_t rows = getBlockTable().getType().getDimSize(0);
  if (!ShapedType::isDynamic(qsl) && !ShapedType::isDynamic(batch) &&
      qsl != batch + 1)
    return emitOpError() << "operand 'query_start_loc': expected " << batch + 1
                         << " entries (B + 1 for B = " << batch
                         << " sequences in 'num_computed'), found " << qsl;
  if (!ShapedType::isDynamic(rows) && !ShapedType::isDynamic(batch) &&
      rows != batch)
    return emitOpError() << "operand 'block_table': expected " << batch
                         << " rows (one per sequence in 'num_computed'), found "
                         << rows;
  return success();
}

//===----------------------------------------------------------------------===//
// InsertOp
//===----------------------------------------------------------------------===//

LogicalResult InsertOp::verify() {
  if (failed(verifyCacheOperand(*this, "cache", getCache().getType(),
                                getLayout())) ||
      failed(verifyStreamOperand(*this, "x", getX().getType(), getLayout(),
                                 getStream())))
    return failure();
  return verifyStepCoversTokens(*this, getStep(),
                                getX().getType().getDimSize(0));
}

bool InsertOp::readsOnlyHistory() { return true; }

SmallVector<Stream> InsertOp::getStepWrittenStreams() { return {getStream()}; }

//===----------------------------------------------------------------------===//
// ConvOp
//===----------------------------------------------------------------------===//

bool ConvOp::readsOnlyHistory() { return true; }

SmallVector<Stream> ConvOp::getStepWrittenStreams() { return {}; }

/// `v` without the casts that only retype the same memory (memref.cast,
/// memref.memory_space_cast): an output cast from x is x.
static Value castRoot(Value v) {
  while (Operation *op = v.getDefiningOp()) {
    auto view = dyn_cast<ViewLikeOpInterface>(op);
    if (!view || !isa<CastOpInterface>(op))
      break;
    v = view.getViewSource();
  }
  return v;
}

LogicalResult ConvOp::verify() {
  LayoutAttr layout = getLayout();
  Stream stream = getStream();
  if (failed(
          verifyCacheOperand(*this, "cache", getCache().getType(), layout)) ||
      failed(
          verifyStreamOperand(*this, "x", getX().getType(), layout, stream)) ||
      failed(verifyWeightsOperand(*this, "weights", getWeights().getType(),
                                  layout, stream)) ||
      (getBias() &&
       failed(verifyChannelsOperand(*this, "bias", getBias().getType(), layout,
                                    channelsOf(layout, stream)))) ||
      failed(verifyStreamOperand(*this, "out", getOut().getType(), layout,
                                 stream)))
    return failure();
  MemRefType xType = getX().getType();
  MemRefType outType = getOut().getType();
  if (outType.getShape() != xType.getShape())
    return emitOpError() << "operand 'out': expected the shape of 'x' ("
                         << xType << "), found " << outType;
  // Taps read other tokens' inputs: an in-place conv would read outputs.
  if (castRoot(getOut()) == castRoot(getX()))
    return emitOpError() << "operand 'out' must not be operand 'x': the conv "
                            "reads x of earlier tokens after writing out";
  return verifyTokenSeqCoversTokens(*this, getStep(), xType.getDimSize(0));
}

//===----------------------------------------------------------------------===//
// InsertPackedOp
//===----------------------------------------------------------------------===//

SmallVector<Stream> InsertPackedOp::getStreamList() {
  return streamsOf(getStreams());
}

bool InsertPackedOp::readsOnlyHistory() { return true; }

SmallVector<Stream> InsertPackedOp::getStepWrittenStreams() {
  return getStreamList();
}

LogicalResult InsertPackedOp::verify() {
  SmallVector<Stream> streams = getStreamList();
  if (streams.empty() || streams.size() != getInputs().size())
    return emitOpError() << "expected one input per stream, found "
                         << getInputs().size() << " inputs for "
                         << streams.size() << " streams";
  if (failed(verifyDistinctStreams(*this, getStreams())) ||
      failed(verifyCacheOperand(*this, "cache", getCache().getType(),
                                getLayout())))
    return failure();
  int64_t tokens = ShapedType::kDynamic;
  for (auto [i, input] : llvm::enumerate(getInputs())) {
    std::string name = indexedName("inputs", i);
    if (failed(verifyStreamOperand(*this, name, input.getType(), getLayout(),
                                   streams[i])) ||
        failed(sameTokens(*this, name, input.getType(), tokens)))
      return failure();
  }
  return verifyStepCoversTokens(*this, getStep(), tokens);
}

//===----------------------------------------------------------------------===//
// FusedConvOp
//===----------------------------------------------------------------------===//

SmallVector<Stream> FusedConvOp::getStreamList() {
  return streamsOf(getStreams());
}

bool FusedConvOp::readsOnlyHistory() { return true; }

SmallVector<Stream> FusedConvOp::getStepWrittenStreams() {
  return getInsert() ? getStreamList() : SmallVector<Stream>();
}

void FusedConvOp::getEffects(EffectList &effects) {
  addFusedConvEffects(
      effects, getCacheMutable(), getStepMutable(), /*extraRead=*/nullptr,
      getInsert(),
      {getInputsMutable(), getWeightsMutable(), getBiasesMutable()},
      {getOutsMutable()});
}

LogicalResult FusedConvOp::verify() {
  SmallVector<Stream> streams = getStreamList();
  size_t count = streams.size();
  if (count == 0 || getInputs().size() != count ||
      getWeights().size() != count || getOuts().size() != count ||
      (!getBiases().empty() && getBiases().size() != count))
    return emitOpError() << "expected one input, weight, output (and bias, "
                            "when biases are given) per stream; found "
                         << getInputs().size() << " inputs, "
                         << getWeights().size() << " weights, "
                         << getBiases().size() << " biases, "
                         << getOuts().size() << " outputs for " << count
                         << " streams";
  LayoutAttr layout = getLayout();
  if (failed(verifyDistinctStreams(*this, getStreams())) ||
      failed(verifyCacheOperand(*this, "cache", getCache().getType(), layout)))
    return failure();
  for (size_t i = 0; i < count; ++i) {
    Value input = getInputs()[i], out = getOuts()[i];
    if (failed(verifyConvStream(*this, layout, streams[i], getInputs(),
                                getWeights(), i)) ||
        (!getBiases().empty() &&
         failed(verifyChannelsOperand(*this, indexedName("biases", i),
                                      getBiases()[i].getType(), layout,
                                      channelsOf(layout, streams[i])))) ||
        failed(verifyStreamOperand(*this, indexedName("outs", i), out.getType(),
                                   layout, streams[i])))
      return failure();
    if (cast<MemRefType>(out.getType()).getShape() !=
        cast<MemRefType>(input.getType()).getShape())
      return emitOpError() << "operand '" << indexedName("outs", i)
                           << "': expected the shape of '"
                           << indexedName("inputs", i) << "' ("
                           << input.getType() << "), found " << out.getType();
    if (llvm::any_of(getInputs(), [&](Value input) {
          return castRoot(input) == castRoot(out);
        }))
      return emitOpError() << "operand '" << indexedName("outs", i)
                           << "' must not be an input: the conv reads x of "
                              "earlier tokens after writing out";
  }
  if (getInsert())
    return verifyStepCoversTokens(
        *this, getStep(),
        cast<MemRefType>(getInputs()[0].getType()).getDimSize(0));
  return success();
}

//===----------------------------------------------------------------------===//
// Epilogues (SConvEpilogueOps.td): RmsNormOp, KvWriteOp, FusedConvKvWriteOp
//===----------------------------------------------------------------------===//

static LogicalResult verifyEpsilon(Operation *op, FloatAttr epsilon) {
  double eps = epsilon.getValueAsDouble();
  if (!(eps >= 0.0) || std::isinf(eps))
    return op->emitOpError()
           << "attribute 'eps': expected a finite epsilon >= 0, found " << eps;
  return success();
}

/// The slot mapping of a KV write: i64 [>= T].
static LogicalResult verifyKvSlots(Operation *op, StringRef name, Value slots,
                                   int64_t tokens) {
  if (failed(verifyMetadataOperand(op, name, slots.getType(), 1, 64)))
    return failure();
  int64_t entries = cast<MemRefType>(slots.getType()).getDimSize(0);
  if (!ShapedType::isDynamic(entries) && !ShapedType::isDynamic(tokens) &&
      entries < tokens)
    return op->emitOpError() << "operand '" << name << "': holds " << entries
                             << " slots for " << tokens << " tokens";
  return success();
}

LogicalResult RmsNormOp::verify() {
  LayoutAttr layout = getLayout();
  Stream stream = getStream();
  if (failed(
          verifyStreamOperand(*this, "x", getX().getType(), layout, stream)) ||
      failed(verifyStreamOperand(*this, "out", getOut().getType(), layout,
                                 stream)) ||
      failed(verifyChannelsOperand(*this, "weight", getWeight().getType(),
                                   layout, layout.getStreamWidth(stream))) ||
      failed(verifyNormWidth(*this, layout, stream)) ||
      failed(verifyEpsilon(*this, getEpsilonAttr())))
    return failure();
  auto xType = cast<MemRefType>(getX().getType());
  auto outType = cast<MemRefType>(getOut().getType());
  if (outType.getShape() != xType.getShape())
    return emitOpError() << "operand 'out': expected the shape of 'x' ("
                         << xType << "), found " << outType;
  return success();
}

LogicalResult KvWriteOp::verify() {
  LayoutAttr layout = getLayout();
  Stream stream = getStream();
  if (failed(
          verifyStreamOperand(*this, "x", getX().getType(), layout, stream)) ||
      failed(verifyKvCacheOperand(*this, "kv_cache", getKvCache().getType(),
                                  layout, stream)))
    return failure();
  return verifyKvSlots(*this, "slots", getSlots(),
                       cast<MemRefType>(getX().getType()).getDimSize(0));
}

SmallVector<Stream> FusedConvKvWriteOp::getStreamList() {
  return streamsOf(getStreams());
}

Value FusedConvKvWriteOp::getNormWeightOf(unsigned i) {
  ArrayRef<bool> normed = getNormed();
  if (i >= normed.size() || !normed[i])
    return {};
  unsigned index = llvm::count(normed.take_front(i), true);
  return index < getNormWeights().size() ? getNormWeights()[index] : Value();
}

bool FusedConvKvWriteOp::readsOnlyHistory() { return true; }

SmallVector<Stream> FusedConvKvWriteOp::getStepWrittenStreams() {
  return getInsert() ? getStreamList() : SmallVector<Stream>();
}

void FusedConvKvWriteOp::getEffects(EffectList &effects) {
  addFusedConvEffects(
      effects, getCacheMutable(), getStepMutable(), &getKvSlotsMutable(),
      getInsert(),
      {getInputsMutable(), getWeightsMutable(), getNormWeightsMutable()},
      {getKvCachesMutable()});
}

LogicalResult FusedConvKvWriteOp::verify() {
  SmallVector<Stream> streams = getStreamList();
  size_t count = streams.size();
  ArrayRef<bool> normed = getNormed();
  size_t normCount = llvm::count(normed, true);
  if (count == 0 || getInputs().size() != count ||
      getWeights().size() != count || getKvCaches().size() != count ||
      normed.size() != count)
    return emitOpError() << "expected one input, weight, 'normed' flag and "
                            "KV cache per stream; found "
                         << getInputs().size() << " inputs, "
                         << getWeights().size() << " weights, " << normed.size()
                         << " flags, " << getKvCaches().size()
                         << " KV caches for " << count << " streams";
  if (getNormWeights().size() != normCount)
    return emitOpError() << "expected one norm weight per normalized stream ("
                         << normCount << "), found " << getNormWeights().size();
  LayoutAttr layout = getLayout();
  if (failed(verifyDistinctStreams(*this, getStreams())) ||
      failed(
          verifyCacheOperand(*this, "cache", getCache().getType(), layout)) ||
      failed(verifyEpsilon(*this, getEpsilonAttr())))
    return failure();
  int64_t tokens = ShapedType::kDynamic;
  for (size_t i = 0; i < count; ++i) {
    Value input = getInputs()[i];
    if (failed(verifyConvStream(*this, layout, streams[i], getInputs(),
                                getWeights(), i)) ||
        failed(verifyKvCacheOperand(*this, indexedName("kv_caches", i),
                                    getKvCaches()[i].getType(), layout,
                                    streams[i])))
      return failure();
    if (Value weight = getNormWeightOf(i))
      if (failed(verifyChannelsOperand(
              *this,
              indexedName("norm_weights",
                          llvm::count(normed.take_front(i), true)),
              weight.getType(), layout, layout.getStreamWidth(streams[i]))) ||
          failed(verifyNormWidth(*this, layout, streams[i])))
        return failure();
    if (failed(sameTokens(*this, indexedName("inputs", i), input.getType(),
                          tokens)))
      return failure();
  }
  if (failed(verifyKvSlots(*this, "kv_slots", getKvSlots(), tokens)))
    return failure();
  if (getInsert())
    return verifyStepCoversTokens(*this, getStep(), tokens);
  return verifyTokenSeqCoversTokens(*this, getStep(), tokens);
}

/// The hidden-row norm's operands: y, residual, sum and out rows of the
/// stream (the same shape), the weight [H*w], tp = 1, w whole chunks.
static LogicalResult verifyAddNorm(Operation *op, LayoutAttr layout,
                                   Stream stream, Value y, StringRef yName,
                                   Value residual, Value weight,
                                   StringRef weightName, Value sum, Value out,
                                   FloatAttr epsilon) {
  if (failed(verifyStreamOperand(op, yName, y.getType(), layout, stream)) ||
      failed(verifyStreamOperand(op, "residual", residual.getType(), layout,
                                 stream)) ||
      failed(verifyStreamOperand(op, "sum", sum.getType(), layout, stream)) ||
      failed(verifyStreamOperand(op, "out", out.getType(), layout, stream)) ||
      failed(verifyChannelsOperand(op, weightName, weight.getType(), layout,
                                   channelsOf(layout, stream))) ||
      failed(verifyNormWidth(op, layout, stream)) ||
      failed(verifyEpsilon(op, epsilon)))
    return failure();
  if (layout.getTp() != 1)
    return op->emitOpError()
           << "the hidden-row norm needs every rank's sum of squares: tp ("
           << layout.getTp()
           << ") must be 1 (at tp > 1 the engine's all-reduce sits between "
              "the add and the norm)";
  auto tokens = [](Value v) {
    return cast<MemRefType>(v.getType()).getDimSize(0);
  };
  for (auto [name, v] : {std::pair<StringRef, Value>{"residual", residual},
                         {"sum", sum},
                         {"out", out}})
    if (!ShapedType::isDynamic(tokens(v)) &&
        !ShapedType::isDynamic(tokens(y)) && tokens(v) != tokens(y))
      return op->emitOpError()
             << "operand '" << name << "': expected " << tokens(y)
             << " tokens like '" << yName << "', found " << v.getType();
  return success();
}

LogicalResult AddRmsNormOp::verify() {
  return verifyAddNorm(*this, getLayout(), getStream(), getY(), "y",
                       getResidual(), getWeight(), "weight", getSum(), getOut(),
                       getEpsilonAttr());
}

bool FusedConvAddNormOp::readsOnlyHistory() { return true; }

SmallVector<Stream> FusedConvAddNormOp::getStepWrittenStreams() {
  if (!getInsert())
    return {};
  return {getStream()};
}

void FusedConvAddNormOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  auto *read = MemoryEffects::Read::get();
  auto *write = MemoryEffects::Write::get();
  for (OpOperand *operand :
       {&getXMutable(), &getWeightsMutable(), &getCacheMutable(),
        &getStepMutable(), &getResidualMutable(), &getNormWeightMutable()})
    effects.emplace_back(read, operand);
  if (getInsert())
    effects.emplace_back(write, &getCacheMutable());
  effects.emplace_back(write, &getSumMutable());
  effects.emplace_back(write, &getOutMutable());
}

LogicalResult FusedConvAddNormOp::verify() {
  LayoutAttr layout = getLayout();
  if (failed(
          verifyCacheOperand(*this, "cache", getCache().getType(), layout)) ||
      failed(verifyWeightsOperand(*this, "weights", getWeights().getType(),
                                  layout, getStream())) ||
      failed(verifyAddNorm(*this, layout, getStream(), getX(), "x",
                           getResidual(), getNormWeight(), "norm_weight",
                           getSum(), getOut(), getEpsilonAttr())))
    return failure();
  int64_t tokens = cast<MemRefType>(getX().getType()).getDimSize(0);
  if (getInsert())
    return verifyStepCoversTokens(*this, getStep(), tokens);
  return verifyTokenSeqCoversTokens(*this, getStep(), tokens);
}
