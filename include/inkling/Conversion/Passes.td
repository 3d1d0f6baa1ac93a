//===- Passes.td - Inkling conversion passes -------------------*- tablegen -*-===//

#ifndef INKLING_CONVERSION_PASSES_TD
#define INKLING_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def SConvLowerToLoops : Pass<"sconv-lower-to-loops"> {
  let summary = "Lower sconv ops to scf.parallel + vector + memref + arith loops";
  let description = [{
    Lowers `sconv.bind`, `sconv.insert`, `sconv.conv`, `sconv.insert_packed`,
    `sconv.fused_conv` and the epilogue ops to the target-neutral loop nests
    that every backend needs: they run on the CPU and map to GPU blocks and
    threads later (docs/Design.md section 5): an outer `scf.parallel` over
    (token, head) and an inner `scf.parallel` over 16-byte chunks (8 bf16
    channels) of the stream's width. A backend's own forms of these nests
    (the CPU's split streams, hoisted taps, token-run nest and line marks)
    come through a `LoopStrategy`
    (include/inkling/Conversion/SConvToLoops/LoopStrategy.h) that the
    backend's pipeline passes to `createSConvLowerToLoops`; on the command
    line, `inkling-cpu-lower-to-loops` is this pass with the CPU's.

    - `sconv.bind` becomes `memref.view` of the byte buffer plus
      `memref.reinterpret_cast` to `[num_blocks, H, N, D]` with the op's
      strides (`num_blocks` = the blocks whose unpadded page lies in the
      buffer: `(buffer bytes - H*N*D*2) / page_bytes + 1`, the runtime's
      `Layout::blocksInBuffer`).
    - `sconv.insert`: tokens with `slot_mapping[t] < 0` are skipped; the row
      is `cache[slot / N, h, slot % N, offset + c]`.
    - `sconv.conv`: docs/Design.md section 4's taps (zero below position 0, the
      step's input at or above `num_computed[b]`, else the cache through the
      block table), `math.fma` in f32 in ascending tap order starting from
      the bias (or 0), then the activation, the residual add, and one
      `arith.truncf` to bf16.
    - `sconv.insert_packed` and `sconv.fused_conv`: one nest for all their
      streams; the inner loop runs over the concatenation of the streams'
      chunks in row order (offset order), each chunk dispatched to its
      stream by comparisons against the streams' chunk ranges. With all four
      streams of a layout whose widths are multiples of 8 the packed insert
      writes the row `[0, raw)` with one 16-byte store per chunk and never
      the padding. `fused_conv ... and_insert` loads `x[t]` once for the
      last tap, the residual and the cache store (skipped for slot < 0).
    - `sconv.step` carries no computation: it is erased once unused. An
      insert or conv whose step is not produced by a visible `sconv.step`
      (e.g. a block argument) is reported as an error.

    Every cache access indexes the cache memref, so it goes through the
    memref's block stride (possibly a padded page), never through H*N*D.
    Channels move as `vector<8xbf16>`; a stream whose width is not a
    multiple of 8 gets a scalar tail loop in its last chunk.

    Alignment contract: the base (aligned pointer) of every memref operand
    is 16-byte aligned (callers check it: `exec::validateArguments`, the
    layer ABI's one argument validator, run by the C/Python call, inkling-run's
    serving and replay; the JIT tests allocate 64-byte aligned buffers). Under that contract a vector access claims
    the alignment its address provably has: the gcd of 8 with the static
    offset, every stride times what its index is known to be a multiple of
    (a chunk's channel is a multiple of 8; the flat index h*w + c only of
    gcd(w, 8); the weights' row start (h*w + c)*W of gcd(w*W, 8)) and the
    stream's column offset in the cache row. `{alignment = 16}` only for a
    multiple of 8 elements, 4 or 8 bytes for a multiple of 2 or 4, none
    (still a vector access, unaligned) otherwise. For the cache the strides
    come from `memref.cast`'s statically strided source such as
    `sconv.bind`. The real layout proves 16 bytes everywhere.

    With `checked`, slot ids (`-1 <= slot`, `slot / N < num_blocks`, and a
    slot >= 0 must be the token's own, `block_table[b][p / N] * N + p % N`)
    and the block ids read from the block table (`0 <= id < num_blocks`,
    logical block within the table) are guarded: an offending access is
    skipped (a history tap reads 0) and reported. When the step has a `status` buffer,
    the report goes there (`[0]` += 1 per rejected token or tap; the first
    one's kind, token, value and limit in `[1..4]`) and the host process
    continues; without one, a `cf.assert` stops the program with a message.
  }];
  let options = [
    Option<"checked", "checked", "bool", /*default=*/"false",
           "Guard slot and block ids against the cache size and report "
           "out-of-range ids at run time instead of accessing memory out of "
           "bounds">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::cf::ControlFlowDialect",
    // A strategy's target-specific forms (CPULoopOptions::avx512Bf16: x86
    // intrinsic calls).
    "::mlir::LLVM::LLVMDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
  ];
}

#endif // INKLING_CONVERSION_PASSES_TD
