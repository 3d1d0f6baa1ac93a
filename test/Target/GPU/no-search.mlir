// The decoder layer's conv kernels take each token's sequence from the
// step's token_seq operand: their PTX has no backward branch, i.e. no loop
// (the binary search over query_start_loc was one, a chain of dependent
// loads before the first row load). The same layer without token_seq (the
// operand removed) still lowers, with the search's loop in every conv
// kernel: what the checker below reports when there is one.
// RUN: rm -rf %t && mkdir -p %t
// RUN: inkling-opt %inkling_src/examples/decoder_layer.mlir \
// RUN:   --inkling-lower-to-nvvm=fusion=none --inkling-gpu-write-kernels=dir=%t/seq -o /dev/null
// RUN: awk -f %S/backward-branches.awk %t/seq/decoder_layer_k0_conv_k.ptx \
// RUN:   %t/seq/decoder_layer_k2_conv_v.ptx %t/seq/decoder_layer_k4_conv_attn.ptx \
// RUN:   %t/seq/decoder_layer_k6_conv_mlp.ptx | FileCheck %s --check-prefix=SEQ
// RUN: sed -e 's/token_seq(%%token_seq : memref<?xi32>)//' \
// RUN:   %inkling_src/examples/decoder_layer.mlir > %t/search.mlir
// RUN: inkling-opt %t/search.mlir --inkling-lower-to-nvvm=fusion=none \
// RUN:   --inkling-gpu-write-kernels=dir=%t/search -o /dev/null
// RUN: awk -f %S/backward-branches.awk %t/search/decoder_layer_k0_conv_k.ptx \
// RUN:   %t/search/decoder_layer_k2_conv_v.ptx %t/search/decoder_layer_k4_conv_attn.ptx \
// RUN:   %t/search/decoder_layer_k6_conv_mlp.ptx | FileCheck %s --check-prefix=SEARCH

// SEQ: decoder_layer_k0_conv_k.ptx: {{[1-9][0-9]*}} branches, 0 backward
// SEQ-NEXT: decoder_layer_k2_conv_v.ptx: {{[1-9][0-9]*}} branches, 0 backward
// SEQ-NEXT: decoder_layer_k4_conv_attn.ptx: {{[1-9][0-9]*}} branches, 0 backward
// SEQ-NEXT: decoder_layer_k6_conv_mlp.ptx: {{[1-9][0-9]*}} branches, 0 backward

// SEARCH: decoder_layer_k0_conv_k.ptx: {{[1-9][0-9]*}} branches, 1 backward
// SEARCH-NEXT: decoder_layer_k2_conv_v.ptx: {{[1-9][0-9]*}} branches, 1 backward
// SEARCH-NEXT: decoder_layer_k4_conv_attn.ptx: {{[1-9][0-9]*}} branches, 1 backward
// SEARCH-NEXT: decoder_layer_k6_conv_mlp.ptx: {{[1-9][0-9]*}} branches, 1 backward
