//===- EnumName.h - An enum's names as one table ----------------*- C++ -*-===//
//
// Private to the runtime library: the name of an enumerator of a dense enum
// (enumerators 0, 1, ...) from one array, instead of a switch per enum.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_RUNTIME_LIB_ENUMNAME_H
#define INKLING_RUNTIME_LIB_ENUMNAME_H

#include <cstddef>

namespace inkling {

/// names[value], or "?" for a value outside the table.
template <typename Enum, size_t N>
const char *enumName(Enum value, const char *const (&names)[N]) {
  auto index = static_cast<size_t>(value);
  return index < N ? names[index] : "?";
}

} // namespace inkling

#endif // INKLING_RUNTIME_LIB_ENUMNAME_H
