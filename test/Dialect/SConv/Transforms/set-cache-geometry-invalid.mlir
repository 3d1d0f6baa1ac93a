// RUN: inkling-opt %s --sconv-set-cache-geometry=block-size=17179869184 -verify-diagnostics
// RUN: not inkling-opt %s --sconv-set-cache-geometry=layers=2000000 2>&1 | FileCheck %s --check-prefix=LAYERS

// A geometry the layout cannot take is an error on the bind that names it.

#layout = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!cache = memref<?x2x4x32xbf16, strided<[256, 128, 32, 1]>>

func.func @too_large(%buffer: memref<?xi8>) {
  // expected-error @below {{'sconv.bind' op block size (17179869184) is not valid for the layout: layout too large}}
  %cache = sconv.bind %buffer layout #layout page_bytes 512
      : memref<?xi8> -> !cache
  return
}
// LAYERS: error: 'sconv.bind' op cross-layer page count (2000000) must be in [0, 2^20]
