// RUN: inkling-opt %s -split-input-file --sconv-fuse-epilogues=remarks=true -verify-diagnostics | FileCheck %s
// RUN: inkling-opt %s -split-input-file --sconv-fuse="strategy=conv-insert" 2>/dev/null | FileCheck %s --check-prefix=PIPE

// sconv-fuse-epilogues: K (conv -> rms_norm -> kv_write) and V
// (conv -> kv_write) into one fused_conv_kv_write; y and the norm's output
// are no longer allocated or written.

#l = #sconv.layout<kv_heads = 2, head_dim = 16, hidden = 32, kernel = 4, tp = 1>
!cache = memref<?x2x4x64xbf16, strided<[512, 256, 64, 1]>>
!kv = memref<?x16x2x16xbf16, strided<[512, 32, 16, 1]>>
!x = memref<?x2x16xbf16>

// Alone, the pass fuses each conv with its epilogue; in the pipeline K and
// V are one fused_conv (and_insert) first, then one fused_conv_kv_write.
// CHECK-LABEL: func.func @kv_path
// CHECK-NOT: memref.alloc
// CHECK: sconv.fused_conv_kv_write %{{.*}} weights %{{.*}} history %{{.*}}[k] {{.*}} norm [true](%{{.*}} : memref<16xbf16>) eps 9.99999997E-7 into %{{.*}} slots
// CHECK: sconv.insert
// CHECK: sconv.fused_conv_kv_write %{{.*}} weights %{{.*}} history %{{.*}}[v] {{.*}} norm [false] eps 0.000000e+00 into %{{.*}} slots
// CHECK: sconv.insert
// CHECK-NOT: sconv.rms_norm
// CHECK-NOT: sconv.kv_write
// CHECK-NOT: memref.dealloc
// CHECK: return
// PIPE-LABEL: func.func @kv_path
// PIPE-NOT: memref.alloc
// PIPE: sconv.fused_conv_kv_write %{{.*}}, %{{.*}} weights %{{.*}}, %{{.*}} history %{{.*}}[k, v] {{.*}} and_insert norm [true, false](%{{.*}} : memref<16xbf16>) eps 9.99999997E-7 into %{{.*}}, %{{.*}} slots
// PIPE-NOT: sconv.insert
// PIPE: return
func.func @kv_path(%buffer: memref<?xi8> {llvm.noalias}, %qsl: memref<?xi32> {llvm.noalias},
    %nc: memref<?xi32> {llvm.noalias}, %bt: memref<?x?xi32> {llvm.noalias},
    %slots: memref<?xi64> {llvm.noalias}, %k: !x {llvm.noalias}, %v: !x {llvm.noalias},
    %wk: memref<32x4xbf16> {llvm.noalias}, %wv: memref<32x4xbf16> {llvm.noalias},
    %kn: memref<16xbf16> {llvm.noalias}, %kc: !kv {llvm.noalias}, %vc: !kv {llvm.noalias},
    %aslots: memref<?xi64> {llvm.noalias}) {
  %cache = sconv.bind %buffer layout #l page_bytes 1024 : memref<?xi8> -> !cache
  %step = sconv.step query_start_loc %qsl num_computed %nc block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  %c0 = arith.constant 0 : index
  %t = memref.dim %k, %c0 : !x
  %yk = memref.alloc(%t) : !x
  %yv = memref.alloc(%t) : !x
  %nk = memref.alloc(%t) : !x
  sconv.conv %k, %wk history %cache[k] layout #l step %step into %yk
      : !x, memref<32x4xbf16>, !cache -> !x
  sconv.insert %k into %cache[k] layout #l step %step : !x, !cache
  sconv.conv %v, %wv history %cache[v] layout #l step %step into %yv
      : !x, memref<32x4xbf16>, !cache -> !x
  sconv.insert %v into %cache[v] layout #l step %step : !x, !cache
  sconv.rms_norm %yk weight %kn eps 1.0e-06 layout #l stream k into %nk
      : !x, memref<16xbf16> -> !x
  sconv.kv_write %nk into %kc slots %aslots layout #l stream k : !x, !kv, memref<?xi64>
  sconv.kv_write %yv into %vc slots %aslots layout #l stream v : !x, !kv, memref<?xi64>
  memref.dealloc %yk : !x
  memref.dealloc %yv : !x
  memref.dealloc %nk : !x
  return
}

// -----

// y is a function argument: the caller may read it; not fused.

#l = #sconv.layout<kv_heads = 2, head_dim = 16, hidden = 32, kernel = 4, tp = 1>
!cache = memref<?x2x4x64xbf16, strided<[512, 256, 64, 1]>>
!kv = memref<?x16x2x16xbf16, strided<[512, 32, 16, 1]>>
!x = memref<?x2x16xbf16>

// CHECK-LABEL: func.func @argument_output
// CHECK: sconv.conv
// CHECK: sconv.kv_write
func.func @argument_output(%cache: !cache, %step: !sconv.step, %v: !x, %wv: memref<32x4xbf16>,
    %yv: !x, %vc: !kv, %aslots: memref<?xi64>) {
  // expected-remark @+1 {{conv not fused with its epilogue: output 'outs[0]' is not a buffer of this function (memref.alloc): a reader outside it may need the rows}}
  sconv.conv %v, %wv history %cache[v] layout #l step %step into %yv
      : !x, memref<32x4xbf16>, !cache -> !x
  sconv.kv_write %yv into %vc slots %aslots layout #l stream v : !x, !kv, memref<?xi64>
  return
}

// -----

// A second reader of y (an opaque call) keeps y: not fused.

#l = #sconv.layout<kv_heads = 2, head_dim = 16, hidden = 32, kernel = 4, tp = 1>
!cache = memref<?x2x4x64xbf16, strided<[512, 256, 64, 1]>>
!kv = memref<?x16x2x16xbf16, strided<[512, 32, 16, 1]>>
!x = memref<?x2x16xbf16>

func.func private @use(!x)

// CHECK-LABEL: func.func @second_reader
// CHECK: sconv.conv
// CHECK: sconv.kv_write
func.func @second_reader(%cache: !cache, %step: !sconv.step, %v: !x, %wv: memref<32x4xbf16>,
    %vc: !kv, %aslots: memref<?xi64>, %t: index) {
  %yv = memref.alloc(%t) : !x
  // expected-remark @+1 {{conv not fused with its epilogue: output 'outs[0]' has two readers, 'func.call' and 'sconv.kv_write'}}
  sconv.conv %v, %wv history %cache[v] layout #l step %step into %yv
      : !x, memref<32x4xbf16>, !cache -> !x
  sconv.kv_write %yv into %vc slots %aslots layout #l stream v : !x, !kv, memref<?xi64>
  func.call @use(%yv) : (!x) -> ()
  return
}

// -----

// An opaque call between the conv and its KV write may touch the KV
// cache: the write cannot move up to the conv.

#l = #sconv.layout<kv_heads = 2, head_dim = 16, hidden = 32, kernel = 4, tp = 1>
!cache = memref<?x2x4x64xbf16, strided<[512, 256, 64, 1]>>
!kv = memref<?x16x2x16xbf16, strided<[512, 32, 16, 1]>>
!x = memref<?x2x16xbf16>

func.func private @opaque()

// CHECK-LABEL: func.func @blocked
// CHECK: sconv.conv
// CHECK: call @opaque
// CHECK: sconv.kv_write
func.func @blocked(%cache: !cache, %step: !sconv.step, %v: !x, %wv: memref<32x4xbf16>,
    %vc: !kv, %aslots: memref<?xi64>, %t: index) {
  %yv = memref.alloc(%t) : !x
  // expected-remark @+1 {{conv not fused with its epilogue: 'sconv.kv_write' cannot move up to the conv: it does not commute with 'func.call'}}
  sconv.conv %v, %wv history %cache[v] layout #l step %step into %yv
      : !x, memref<32x4xbf16>, !cache -> !x
  func.call @opaque() : () -> ()
  sconv.kv_write %yv into %vc slots %aslots layout #l stream v : !x, !kv, memref<?xi64>
  return
}

// -----

// The KV cache may be the conv's input (no llvm.noalias): the rows written
// early could be read as later taps.

#l = #sconv.layout<kv_heads = 2, head_dim = 16, hidden = 32, kernel = 4, tp = 1>
!cache = memref<?x2x4x64xbf16, strided<[512, 256, 64, 1]>>
!kv = memref<?x16x2x16xbf16, strided<[512, 32, 16, 1]>>
!x = memref<?x2x16xbf16>

// CHECK-LABEL: func.func @may_alias
// CHECK: sconv.conv
// CHECK: sconv.kv_write
func.func @may_alias(%cache: !cache, %step: !sconv.step, %v: !x, %wv: memref<32x4xbf16>,
    %vc: !kv, %aslots: memref<?xi64>, %t: index) {
  %yv = memref.alloc(%t) : !x
  // expected-remark @+1 {{conv not fused with its epilogue: KV cache 'kv_caches[0]' may alias a buffer the conv reads}}
  sconv.conv %v, %wv history %cache[v] layout #l step %step into %yv
      : !x, memref<32x4xbf16>, !cache -> !x
  sconv.kv_write %yv into %vc slots %aslots layout #l stream v : !x, !kv, memref<?xi64>
  return
}

// -----

// ATTN: conv -> add_rms_norm (residual add, hidden-row norm) becomes one
// fused_conv_add_norm; y is gone.

#l = #sconv.layout<kv_heads = 2, head_dim = 16, hidden = 32, kernel = 4, tp = 1>
!cache = memref<?x2x4x64xbf16, strided<[512, 256, 64, 1]>>
!r = memref<?x32xbf16>

// CHECK-LABEL: func.func @attn_path
// CHECK-NOT: memref.alloc
// CHECK: sconv.fused_conv_add_norm %{{.*}} weights %{{.*}} history %{{.*}}[attn] {{.*}} residual %{{.*}} norm %{{.*}} eps 9.99999997E-7 into %{{.*}}, %{{.*}} :
// CHECK-NOT: sconv.add_rms_norm
// CHECK-NOT: memref.dealloc
// PIPE-LABEL: func.func @attn_path
// PIPE: sconv.fused_conv_add_norm {{.*}}[attn] {{.*}} and_insert residual
func.func @attn_path(%buffer: memref<?xi8> {llvm.noalias}, %qsl: memref<?xi32> {llvm.noalias},
    %nc: memref<?xi32> {llvm.noalias}, %bt: memref<?x?xi32> {llvm.noalias},
    %slots: memref<?xi64> {llvm.noalias}, %a: !r {llvm.noalias},
    %wa: memref<32x4xbf16> {llvm.noalias}, %res: !r {llvm.noalias},
    %n: memref<32xbf16> {llvm.noalias}, %h: !r {llvm.noalias}, %out: !r {llvm.noalias}) {
  %cache = sconv.bind %buffer layout #l page_bytes 1024 : memref<?xi8> -> !cache
  %step = sconv.step query_start_loc %qsl num_computed %nc block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  %c0 = arith.constant 0 : index
  %t = memref.dim %a, %c0 : !r
  %ya = memref.alloc(%t) : !r
  sconv.conv %a, %wa history %cache[attn] layout #l step %step into %ya
      : !r, memref<32x4xbf16>, !cache -> !r
  sconv.insert %a into %cache[attn] layout #l step %step : !r, !cache
  sconv.add_rms_norm %ya, %res weight %n eps 1.0e-06 layout #l stream attn into %h, %out
      : !r, !r, memref<32xbf16> -> !r, !r
  memref.dealloc %ya : !r
  return
}

// -----

// The norm's output may be the conv's input (no llvm.noalias): not fused.

#l = #sconv.layout<kv_heads = 2, head_dim = 16, hidden = 32, kernel = 4, tp = 1>
!cache = memref<?x2x4x64xbf16, strided<[512, 256, 64, 1]>>
!r = memref<?x32xbf16>

// CHECK-LABEL: func.func @attn_may_alias
// CHECK: sconv.conv
// CHECK: sconv.add_rms_norm
func.func @attn_may_alias(%cache: !cache, %step: !sconv.step, %a: !r, %wa: memref<32x4xbf16>,
    %res: !r, %n: memref<32xbf16>, %h: !r, %out: !r, %t: index) {
  %ya = memref.alloc(%t) : !r
  // expected-remark @+1 {{conv not fused with its epilogue: add_rms_norm's 'sum' may alias a buffer the conv reads}}
  sconv.conv %a, %wa history %cache[attn] layout #l step %step into %ya
      : !r, memref<32x4xbf16>, !cache -> !r
  sconv.add_rms_norm %ya, %res weight %n eps 1.0e-06 layout #l stream attn into %h, %out
      : !r, !r, memref<32xbf16> -> !r, !r
  return
}
