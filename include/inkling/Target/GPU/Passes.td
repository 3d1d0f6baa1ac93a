//===- Passes.td - GPU kernel passes of the NVVM pipeline -*- tablegen -*-===//
//
// The passes `inkling-lower-to-nvvm` adds around upstream MLIR's GPU passes,
// and `inkling-gpu-write-kernels` (docs/gpu.md).
//
//===----------------------------------------------------------------------===//

#ifndef INKLING_TARGET_GPU_PASSES_TD
#define INKLING_TARGET_GPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def CheckTargetPass : Pass<"inkling-gpu-check-target", "mlir::ModuleOp"> {
  let summary = "Reject a GPU chip that LLVM's NVPTX backend does not know";
  let description = [{
    The NVPTX backend stops the process (a fatal error, not a diagnostic)
    when `gpu-module-to-binary` meets a chip it does not know. This pass, the
    first of `inkling-lower-to-nvvm`, asks the backend's own subtarget table
    (`isKnownNVPTXChip`) and fails the pipeline with an error instead:

    ```
    $ inkling-opt layer.mlir --inkling-lower-to-nvvm=chip=sm_999
    layer.mlir:1:1: error: GPU target sm_999: not a chip LLVM's NVPTX backend
    knows (e.g. sm_80, sm_90)
    ```

    It also checks the serialization format: `gpu-module-to-binary` reports
    an unknown one without failing, so the pipeline would exit 0 and write
    its output anyway.
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90\"",
           "The chip the pipeline targets">,
    Option<"format", "format", "std::string", /*default=*/"\"isa\"",
           "The format gpu-module-to-binary will produce (isa, bin, fatbin "
           "or llvm)">,
  ];
}

def TagSConvOpsPass : Pass<"inkling-gpu-tag-ops", "mlir::ModuleOp"> {
  let summary = "Record on every sconv op that becomes a kernel what it "
                "implements";
  let description = [{
    Records on every sconv op that becomes a kernel (those with a step:
    insert, conv and the fused ops; and the unfused epilogues: rms_norm,
    kv_write, add_rms_norm) what it implements (op name, streams, layout,
    attributes, operand types) as `FusedLoc` metadata of its location. The loop lowering builds the nest
    with the op's location, so the metadata reaches the `gpu.launch` and the
    outlined kernel, where `inkling-gpu-record-kernels` reads it.

    ```mlir
    // loc("layer.mlir":12:3) becomes
    // loc(fused<{inkling.op = {name = "sconv.conv", streams = ["k"], ...}}>
    //     ["layer.mlir":12:3])
    ```
  }];
}

def SinkIntoLaunchPass : Pass<"inkling-gpu-sink", "mlir::ModuleOp"> {
  let summary = "Sink the side-effect-free ops a gpu.launch uses into it";
  let description = [{
    Moves every side-effect-free, region-free op whose result a `gpu.launch`
    uses into the launch (constants, dims, index math, and the view ops:
    `memref.view`, `reinterpret_cast`, `collapse_shape`), so that the
    outlined kernel takes only the host function's own arguments and its
    ABI is a list of host arguments.

    ```mlir
    %v = memref.view %buffer[%c0][%n] : ...   // moved into the launch body
    gpu.launch ... { ... %v ... }
    ```
  }];
}

def WorkgroupAttributionsPass
    : Pass<"inkling-gpu-workgroup-attributions", "mlir::ModuleOp"> {
  let summary = "Make each workgroup memref.alloca of a gpu.launch one of its "
                "workgroup attributions";
  let description = [{
    A `memref.alloca` of `#gpu.address_space<workgroup>` memory inside a
    `gpu.launch` (a block's buffer, made by the fused epilogues' rows across
    threads) becomes a workgroup attribution of that launch: one buffer per
    block, lowered by the NVVM conversion to a shared (address space 3)
    global. One outside a launch, or of a dynamic shape, is an error.

    ```mlir
    gpu.launch ... {
      %sums = memref.alloca() : memref<8xf32, #gpu.address_space<workgroup>>
    }
    // -> gpu.launch ... workgroup(%sums : memref<8xf32, ...>) { ... }
    ```
  }];
}

def FmaToLLVMPass : Pass<"inkling-gpu-fma-to-llvm"> {
  let summary = "Rewrite math.fma to llvm.intr.fma (fma.rn.f32 on NVPTX)";
  let description = [{
    `math.fma` (scalar or vector) becomes `llvm.intr.fma`, which NVPTX
    selects as `fma.rn.f32`, the same single rounding as the CPU's, rather
    than a call to libdevice's `__nv_fmaf`. An f32 `math.sqrt` becomes a call
    of libdevice's correctly rounded `__nv_fsqrt_rn` (`sqrt.rn.f32`): the
    upstream lowering calls `__nv_sqrtf`, approximate without
    `__CUDA_PREC_SQRT`, and `1 / sqrt` then folds to `rsqrt.approx` (the
    epilogues' norms need the correctly rounded root; the pass runs on the
    gpu.module, where it declares the function).

    ```mlir
    %r = math.fma %a, %b, %c : f32   // -> %r = llvm.intr.fma(%a, %b, %c)
    ```
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

def RecordKernelsPass : Pass<"inkling-gpu-record-kernels", "mlir::ModuleOp"> {
  let summary = "Name each outlined kernel and record its ABI";
  let description = [{
    After `gpu-kernel-outlining`: gives each kernel a readable unique name,
    `<host>_k<i>_<op>_<streams>`, and records its entry in the module's
    `inkling.kernels` attribute: host function, op metadata, dedupe key,
    argument ABI (the host argument and memref type of each kernel argument)
    and launch-grid rule (`T`, the token count, or a constant per
    dimension).

    ```mlir
    module attributes {inkling.kernels = [{name = "layer_k0_conv_k",
        host = "layer", host_args = [0, 2, 9, 1, 5, 3, 13],
        grid = ["T", 8, 1], block = [16, 1, 1], ...}
      ]} { ... }
    ```
  }];
}

def RecordKernelParamsPass
    : Pass<"inkling-gpu-record-params", "mlir::ModuleOp"> {
  let summary = "Record each lowered kernel's parameter types";
  let description = [{
    After the kernels are in the LLVM dialect: adds each kernel's
    `llvm.func` parameter types (the ABI the driver sees: `ptr` and `i64`
    for the expanded memref descriptors) to its `inkling.kernels` entry, and
    checks that they are exactly the expanded descriptors of its arguments.

    ```mlir
    {name = "layer_k1_insert_k", params = ["ptr", "ptr", "i64", ...], ...}
    ```
  }];
}

def EmitHostFormPass : Pass<"inkling-gpu-emit-host-form", "mlir::ModuleOp"> {
  let summary = "Record each kernel's host form, for execution without a GPU";
  let description = [{
    After the NVVM lowering (the IR `gpu-module-to-binary` turns into PTX):
    adds to each kernel's `inkling.kernels` entry its *host form*, the same
    LLVM IR as text with
    - each `nvvm.read.ptx.sreg.*` read replaced by a call of
      `__inkling_emu_sreg(code)`, which the emulator answers for the thread
      it runs;
    - each global load, store and atomic preceded by
      `__inkling_emu_access(address, bytes, arguments, kind)`, where
      `arguments` is the mask of kernel arguments the address derives from
      (a provenance analysis over the function: GEPs, descriptor
      insert/extract, selects, block arguments; accesses of the thread's
      own allocas are not global and are left alone);
    - an entry `__inkling_emu_entry_<kernel>(void **params)` that takes
      cuLaunchKernel's parameter array, and a table of the arguments'
      descriptors (`__inkling_emu_args_<kernel>`).
    Any other NVVM op, or a call of a function the module does not define
    (a libdevice function), is listed in `__inkling_emu_unsupported`, so
    that loading the host form fails naming it instead of computing a wrong
    value. The ABI is `inkling/Runtime/EmulationAbi.h`; the fake CUDA
    driver (runtime/unittests) compiles and runs it (docs/gpu.md).

    ```mlir
    %t = nvvm.read.ptx.sreg.tid.x : i32
    %v = llvm.load %p {alignment = 16 : i64} : !llvm.ptr -> vector<8xbf16>
    // in the host form:
    //   %t = call i32 @__inkling_emu_sreg(i32 0)
    //   %q = call ptr @__inkling_emu_access(ptr %p, i64 16, i64 8, i32 0)
    //   %v = load <8 x bfloat>, ptr %q, align 16
    ```
  }];
}

def WriteKernelsPass : Pass<"inkling-gpu-write-kernels", "mlir::ModuleOp"> {
  let summary = "Write the serialized kernels and manifest.json to a directory";
  let description = [{
    Writes every `gpu.binary` object of a module lowered by
    `inkling-lower-to-nvvm` to `dir` (`.ptx` for assembly, `.cubin` for bin,
    `.fatbin`), one file per distinct kernel (kernels with the same dedupe
    key share one), and `dir/manifest.json` (names, argument ABI,
    launch-grid rule, and per host function its launches in order), which
    the runtime's CUDA launcher reads; and each kernel's host form, when
    `inkling-gpu-emit-host-form` recorded one, as `<kernel>.host.ll`
    (manifest key `host_form`). `serializeKernelBundle` is the same in
    memory.

    ```
    $ inkling-opt layer.mlir --inkling-lower-to-nvvm \
        --inkling-gpu-write-kernels=dir=kernels -o /dev/null
    $ ls kernels
    layer_k0_fused_conv_k_v_attn_mlp.ptx  manifest.json
    ```
  }];
  let options = [
    Option<"dir", "dir", "std::string", /*default=*/"",
           "Directory to write the kernels and manifest.json to (created)">,
  ];
}

#endif // INKLING_TARGET_GPU_PASSES_TD
