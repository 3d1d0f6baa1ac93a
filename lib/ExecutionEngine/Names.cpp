//===- Names.cpp - Names and sizes of LayerProgram's enums ----------------===//
//
// One table per enum of LayerProgram.h, indexed by the enumerator.
//
//===----------------------------------------------------------------------===//

#include "inkling/ExecutionEngine/LayerProgram.h"

#include <iterator>

using namespace inkling;
using namespace inkling::exec;

namespace {

struct ElementEntry {
  const char *name;
  int64_t bytes;
};
// In ElementKind's order.
constexpr ElementEntry kElements[] = {
    {"i8", 1}, {"i32", 4}, {"i64", 8}, {"bf16", 2}};

// In ArgRole's order.
constexpr const char *kRoles[] = {"cache",
                                  "query_start_loc",
                                  "num_computed",
                                  "block_table",
                                  "slot_mapping",
                                  "token_seq",
                                  "status",
                                  "input",
                                  "weights",
                                  "bias",
                                  "output",
                                  "kv_cache",
                                  "attn_slot_mapping",
                                  "norm_weight",
                                  "residual",
                                  "sum",
                                  "normed"};

static_assert(std::size(kElements) == size_t(ElementKind::BF16) + 1);
static_assert(std::size(kRoles) == size_t(ArgRole::Normed) + 1);

template <typename Table, typename Enum>
const auto *lookup(const Table &table, Enum value) {
  auto index = static_cast<size_t>(value);
  return index < std::size(table) ? &table[index] : nullptr;
}

} // namespace

const char *exec::elementKindName(ElementKind kind) {
  const ElementEntry *entry = lookup(kElements, kind);
  return entry ? entry->name : "?";
}

int64_t exec::elementBytes(ElementKind kind) {
  const ElementEntry *entry = lookup(kElements, kind);
  return entry ? entry->bytes : 1;
}

const char *exec::argRoleName(ArgRole role) {
  const char *const *name = lookup(kRoles, role);
  return name ? *name : "?";
}
