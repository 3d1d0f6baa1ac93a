"""ctypes bindings for the Inkling sconv runtime (libinkling_runtime.so).

Standard library and numpy. Installed, this module is `inkling.runtime`
(README "Python") and finds libinkling_runtime.so next to the package
(inkling/_paths.py); otherwise the library is found through, in order: the
`path` argument of `load`, the INKLING_RUNTIME_LIB environment variable, the
dynamic loader's search path ("libinkling_runtime.so").

A serving engine drives one step like this (see test_inkling_runtime.py):

    manager = Manager(LayoutConfig(8, 128, 4096, kernel=4), num_blocks=4096)
    buffers = manager.step_buffers(max_rows=256, num_cols=8192,
                                   max_tokens=8192)
    seq = manager.add_sequence(prompt_ids)          # or at a prefix hit
    manager.schedule_batch([seq], [len(prompt_ids)])  # every running sequence
    step = buffers.build([seq], num_rows=8, num_padded_tokens=512)
    # step.block_table etc. are numpy views of the runtime's buffers
    # copy step.block_copies pages, upload the buffers, run the layers
    manager.commit_batch([seq], [len(prompt_ids)], [[sampled_token]])

Errors raise InklingError with the runtime's status code and message (its
name from the C table, inkling_status_name); the runtime's state is
unchanged by a failed call. Every Python value is checked before ctypes
sees it: an integer outside its C type's range (ctypes would wrap it modulo
2^64), a str where bytes are expected or None where a str is raise
TokenError (an InklingError and a ValueError, INVALID_ARGUMENT).

Threads: a Manager and its StepBuffers may be shared between threads. Each
call holds the manager's lock (the C API is not thread-safe), so calls are
serialized, never concurrent; a call on a closed manager raises
InklingError(FAILED_PRECONDITION).

Batches at C speed: the step's calls (schedule_batch, build, commit_batch
with token_offsets, longest_cached_prefix_batch, add_sequence) take numpy
int64 ids/counts/offsets and int32 token ids (or torch CPU tensors,
buffers) without a copy, through the compiled _inkling_runtime_fast.so next
to the library when it is there (docs/runtime.md, "The batch API").

A package of three private modules (each under the ~700 lines the style
asks), importable under both names (`inkling_runtime` standalone, next to
the library; `inkling.runtime`, copied by python/CMakeLists.txt) through
relative imports alone:
  _native   status codes and errors, the C structs and signatures,
            loading the library and the fast path, value checks;
  _manager  Manager, StepBuffers, Step (the per-step calls);
  _cache    layouts, page unification, tensor parallelism, the cache plan.
"""

# The module's names (as before the split into three files): re-exports.
from ._cache import (  # noqa: F401
    CACHE_LAYER_KINDS, CACHE_LAYOUTS, CachePlan, CacheRegistry, LayerView,
    attention_cache_spec, check_rank_tiling, derive_layout, rank_layouts,
    sconv_cache_spec, unify_page_sizes)
from ._manager import (  # noqa: F401
    BUFFER_ALIGNMENT, Admission, Manager, ManagerStats, SequenceInfo, Step,
    StepBuffers, StepInfo, aligned_empty)
from ._native import (  # noqa: F401
    FAILED_PRECONDITION, INTERNAL, INVALID_ARGUMENT, NOT_FOUND, OK,
    OUT_OF_BLOCKS, OUT_OF_RANGE, PAGE_ADJUSTMENTS, SEQUENCE_STATES,
    UNAVAILABLE, CacheSpec, Closing, InklingError, LayoutConfig, TokenError,
    load, load_cdll, status_name)
# Private helpers the tests and layer.py's loader reach through the package.
from ._native import _INT32, _INT64, _pointer  # noqa: F401

__all__ = [
    "OK", "INVALID_ARGUMENT", "OUT_OF_BLOCKS", "NOT_FOUND",
    "FAILED_PRECONDITION", "OUT_OF_RANGE", "UNAVAILABLE", "INTERNAL",
    "InklingError", "TokenError", "LayoutConfig", "Manager", "StepBuffers",
    "CacheSpec", "load", "derive_layout", "sconv_cache_spec",
    "attention_cache_spec", "unify_page_sizes", "rank_layouts",
    "check_rank_tiling", "Step", "aligned_empty", "BUFFER_ALIGNMENT",
    "CacheRegistry", "CachePlan", "LayerView",
]
