// RUN: inkling-opt %s | inkling-opt | FileCheck %s
// RUN: inkling-opt %s -mlir-print-op-generic | inkling-opt | FileCheck %s

// The epilogue ops (issue #29): k_norm, the attention KV write, and the
// fused op that sconv-fuse-epilogues builds from them.

#l = #sconv.layout<kv_heads = 8, head_dim = 128, hidden = 4096, kernel = 4, tp = 1>
!cache = memref<?x8x4x2048xbf16, strided<[65536, 8192, 2048, 1]>>
!kv = memref<?x16x8x128xbf16, strided<[16384, 1024, 128, 1]>>

// CHECK-LABEL: func.func @rms_norm
// CHECK: sconv.rms_norm %{{.*}} weight %{{.*}} eps 9.99999997E-7 layout #{{.*}} stream k into %{{.*}} : memref<?x8x128xbf16>, memref<128xbf16> -> memref<?x8x128xbf16>
func.func @rms_norm(%y: memref<?x8x128xbf16>, %w: memref<128xbf16>,
                    %out: memref<?x8x128xbf16>) {
  sconv.rms_norm %y weight %w eps 1.0e-06 layout #l stream k into %out
      : memref<?x8x128xbf16>, memref<128xbf16> -> memref<?x8x128xbf16>
  return
}

// CHECK-LABEL: func.func @kv_write
// CHECK: sconv.kv_write %{{.*}} into %{{.*}} slots %{{.*}} layout #{{.*}} stream v : memref<?x8x128xbf16>, memref<?x16x8x128xbf16, strided<[16384, 1024, 128, 1]>>, memref<?xi64>
// CHECK: sconv.kv_write {{.*}} stream k : memref<?x8x128xbf16>, memref<?x1x8x128xbf16, strided<[?, 1024, 128, 1]>>, memref<?xi64>
func.func @kv_write(%x: memref<?x8x128xbf16>, %kv: !kv, %slots: memref<?xi64>,
                    %kv1: memref<?x1x8x128xbf16, strided<[?, 1024, 128, 1]>>) {
  sconv.kv_write %x into %kv slots %slots layout #l stream v
      : memref<?x8x128xbf16>, !kv, memref<?xi64>
  sconv.kv_write %x into %kv1 slots %slots layout #l stream k
      : memref<?x8x128xbf16>, memref<?x1x8x128xbf16, strided<[?, 1024, 128, 1]>>, memref<?xi64>
  return
}

// CHECK-LABEL: func.func @fused
// CHECK: sconv.fused_conv_kv_write %{{.*}}, %{{.*}} weights %{{.*}}, %{{.*}} history %{{.*}}[k, v] layout #{{.*}} step %{{.*}} and_insert norm [true, false](%{{.*}} : memref<128xbf16>) eps 9.99999997E-7 into %{{.*}}, %{{.*}} slots %{{.*}} :
// CHECK: sconv.fused_conv_kv_write %{{.*}} weights %{{.*}} history %{{.*}}[v] layout #{{.*}} step %{{.*}} norm [false] eps 0.000000e+00 into %{{.*}} slots %{{.*}} :
func.func @fused(%buffer: memref<?xi8>, %qsl: memref<?xi32>, %nc: memref<?xi32>,
                 %bt: memref<?x?xi32>, %slots: memref<?xi64>,
                 %k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>,
                 %wk: memref<1024x4xbf16>, %wv: memref<1024x4xbf16>,
                 %kn: memref<128xbf16>, %kc: !kv, %vc: !kv,
                 %aslots: memref<?xi64>) {
  %cache = sconv.bind %buffer layout #l page_bytes 131072 : memref<?xi8> -> !cache
  %step = sconv.step query_start_loc %qsl num_computed %nc block_table %bt
      slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.fused_conv_kv_write %k, %v weights %wk, %wv history %cache[k, v]
      layout #l step %step and_insert norm [true, false] (%kn : memref<128xbf16>)
      eps 1.0e-06 into %kc, %vc slots %aslots
      : !cache, (memref<?x8x128xbf16>, memref<?x8x128xbf16>),
        (memref<1024x4xbf16>, memref<1024x4xbf16>) -> (!kv, !kv), memref<?xi64>
  sconv.fused_conv_kv_write %v weights %wv history %cache[v]
      layout #l step %step norm [false] eps 0.0 into %vc slots %aslots
      : !cache, (memref<?x8x128xbf16>), (memref<1024x4xbf16>) -> (!kv), memref<?xi64>
  return
}

// CHECK-LABEL: func.func @add_norm
// CHECK: sconv.add_rms_norm %{{.*}}, %{{.*}} weight %{{.*}} eps 9.99999997E-7 layout #{{.*}} stream attn into %{{.*}}, %{{.*}} : memref<?x4096xbf16>, memref<?x4096xbf16>, memref<4096xbf16> -> memref<?x4096xbf16>, memref<?x4096xbf16>
// CHECK: sconv.fused_conv_add_norm %{{.*}} weights %{{.*}} history %{{.*}}[mlp] layout #{{.*}} step %{{.*}} and_insert residual %{{.*}} norm %{{.*}} eps 9.99999997E-7 into %{{.*}}, %{{.*}} :
func.func @add_norm(%cache: !cache, %step: !sconv.step, %y: memref<?x4096xbf16>,
                    %res: memref<?x4096xbf16>, %w: memref<4096xbf16>,
                    %h: memref<?x4096xbf16>, %out: memref<?x4096xbf16>,
                    %wm: memref<4096x4xbf16>) {
  sconv.add_rms_norm %y, %res weight %w eps 1.0e-06 layout #l stream attn
      into %h, %out
      : memref<?x4096xbf16>, memref<?x4096xbf16>, memref<4096xbf16>
        -> memref<?x4096xbf16>, memref<?x4096xbf16>
  sconv.fused_conv_add_norm %y weights %wm history %cache[mlp] layout #l
      step %step and_insert residual %res norm %w eps 1.0e-06 into %h, %out
      : !cache, memref<?x4096xbf16>, memref<4096x4xbf16>, memref<?x4096xbf16>,
        memref<4096xbf16> -> memref<?x4096xbf16>, memref<?x4096xbf16>
  return
}
