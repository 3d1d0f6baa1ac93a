//===- Npy.h - A tiny .npy reader and writer --------------------*- C++ -*-===//
//
// NumPy's .npy format (versions 1.0, 2.0 and 3.0 read, 1.0 written):
// little-endian, C order, dtypes u1/i1/u2/i2/i4/i8. bf16 tensors travel as
// uint16 ('<u2'), their bit patterns. Every malformed file gives one line
// that says what is wrong.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_TOOLS_INKLING_RUN_NPY_H
#define INKLING_TOOLS_INKLING_RUN_NPY_H

#include <cstdint>
#include <string>
#include <vector>

namespace inkling::npy {

struct Array {
  /// NumPy's descr without the byte-order character: "u2", "i4", ...
  std::string dtype;
  int64_t itemBytes = 0;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data; ///< C order, little-endian.

  int64_t count() const {
    int64_t n = 1;
    for (int64_t s : shape)
      n *= s;
    return n;
  }
  std::string shapeString() const;
};

/// Reads `path` (a regular file: a directory or a device such as /dev/zero
/// is an error, not an exception or an endless read); on failure returns
/// false with a one-line `error`.
bool read(const std::string &path, Array &array, std::string &error);
/// Parses the `size` bytes of a .npy file at `data` (`name` for messages).
bool parse(const uint8_t *data, size_t size, const std::string &name,
           Array &array, std::string &error);
/// Writes `array` as a version 1.0 file.
bool write(const std::string &path, const Array &array, std::string &error);

} // namespace inkling::npy

#endif // INKLING_TOOLS_INKLING_RUN_NPY_H
