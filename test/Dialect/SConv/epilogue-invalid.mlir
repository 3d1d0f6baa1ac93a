// RUN: inkling-opt %s -split-input-file -verify-diagnostics

// One case per verifier rule of the epilogue ops (issue #29).

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>

func.func @f(%y: memref<?x8x128xbf16>, %w: memref<64xbf16>, %out: memref<?x8x128xbf16>) {
  // expected-error @+1 {{'sconv.rms_norm' op operand 'weight': expected shape [128], found [64]}}
  sconv.rms_norm %y weight %w eps 1.0e-06 layout #l stream k into %out
      : memref<?x8x128xbf16>, memref<64xbf16> -> memref<?x8x128xbf16>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @f(%y: memref<?x8x128xbf16>, %w: memref<128xbf16>, %out: memref<4x8x128xbf16>) {
  // expected-error @+1 {{'sconv.rms_norm' op operand 'out': expected the shape of 'x' ('memref<?x8x128xbf16>'), found 'memref<4x8x128xbf16>'}}
  sconv.rms_norm %y weight %w eps 1.0e-06 layout #l stream k into %out
      : memref<?x8x128xbf16>, memref<128xbf16> -> memref<4x8x128xbf16>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @f(%y: memref<?x8x128xbf16>, %w: memref<128xbf16>, %out: memref<?x8x128xbf16>) {
  // expected-error @+1 {{'sconv.rms_norm' op attribute 'eps': expected a finite epsilon >= 0, found -1.0}}
  sconv.rms_norm %y weight %w eps -1.0 layout #l stream k into %out
      : memref<?x8x128xbf16>, memref<128xbf16> -> memref<?x8x128xbf16>
  return
}

// -----

#l = #sconv.layout<kv_heads = 2, head_dim = 12, hidden = 40, kernel = 4, tp = 1>
func.func @f(%y: memref<?x2x12xbf16>, %w: memref<12xbf16>, %out: memref<?x2x12xbf16>) {
  // expected-error @+1 {{'sconv.rms_norm' op stream 'k': a normalized row of 12 channels is not whole 16-byte chunks (a multiple of 8)}}
  sconv.rms_norm %y weight %w eps 1.0e-06 layout #l stream k into %out
      : memref<?x2x12xbf16>, memref<12xbf16> -> memref<?x2x12xbf16>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @f(%x: memref<?x8x128xbf16>, %kv: memref<?x16x8x64xbf16>, %slots: memref<?xi64>) {
  // expected-error @+1 {{'sconv.kv_write' op operand 'kv_cache': expected shape [?, 16, 8, 128], found [?, 16, 8, 64]}}
  sconv.kv_write %x into %kv slots %slots layout #l stream k
      : memref<?x8x128xbf16>, memref<?x16x8x64xbf16>, memref<?xi64>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @f(%x: memref<?x8x128xbf16>, %kv: memref<?x?x8x128xbf16>, %slots: memref<?xi64>) {
  // expected-error @+1 {{'sconv.kv_write' op operand 'kv_cache': expected the attention cache [num_blocks, block_size, 8, 128] (NHD) with a static block size >= 1, found [?, ?, 8, 128]}}
  sconv.kv_write %x into %kv slots %slots layout #l stream k
      : memref<?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?xi64>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @f(%x: memref<?x8x128xbf16>, %kv: memref<?x16x8x128xbf16, strided<[8192, 1024, 128, 1]>>, %slots: memref<?xi64>) {
  // expected-error @+1 {{'sconv.kv_write' op operand 'kv_cache': block stride 8192 is smaller than a block of block_size*H*w = 16384 elements}}
  sconv.kv_write %x into %kv slots %slots layout #l stream k
      : memref<?x8x128xbf16>, memref<?x16x8x128xbf16, strided<[8192, 1024, 128, 1]>>, memref<?xi64>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @f(%x: memref<?x8x128xbf16>, %kv: memref<?x16x8x128xbf16, strided<[16384, 2048, 128, 1]>>, %slots: memref<?xi64>) {
  // expected-error @+1 {{'sconv.kv_write' op operand 'kv_cache': expected strides [?, 1024, 128, 1], found [16384, 2048, 128, 1]}}
  sconv.kv_write %x into %kv slots %slots layout #l stream k
      : memref<?x8x128xbf16>, memref<?x16x8x128xbf16, strided<[16384, 2048, 128, 1]>>, memref<?xi64>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @f(%x: memref<?x8x128xbf16>, %kv: memref<?x16x8x128xbf16>, %slots: memref<?xi32>) {
  // expected-error @+1 {{'sconv.kv_write' op operand 'slots': expected a rank-1 memref of i64 (memref<?xi64>), found 'memref<?xi32>'}}
  sconv.kv_write %x into %kv slots %slots layout #l stream k
      : memref<?x8x128xbf16>, memref<?x16x8x128xbf16>, memref<?xi32>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @f(%x: memref<8x8x128xbf16>, %kv: memref<?x16x8x128xbf16>, %slots: memref<4xi64>) {
  // expected-error @+1 {{'sconv.kv_write' op operand 'slots': holds 4 slots for 8 tokens}}
  sconv.kv_write %x into %kv slots %slots layout #l stream k
      : memref<8x8x128xbf16>, memref<?x16x8x128xbf16>, memref<4xi64>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
!cache = memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>
!kv = memref<?x16x8x128xbf16>
func.func @f(%cache: !cache, %step: !sconv.step, %k: memref<?x8x128xbf16>,
             %wk: memref<1024x4xbf16>, %kc: !kv, %aslots: memref<?xi64>) {
  // expected-error @+1 {{'sconv.fused_conv_kv_write' op expected one norm weight per normalized stream (1), found 0}}
  sconv.fused_conv_kv_write %k weights %wk history %cache[k] layout #l step %step
      norm [true] eps 1.0e-06 into %kc slots %aslots
      : !cache, (memref<?x8x128xbf16>), (memref<1024x4xbf16>) -> (!kv), memref<?xi64>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
!cache = memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>
!kv = memref<?x16x8x128xbf16>
func.func @f(%cache: !cache, %step: !sconv.step, %k: memref<?x8x128xbf16>,
             %wk: memref<1024x4xbf16>, %kc: !kv, %aslots: memref<?xi64>) {
  // expected-error @+1 {{'sconv.fused_conv_kv_write' op expected one input, weight, 'normed' flag and KV cache per stream; found 1 inputs, 1 weights, 2 flags, 1 KV caches for 1 streams}}
  sconv.fused_conv_kv_write %k weights %wk history %cache[k] layout #l step %step
      norm [false, false] eps 1.0e-06 into %kc slots %aslots
      : !cache, (memref<?x8x128xbf16>), (memref<1024x4xbf16>) -> (!kv), memref<?xi64>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
!cache = memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>
!kv = memref<?x16x8x128xbf16>
func.func @f(%cache: !cache, %step: !sconv.step, %k: memref<?x8x128xbf16>,
             %wk: memref<1024x4xbf16>, %kn: memref<256xbf16>, %kc: !kv, %aslots: memref<?xi64>) {
  // expected-error @+1 {{'sconv.fused_conv_kv_write' op operand 'norm_weights[0]': expected shape [128], found [256]}}
  sconv.fused_conv_kv_write %k weights %wk history %cache[k] layout #l step %step
      norm [true] (%kn : memref<256xbf16>) eps 1.0e-06 into %kc slots %aslots
      : !cache, (memref<?x8x128xbf16>), (memref<1024x4xbf16>) -> (!kv), memref<?xi64>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
!cache = memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>
!kv = memref<?x16x8x128xbf16>
func.func @f(%cache: !cache, %step: !sconv.step, %k: memref<?x8x128xbf16>,
             %wk: memref<1024x4xbf16>, %kc: memref<?x16x4x128xbf16>, %aslots: memref<?xi64>) {
  // expected-error @+1 {{'sconv.fused_conv_kv_write' op operand 'kv_caches[0]': expected shape [?, 16, 8, 128], found [?, 16, 4, 128]}}
  sconv.fused_conv_kv_write %k weights %wk history %cache[k] layout #l step %step
      norm [false] eps 1.0e-06 into %kc slots %aslots
      : !cache, (memref<?x8x128xbf16>), (memref<1024x4xbf16>) -> (memref<?x16x4x128xbf16>), memref<?xi64>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
!cache = memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>
!kv = memref<?x16x8x128xbf16>
func.func @f(%cache: !cache, %step: !sconv.step, %k: memref<?x8x128xbf16>,
             %wk: memref<1024x4xbf16>, %kc: !kv, %aslots: memref<?xi64>) {
  // expected-error @+1 {{'sconv.fused_conv_kv_write' op attribute 'streams': stream 'k' appears twice}}
  sconv.fused_conv_kv_write %k, %k weights %wk, %wk history %cache[k, k] layout #l step %step
      norm [false, false] eps 1.0e-06 into %kc, %kc slots %aslots
      : !cache, (memref<?x8x128xbf16>, memref<?x8x128xbf16>), (memref<1024x4xbf16>, memref<1024x4xbf16>) -> (!kv, !kv), memref<?xi64>
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 2>
!r = memref<?x2048xbf16>
func.func @f(%y: !r, %res: !r, %w: memref<2048xbf16>, %h: !r, %out: !r) {
  // expected-error @+1 {{'sconv.add_rms_norm' op the hidden-row norm needs every rank's sum of squares: tp (2) must be 1 (at tp > 1 the engine's all-reduce sits between the add and the norm)}}
  sconv.add_rms_norm %y, %res weight %w eps 1.0e-06 layout #l stream attn into %h, %out
      : !r, !r, memref<2048xbf16> -> !r, !r
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
!r = memref<?x4096xbf16>
func.func @f(%y: !r, %res: !r, %w: memref<512xbf16>, %h: !r, %out: !r) {
  // expected-error @+1 {{'sconv.add_rms_norm' op operand 'weight': expected shape [4096], found [512]}}
  sconv.add_rms_norm %y, %res weight %w eps 1.0e-06 layout #l stream attn into %h, %out
      : !r, !r, memref<512xbf16> -> !r, !r
  return
}

// -----

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
func.func @f(%y: memref<4x4096xbf16>, %res: memref<8x4096xbf16>, %w: memref<4096xbf16>, %h: memref<?x4096xbf16>, %out: memref<?x4096xbf16>) {
  // expected-error @+1 {{'sconv.add_rms_norm' op operand 'residual': expected 4 tokens like 'y', found 'memref<8x4096xbf16>'}}
  sconv.add_rms_norm %y, %res weight %w eps 1.0e-06 layout #l stream attn into %h, %out
      : memref<4x4096xbf16>, memref<8x4096xbf16>, memref<4096xbf16> -> memref<?x4096xbf16>, memref<?x4096xbf16>
  return
}
