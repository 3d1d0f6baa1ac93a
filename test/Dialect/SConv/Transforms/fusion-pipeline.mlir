// RUN: inkling-opt %s -sconv-fuse | FileCheck %s --check-prefix=CONVINSERT
// RUN: inkling-opt %s -sconv-fuse=strategy=conv-insert | FileCheck %s --check-prefix=CONVINSERT
// RUN: inkling-opt %s -sconv-fuse=strategy=packed-inserts | FileCheck %s --check-prefix=PACKED
// RUN: inkling-opt %s -sconv-fuse=strategy=none | FileCheck %s --check-prefix=NONE
// RUN: not inkling-opt %s -sconv-fuse=strategy=fastest 2>&1 | FileCheck %s --check-prefix=BAD

// A decoder layer as the engine runs it: K and V come out of the QKV
// projection together; the attention output and the MLP output become
// ready only after attention and the MLP (opaque calls here). Eight sconv
// ops; the minimum is three loop nests (launches): K+V, ATTN, MLP.

#l = #sconv.layout<kv_heads = 2, head_dim = 8, hidden = 16, kernel = 4, tp = 1>
!c = memref<?x2x4x32xbf16, strided<[256, 128, 32, 1]>>
!x = memref<?x2x8xbf16>
!w = memref<16x4xbf16>

func.func private @attention(!x, !x, !x)
func.func private @mlp(!x, !x)

func.func @layer(%k: !x {llvm.noalias}, %v: !x {llvm.noalias},
                 %a: !x {llvm.noalias}, %m: !x {llvm.noalias},
                 %w: !w {llvm.noalias}, %yk: !x {llvm.noalias},
                 %yv: !x {llvm.noalias}, %ya: !x {llvm.noalias},
                 %ym: !x {llvm.noalias}, %buf: memref<?xi8> {llvm.noalias},
                 %qsl: memref<?xi32> {llvm.noalias},
                 %nc: memref<?xi32> {llvm.noalias},
                 %bt: memref<?x?xi32> {llvm.noalias},
                 %sm: memref<?xi64> {llvm.noalias}) {
  %c = sconv.bind %buf layout #l page_bytes 512 : memref<?xi8> -> !c
  %s = sconv.step query_start_loc %qsl num_computed %nc block_table %bt
      slot_mapping %sm : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>
  sconv.conv %k, %w history %c[k] layout #l step %s into %yk : !x, !w, !c -> !x
  sconv.insert %k into %c[k] layout #l step %s : !x, !c
  sconv.conv %v, %w history %c[v] layout #l step %s into %yv : !x, !w, !c -> !x
  sconv.insert %v into %c[v] layout #l step %s : !x, !c
  call @attention(%yk, %yv, %a) : (!x, !x, !x) -> ()
  sconv.conv %a, %w history %c[attn] layout #l step %s into %ya : !x, !w, !c -> !x
  sconv.insert %a into %c[attn] layout #l step %s : !x, !c
  call @mlp(%ya, %m) : (!x, !x) -> ()
  sconv.conv %m, %w history %c[mlp] layout #l step %s into %ym : !x, !w, !c -> !x
  sconv.insert %m into %c[mlp] layout #l step %s : !x, !c
  return
}

// CONVINSERT-LABEL: func @layer
// CONVINSERT: sconv.fused_conv %arg0, %arg1 weights {{.*}}[k, v] {{.*}} and_insert
// CONVINSERT-NEXT: call @attention
// CONVINSERT-NEXT: sconv.fused_conv %arg2 weights {{.*}}[attn] {{.*}} and_insert
// CONVINSERT-NEXT: call @mlp
// CONVINSERT-NEXT: sconv.fused_conv %arg3 weights {{.*}}[mlp] {{.*}} and_insert
// CONVINSERT-NEXT: return
// CONVINSERT-NOT: sconv.insert
// CONVINSERT-NOT: sconv.conv

// The inserts cannot pass the calls (unknown effects): K and V pack
// together, ATTN and MLP stay single; convs fuse as above. 3 + 3 nests.
// PACKED-LABEL: func @layer
// PACKED: sconv.fused_conv %arg0, %arg1 weights {{.*}}[k, v]
// PACKED-NEXT: sconv.insert_packed %arg0, %arg1 into %{{.*}}[k, v]
// PACKED-NEXT: call @attention
// PACKED-NEXT: sconv.conv %arg2
// PACKED-NEXT: sconv.insert %arg2
// PACKED-NEXT: call @mlp
// PACKED-NEXT: sconv.conv %arg3
// PACKED-NEXT: sconv.insert %arg3
// PACKED-NEXT: return

// NONE-LABEL: func @layer
// NONE-COUNT-4: sconv.insert
// NONE-NOT: fused

// BAD: for the --strategy option: Cannot find option named 'fastest'!
