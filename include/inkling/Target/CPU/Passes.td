//===- Passes.td - CPU passes of inkling-lower-to-cpu --*- tablegen -*-===//
//
// The passes `inkling-lower-to-cpu` adds around upstream MLIR's conversions:
// the C interface, the OpenMP threading of the loop nests, and the bf16
// memory accesses the x86 backend cannot legalize cheaply.
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_TARGET_CPU_PASSES_TD
#define INKLING_TARGET_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def CPULowerToLoopsPass : Pass<"inkling-cpu-lower-to-loops"> {
  let summary = "sconv-lower-to-loops with the CPU's forms of the nests";
  let description = [{
    The shared loop lowering (`sconv-lower-to-loops`, whose description
    says what every nest computes) with the CPU's LoopStrategy
    (include/inkling/Target/CPU/LoopStrategy.h): each option below is one
    of the CPU's forms; without any, the nests are those of
    `sconv-lower-to-loops`. Every form computes the same bits.
    `inkling-lower-to-cpu` adds `sconv-lower-to-loops` with this strategy
    (split-streams from its own option, hoist-taps, token-runs,
    decode-runs and even-odd-lanes on).
  }];
  let options = [
    Option<"checked", "checked", "bool", /*default=*/"false",
           "As sconv-lower-to-loops' checked">,
    Option<"splitStreams", "split-streams", "bool", /*default=*/"false",
           "In the nest of a fused op (insert_packed, fused_conv), run one "
           "inner loop per stream in row order instead of one loop over the "
           "concatenated chunks with a per-chunk dispatch: the same chunks "
           "in the same order, one nest either way (LLVM vectorizes a plain "
           "per-stream loop; the GPU keeps the concatenated loop: "
           "consecutive threads, consecutive chunks)">,
    Option<"hoistTaps", "hoist-taps", "bool", /*default=*/"false",
           "In an unchecked conv's nest, choose each tap's source (step "
           "input, cache row through the block table, or 0) once per "
           "(token, head) before the chunk loop, and read every tap from "
           "the step input without selection when the token is at least "
           "kernel - 1 tokens into its step (prefill): the chunk loop then "
           "only loads, converts, multiplies and stores (the GPU keeps the "
           "per-chunk selection: one chunk per thread, fewer registers)">,
    Option<"tokenRuns", "token-runs", "bool", /*default=*/"false",
           "In an unchecked conv, for a step whose real tokens are at least "
           "kernel x its sequences (chosen at run time; else the (token, "
           "head) nest), a nest over (run of 4 tokens, head) whose "
           "innermost loop, per sequence in the run and chunk, walks the "
           "tokens and carries the last kernel - 1 inputs as loop values, "
           "with the weights loaded once per run: each input is loaded "
           "once. Its stores of one 64-byte line at a line-aligned offset "
           "carry `inkling.line_aligned` (see inkling-cpu-streaming-stores). "
           "With it, sconv.fused_conv_kv_write takes the CPU's forms of "
           "lib/Target/CPU/EpilogueRuns.cpp: the same run-time choice "
           "between a (run of 4 tokens, head) nest for prefill and a "
           "(token, head) nest for decode, each row by 64-byte groups, "
           "K's rows kept until their norm">,
    Option<"decodeRuns", "decode-runs", "bool", /*default=*/"false",
           "In an unchecked conv, for the steps that token-runs leaves to "
           "the (token, head) nest (all steps without token-runs), a nest "
           "over (run of 4 consecutive tokens of any sequences, head) whose "
           "innermost loop, per 64-byte line of channels, loads the weights "
           "once and walks the run's tokens, each with its taps' sources "
           "chosen once per (token, head): each line of a token's rows is "
           "visited once, and the run's history rows load together">,
    Option<"evenOddLanes", "even-odd-lanes", "bool", /*default=*/"false",
           "In the run nests (token-runs, decode-runs), hold a chunk's f32 lanes in even-odd "
           "order (the even channels, then the odd ones; the weights and "
           "bias loaded in that order): a bf16 row widens to f32 with a "
           "shift and a mask of its 32-bit words and narrows back with the "
           "rounding written on the words and one or, where the natural "
           "order needs a lane-crossing widen and narrow per vector">,
    Option<"avx512Bf16", "avx512-bf16", "bool", /*default=*/"false",
           "The target has AVX512-F, -BW, -DQ and AVX512-BF16: the "
           "decode nests (a conv's decode-run nest, the fused K/V op's "
           "decode nest) round each 64-byte line of their outputs with one "
           "vcvtne2ps2bf16, unless a lane is a NaN or a denormal (one "
           "vfpclassps per 16 lanes and a branch), which the instruction "
           "rounds otherwise; such a line takes the software rounding. The "
           "same bits either way; the code then runs only on such CPUs">,
    Option<"branchCounters", "branch-counters", "bool", /*default=*/"false",
           "Count each run-time branch of the conv nests taken (token runs "
           "on or off, a run unrolled or looped) in public i64 globals "
           "(include/inkling/Target/CPU/BranchCounters.h): for tests">,
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

def EmitCInterfacePass
    : Pass<"inkling-cpu-emit-c-interface", "mlir::ModuleOp"> {
  let summary = "Mark every public function with a body llvm.emit_c_interface";
  let description = [{
    So that the ExecutionEngine (or C code) can call the layer with one
    memref descriptor per argument (`_mlir_ciface_<name>`). External
    declarations and private functions are left alone.

    ```mlir
    func.func @layer(%x: memref<?x8x128xbf16>) { ... }
    // becomes
    func.func @layer(%x: memref<?x8x128xbf16>) attributes {llvm.emit_c_interface} { ... }
    ```
  }];
}

def SerializeInnerLoopsPass
    : Pass<"inkling-cpu-serialize-inner-loops", "mlir::ModuleOp"> {
  let summary = "Turn every scf.parallel nested in another into scf.for loops";
  let description = [{
    The loop lowering builds each sconv op as an outer `scf.parallel` over
    (token, head) around inner `scf.parallel` loops over 16-byte chunks. On
    the CPU only the outer loop is worth threads: an inner loop is one head
    row (at most a few KiB), far below the cost of a fork. This pass rewrites
    every `scf.parallel` that has an `scf.parallel` ancestor into a nest of
    `scf.for` (upstream's `scf::parallelForToNestedFors`), so that
    `convert-scf-to-openmp` afterwards makes exactly one `omp.parallel` per
    nest instead of nested parallel regions.

    ```mlir
    scf.parallel (%t, %h) = ... {
      scf.parallel (%c) = (%c0) to (%c16) step (%c1) { ... }
    }
    // becomes
    scf.parallel (%t, %h) = ... {
      scf.for %c = %c0 to %c16 step %c1 { ... }
    }
    ```
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect"];
}

def ParallelDispatchPass
    : Pass<"inkling-cpu-parallel-dispatch", "mlir::ModuleOp"> {
  let summary = "Run each loop nest sequentially or on threads, per call";
  let description = [{
    Decides per call, from the step's size, whether a nest runs on threads:
    every outermost `scf.parallel` (a nest of the loop lowering) becomes an
    `scf.if` on `iterations >= min-iterations` (the product of its trip
    counts, computed before it). The `then` branch keeps the `scf.parallel`
    (which `convert-scf-to-openmp` turns into a team); the `else` branch is
    the same nest as plain `scf.for` loops (upstream
    `scf::parallelForToNestedFors`), which no later pass parallelizes: a
    decode step of a few tokens runs exactly the single-thread code, with no
    fork, no join and no OpenMP call at all (an `omp.parallel if(false)`
    still costs the runtime's serialized-region calls and the outlined
    body's call on every nest). Each branch is outlined into a private
    function that LLVM may not inline (`passthrough = ["noinline"]`),
    `<caller>_threaded<N>` and `<caller>_sequential<N>`: the OpenMP
    lowering's outlining, allocas and captured values stay out of the
    sequential code, and each copy is compiled on its own, whatever the
    caller's other nests hold (left in the caller, the sequential nests
    shared a stack frame twice the one-thread build's and ran at 0.83-0.98x
    its speed at T = 1: docs/fusion.md). The calling
    function keeps one branch and two calls per nest. The two copies
    compute the same bits.

    ```mlir
    scf.parallel (%t, %h) = (%c0, %c0) to (%T, %c8) step (%c1, %c1) { ... }
    // becomes (min-iterations=64)
    %big = arith.cmpi sge, %iterations, %c64 : index
    scf.if %big {
      func.call @layer_threaded0(...)    // scf.parallel (%t, %h) ... { ... }
    } else {
      func.call @layer_sequential0(...)  // scf.for %t ... { scf.for %h ... }
    }
    ```
  }];
  let options = [
    Option<"minIterations", "min-iterations", "int64_t", /*default=*/"64",
           "Nests of fewer iterations run sequentially; 0 or 1: always the "
           "parallel form">,
    Option<"branchCounters", "branch-counters", "bool", /*default=*/"false",
           "Count each branch taken in a public i64 global (BranchCounters.h): for tests">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::scf::SCFDialect",
  ];
}

def StreamingStoresPass
    : Pass<"inkling-cpu-streaming-stores", "mlir::ModuleOp"> {
  let summary = "Non-temporal stores in the nests of large steps";
  let description = [{
    A prefill step writes its outputs and cache rows once and reads neither
    again in the step: megabytes that would only evict useful lines from the
    caches, and that an ordinary store reads from memory before it writes
    them (the read for ownership: one more pass over the bytes). For every
    outermost `scf.parallel` (a nest of the loop lowering) this pass computes
    the nest's iterations at run time (the product of its trip counts) and
    versions the nest: when they reach `min-iterations`, a copy of the nest
    whose vector stores are non-temporal (x86: `movnt`), which skip the read
    and the caches, runs; smaller steps, whose outputs and rows the next
    layer or step reads back at once, run the nest as it was. The whole nest
    is copied, not each store: LLVM merges an `if` between two stores that
    differ only in their metadata back into one ordinary store.

    A store the loop lowering marked `inkling.line_aligned` (one 64-byte
    line, at a multiple of 64 bytes from its memref's base: the CPU's
    token-run nest) is claimed 64-byte aligned in the copy, and the copy
    runs only when each such memref's base is 64-byte aligned at run time:
    LLVM splits a non-temporal 64-byte store that claims less into four
    16-byte stores and their extracts, which cost more than they save. The
    bits stored are the same either way.

    Stores into a `memref.alloca` of the nest (its scratch buffers, which
    the nest reads back at once from L1) stay ordinary: a non-temporal
    store would send them to memory and the read after it would wait for
    them (2.5x slower at 8192 prefill tokens on the token-run
    K/V nest).

    So do stores the lowering marked `inkling.cached_store` (a decode
    step's conv output, which the next op reads at once). A nest with its
    own `inkling.stream_min_iterations` (i64) uses it in place of
    `min-iterations`: the decode-run nest sets 1, since what it streams
    then is only cache rows, read at the next step. `min-iterations=0`
    still turns the pass off for every nest.

    ```mlir
    scf.parallel (%r, %h) = (%c0, %c0) to (%R, %c8) step (%c1, %c1) {
      vector.store %v, %y[%t, %h, %c] {alignment = 16 : i64,
          inkling.line_aligned} : memref<?x8x128xbf16>, vector<32xbf16>
    }
    // becomes (min-iterations=4096)
    %big = arith.cmpi sge, %iterations, %c4096 : index
    %p = memref.extract_aligned_pointer_as_index %y : ... -> index
    // ... %aligned: (%p + offset * 2) % 64 == 0
    %stream = arith.andi %big, %aligned : i1
    scf.if %stream {
      scf.parallel (%r, %h) = ... {
        vector.store %v, %y[%t, %h, %c] {alignment = 64 : i64,
            nontemporal = true, inkling.line_aligned} : ...
      }
    } else {
      scf.parallel (%r, %h) = ... { vector.store %v, %y[%t, %h, %c] ... }
    }
    ```
  }];
  let options = [
    Option<"minIterations", "min-iterations", "int64_t", /*default=*/"4096",
           "Stream the stores of nests with at least this many iterations; "
           "0: never">,
    Option<"branchCounters", "branch-counters", "bool", /*default=*/"false",
           "Count each branch taken in a public i64 global (BranchCounters.h): for tests">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
  ];
}

def HoistStaticAllocasPass
    : Pass<"inkling-cpu-hoist-static-allocas", "mlir::ModuleOp"> {
  let summary = "Move fixed-size memref.alloca out of loops, once per thread";
  let description = [{
    A loop nest's scratch buffer (a `memref.alloca` of static shape in a
    loop body, such as the token-run K/V nest's staged y) would otherwise
    become an `llvm.alloca` in a loop block: the stack grows by its size in
    every iteration, as nothing frees it before the function returns
    (`scf.for` and `scf.parallel` bodies are allocation scopes that
    scf -> cf does not implement), and inside an `omp.loop_nest` the
    `memref.alloca_scope` that `convert-scf-to-openmp` wraps the body in
    cannot hold the body's branches after scf -> cf.

    Each such alloca moves to the top of the entry block of its nearest
    enclosing `omp.parallel` (one buffer per thread) or function, crossing
    only loops, `memref.alloca_scope`s and ops that are no allocation scope
    (`scf.if`, `omp.wsloop`); any other allocation scope on the way
    (`omp.task`, ...) leaves it where it is. This is legal: a fresh alloca's
    contents are undefined, so reusing one buffer in every iteration of the
    same thread changes no defined value; the stack holds one copy per
    thread instead of one per iteration.

    Then each `memref.alloca_scope` whose body (outside the allocation
    scopes nested in it) holds no op that may allocate in it is replaced by
    its body: what memref's canonicalization does, except that an
    `llvm.call_intrinsic` (which has no memory-effect interface, and which
    canonicalization therefore takes for an allocation) counts as none:
    an intrinsic allocates nothing in its caller's frame. (The decode-run
    nest's AVX512-BF16 rounding calls x86 intrinsics; without this, its
    threaded copy's scope would keep the body's branches.)

    ```mlir
    omp.parallel {
      omp.wsloop { omp.loop_nest (%i) ... {
        memref.alloca_scope {
          %buf = memref.alloca() : memref<4x128xbf16>
          ...
    // becomes
    omp.parallel {
      %buf = memref.alloca() : memref<4x128xbf16>
      omp.wsloop { omp.loop_nest (%i) ... {
        ...
    ```
  }];
}

def BF16MemoryAsI16Pass
    : Pass<"inkling-bf16-memory-as-i16", "mlir::ModuleOp"> {
  let summary = "Move bf16 through memory as i16 bits in the LLVM dialect";
  let description = [{
    Every `llvm.load` of bf16 (or a vector of bf16) loads i16 and bitcasts,
    every `llvm.store` of bf16 bitcasts and stores i16. The bits are the
    same; what changes is that LLVM's InstCombine folds the bitcast pairs
    away, so no bf16 value is left for the x86 backend to legalize. (A bf16
    value that lives across basic blocks, such as the input a fused conv both
    convolves and stores under `slot >= 0`, would be legalized through f32
    and a `__truncsfbf2` call: slow, missing from libgcc 12, and it quiets
    signaling NaNs.)

    ```mlir
    %v = llvm.load %p : !llvm.ptr -> vector<8xbf16>
    // becomes
    %i = llvm.load %p : !llvm.ptr -> vector<8xi16>
    %v = llvm.bitcast %i : vector<8xi16> to vector<8xbf16>
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // INKLING_TARGET_CPU_PASSES_TD
