// RUN: inkling-opt %s --sconv-print-layouts -o /dev/null | FileCheck %s

// The derived layout of the real model at tp 1, 2, 4 and 8: D stays 2048
// (TP-invariant), each rank holds kv_heads / tp heads.
func.func private @tp1() attributes {l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>}
func.func private @tp2() attributes {l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 2>}
func.func private @tp4() attributes {l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 4>}
func.func private @tp8() attributes {l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 8>}
// A layout whose raw width is not a power of two and not 8-aligned.
func.func private @odd() attributes {l = #sconv.layout<kv_heads = 2, head_dim = 3, hidden = 10, kernel = 3, tp = 1>}
// The engine's block size N = 16 (W = 4): the page and the block grow with N.
func.func private @n16() attributes {l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1, block_size = 16>}
// Used twice: printed once.
func.func private @tp1_again() attributes {l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>}

// CHECK-LABEL: sconv.layout #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
// CHECK-NEXT:   heads_per_rank = 8
// CHECK-NEXT:   hidden_per_head = 512
// CHECK-NEXT:   raw_width = 1280
// CHECK-NEXT:   head_size = 2048
// CHECK-NEXT:   block_size = 4
// CHECK-NEXT:   sliding_window = 4
// CHECK-NEXT:   stream k = [0, 128)
// CHECK-NEXT:   stream v = [128, 256)
// CHECK-NEXT:   stream attn = [256, 768)
// CHECK-NEXT:   stream mlp = [768, 1280)
// CHECK-NEXT:   padding = [1280, 2048)
// CHECK-NEXT:   cache_shape = [num_blocks, 8, 4, 2048]
// CHECK-NEXT:   cache_strides = [block_stride >= 65536, 8192, 2048, 1]
// CHECK-NEXT:   page_bytes = 131072

// CHECK-LABEL: sconv.layout #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 2>
// CHECK-NEXT:   heads_per_rank = 4
// CHECK-NEXT:   hidden_per_head = 512
// CHECK-NEXT:   raw_width = 1280
// CHECK-NEXT:   head_size = 2048
// CHECK:        cache_shape = [num_blocks, 4, 4, 2048]
// CHECK-NEXT:   cache_strides = [block_stride >= 32768, 8192, 2048, 1]
// CHECK-NEXT:   page_bytes = 65536

// CHECK-LABEL: sconv.layout #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 4>
// CHECK-NEXT:   heads_per_rank = 2
// CHECK:        head_size = 2048
// CHECK:        page_bytes = 32768

// CHECK-LABEL: sconv.layout #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 8>
// CHECK-NEXT:   heads_per_rank = 1
// CHECK:        head_size = 2048
// CHECK:        cache_shape = [num_blocks, 1, 4, 2048]
// CHECK:        page_bytes = 16384

// CHECK-LABEL: sconv.layout #sconv.layout<kv_heads = 2, head_dim = 3, hidden = 10, kernel = 3, tp = 1>
// CHECK-NEXT:   heads_per_rank = 2
// CHECK-NEXT:   hidden_per_head = 5
// CHECK-NEXT:   raw_width = 16
// CHECK-NEXT:   head_size = 16
// CHECK-NEXT:   block_size = 3
// CHECK-NEXT:   sliding_window = 3
// CHECK-NEXT:   stream k = [0, 3)
// CHECK-NEXT:   stream v = [3, 6)
// CHECK-NEXT:   stream attn = [6, 11)
// CHECK-NEXT:   stream mlp = [11, 16)
// CHECK-NEXT:   padding = [16, 16)
// CHECK-NEXT:   cache_shape = [num_blocks, 2, 3, 16]
// CHECK-NEXT:   cache_strides = [block_stride >= 96, 48, 16, 1]
// CHECK-NEXT:   page_bytes = 192

// CHECK-LABEL: sconv.layout #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1, block_size = 16>
// CHECK-NEXT:   heads_per_rank = 8
// CHECK-NEXT:   hidden_per_head = 512
// CHECK-NEXT:   raw_width = 1280
// CHECK-NEXT:   head_size = 2048
// CHECK-NEXT:   block_size = 16
// CHECK-NEXT:   sliding_window = 4
// CHECK:        cache_shape = [num_blocks, 8, 16, 2048]
// CHECK-NEXT:   cache_strides = [block_stride >= 262144, 32768, 2048, 1]
// CHECK-NEXT:   page_bytes = 524288

// CHECK-NOT: sconv.layout
