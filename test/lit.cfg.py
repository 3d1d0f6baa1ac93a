# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "INKLING"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.inkling_obj_root, "test")
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%shlibext", ".so"))
config.substitutions.append(("%inkling_src", config.inkling_src_root))
config.substitutions.append(
    (
        "%mlir_runner_utils",
        os.path.join(config.mlir_lib_dir, "libmlir_runner_utils.so"),
    )
)
config.substitutions.append(
    (
        "%mlir_c_runner_utils",
        os.path.join(config.mlir_lib_dir, "libmlir_c_runner_utils.so"),
    )
)
# LLVM's OpenMP runtime, for programs lowered with threads != 1 (and idle
# workers that sleep at once rather than spin beside the other tests).
config.substitutions.append(("%libomp", config.openmp_library))
config.environment["KMP_BLOCKTIME"] = "0"
# The JIT's object cache (inkling/ExecutionEngine/ObjectCache.h): the test
# command shares one between its stages; a test that needs its own passes
# --cache-dir.
if os.environ.get("INKLING_CACHE_DIR"):
    config.environment["INKLING_CACHE_DIR"] = os.environ["INKLING_CACHE_DIR"]

# The ASan+UBSan build (the sanitizer stage): the tests whose extra runs
# add kernel work rather than host code paths keep them to `!sanitized`.
if config.sanitized:
    config.available_features.add("sanitized")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.inkling_tools_dir, config.llvm_tools_dir]
tools = ["inkling-opt", "inkling-run", "mlir-opt", "mlir-runner", "mlir-translate"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# GPU code generation checks need no GPU; only the ptxas checks need ptxas.
if config.ptxas_executable and os.path.exists(config.ptxas_executable):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", config.ptxas_executable))
else:
    # Said in the run's output, so that a summary without ptxas is not read
    # as one with the PTX assembled.
    lit_config.note(
        "ptxas tests skipped: ptxas not found (%r); the tests that REQUIRE "
        "ptxas are UNSUPPORTED" % (config.ptxas_executable or "not configured")
    )

# inkling-run --device=gpu without a GPU: the runtime's fake CUDA driver
# (host memory, arguments checked; with LLVM, kernels executed from their
# host form, with memcheck and racecheck).
if config.fake_cuda_library:
    config.available_features.add("fake-cuda")
    config.substitutions.append(("%fake_cuda", config.fake_cuda_library))
    if config.fake_cuda_executes:
        config.available_features.add("fake-cuda-executes")
        config.substitutions.append(
            (
                "%run_gpu",
                "%s %s --device=gpu --cuda-driver=%s --json"
                % (
                    os.path.join(config.inkling_tools_dir, "inkling-run"),
                    os.path.join(config.inkling_src_root, "examples", "decoder_layer.mlir"),
                    config.fake_cuda_library,
                ),
            )
        )
