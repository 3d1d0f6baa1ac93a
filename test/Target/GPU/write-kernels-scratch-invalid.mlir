// inkling-gpu-write-kernels on damaged scratch records (a module from a
// file): a launch naming a buffer its entry does not describe, one index
// described two ways, and a host whose buffers leave a gap.
// RUN: inkling-opt %s -split-input-file -verify-diagnostics \
// RUN:   --inkling-gpu-write-kernels=dir=%t

// expected-error@+1 {{kernel k0: host argument -2 names scratch buffer 1, which the entry does not describe}}
module attributes {inkling.kernels = [{name = "k0", host = "layer", key = "x", host_args = [-2], grid = ["T"], block = [128], args = [], scratch = [{index = 0, type = "memref<?xbf16>", element = "bf16", element_bytes = 2, shape = [-1]}]}]} {
}

// -----

// expected-error@+1 {{kernel k1: scratch buffer 0 is negative or described otherwise by another launch}}
module attributes {gpu.container_module, inkling.kernels = [
  {name = "k0", host = "layer", key = "x", host_args = [-1], grid = ["T"], block = [128], args = [], scratch = [{index = 0, type = "memref<?xbf16>", element = "bf16", element_bytes = 2, shape = [-1]}]},
  {name = "k1", host = "layer", key = "x", host_args = [-1], grid = ["T"], block = [128], args = [], scratch = [{index = 0, type = "memref<?xi32>", element = "i32", element_bytes = 4, shape = [-1]}]}]} {
  gpu.binary @k0 [#gpu.object<#nvvm.target, assembly = "">]
}

// -----

// expected-error@+1 {{host layer has no scratch buffer 0}}
module attributes {gpu.container_module, inkling.kernels = [
  {name = "k0", host = "layer", key = "x", host_args = [-2], grid = ["T"], block = [128], args = [], scratch = [{index = 1, type = "memref<?xbf16>", element = "bf16", element_bytes = 2, shape = [-1]}]}]} {
  gpu.binary @k0 [#gpu.object<#nvvm.target, assembly = "">]
}
