//===- LayerProgramTest.cpp - LayerProgram::checkArguments ----------------===//
//
// What every caller of LayerProgram::invoke checks first (replay and the
// CPU serving executor do): the arguments against the function's types,
// and the kernels' alignment contract. Each error names the argument, its
// type and the value.
//
//===----------------------------------------------------------------------===//

#include "inkling/ExecutionEngine/LayerProgram.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <string>
#include <vector>

using namespace inkling::exec;

namespace {

#ifndef INKLING_SOURCE_DIR
#error "INKLING_SOURCE_DIR: the repository root"
#endif

/// Valid arguments for examples/small_layer.mlir (H 2, head_dim 8, hidden
/// 16, kernel 4): T tokens, B sequences, one 64-byte aligned arena.
struct SmallLayerArgs {
  explicit SmallLayerArgs(const LayerSignature &sig) {
    arena.resize(1 << 16);
    auto base = reinterpret_cast<uintptr_t>(arena.data());
    char *next = reinterpret_cast<char *>((base + 63) & ~uintptr_t(63));
    for (const ArgInfo &info : sig.args) {
      MemRefArg arg;
      arg.data = next;
      next += 2048;
      int64_t count = 1;
      arg.sizes.assign(info.shape.size(), 0);
      arg.strides.assign(info.shape.size(), 1);
      for (size_t d = info.shape.size(); d-- > 0;) {
        arg.sizes[d] = info.shape[d] == kDynamic ? 4 : info.shape[d];
        arg.strides[d] = info.strides[d] == kDynamic ? count : info.strides[d];
        count *= arg.sizes[d];
      }
      arg.offset = info.offset == kDynamic ? 0 : info.offset;
      args.push_back(arg);
    }
  }
  std::vector<char> arena;
  std::vector<MemRefArg> args;
};

TEST(LayerProgramTest, CheckArgumentsNamesTheValue) {
  std::string error;
  auto program = LayerProgram::load(std::string(INKLING_SOURCE_DIR) +
                                        "/examples/small_layer.mlir",
                                    "", error);
  ASSERT_TRUE(program) << error;
  const LayerSignature &sig = program->signature();
  SmallLayerArgs valid(sig);
  ASSERT_TRUE(program->checkArguments(valid.args, error)) << error;

  // A static size of the IR (k weights: memref<16x4xbf16>).
  int weights = -1;
  for (size_t i = 0; i < sig.args.size(); ++i)
    if (sig.args[i].role == ArgRole::Weights && weights < 0)
      weights = static_cast<int>(i);
  ASSERT_GE(weights, 0);
  SmallLayerArgs wrongSize(sig);
  wrongSize.args[weights].sizes[1] = 3;
  EXPECT_FALSE(program->checkArguments(wrongSize.args, error));
  EXPECT_EQ(error, "argument " + std::to_string(weights) +
                       " of @small_layer (k weights, memref<16x4xbf16>): "
                       "size 1 is 3, the type says 4");

  // The alignment contract: a bf16 buffer 8 bytes past a 16-byte boundary.
  SmallLayerArgs misaligned(sig);
  misaligned.args[sig.input[0]].data =
      static_cast<char *>(misaligned.args[sig.input[0]].data) + 8;
  EXPECT_FALSE(program->checkArguments(misaligned.args, error));
  EXPECT_NE(error.find("(k input, memref<?x2x8xbf16>): the data pointer is "
                       "not 16-byte aligned"),
            std::string::npos)
      << error;

  // Metadata need only their element alignment.
  SmallLayerArgs metadata(sig);
  metadata.args[sig.queryStartLoc].data =
      static_cast<char *>(metadata.args[sig.queryStartLoc].data) + 4;
  EXPECT_TRUE(program->checkArguments(metadata.args, error)) << error;

  // Count, rank and negative sizes.
  SmallLayerArgs fewer(sig);
  fewer.args.pop_back();
  EXPECT_FALSE(program->checkArguments(fewer.args, error));
  EXPECT_NE(error.find("takes " + std::to_string(sig.args.size()) +
                       " arguments, got " +
                       std::to_string(sig.args.size() - 1)),
            std::string::npos);
  SmallLayerArgs negative(sig);
  negative.args[sig.slotMapping].sizes[0] = -1;
  EXPECT_FALSE(program->checkArguments(negative.args, error));
  EXPECT_NE(error.find("size 0 is -1"), std::string::npos) << error;
}

} // namespace
