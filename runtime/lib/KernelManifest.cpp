//===- KernelManifest.cpp - The GPU kernel bundle's manifest --------------===//

#include "inkling/Runtime/KernelManifest.h"
#include "inkling/Runtime/ManifestSchema.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

namespace inkling {

namespace mk = manifest;

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

namespace {

using Json = nlohmann::json;

/// Containers nested deeper than this are refused: a manifest is 4 levels
/// deep, and the bound keeps hostile input cheap.
constexpr int kMaxDepth = 64;

/// Thrown by the parser callback to stop the parse with a message.
struct JsonRefusal {
  std::string message;
};

/// Parses a whole document (RFC 8259, no comments). nlohmann::json keeps the
/// last of duplicate keys; the callback refuses them instead, as it refuses
/// nesting deeper than kMaxDepth.
StatusOr<Json> parseJson(std::string_view text) {
  std::vector<std::set<std::string>> keys; // One set per open object.
  auto callback = [&](int depth, Json::parse_event_t event, Json &parsed) {
    switch (event) {
    case Json::parse_event_t::object_start:
      keys.emplace_back();
      [[fallthrough]];
    case Json::parse_event_t::array_start:
      if (depth > kMaxDepth)
        throw JsonRefusal{"nesting deeper than " + std::to_string(kMaxDepth) +
                          " levels"};
      break;
    case Json::parse_event_t::key:
      if (!keys.back().insert(parsed.get<std::string>()).second)
        throw JsonRefusal{"duplicate key \"" + parsed.get<std::string>() +
                          "\""};
      break;
    case Json::parse_event_t::object_end:
      keys.pop_back();
      break;
    default:
      break;
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), callback);
  } catch (const JsonRefusal &refusal) {
    return invalidArgument("JSON: " + refusal.message);
  } catch (const Json::exception &e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line 1,
    // column 2: ..."; the bracketed id means nothing to a reader.
    std::string what = e.what();
    if (size_t close = what.find("] "); close != std::string::npos)
      what.erase(0, close + 2);
    return invalidArgument("JSON: " + what);
  }
}

/// The value of an integer written as such that fits in int64_t (nlohmann
/// stores non-negative integers unsigned and larger ones as floating point).
std::optional<int64_t> asInteger(const Json &v) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer())
    return v.get<int64_t>();
  return std::nullopt;
}

/// The JSON type names of the field messages.
const char *kindName(Json::value_t kind) {
  switch (kind) {
  case Json::value_t::string:
    return "a string";
  case Json::value_t::boolean:
    return "a boolean";
  case Json::value_t::array:
    return "an array";
  case Json::value_t::object:
    return "an object";
  default:
    return "a number";
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Manifest
//===----------------------------------------------------------------------===//

namespace {

/// Typed field access with messages that name the path of the field.
class Reader {
public:
  Reader(const Json &value, std::string path)
      : value_(value), path_(std::move(path)) {}

  Status bad(const std::string &what) const {
    return invalidArgument("kernel manifest: " + path_ + ": " + what);
  }

  /// The member `key` of the object, or null (also when not an object).
  const Json *find(std::string_view key) const {
    if (!value_.is_object())
      return nullptr;
    auto it = value_.find(key);
    return it == value_.end() ? nullptr : &*it;
  }

  /// The member `key`, which must be of `kind` (number_integer: any number).
  StatusOr<const Json *> field(std::string_view key, Json::value_t kind) const {
    if (!value_.is_object())
      return bad("is not an object");
    const Json *v = find(key);
    if (!v)
      return bad("missing \"" + std::string(key) + "\"");
    bool ok = kind == Json::value_t::number_integer ? v->is_number()
                                                    : v->type() == kind;
    if (!ok)
      return bad("\"" + std::string(key) + "\" is not " + kindName(kind));
    return v;
  }

  Status get(std::string_view key, std::string &out) const {
    auto v = field(key, Json::value_t::string);
    if (!v)
      return v.status();
    out = (*v)->get<std::string>();
    return Status::ok();
  }

  Status get(std::string_view key, int64_t &out) const {
    auto v = field(key, Json::value_t::number_integer);
    if (!v)
      return v.status();
    std::optional<int64_t> i = asInteger(**v);
    if (!i)
      return bad("\"" + std::string(key) + "\" is not an integer");
    out = *i;
    return Status::ok();
  }

  Status get(std::string_view key, bool &out) const {
    auto v = field(key, Json::value_t::boolean);
    if (!v)
      return v.status();
    out = (*v)->get<bool>();
    return Status::ok();
  }

  Status get(std::string_view key, std::vector<int64_t> &out) const {
    auto v = field(key, Json::value_t::array);
    if (!v)
      return v.status();
    out.clear();
    for (const Json &e : **v) {
      std::optional<int64_t> i = asInteger(e);
      if (!i)
        return bad("\"" + std::string(key) + "\" holds a non-integer");
      out.push_back(*i);
    }
    return Status::ok();
  }

  Status get(std::string_view key, std::vector<std::string> &out) const {
    auto v = field(key, Json::value_t::array);
    if (!v)
      return v.status();
    out.clear();
    for (const Json &e : **v) {
      if (!e.is_string())
        return bad("\"" + std::string(key) + "\" holds a non-string");
      out.push_back(e.get<std::string>());
    }
    return Status::ok();
  }

  /// get(key, field) for each (key, field) pair, in order; the first
  /// error stops.
  Status readFields() const { return Status::ok(); }
  template <typename T, typename... Rest>
  Status readFields(const char *key, T &field, Rest &...rest) const {
    if (Status status = get(key, field); !status)
      return status;
    return readFields(rest...);
  }

  const std::string &path() const { return path_; }

private:
  const Json &value_;
  std::string path_;
};

#define INKLING_TRY(expr)                                                      \
  do {                                                                         \
    if (::inkling::Status s_ = (expr); !s_.isOk())                             \
      return s_;                                                               \
  } while (false)

Status parseArg(const Reader &r, KernelArgSpec &arg) {
  INKLING_TRY(r.readFields(mk::kType, arg.type, mk::kElement, arg.element,
                           mk::kElementBytes, arg.elementBytes, mk::kRank,
                           arg.rank, mk::kShape, arg.shape, mk::kStrides,
                           arg.strides, mk::kOffset, arg.offset, mk::kIdentity,
                           arg.identity, mk::kParams, arg.params));
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
  if (r.find(mk::kAlign)) {
    INKLING_TRY(r.get(mk::kAlign, arg.align));
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
  INKLING_TRY(r.readFields(mk::kName, k.name, mk::kEntry, k.entry, mk::kFile,
                           k.file, mk::kFormat, k.format, mk::kHost, k.host,
                           mk::kOp, k.op, mk::kStreams, k.streams, mk::kLayout,
                           k.layout, mk::kAttributes, k.attributes, mk::kKey,
                           k.key, mk::kParams, k.params));
  if (k.name.empty() || k.entry.empty())
    return r.bad("empty kernel name or entry");
  auto plainFile = [](const std::string &file) {
    return !file.empty() && file.find('/') == std::string::npos &&
           file.find('\\') == std::string::npos && file != "." && file != "..";
  };
  if (!plainFile(k.file))
    return r.bad("file \"" + k.file +
                 "\" must be a plain file name inside the bundle");
  if (r.find(mk::kHostForm)) {
    INKLING_TRY(r.get(mk::kHostForm, k.hostForm));
    if (!plainFile(k.hostForm))
      return r.bad("host_form \"" + k.hostForm +
                   "\" must be a plain file name inside the bundle");
  }
  if (k.format != mk::kPtx && k.format != mk::kCubin && k.format != mk::kFatbin)
    return r.bad("format \"" + k.format + "\" is not ptx, cubin or fatbin");

  // Grid: integers or "T"; block: integers.
  auto grid = r.field(mk::kGrid, Json::value_t::array);
  if (!grid)
    return grid.status();
  if ((*grid)->size() != 3)
    return r.bad("grid must have 3 entries");
  bool usesTokens = false;
  for (size_t i = 0; i < 3; ++i) {
    const Json &g = (**grid)[i];
    std::optional<int64_t> n = asInteger(g);
    if (g.is_string() && g.get<std::string>() == mk::kTokensGrid) {
      k.grid[i].tokens = true;
      usesTokens = true;
    } else if (n && *n >= 1 && *n <= std::numeric_limits<int32_t>::max()) {
      k.grid[i].value = *n;
    } else {
      return r.bad("grid entries are positive integers or \"T\"");
    }
  }
  std::vector<int64_t> block;
  INKLING_TRY(r.get(mk::kBlock, block));
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

  auto args = r.field(mk::kArgs, Json::value_t::array);
  if (!args)
    return args.status();
  int64_t expectedParams = 0;
  for (size_t i = 0; i < (*args)->size(); ++i) {
    KernelArgSpec arg;
    INKLING_TRY(parseArg(
        Reader((**args)[i], r.path() + ".args[" + std::to_string(i) + "]"),
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
      const char *want = j < 2 ? mk::kPtrParam : mk::kI64Param;
      if (k.params[p] != want)
        return r.bad("parameter " + std::to_string(p) + " is \"" + k.params[p] +
                     "\", the descriptor needs \"" + std::string(want) + "\"");
    }
  }

  if (r.find(mk::kTokensArg)) {
    INKLING_TRY(r.get(mk::kTokensArg, k.tokensArg));
    if (k.tokensArg < 0 || k.tokensArg >= static_cast<int64_t>(k.args.size()) ||
        k.args[k.tokensArg].rank < 1)
      return r.bad("tokens_arg does not name an argument of rank >= 1");
  }
  if (usesTokens && k.tokensArg < 0)
    return r.bad("the grid uses T but there is no tokens_arg");
  return Status::ok();
}

Status parseScratch(const Reader &r, ScratchSpec &scratch) {
  INKLING_TRY(r.readFields(mk::kType, scratch.type, mk::kElement,
                           scratch.element, mk::kElementBytes,
                           scratch.elementBytes, mk::kShape, scratch.shape));
  if (scratch.elementBytes <= 0)
    return r.bad("element_bytes must be positive");
  if (scratch.shape.empty() || scratch.shape.size() > 16)
    return r.bad("a scratch buffer has rank 1 to 16");
  for (size_t d = 0; d < scratch.shape.size(); ++d)
    if (scratch.shape[d] < (d == 0 ? -1 : 0))
      return r.bad("shape entries are sizes, or -1 (dynamic) for dim 0");
  bool dynamic = scratch.shape[0] == -1;
  if (dynamic != (r.find(mk::kSizeHostArg) != nullptr) ||
      dynamic != (r.find(mk::kSizeDim) != nullptr))
    return r.bad("a dynamic dim 0 needs size_host_arg and size_dim, a static "
                 "one neither");
  if (dynamic) {
    INKLING_TRY(r.readFields(mk::kSizeHostArg, scratch.sizeHostArg,
                             mk::kSizeDim, scratch.sizeDim));
    if (scratch.sizeHostArg < 0 || scratch.sizeDim < 0 || scratch.sizeDim > 15)
      return r.bad("size_host_arg and size_dim name a host argument's dim");
  }
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
  auto doc = parseJson(json);
  if (!doc)
    return Status(doc.status().code(),
                  "kernel manifest: " + doc.status().message());
  KernelManifest m;
  Reader root(*doc, "manifest");
  INKLING_TRY(root.get(mk::kVersion, m.version));
  if (m.version != mk::kFormatVersion)
    return root.bad("version " + std::to_string(m.version) +
                    " is not supported (this runtime reads version " +
                    std::to_string(mk::kFormatVersion) + ")");
  auto target = root.field(mk::kTarget, Json::value_t::object);
  if (!target)
    return target.status();
  Reader t(**target, "manifest.target");
  INKLING_TRY(t.readFields(mk::kChip, m.chip, mk::kFeatures, m.features,
                           mk::kFormat, m.format));

  auto kernels = root.field(mk::kKernels, Json::value_t::array);
  if (!kernels)
    return kernels.status();
  std::set<std::string> names;
  for (size_t i = 0; i < (*kernels)->size(); ++i) {
    KernelSpec k;
    INKLING_TRY(parseKernel(
        Reader((**kernels)[i], "kernels[" + std::to_string(i) + "]"), k));
    if (!names.insert(k.name).second)
      return root.bad("duplicate kernel name \"" + k.name + "\"");
    m.kernels.push_back(std::move(k));
  }

  auto hosts = root.field(mk::kHosts, Json::value_t::array);
  if (!hosts)
    return hosts.status();
  for (size_t i = 0; i < (*hosts)->size(); ++i) {
    Reader h((**hosts)[i], "hosts[" + std::to_string(i) + "]");
    HostSpec host;
    INKLING_TRY(h.get(mk::kName, host.name));
    if (const Json *scratch = h.find(mk::kScratch)) {
      if (!scratch->is_array())
        return h.bad("\"scratch\" is not an array");
      for (size_t j = 0; j < scratch->size(); ++j) {
        ScratchSpec buffer;
        INKLING_TRY(
            parseScratch(Reader((*scratch)[j], h.path() + ".scratch[" +
                                                   std::to_string(j) + "]"),
                         buffer));
        host.scratch.push_back(std::move(buffer));
      }
    }
    auto launches = h.field(mk::kLaunches, Json::value_t::array);
    if (!launches)
      return launches.status();
    for (size_t j = 0; j < (*launches)->size(); ++j) {
      Reader l((**launches)[j],
               h.path() + ".launches[" + std::to_string(j) + "]");
      LaunchSpec launch;
      INKLING_TRY(l.get(mk::kKernel, launch.kernel));
      INKLING_TRY(l.get(mk::kHostArgs, launch.hostArgs));
      const KernelSpec *k = m.findKernel(launch.kernel);
      if (!k)
        return l.bad("names no kernel of the manifest: \"" + launch.kernel +
                     "\"");
      if (launch.hostArgs.size() != k->args.size())
        return l.bad("has " + std::to_string(launch.hostArgs.size()) +
                     " host arguments for a kernel of " +
                     std::to_string(k->args.size()));
      for (size_t a = 0; a < launch.hostArgs.size(); ++a) {
        int64_t bound = launch.hostArgs[a];
        if (bound >= 0)
          continue;
        int64_t index = -1 - bound;
        if (index >= static_cast<int64_t>(host.scratch.size()))
          return l.bad("host argument " + std::to_string(bound) +
                       " names scratch buffer " + std::to_string(index) +
                       ", and the host has " +
                       std::to_string(host.scratch.size()));
        // The buffer is allocated from its own description: it must be the
        // argument's (what the kernel reads through the descriptor).
        const ScratchSpec &buffer = host.scratch[index];
        const KernelArgSpec &arg = k->args[a];
        if (buffer.type != arg.type ||
            buffer.elementBytes != arg.elementBytes ||
            buffer.shape != arg.shape || !arg.identity)
          return l.bad("binds scratch buffer " + std::to_string(index) + " (" +
                       buffer.type + ") to kernel argument " +
                       std::to_string(a) + " (" + arg.type +
                       "): the element size, shape or row-major layout "
                       "differ");
      }
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
    return notFound("kernel manifest: cannot open " + path);
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

StatusOr<std::vector<int64_t>>
scratchSizes(const ScratchSpec &scratch,
             const std::vector<MemRefArg> &hostArgs) {
  std::vector<int64_t> sizes = scratch.shape;
  if (sizes[0] < 0) {
    if (scratch.sizeHostArg >= static_cast<int64_t>(hostArgs.size()) ||
        scratch.sizeDim >=
            static_cast<int64_t>(hostArgs[scratch.sizeHostArg].sizes.size()))
      return invalidArgument(
          "scratch buffer " + scratch.type + " takes its dim 0 from dim " +
          std::to_string(scratch.sizeDim) + " of host argument " +
          std::to_string(scratch.sizeHostArg) + ", which the call lacks");
    sizes[0] = hostArgs[scratch.sizeHostArg].sizes[scratch.sizeDim];
  }
  // The bytes must fit in int64_t (a hostile or broken size).
  int64_t elements = 1;
  for (int64_t s : sizes) {
    if (s < 0 || (s != 0 && elements > std::numeric_limits<int64_t>::max() /
                                           scratch.elementBytes / s))
      return invalidArgument("scratch buffer " + scratch.type +
                             ": a size is negative or its bytes overflow");
    elements *= s;
  }
  return sizes;
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
