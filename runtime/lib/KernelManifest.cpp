//===- KernelManifest.cpp - The GPU kernel bundle's manifest --------------===//

#include "inkling/Runtime/KernelManifest.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace inkling {

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

const JsonValue *JsonValue::find(std::string_view key) const {
  for (const auto &member : members_)
    if (member.first == key)
      return &member.second;
  return nullptr;
}

class JsonParser {
public:
  explicit JsonParser(std::string_view text) : text_(text) {}

  StatusOr<JsonValue> parseDocument() {
    JsonValue value;
    if (Status s = parseValue(value, 0); !s.isOk())
      return s;
    skipSpace();
    if (pos_ != text_.size())
      return error("unexpected data after the JSON value");
    return value;
  }

private:
  static constexpr int kMaxDepth = 64;

  Status error(const std::string &what) const {
    return invalidArgument("JSON: " + what + " at byte " +
                           std::to_string(pos_));
  }

  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  bool consume(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word)
      return false;
    pos_ += word.size();
    return true;
  }

  Status parseValue(JsonValue &out, int depth) {
    if (depth > kMaxDepth)
      return error("nesting deeper than 64 levels");
    skipSpace();
    if (pos_ >= text_.size())
      return error("unexpected end of input");
    char c = text_[pos_];
    if (c == '{')
      return parseObject(out, depth);
    if (c == '[')
      return parseArray(out, depth);
    if (c == '"') {
      out.kind_ = JsonValue::Kind::String;
      return parseString(out.string_);
    }
    if (c == '-' || (c >= '0' && c <= '9'))
      return parseNumber(out);
    if (consume("true")) {
      out.kind_ = JsonValue::Kind::Bool;
      out.bool_ = true;
      return Status::ok();
    }
    if (consume("false")) {
      out.kind_ = JsonValue::Kind::Bool;
      out.bool_ = false;
      return Status::ok();
    }
    if (consume("null")) {
      out.kind_ = JsonValue::Kind::Null;
      return Status::ok();
    }
    return error(std::string("unexpected character '") + c + "'");
  }

  Status parseObject(JsonValue &out, int depth) {
    out.kind_ = JsonValue::Kind::Object;
    ++pos_; // '{'
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == '}') {
      ++pos_;
      return Status::ok();
    }
    std::set<std::string> keys;
    while (true) {
      skipSpace();
      if (pos_ >= text_.size() || text_[pos_] != '"')
        return error("expected a string key");
      std::string key;
      if (Status s = parseString(key); !s.isOk())
        return s;
      if (!keys.insert(key).second)
        return error("duplicate key \"" + key + "\"");
      skipSpace();
      if (pos_ >= text_.size() || text_[pos_] != ':')
        return error("expected ':'");
      ++pos_;
      JsonValue value;
      if (Status s = parseValue(value, depth + 1); !s.isOk())
        return s;
      out.members_.emplace_back(std::move(key), std::move(value));
      skipSpace();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == '}') {
        ++pos_;
        return Status::ok();
      }
      return error("expected ',' or '}'");
    }
  }

  Status parseArray(JsonValue &out, int depth) {
    out.kind_ = JsonValue::Kind::Array;
    ++pos_; // '['
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      return Status::ok();
    }
    while (true) {
      JsonValue value;
      if (Status s = parseValue(value, depth + 1); !s.isOk())
        return s;
      out.array_.push_back(std::move(value));
      skipSpace();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == ']') {
        ++pos_;
        return Status::ok();
      }
      return error("expected ',' or ']'");
    }
  }

  bool hex4(uint32_t &value) {
    if (pos_ + 4 > text_.size())
      return false;
    value = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_ + i];
      value <<= 4;
      if (c >= '0' && c <= '9')
        value |= c - '0';
      else if (c >= 'a' && c <= 'f')
        value |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        value |= c - 'A' + 10;
      else
        return false;
    }
    pos_ += 4;
    return true;
  }

  static void appendUtf8(std::string &out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  Status parseString(std::string &out) {
    ++pos_; // '"'
    while (true) {
      if (pos_ >= text_.size())
        return error("unterminated string");
      unsigned char c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return Status::ok();
      }
      if (c < 0x20)
        return error("control character in a string");
      if (c != '\\') {
        out += static_cast<char>(c);
        ++pos_;
        continue;
      }
      ++pos_;
      if (pos_ >= text_.size())
        return error("unterminated escape");
      char e = text_[pos_++];
      switch (e) {
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case '/':
        out += '/';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        uint32_t cp;
        if (!hex4(cp))
          return error("bad \\u escape");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          uint32_t low;
          if (!consume("\\u") || !hex4(low) || low < 0xDC00 || low > 0xDFFF)
            return error("unpaired surrogate in \\u escape");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          return error("unpaired surrogate in \\u escape");
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        return error(std::string("bad escape '\\") + e + "'");
      }
    }
  }

  Status parseNumber(JsonValue &out) {
    size_t start = pos_;
    auto digits = [&]() {
      size_t from = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9')
        ++pos_;
      return pos_ - from;
    };
    bool integral = true;
    if (text_[pos_] == '-')
      ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '0') {
      ++pos_;
    } else if (digits() == 0) {
      return error("bad number");
    }
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      integral = false;
      if (digits() == 0)
        return error("bad number: no digits after '.'");
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      integral = false;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-'))
        ++pos_;
      if (digits() == 0)
        return error("bad number: no exponent digits");
    }
    std::string literal(text_.substr(start, pos_ - start));
    out.kind_ = JsonValue::Kind::Number;
    out.number_ = std::strtod(literal.c_str(), nullptr);
    if (integral) {
      errno = 0;
      long long v = std::strtoll(literal.c_str(), nullptr, 10);
      if (errno == 0) {
        out.isInteger_ = true;
        out.integer_ = v;
      }
    }
    return Status::ok();
  }

  std::string_view text_;
  size_t pos_ = 0;
};

StatusOr<JsonValue> JsonValue::parse(std::string_view text) {
  return JsonParser(text).parseDocument();
}

//===----------------------------------------------------------------------===//
// Manifest
//===----------------------------------------------------------------------===//

namespace {

/// Typed field access with messages that name the path of the field.
class Reader {
public:
  Reader(const JsonValue &value, std::string path)
      : value_(value), path_(std::move(path)) {}

  Status bad(const std::string &what) const {
    return invalidArgument("kernel manifest: " + path_ + ": " + what);
  }

  StatusOr<const JsonValue *> field(std::string_view key, JsonValue::Kind kind,
                                    const char *kindName) const {
    if (!value_.isObject())
      return bad("is not an object");
    const JsonValue *v = value_.find(key);
    if (!v)
      return bad("missing \"" + std::string(key) + "\"");
    if (v->kind() != kind)
      return bad("\"" + std::string(key) + "\" is not " + kindName);
    return v;
  }

  Status string(std::string_view key, std::string &out) const {
    auto v = field(key, JsonValue::Kind::String, "a string");
    if (!v)
      return v.status();
    out = (*v)->string();
    return Status::ok();
  }

  Status integer(std::string_view key, int64_t &out) const {
    auto v = field(key, JsonValue::Kind::Number, "a number");
    if (!v)
      return v.status();
    if (!(*v)->isInteger())
      return bad("\"" + std::string(key) + "\" is not an integer");
    out = (*v)->integer();
    return Status::ok();
  }

  Status boolean(std::string_view key, bool &out) const {
    auto v = field(key, JsonValue::Kind::Bool, "a boolean");
    if (!v)
      return v.status();
    out = (*v)->boolValue();
    return Status::ok();
  }

  Status integers(std::string_view key, std::vector<int64_t> &out) const {
    auto v = field(key, JsonValue::Kind::Array, "an array");
    if (!v)
      return v.status();
    out.clear();
    for (const JsonValue &e : (*v)->array()) {
      if (!e.isInteger())
        return bad("\"" + std::string(key) + "\" holds a non-integer");
      out.push_back(e.integer());
    }
    return Status::ok();
  }

  Status strings(std::string_view key, std::vector<std::string> &out) const {
    auto v = field(key, JsonValue::Kind::Array, "an array");
    if (!v)
      return v.status();
    out.clear();
    for (const JsonValue &e : (*v)->array()) {
      if (!e.isString())
        return bad("\"" + std::string(key) + "\" holds a non-string");
      out.push_back(e.string());
    }
    return Status::ok();
  }

  const JsonValue &value() const { return value_; }
  const std::string &path() const { return path_; }

private:
  const JsonValue &value_;
  std::string path_;
};

#define INKLING_TRY(expr)                                                      \
  do {                                                                         \
    if (::inkling::Status s_ = (expr); !s_.isOk())                             \
      return s_;                                                               \
  } while (false)

Status parseArg(const Reader &r, KernelArgSpec &arg) {
  INKLING_TRY(r.string("type", arg.type));
  INKLING_TRY(r.string("element", arg.element));
  INKLING_TRY(r.integer("element_bytes", arg.elementBytes));
  INKLING_TRY(r.integer("rank", arg.rank));
  INKLING_TRY(r.integers("shape", arg.shape));
  INKLING_TRY(r.integers("strides", arg.strides));
  INKLING_TRY(r.integer("offset", arg.offset));
  INKLING_TRY(r.boolean("identity", arg.identity));
  INKLING_TRY(r.integer("params", arg.params));
  if (arg.rank < 0 || arg.rank > 16)
    return r.bad("rank " + std::to_string(arg.rank) + " is out of range");
  if (static_cast<int64_t>(arg.shape.size()) != arg.rank ||
      static_cast<int64_t>(arg.strides.size()) != arg.rank)
    return r.bad("shape and strides must have rank (" +
                 std::to_string(arg.rank) + ") entries");
  if (arg.params != 3 + 2 * arg.rank)
    return r.bad("a memref of rank " + std::to_string(arg.rank) +
                 " expands to " + std::to_string(3 + 2 * arg.rank) +
                 " parameters, not " + std::to_string(arg.params));
  if (arg.elementBytes <= 0)
    return r.bad("element_bytes must be positive");
  // The base alignment the kernel's accesses assume (16 where it issues
  // 16-byte vector accesses); absent: the element size.
  arg.align = arg.elementBytes;
  if (r.value().find("align")) {
    INKLING_TRY(r.integer("align", arg.align));
    if (arg.align < arg.elementBytes || arg.align > 4096 ||
        (arg.align & (arg.align - 1)) != 0)
      return r.bad("align " + std::to_string(arg.align) +
                   " must be a power of two, at least element_bytes (" +
                   std::to_string(arg.elementBytes) + ")");
  }
  for (int64_t d : arg.shape)
    if (d < -1)
      return r.bad("shape entries are sizes or -1 (dynamic)");
  if (arg.offset < -1)
    return r.bad("offset is a size or -1 (dynamic)");
  return Status::ok();
}

Status parseKernel(const Reader &r, KernelSpec &k) {
  INKLING_TRY(r.string("name", k.name));
  INKLING_TRY(r.string("entry", k.entry));
  INKLING_TRY(r.string("file", k.file));
  INKLING_TRY(r.string("format", k.format));
  INKLING_TRY(r.string("host", k.host));
  INKLING_TRY(r.string("op", k.op));
  INKLING_TRY(r.strings("streams", k.streams));
  INKLING_TRY(r.string("layout", k.layout));
  INKLING_TRY(r.string("attributes", k.attributes));
  INKLING_TRY(r.string("key", k.key));
  INKLING_TRY(r.strings("params", k.params));
  if (k.name.empty() || k.entry.empty())
    return r.bad("empty kernel name or entry");
  if (k.file.empty() || k.file.find('/') != std::string::npos ||
      k.file.find('\\') != std::string::npos || k.file == "." || k.file == "..")
    return r.bad("file \"" + k.file +
                 "\" must be a plain file name inside the bundle");
  if (k.format != "ptx" && k.format != "cubin" && k.format != "fatbin")
    return r.bad("format \"" + k.format + "\" is not ptx, cubin or fatbin");

  // Grid: integers or "T"; block: integers.
  auto grid = r.field("grid", JsonValue::Kind::Array, "an array");
  if (!grid)
    return grid.status();
  if ((*grid)->array().size() != 3)
    return r.bad("grid must have 3 entries");
  bool usesTokens = false;
  for (size_t i = 0; i < 3; ++i) {
    const JsonValue &g = (*grid)->array()[i];
    if (g.isString() && g.string() == "T") {
      k.grid[i].tokens = true;
      usesTokens = true;
    } else if (g.isInteger() && g.integer() >= 1 &&
               g.integer() <= std::numeric_limits<int32_t>::max()) {
      k.grid[i].value = g.integer();
    } else {
      return r.bad("grid entries are positive integers or \"T\"");
    }
  }
  std::vector<int64_t> block;
  INKLING_TRY(r.integers("block", block));
  if (block.size() != 3)
    return r.bad("block must have 3 entries");
  int64_t threads = 1;
  for (size_t i = 0; i < 3; ++i) {
    if (block[i] < 1 || block[i] > 1024)
      return r.bad("block sizes must be in [1, 1024]");
    k.block[i] = block[i];
    threads *= block[i];
  }
  if (threads > 1024)
    return r.bad("a block of " + std::to_string(threads) +
                 " threads exceeds 1024");

  auto args = r.field("args", JsonValue::Kind::Array, "an array");
  if (!args)
    return args.status();
  int64_t expectedParams = 0;
  for (size_t i = 0; i < (*args)->array().size(); ++i) {
    KernelArgSpec arg;
    INKLING_TRY(parseArg(Reader((*args)->array()[i],
                                r.path() + ".args[" + std::to_string(i) + "]"),
                         arg));
    expectedParams += arg.params;
    k.args.push_back(std::move(arg));
  }
  if (static_cast<int64_t>(k.params.size()) != expectedParams)
    return r.bad("params has " + std::to_string(k.params.size()) +
                 " entries but the arguments expand to " +
                 std::to_string(expectedParams));
  // Parameter types follow the descriptor layout: ptr, ptr, then i64s.
  size_t p = 0;
  for (const KernelArgSpec &arg : k.args) {
    for (int64_t j = 0; j < arg.params; ++j, ++p) {
      const std::string &want = j < 2 ? "ptr" : "i64";
      if (k.params[p] != want)
        return r.bad("parameter " + std::to_string(p) + " is \"" + k.params[p] +
                     "\", the descriptor needs \"" + want + "\"");
    }
  }

  if (const JsonValue *t = r.value().find("tokens_arg")) {
    if (!t->isInteger())
      return r.bad("\"tokens_arg\" is not an integer");
    k.tokensArg = t->integer();
    if (k.tokensArg < 0 || k.tokensArg >= static_cast<int64_t>(k.args.size()) ||
        k.args[k.tokensArg].rank < 1)
      return r.bad("tokens_arg does not name an argument of rank >= 1");
  }
  if (usesTokens && k.tokensArg < 0)
    return r.bad("the grid uses T but there is no tokens_arg");
  return Status::ok();
}

} // namespace

std::array<int64_t, 3> KernelSpec::gridFor(int64_t tokens) const {
  std::array<int64_t, 3> out;
  for (size_t i = 0; i < 3; ++i)
    out[i] = grid[i].tokens ? tokens : grid[i].value;
  return out;
}

const KernelSpec *KernelManifest::findKernel(std::string_view name) const {
  for (const KernelSpec &k : kernels)
    if (k.name == name)
      return &k;
  return nullptr;
}

const HostSpec *KernelManifest::findHost(std::string_view name) const {
  for (const HostSpec &h : hosts)
    if (h.name == name)
      return &h;
  return nullptr;
}

StatusOr<KernelManifest> KernelManifest::parse(std::string_view json) {
  auto doc = JsonValue::parse(json);
  if (!doc)
    return Status(doc.status().code(),
                  "kernel manifest: " + doc.status().message());
  KernelManifest m;
  Reader root(*doc, "manifest");
  INKLING_TRY(root.integer("version", m.version));
  if (m.version != 1)
    return root.bad("version " + std::to_string(m.version) +
                    " is not supported (this runtime reads version 1)");
  auto target = root.field("target", JsonValue::Kind::Object, "an object");
  if (!target)
    return target.status();
  Reader t(**target, "manifest.target");
  INKLING_TRY(t.string("chip", m.chip));
  INKLING_TRY(t.string("features", m.features));
  INKLING_TRY(t.string("format", m.format));

  auto kernels = root.field("kernels", JsonValue::Kind::Array, "an array");
  if (!kernels)
    return kernels.status();
  std::set<std::string> names;
  for (size_t i = 0; i < (*kernels)->array().size(); ++i) {
    KernelSpec k;
    INKLING_TRY(parseKernel(
        Reader((*kernels)->array()[i], "kernels[" + std::to_string(i) + "]"),
        k));
    if (!names.insert(k.name).second)
      return root.bad("duplicate kernel name \"" + k.name + "\"");
    m.kernels.push_back(std::move(k));
  }

  auto hosts = root.field("hosts", JsonValue::Kind::Array, "an array");
  if (!hosts)
    return hosts.status();
  for (size_t i = 0; i < (*hosts)->array().size(); ++i) {
    Reader h((*hosts)->array()[i], "hosts[" + std::to_string(i) + "]");
    HostSpec host;
    INKLING_TRY(h.string("name", host.name));
    auto launches = h.field("launches", JsonValue::Kind::Array, "an array");
    if (!launches)
      return launches.status();
    for (size_t j = 0; j < (*launches)->array().size(); ++j) {
      Reader l((*launches)->array()[j],
               h.path() + ".launches[" + std::to_string(j) + "]");
      LaunchSpec launch;
      INKLING_TRY(l.string("kernel", launch.kernel));
      INKLING_TRY(l.integers("host_args", launch.hostArgs));
      const KernelSpec *k = m.findKernel(launch.kernel);
      if (!k)
        return l.bad("names no kernel of the manifest: \"" + launch.kernel +
                     "\"");
      if (launch.hostArgs.size() != k->args.size())
        return l.bad("has " + std::to_string(launch.hostArgs.size()) +
                     " host arguments for a kernel of " +
                     std::to_string(k->args.size()));
      for (int64_t a : launch.hostArgs)
        if (a < 0)
          return l.bad("host argument indices are >= 0");
      host.launches.push_back(std::move(launch));
    }
    m.hosts.push_back(std::move(host));
  }
  return m;
}

StatusOr<KernelManifest> KernelManifest::load(const std::string &directory) {
  std::string path = directory + "/manifest.json";
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status(StatusCode::NotFound, "kernel manifest: cannot open " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str());
}

//===----------------------------------------------------------------------===//
// ABI
//===----------------------------------------------------------------------===//

namespace {
std::string hexAddress(uint64_t address) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%llx",
                static_cast<unsigned long long>(address));
  return text;
}
} // namespace

StatusOr<std::vector<uint64_t>>
packKernelParams(const KernelSpec &kernel, const std::vector<MemRefArg> &args) {
  auto bad = [&](size_t i, const std::string &what) {
    return invalidArgument("kernel " + kernel.name + ", argument " +
                           std::to_string(i) + " (" + kernel.args[i].type +
                           "): " + what);
  };
  if (args.size() != kernel.args.size())
    return invalidArgument("kernel " + kernel.name + " takes " +
                           std::to_string(kernel.args.size()) +
                           " arguments, got " + std::to_string(args.size()));
  std::vector<uint64_t> params;
  for (size_t i = 0; i < args.size(); ++i) {
    const KernelArgSpec &spec = kernel.args[i];
    const MemRefArg &arg = args[i];
    size_t rank = static_cast<size_t>(spec.rank);
    if (arg.sizes.size() != rank)
      return bad(i, "expected " + std::to_string(rank) + " sizes, got " +
                        std::to_string(arg.sizes.size()));
    for (size_t d = 0; d < rank; ++d) {
      if (arg.sizes[d] < 0)
        return bad(i, "size " + std::to_string(d) + " is negative");
      if (spec.shape[d] >= 0 && spec.shape[d] != arg.sizes[d])
        return bad(i, "size " + std::to_string(d) + " is " +
                          std::to_string(arg.sizes[d]) + ", the type says " +
                          std::to_string(spec.shape[d]));
    }
    if (arg.address % static_cast<uint64_t>(spec.align) != 0)
      return bad(i, "the address " + hexAddress(arg.address) + " is not " +
                        std::to_string(spec.align) +
                        "-byte aligned (the kernel's accesses assume it)");
    std::vector<int64_t> strides(rank);
    if (!arg.strides.empty()) {
      if (arg.strides.size() != rank)
        return bad(i, "expected " + std::to_string(rank) + " strides");
      for (size_t d = 0; d < rank; ++d) {
        if (spec.strides[d] >= 0 && spec.strides[d] != arg.strides[d])
          return bad(i, "stride " + std::to_string(d) + " is " +
                            std::to_string(arg.strides[d]) +
                            ", the type says " +
                            std::to_string(spec.strides[d]));
        strides[d] = arg.strides[d];
      }
    } else {
      int64_t running = 1;
      for (size_t d = rank; d-- > 0;) {
        if (spec.strides[d] >= 0) {
          strides[d] = spec.strides[d];
        } else if (spec.identity) {
          strides[d] = running;
        } else {
          return bad(i, "stride " + std::to_string(d) +
                            " is dynamic and the layout is not row-major: "
                            "pass the strides");
        }
        running = strides[d] * arg.sizes[d];
      }
    }
    if (spec.offset < 0)
      return bad(i, "a dynamic offset is not supported by the launcher");
    params.push_back(arg.address); // allocated
    params.push_back(arg.address); // aligned
    params.push_back(static_cast<uint64_t>(spec.offset));
    for (int64_t s : arg.sizes)
      params.push_back(static_cast<uint64_t>(s));
    for (int64_t s : strides)
      params.push_back(static_cast<uint64_t>(s));
  }
  if (params.size() != kernel.params.size())
    return invalidArgument("kernel " + kernel.name + ": packed " +
                           std::to_string(params.size()) +
                           " parameters, the manifest lists " +
                           std::to_string(kernel.params.size()));
  return params;
}

StatusOr<int64_t> tokenCount(const KernelSpec &kernel,
                             const std::vector<MemRefArg> &args) {
  if (kernel.tokensArg < 0)
    return int64_t(0);
  if (kernel.tokensArg >= static_cast<int64_t>(args.size()) ||
      args[kernel.tokensArg].sizes.empty())
    return invalidArgument("kernel " + kernel.name +
                           ": the tokens argument has no size");
  return args[kernel.tokensArg].sizes[0];
}

} // namespace inkling
