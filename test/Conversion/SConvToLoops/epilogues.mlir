// RUN: inkling-opt %s -split-input-file --sconv-lower-to-loops | FileCheck %s

// The epilogues' nests (docs/Design.md section 4, "Epilogues"): per chunk a
// halving lane tree of the squares ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)),
// the chunk sums as a pairwise tree, sqrt then divide, (y * inv) * weight,
// one truncf; the KV write stores only 0 <= slot < num_blocks * block_size.

#l = #sconv.layout<kv_heads = 2, head_dim = 16, hidden = 32, kernel = 4, tp = 1>

// CHECK-LABEL: func.func @norm
// CHECK: scf.parallel (%[[T:.*]], %[[H:.*]]) =
// CHECK: %[[Y0:.*]] = arith.extf
// CHECK: %[[SQ0:.*]] = arith.mulf %[[Y0]], %[[Y0]] : vector<8xf32>
// CHECK: %[[LO:.*]] = vector.shuffle %[[SQ0]], %[[SQ0]] [0, 1, 2, 3]
// CHECK: %[[HI:.*]] = vector.shuffle %[[SQ0]], %[[SQ0]] [4, 5, 6, 7]
// CHECK: arith.addf %[[LO]], %[[HI]] : vector<4xf32>
// CHECK: [0, 1] : vector<4xf32>
// CHECK: [2, 3] : vector<4xf32>
// CHECK: %[[C0:.*]] = vector.extract {{.*}}[0] : f32 from vector<1xf32>
// CHECK: %[[C1:.*]] = vector.extract {{.*}}[0] : f32 from vector<1xf32>
// CHECK: %[[SS:.*]] = arith.addf %[[C0]], %[[C1]] : f32
// CHECK: %[[MEAN:.*]] = arith.divf %[[SS]]
// CHECK: %[[EPS:.*]] = arith.addf %[[MEAN]]
// CHECK: %[[ROOT:.*]] = math.sqrt %[[EPS]] : f32
// CHECK: %[[INV:.*]] = arith.divf %{{.*}}, %[[ROOT]] : f32
// CHECK: %[[INVS:.*]] = vector.broadcast %[[INV]]
// CHECK: %[[SCALED:.*]] = arith.mulf %[[Y0]], %[[INVS]]
// CHECK: %[[OUT:.*]] = arith.mulf %[[SCALED]], %{{.*}} : vector<8xf32>
// CHECK: arith.truncf %[[OUT]]
// CHECK: vector.store {{.*}} {alignment = 16 : i64}
// CHECK-NOT: memref.alloc
func.func @norm(%y: memref<?x2x16xbf16>, %w: memref<16xbf16>, %out: memref<?x2x16xbf16>) {
  sconv.rms_norm %y weight %w eps 1.0e-06 layout #l stream k into %out
      : memref<?x2x16xbf16>, memref<16xbf16> -> memref<?x2x16xbf16>
  return
}

// -----

#l = #sconv.layout<kv_heads = 2, head_dim = 16, hidden = 32, kernel = 4, tp = 1>
!kv = memref<?x3x2x16xbf16, strided<[96, 32, 16, 1]>>

// CHECK-LABEL: func.func @kv_write
// CHECK: scf.parallel
// CHECK: %[[SLOT:.*]] = memref.load %{{.*}}[%{{.*}}] : memref<?xi64>
// CHECK: %[[LIMIT:.*]] = arith.muli %{{.*}}, %c3_i64 : i64
// CHECK: %[[GE:.*]] = arith.cmpi sge, %[[SLOT]], %c0_i64
// CHECK: %[[LT:.*]] = arith.cmpi slt, %[[SLOT]], %[[LIMIT]]
// CHECK: %[[STORED:.*]] = arith.andi %[[GE]], %[[LT]]
// CHECK: arith.divui
// CHECK: arith.remui
// CHECK: scf.if %[[STORED]]
// CHECK: vector.store {{.*}} {alignment = 16 : i64} : memref<?x3x2x16xbf16, strided<[96, 32, 16, 1]>>, vector<8xbf16>
func.func @kv_write(%x: memref<?x2x16xbf16>, %kv: !kv, %slots: memref<?xi64>) {
  sconv.kv_write %x into %kv slots %slots layout #l stream k
      : memref<?x2x16xbf16>, !kv, memref<?xi64>
  return
}

// -----

// The fused K/V nest: one (token, head) nest; the conv cache store (and_insert),
// the K row's norm and both KV stores inside it; no y buffer.

#l = #sconv.layout<kv_heads = 2, head_dim = 16, hidden = 32, kernel = 4, tp = 1>
!cache = memref<?x2x4x64xbf16, strided<[512, 256, 64, 1]>>
!kv = memref<?x16x2x16xbf16, strided<[512, 32, 16, 1]>>

// CHECK-LABEL: func.func @fused
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) =
// CHECK-NOT: scf.parallel
// CHECK: math.fma
// CHECK: math.sqrt
// CHECK: scf.for
// CHECK: math.fma
// CHECK: scf.reduce
// CHECK-NOT: memref.alloc
func.func @fused(%buffer: memref<?xi8>, %qsl: memref<?xi32>, %nc: memref<?xi32>,
                 %bt: memref<?x?xi32>, %slots: memref<?xi64>,
                 %k: memref<?x2x16xbf16>, %v: memref<?x2x16xbf16>,
                 %wk: memref<32x4xbf16>, %wv: memref<32x4xbf16>, %kn: memref<16xbf16>,
                 %kc: !kv, %vc: !kv, %aslots: memref<?xi64>) {
  %cache = sconv.bind %buffer layout #l page_bytes 1024 : memref<?xi8> -> !cache
  %step = sconv.step query_start_loc %qsl num_computed %nc block_table %bt slot_mapping %slots
      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.fused_conv_kv_write %k, %v weights %wk, %wv history %cache[k, v] layout #l
      step %step and_insert norm [true, false] (%kn : memref<16xbf16>) eps 1.0e-06
      into %kc, %vc slots %aslots
      : !cache, (memref<?x2x16xbf16>, memref<?x2x16xbf16>),
        (memref<32x4xbf16>, memref<32x4xbf16>) -> (!kv, !kv), memref<?xi64>
  return
}

// -----

// The hidden-row nest: one nest over tokens; per head (scf.for) h = y +
// residual rounded and stored, the heads' sums in a vector; then the
// row scaled in a second loop over heads.

#l = #sconv.layout<kv_heads = 2, head_dim = 16, hidden = 32, kernel = 4, tp = 1>
!r = memref<?x32xbf16>

// CHECK-LABEL: func.func @add_norm
// CHECK: scf.parallel (%[[T:.*]]) =
// CHECK: %[[SUMS:.*]] = scf.for %[[H:.*]] = {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (vector<2xf32>)
// CHECK: arith.addf {{.*}} : vector<8xf32>
// CHECK: arith.truncf
// CHECK: vector.store
// CHECK: vector.insert %{{.*}}, %[[ACC]] [%[[H]]] : f32 into vector<2xf32>
// CHECK: math.sqrt
// CHECK: scf.for
// CHECK: vector.load
// CHECK: arith.truncf
// CHECK: vector.store
func.func @add_norm(%y: !r, %res: !r, %w: memref<32xbf16>, %h: !r, %out: !r) {
  sconv.add_rms_norm %y, %res weight %w eps 1.0e-06 layout #l stream attn into %h, %out
      : !r, !r, memref<32xbf16> -> !r, !r
  return
}
