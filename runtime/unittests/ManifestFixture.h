//===- ManifestFixture.h - A kernel manifest for the launcher tests -*- C++
//-*-//

#ifndef INKLING_RUNTIME_UNITTESTS_MANIFESTFIXTURE_H
#define INKLING_RUNTIME_UNITTESTS_MANIFESTFIXTURE_H

#include <string>

namespace inkling::fixtures {

/// A manifest as inkling-gpu-write-kernels writes it: an insert kernel of the
/// K stream (cache bytes, slot mapping, x); `hostExtra` follows the host's
/// name (its scratch buffers).
inline std::string manifest(const std::string &kernelExtra = "",
                            const std::string &grid = R"(["T", 8, 1])",
                            const std::string &hostArgs = "[0, 4, 5]",
                            const std::string &file = "layer_k1_insert_k.ptx",
                            const std::string &hostExtra = "") {
  return R"({
  "generator": "inkling-gpu-write-kernels",
  "hosts": [{"launches": [{"host_args": )" +
         hostArgs + R"(, "kernel": "layer_k1_insert_k"}], "name": "layer")" +
         hostExtra + R"(}],
  "kernels": [{
    "args": [
      {"element": "i8", "element_bytes": 1, "identity": true, "offset": 0,
       "params": 5, "rank": 1, "shape": [-1], "strides": [1],
       "type": "memref<?xi8>"},
      {"element": "i64", "element_bytes": 8, "identity": true, "offset": 0,
       "params": 5, "rank": 1, "shape": [-1], "strides": [1],
       "type": "memref<?xi64>"},
      {"align": 16, "element": "bf16", "element_bytes": 2, "identity": true, "offset": 0,
       "params": 9, "rank": 3, "shape": [-1, 8, 128], "strides": [1024, 128, 1],
       "type": "memref<?x8x128xbf16>"}
    ],
    "attributes": "{}", "block": [16, 1, 1], "entry": "layer_k1_insert_k",
    "file": ")" +
         file + R"(", "format": "ptx", "grid": )" + grid + R"(,
    "host": "layer", "key": "k", "layout": "#sconv.layout<...>",
    "name": "layer_k1_insert_k", "op": "sconv.insert",
    "params": ["ptr", "ptr", "i64", "i64", "i64", "ptr", "ptr", "i64", "i64",
               "i64", "ptr", "ptr", "i64", "i64", "i64", "i64", "i64", "i64",
               "i64"],
    "ptx_global_v4_loads": 1, "streams": ["k"], "tokens_arg": 2)" +
         kernelExtra + R"(
  }],
  "target": {"chip": "sm_90", "features": "+ptx80", "format": "ptx", "opt_level": 3},
  "version": 1
})";
}

/// The fixture with x a scratch buffer (host argument -1) whose dim 0 is
/// that of host argument `sizeHostArg`; `scratch` replaces its description.
inline std::string manifestWithScratch(int sizeHostArg = 5,
                                       const std::string &scratch = "") {
  std::string buffer =
      scratch.empty()
          ? R"({"element": "bf16", "element_bytes": 2, "shape": [-1, 8, 128],
               "size_dim": 0, "size_host_arg": )" +
                std::to_string(sizeHostArg) +
                R"(, "type": "memref<?x8x128xbf16>"})"
          : scratch;
  return manifest("", R"(["T", 8, 1])", "[0, 4, -1]", "layer_k1_insert_k.ptx",
                  R"(, "scratch": [)" + buffer + "]");
}

} // namespace inkling::fixtures

#endif // INKLING_RUNTIME_UNITTESTS_MANIFESTFIXTURE_H
