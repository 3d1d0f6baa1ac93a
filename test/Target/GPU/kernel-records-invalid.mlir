// A hand-written or damaged `inkling.kernels` attribute gets a diagnostic
// naming the entry, the argument and the key, not a crash: the bundle writer
// and the parameter pass check it before reading it.
// RUN: inkling-opt %s -split-input-file -verify-diagnostics \
// RUN:   --inkling-gpu-write-kernels=dir=%t
// RUN: inkling-opt %s -split-input-file -verify-diagnostics \
// RUN:   --inkling-gpu-record-params

// expected-error@+1 {{`inkling.kernels` must be an array of dictionaries}}
module attributes {inkling.kernels = "k"} {
}

// -----

// expected-error@+1 {{`inkling.kernels` entry 0 must be a dictionary}}
module attributes {inkling.kernels = [1]} {
}

// -----

// expected-error@+1 {{`inkling.kernels` entry 0 (k0): `host` is missing; expected a string}}
module attributes {inkling.kernels = [{name = "k0"}]} {
}

// -----

// expected-error@+1 {{`inkling.kernels` entry 0 (k0): `grid` must be an array of integers and "T"}}
module attributes {inkling.kernels = [{name = "k0", host = "layer", key = "x", host_args = [0], grid = 3, block = [128], args = []}]} {
}

// -----

// expected-error@+1 {{`inkling.kernels` entry 0 (k0) argument 0: `identity` must be a bool}}
module attributes {inkling.kernels = [{name = "k0", host = "layer", key = "x", host_args = [0], grid = ["T"], block = [128], args = [{type = "memref<?xbf16>", element = "bf16", element_bytes = 2, align = 16, rank = 1, shape = [-1], strides = [1], offset = 0, identity = 1, params = 5}]}]} {
}

// -----

// expected-error@+1 {{`inkling.kernels` entry 0 (k0): `scratch` must be an array of dictionaries}}
module attributes {inkling.kernels = [{name = "k0", host = "layer", key = "x", host_args = [-1], grid = ["T"], block = [128], args = [], scratch = 1}]} {
}

// -----

// expected-error@+1 {{`inkling.kernels` entry 0 (k0) scratch buffer 0: `index` is missing; expected an integer}}
module attributes {inkling.kernels = [{name = "k0", host = "layer", key = "x", host_args = [-1], grid = ["T"], block = [128], args = [], scratch = [{type = "memref<?xbf16>", element = "bf16", element_bytes = 2, shape = [-1]}]}]} {
}
