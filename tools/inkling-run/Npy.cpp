//===- Npy.cpp - A tiny .npy reader and writer ----------------------------===//

#include "Npy.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>

using namespace inkling;

std::string npy::Array::shapeString() const {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1)
    text += ",";
  return text + ")";
}

namespace {

/// A cursor over the header dict: {'descr': '<u2', 'fortran_order': False,
/// 'shape': (2, 3), }
struct HeaderParser {
  const std::string &text;
  size_t pos = 0;
  std::string error;

  void skipSpace() {
    while (pos < text.size() &&
           std::isspace(static_cast<unsigned char>(text[pos])))
      ++pos;
  }
  bool expect(char c) {
    skipSpace();
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    error = std::string("expected '") + c + "' at header offset " +
            std::to_string(pos);
    return false;
  }
  bool peek(char c) {
    skipSpace();
    return pos < text.size() && text[pos] == c;
  }
  bool string(std::string &out) {
    skipSpace();
    if (pos >= text.size() || (text[pos] != '\'' && text[pos] != '"')) {
      error = "expected a string at header offset " + std::to_string(pos);
      return false;
    }
    char quote = text[pos++];
    size_t end = text.find(quote, pos);
    if (end == std::string::npos) {
      error = "unterminated string in the header";
      return false;
    }
    out = text.substr(pos, end - pos);
    pos = end + 1;
    return true;
  }
  bool word(std::string &out) {
    skipSpace();
    size_t start = pos;
    while (pos < text.size() &&
           std::isalnum(static_cast<unsigned char>(text[pos])))
      ++pos;
    out = text.substr(start, pos - start);
    if (out.empty()) {
      error = "expected a value at header offset " + std::to_string(start);
      return false;
    }
    return true;
  }
};

} // namespace

bool npy::read(const std::string &path, Array &array, std::string &error) {
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(path, status)) {
    error = path + ": cannot read the file: " + ec.message();
    return false;
  }
  if (status.type() != llvm::sys::fs::file_type::regular_file) {
    error = path + ": cannot read the file: not a regular file (" +
            (status.type() == llvm::sys::fs::file_type::directory_file
                 ? "a directory"
                 : "a device, pipe or socket") +
            ")";
    return false;
  }
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!file) {
    error = path + ": cannot read the file: " + file.getError().message();
    return false;
  }
  return parse(reinterpret_cast<const uint8_t *>((*file)->getBufferStart()),
               (*file)->getBufferSize(), path, array, error);
}

bool npy::parse(const uint8_t *data, size_t size, const std::string &path,
                Array &array, std::string &error) {
  llvm::ArrayRef<uint8_t> bytes(data, size);
  auto bad = [&](const std::string &why) {
    error = path + ": malformed .npy file: " + why;
    return false;
  };
  static const uint8_t magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (bytes.size() < 10 || std::memcmp(bytes.data(), magic, 6) != 0)
    return bad("no \\x93NUMPY magic at the start");
  int major = bytes[6];
  size_t headerLen = 0, headerStart = 0;
  if (major == 1) {
    headerLen = bytes[8] | (bytes[9] << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return bad("truncated header length");
    headerLen = size_t(bytes[8]) | (size_t(bytes[9]) << 8) |
                (size_t(bytes[10]) << 16) | (size_t(bytes[11]) << 24);
    headerStart = 12;
  } else {
    return bad("unsupported format version " + std::to_string(major) + "." +
               std::to_string(bytes[7]));
  }
  if (headerStart + headerLen > bytes.size())
    return bad("the header (" + std::to_string(headerLen) +
               " bytes) runs past the end of the file");
  std::string header(bytes.begin() + headerStart,
                     bytes.begin() + headerStart + headerLen);
  std::set<std::string> keys;
  HeaderParser p{header, 0, {}};
  std::string descr;
  bool fortran = false, haveDescr = false, haveOrder = false, haveShape = false;
  std::vector<int64_t> shape;
  if (!p.expect('{'))
    return bad(p.error);
  while (!p.peek('}')) {
    std::string key;
    if (!p.string(key) || !p.expect(':'))
      return bad(p.error);
    if (!keys.insert(key).second)
      return bad("the header key '" + key + "' appears twice");
    if (key == "descr") {
      if (!p.string(descr))
        return bad(p.error);
      haveDescr = true;
    } else if (key == "fortran_order") {
      std::string value;
      if (!p.word(value))
        return bad(p.error);
      if (value != "True" && value != "False")
        return bad("fortran_order is " + value);
      fortran = value == "True";
      haveOrder = true;
    } else if (key == "shape") {
      if (!p.expect('('))
        return bad(p.error);
      while (!p.peek(')')) {
        std::string value;
        if (!p.word(value))
          return bad(p.error);
        for (char c : value)
          if (!std::isdigit(static_cast<unsigned char>(c)))
            return bad("shape entry '" + value + "' is not a number");
        if (value.size() > 12)
          return bad("shape entry " + value + " is too large");
        shape.push_back(std::stoll(value));
        if (!p.peek(')') && !p.expect(','))
          return bad(p.error);
      }
      p.expect(')');
      haveShape = true;
    } else {
      return bad("unknown header key '" + key + "'");
    }
    if (!p.peek('}') && !p.expect(','))
      return bad(p.error);
  }
  if (!haveDescr || !haveOrder || !haveShape)
    return bad("the header lacks descr, fortran_order or shape");
  if (fortran)
    return bad("fortran_order arrays are not supported (save a C-order array, "
               "e.g. np.ascontiguousarray)");
  if (descr.size() < 2)
    return bad("dtype '" + descr + "'");
  char order = descr[0];
  std::string type = descr.substr(1);
  int64_t item = 0;
  if (type == "u1" || type == "i1" || type == "b1")
    item = 1;
  else if (type == "u2" || type == "i2")
    item = 2;
  else if (type == "u4" || type == "i4")
    item = 4;
  else if (type == "u8" || type == "i8")
    item = 8;
  else
    return bad("dtype '" + descr +
               "' is not supported (bf16 as uint16 '<u2', metadata as '<i4' "
               "or '<i8')");
  if (order == '>' && item > 1)
    return bad("big-endian dtype '" + descr + "'");
  if (order != '<' && order != '|' && order != '=' && order != '>')
    return bad("dtype '" + descr + "'");
  int64_t count = 1;
  for (int64_t s : shape) {
    if (s != 0 && count > std::numeric_limits<int64_t>::max() / 16 / s)
      return bad("the shape is too large");
    count *= s;
  }
  size_t dataStart = headerStart + headerLen;
  size_t want = static_cast<size_t>(count * item);
  if (bytes.size() - dataStart != want)
    return bad("shape " + std::string("(") + std::to_string(count) +
               " elements of " + std::to_string(item) + " bytes) needs " +
               std::to_string(want) + " data bytes, the file has " +
               std::to_string(bytes.size() - dataStart));
  array.dtype = type;
  array.itemBytes = item;
  array.shape = shape;
  array.data.assign(bytes.begin() + dataStart, bytes.end());
  return true;
}

bool npy::write(const std::string &path, const Array &array,
                std::string &error) {
  std::string header =
      "{'descr': '" + std::string(array.itemBytes == 1 ? "|" : "<") +
      array.dtype +
      "', 'fortran_order': False, 'shape': " + array.shapeString() + ", }";
  // Magic (6) + version (2) + length (2) + header + '\n', padded to 64.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) {
    error = path + ": cannot write the file: " + std::strerror(errno);
    return false;
  }
  const char magic[8] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.write(magic, 8);
  char len[2] = {static_cast<char>(header.size() & 0xff),
                 static_cast<char>(header.size() >> 8)};
  out.write(len, 2);
  out.write(header.data(), header.size());
  out.write(reinterpret_cast<const char *>(array.data.data()),
            array.data.size());
  if (!out) {
    error = path + ": cannot write the file";
    return false;
  }
  return true;
}
