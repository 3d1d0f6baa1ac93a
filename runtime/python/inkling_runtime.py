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

Errors raise InklingError with the runtime's status code and message; the
runtime's state is unchanged by a failed call.

Threads: a Manager and its StepBuffers may be shared between threads. Each
call holds the manager's lock (the C API is not thread-safe), so calls are
serialized, never concurrent; a call on a closed manager raises
InklingError(FAILED_PRECONDITION).

Batches at C speed: the step's calls (schedule_batch, build, commit_batch
with token_offsets, longest_cached_prefix_batch, add_sequence) take numpy
int64 ids/counts/offsets and int32 token ids (or torch CPU tensors,
buffers) without a copy, through the compiled _inkling_runtime_fast.so next
to the library when it is there (docs/runtime.md, "The batch API").

One file on purpose (about 1250 lines, over the ~700 the style asks): it is
the binding of one C header, shipped as a single module that is both
`inkling_runtime` (standalone, next to the library) and `inkling.runtime`
(copied by python/CMakeLists.txt). A second module would need an import that
depends on which of the two names it runs under, and a second copy and
install rule; the length is mostly the header's structs and signatures.
"""

import ctypes
import os
import threading
from collections import namedtuple

import numpy as np

__all__ = [
    "OK", "INVALID_ARGUMENT", "OUT_OF_BLOCKS", "NOT_FOUND",
    "FAILED_PRECONDITION", "OUT_OF_RANGE", "UNAVAILABLE", "INTERNAL",
    "InklingError", "TokenError", "LayoutConfig", "Manager", "StepBuffers", "CacheSpec",
    "load", "derive_layout", "sconv_cache_spec", "attention_cache_spec",
    "unify_page_sizes", "rank_layouts", "check_rank_tiling", "Step",
    "aligned_empty", "BUFFER_ALIGNMENT",
]

# Status codes: the numbers of inkling_status_t.
OK = 0
INVALID_ARGUMENT = 1
OUT_OF_BLOCKS = 2
NOT_FOUND = 3
FAILED_PRECONDITION = 4
OUT_OF_RANGE = 5
UNAVAILABLE = 6
INTERNAL = 7

SEQUENCE_STATES = ("idle", "scheduled", "preempted")
PAGE_ADJUSTMENTS = ("unchanged", "scaled block size", "padded")

_I32 = ctypes.c_int32
_I64 = ctypes.c_int64
_U64 = ctypes.c_uint64
_P = ctypes.POINTER
_V = ctypes.c_void_p  # an array's address (an int)
_ERROR_CAPACITY = 1024


class Closing:
    """Base of the objects that own a native handle: close() at the end of
    a `with` block and when collected (also in layer.py)."""

    def close(self):
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass


class InklingError(Exception):
    """A failed runtime call: `code` (a status code) and `message`."""

    def __init__(self, code, message, name=""):
        super().__init__("%s: %s" % (name or code, message))
        self.code = code
        self.message = message


class LayoutConfig(ctypes.Structure):
    """inkling_layout_config_t: what a model layer declares."""

    _fields_ = [("kv_heads", _I64), ("head_dim", _I64), ("hidden", _I64),
                ("kernel", _I64), ("tp", _I64),
                ("element_type", ctypes.c_char_p), ("block_size", _I64)]

    def __init__(self, kv_heads, head_dim, hidden, kernel, tp=1,
                 element_type="bf16", block_size=0):
        """block_size: tokens per cache block N (0: the kernel), the
        engine's choice, e.g. the unifier's scaled block size."""
        super().__init__(kv_heads, head_dim, hidden, kernel, tp,
                         element_type.encode(), block_size)


class _Layout(ctypes.Structure):
    _fields_ = [("heads_per_rank", _I64), ("hidden_per_head", _I64),
                ("raw_width", _I64), ("head_size", _I64),
                ("block_size", _I64), ("sliding_window", _I64),
                ("element_bytes", _I64), ("page_bytes", _I64),
                ("stream_offset", _I64 * 4), ("stream_width", _I64 * 4)]


class _ManagerConfig(ctypes.Structure):
    _fields_ = [("layout", LayoutConfig), ("num_blocks", _I64),
                ("lookahead", _I64), ("enable_prefix_caching", _I32),
                ("prefix_seed", _U64)]


class _ManagerStats(ctypes.Structure):
    _fields_ = [(name, _I64) for name in (
        "num_blocks", "num_free_blocks", "num_held_blocks",
        "num_cached_blocks", "num_sequences", "block_size", "lookahead",
        "max_blocks_per_sequence", "max_blocks_between_steps")]


class _SequenceInfo(ctypes.Structure):
    _fields_ = [("state", _I32), ("num_computed", _I64),
                ("num_tokens", _I64), ("num_scheduled", _I64),
                ("num_blocks", _I64)]


class _Admission(ctypes.Structure):
    _fields_ = [("admit", _I32), ("needed_blocks", _I64),
                ("reserved_blocks", _I64), ("free_blocks", _I64)]


class _StepBufferSpec(ctypes.Structure):
    _fields_ = [("query_start_loc", _P(_I32)), ("num_computed", _P(_I32)),
                ("block_table", _P(_I32)), ("slot_mapping", _P(_I64)),
                ("block_copies", _P(_I32)), ("max_rows", _I64),
                ("num_cols", _I64), ("max_tokens", _I64),
                ("max_copies", _I64), ("token_seq", _P(_I32))]


class _StepInfo(ctypes.Structure):
    _fields_ = [(name, _I64) for name in (
        "num_sequences", "num_rows", "num_tokens", "num_padded_tokens",
        "num_copies")]


class CacheSpec(ctypes.Structure):
    """inkling_cache_spec_t: a layer group's cache for page unification."""

    _fields_ = [("name", ctypes.c_char_p), ("block_size", _I64),
                ("page_bytes", _I64), ("reads_through_block_stride", _I32),
                ("fixed_block_size", _I32), ("stride_alignment", _I64)]


class _UnifiedSpec(ctypes.Structure):
    _fields_ = [("block_size", _I64), ("page_bytes", _I64),
                ("block_stride_bytes", _I64), ("adjustment", _I32),
                ("scale", _I64)]


class _RankLayout(ctypes.Structure):
    _fields_ = [("rank", _I64), ("tp", _I64), ("head_begin", _I64),
                ("head_end", _I64), ("hidden_begin", _I64),
                ("hidden_end", _I64), ("layout", _Layout)]


_STATUS = _I32
_ERR = (ctypes.c_char_p, ctypes.c_size_t)
_SIGNATURES = {
    "inkling_runtime_api_version": (_I32, ()),
    "inkling_status_name": (ctypes.c_char_p, (_I32,)),
    "inkling_layout_derive": (_STATUS, (_P(LayoutConfig), _P(_Layout)) + _ERR),
    "inkling_manager_create": (
        _STATUS, (_P(_ManagerConfig), _P(ctypes.c_void_p)) + _ERR),
    "inkling_manager_destroy": (None, (ctypes.c_void_p,)),
    "inkling_manager_last_error": (ctypes.c_char_p, (ctypes.c_void_p,)),
    "inkling_manager_stats": (_STATUS, (ctypes.c_void_p, _P(_ManagerStats))),
    "inkling_manager_check_invariants": (_STATUS, (ctypes.c_void_p,)),
    # Token and id arrays are passed as addresses (_V): numpy arrays are
    # handed over without a copy (see _tokens, _int64s).
    "inkling_add_sequence": (
        _STATUS, (ctypes.c_void_p, _V, _I64, _I64, _P(_I64))),
    "inkling_append_tokens": (
        _STATUS, (ctypes.c_void_p, _I64, _V, _I64)),
    "inkling_schedule": (_STATUS, (ctypes.c_void_p, _I64, _I64)),
    "inkling_schedule_ahead": (_STATUS, (ctypes.c_void_p, _I64, _I64)),
    "inkling_commit": (
        _STATUS, (ctypes.c_void_p, _I64, _I64, _V, _I64)),
    "inkling_schedule_batch": (_STATUS, (ctypes.c_void_p, _V, _V, _I64)),
    "inkling_commit_batch": (
        _STATUS, (ctypes.c_void_p, _V, _V, _V, _V, _I64)),
    "inkling_preempt": (_STATUS, (ctypes.c_void_p, _I64)),
    "inkling_resume": (_STATUS, (ctypes.c_void_p, _I64, _I64)),
    "inkling_resume_with_tokens": (
        _STATUS, (ctypes.c_void_p, _I64, _V, _I64, _I64)),
    "inkling_sequence_longest_cached_prefix": (
        _STATUS, (ctypes.c_void_p, _I64, _I64, _P(_I64))),
    "inkling_finish": (_STATUS, (ctypes.c_void_p, _I64)),
    "inkling_fork": (_STATUS, (ctypes.c_void_p, _I64, _P(_I64))),
    "inkling_longest_cached_prefix": (
        _STATUS, (ctypes.c_void_p, _V, _I64, _I64, _P(_I64))),
    "inkling_admission": (
        _STATUS, (ctypes.c_void_p, _I64, _I64, _I64, _P(_Admission))),
    "inkling_longest_cached_prefix_batch": (
        _STATUS, (ctypes.c_void_p, _V, _V, _V, _I64, _V)),
    "inkling_manager_set_prefix_policy": (
        _STATUS, (ctypes.c_void_p, ctypes.c_char_p, _I64)),
    "inkling_manager_set_drop_last_matched_block": (
        _STATUS, (ctypes.c_void_p, _I32)),
    "inkling_add_sequence_with_keys": (
        _STATUS, (ctypes.c_void_p, _V, _I64, _I64, _V, _I64,
                  ctypes.c_char_p, _I64, _P(_I64))),
    "inkling_longest_cached_prefix_with_keys": (
        _STATUS, (ctypes.c_void_p, _V, _I64, _I64, ctypes.c_char_p,
                  _I64, _P(_I64))),
    "inkling_sequence_info": (
        _STATUS, (ctypes.c_void_p, _I64, _P(_SequenceInfo))),
    "inkling_step_buffers_create": (
        _STATUS, (ctypes.c_void_p, _P(_StepBufferSpec),
                  _P(ctypes.c_void_p))),
    "inkling_step_buffers_destroy": (None, (ctypes.c_void_p,)),
    "inkling_build_step": (
        _STATUS, (ctypes.c_void_p, ctypes.c_void_p, _V, _I64, _I64,
                  _I64, _P(_StepInfo))),
    "inkling_cache_spec_sconv": (
        _STATUS, (_P(LayoutConfig), ctypes.c_char_p, _P(CacheSpec)) + _ERR),
    "inkling_cache_spec_attention": (
        _STATUS, (ctypes.c_char_p, _I64, _I64, _I64, _I64, _I32, _I64,
                  _P(CacheSpec)) + _ERR),
    "inkling_unify_page_sizes": (
        _STATUS, (_P(CacheSpec), _I64, _P(_UnifiedSpec), _P(_I64)) + _ERR),
    "inkling_rank_layouts": (
        _STATUS, (_P(LayoutConfig), _P(_RankLayout), _I64) + _ERR),
    "inkling_check_rank_tiling": (
        _STATUS, (_P(LayoutConfig), _P(_RankLayout), _I64) + _ERR),
}

_loaded = {}
_load_lock = threading.Lock()


def load_cdll(path, signatures):
    """ctypes.CDLL(path), once per path, its functions typed from
    `signatures` (name -> (restype, argtypes)); also layer.py's loader."""
    with _load_lock:
        if path not in _loaded:
            lib = ctypes.CDLL(path)
            for name, (restype, argtypes) in signatures.items():
                function = getattr(lib, name)
                function.restype = restype
                function.argtypes = list(argtypes)
            _loaded[path] = lib
        return _loaded[path]


def _default_library():
    """The library next to the installed package, if this is one."""
    if __package__:
        from . import _paths  # generated by CMake (python/CMakeLists.txt)
        return _paths.library("libinkling_runtime.so")
    return "libinkling_runtime.so"


def load(path=None):
    """Loads (once per path) and returns the runtime's shared library."""
    path = path or os.environ.get("INKLING_RUNTIME_LIB") or \
        _default_library()
    return load_cdll(path, _SIGNATURES)


_fast_modules = {}
_FAST_SLOW_PATH = -1000  # inkling_runtime_fast.c's kSlowPath


class _Fast:
    """The compiled fast path (inkling_runtime_fast.c) for one library: the
    module and the addresses of the C functions it calls."""

    def __init__(self, module, lib):
        if module.SLOW_PATH != _FAST_SLOW_PATH:
            raise ImportError("another _inkling_runtime_fast")
        self.module = module

        def address(name):
            return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value

        self.schedule_batch = address("inkling_schedule_batch")
        self.commit_batch = address("inkling_commit_batch")
        self.build_step = address("inkling_build_step")
        self.lookup_batch = address("inkling_longest_cached_prefix_batch")
        self.add_sequence = address("inkling_add_sequence_with_keys")
        self.no_points = np.zeros(0, _INT64)


def _fast_path(lib):
    """The _Fast of `lib`: `_inkling_runtime_fast.so` next to the library
    file, loaded by path (no name-dependent import); None when it is absent
    or does not load, or with INKLING_RUNTIME_NO_FAST=1 (ctypes alone)."""
    with _load_lock:
        if lib not in _fast_modules:
            _fast_modules[lib] = None
            directory = os.path.dirname(getattr(lib, "_name", "") or "")
            path = os.path.join(directory, "_inkling_runtime_fast.so")
            if directory and os.path.exists(path) and \
                    not os.environ.get("INKLING_RUNTIME_NO_FAST"):
                import importlib.machinery
                import importlib.util
                try:
                    loader = importlib.machinery.ExtensionFileLoader(
                        "_inkling_runtime_fast", path)
                    spec = importlib.util.spec_from_file_location(
                        "_inkling_runtime_fast", path, loader=loader)
                    module = importlib.util.module_from_spec(spec)
                    loader.exec_module(module)
                    _fast_modules[lib] = _Fast(module, lib)
                except (ImportError, OSError):
                    pass
        return _fast_modules[lib]


def _raise_if_failed(lib, status, message):
    if status != OK:
        name = lib.inkling_status_name(status).decode()
        raise InklingError(status, message, name)


def _call(lib, function, *args):
    """Calls a manager-less function with an error buffer."""
    error = ctypes.create_string_buffer(_ERROR_CAPACITY)
    status = function(*args, error, _ERROR_CAPACITY)
    _raise_if_failed(lib, status, error.value.decode(errors="replace"))


class TokenError(InklingError, ValueError):
    """A token id or count the C API cannot take (INVALID_ARGUMENT; also a
    ValueError, as before the batch API)."""

    def __init__(self, message):
        super().__init__(INVALID_ARGUMENT, message, "invalid argument")


_INT32 = np.dtype(np.int32)
_INT64 = np.dtype(np.int64)


def _address(array):
    """The address of a C-contiguous numpy array's data, without a copy
    (from_buffer is 3x faster than array.ctypes.data; it needs a writable
    buffer, else the slow way)."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(array))
    except (TypeError, ValueError, BufferError):
        return array.ctypes.data


def _as_numpy(values):
    """numpy arrays as they are; torch CPU tensors shared (.numpy(), no
    copy); anything else through np.asarray (lists, array.array, other
    buffers)."""
    if type(values) is np.ndarray:
        return values
    if type(values).__module__ == "torch":
        if values.device.type != "cpu":
            raise TokenError("token ids on %s: the runtime reads host memory "
                             "(pass a CPU tensor)" % values.device)
        return values.detach().numpy()
    try:
        return np.asarray(values)
    except (OverflowError, ValueError) as error:
        raise TokenError("values do not form an integer array: %s" % error)


def _integers(values, dtype, what):
    """values as a C-contiguous array of `dtype` (read flat), without a copy
    when they already are one; checked to fit."""
    array = _as_numpy(values)
    if array.dtype is not dtype and array.dtype != dtype:
        if array.size == 0:
            return np.zeros(0, dtype)
        if array.dtype.kind not in "iub":
            raise TokenError("%s of dtype %s: expected integers"
                             % (what, array.dtype))
        info = np.iinfo(dtype)
        low, high = int(array.min()), int(array.max())
        if low < info.min or high > info.max:
            bad = low if low < info.min else high
            if dtype is _INT32:
                raise TokenError("token id %d does not fit int32 (the C "
                                 "API's token ids are in [-2^31, 2^31 - 1])"
                                 % bad)
            raise TokenError("%s value %d does not fit int64" % (what, bad))
        array = array.astype(dtype)
    if array.ndim != 1:
        if array.ndim == 0:
            raise TokenError("%s: expected a sequence, got a scalar" % what)
        array = array.reshape(-1)
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    return array


def _tokens(values):
    """Token ids as an int32 array (no copy for int32 numpy arrays and
    torch CPU int32 tensors)."""
    return _integers(values, _INT32, "token ids")


def _int64s(values, what="ids"):
    return _integers(values, _INT64, what)


_from_buffer = ctypes.c_char.from_buffer
_addressof = ctypes.addressof


def _pointer(values, dtype, what):
    """(array, address) of values as `dtype` integers. The fast path, a
    writable C-contiguous non-empty numpy array of that dtype (what an
    engine passes at C speed), costs one buffer lookup; from_buffer refuses
    every other array (read-only, strided, empty), which takes the checked
    path."""
    if type(values) is np.ndarray and values.dtype is dtype:
        try:
            return values, _addressof(_from_buffer(values))
        except (TypeError, ValueError, BufferError):
            pass
    array = _integers(values, dtype, what)
    return array, _address(array)


def _layout_dict(layout):
    result = {name: getattr(layout, name) for name, _ in _Layout._fields_
              if not name.startswith("stream")}
    result["streams"] = {
        stream: (layout.stream_offset[i], layout.stream_width[i])
        for i, stream in enumerate(("k", "v", "attn", "mlp"))}
    return result


def derive_layout(config, lib=None):
    """The derived layout of `config` as a dict (see Layout.h)."""
    lib = lib or load()
    layout = _Layout()
    _call(lib, lib.inkling_layout_derive, ctypes.byref(config),
          ctypes.byref(layout))
    return _layout_dict(layout)


SequenceInfo = namedtuple(
    "SequenceInfo", "state num_computed num_tokens num_scheduled num_blocks")
ManagerStats = namedtuple("ManagerStats", [f for f, _ in _ManagerStats._fields_])
StepInfo = namedtuple("StepInfo", [f for f, _ in _StepInfo._fields_])
Admission = namedtuple("Admission", [f for f, _ in _Admission._fields_])


class Manager(Closing):
    """Block tables of one group of sconv layers (SequenceManager)."""

    def __init__(self, layout_config, num_blocks, lookahead=0,
                 prefix_caching=True, prefix_seed=0, use_eagle=False,
                 lib=None):
        """use_eagle: the EAGLE/MTP hit rule of vLLM (a lookup drops the
        last matched block); see set_use_eagle."""
        self._lib = lib or load()
        config = _ManagerConfig(layout_config, num_blocks, lookahead,
                                1 if prefix_caching else 0, prefix_seed)
        self._lock = threading.RLock()
        self._handle = None
        self._buffers = []
        handle = ctypes.c_void_p()
        _call(self._lib, self._lib.inkling_manager_create,
              ctypes.byref(config), ctypes.byref(handle))
        self._handle = handle
        self._fast = _fast_path(self._lib)
        if use_eagle:
            self.set_use_eagle(True)

    def close(self):
        """Destroys the manager and its step buffers (idempotent; other
        threads' calls finish first)."""
        with self._lock:
            for buffers in self._buffers:
                buffers._destroy()
            self._buffers = []
            if self._handle:
                self._lib.inkling_manager_destroy(self._handle)
                self._handle = None

    @property
    def closed(self):
        return not self._handle

    def _invoke(self, function, *args):
        """Calls function(handle, *args) under the lock; raises on failure
        (with the message of this call: read under the same lock)."""
        with self._lock:
            handle = self._handle
            if not handle:
                self._check_open()
            status = function(handle, *args)
            if status:
                self._check(status)

    def _invoke_fast(self, function, address, *args):
        """The compiled path: function(address, handle, *args); False when
        it declines (an array it cannot take: then the ctypes path runs)."""
        with self._lock:
            handle = self._handle
            if not handle:
                self._check_open()
            status = function(address, handle.value, *args)
            if status:
                if status == _FAST_SLOW_PATH:
                    return False
                self._check(status)
        return True

    def _check_open(self):
        if not self._handle:
            raise InklingError(FAILED_PRECONDITION, "the manager is closed",
                               "failed precondition")

    def _check(self, status):
        if status != OK:
            message = self._lib.inkling_manager_last_error(self._handle)
            _raise_if_failed(self._lib, status,
                             message.decode(errors="replace"))

    # Sequences --------------------------------------------------------------

    def add_sequence(self, tokens, start=0, cache_points=None,
                     extra_keys=None):
        """Adds a prompt; `start` is 0 or a prefix hit. `tokens`: a list, a
        numpy array or a torch CPU tensor (int32 ones pass without a copy),
        or any integer buffer. `cache_points`: sorted positions in [1,
        len(tokens)] whose block boundary prefill snapshots (e.g. the end of
        the system prompt), stored whatever the snapshot cap; `extra_keys`
        (bytes, at most 4096: cache salt, adapter id) seed the hash chain.
        Returns its id."""
        out = _I64()
        fast = self._fast
        if fast and type(tokens) is np.ndarray and tokens.dtype is _INT32:
            points = fast.no_points if cache_points is None else cache_points
            if type(points) is np.ndarray and points.dtype is _INT64 and \
                    self._invoke_fast(fast.module.add_sequence,
                                      fast.add_sequence, tokens, start,
                                      points, bytes(extra_keys or b""),
                                      ctypes.addressof(out)):
                return out.value
        array, address = _pointer(tokens, _INT32, "token ids")
        if cache_points is None and extra_keys is None:
            self._invoke(self._lib.inkling_add_sequence, address, array.size,
                         start, ctypes.byref(out))
            return out.value
        points = _int64s(() if cache_points is None else cache_points,
                         "cache points")
        keys = bytes(extra_keys or b"")
        self._invoke(self._lib.inkling_add_sequence_with_keys,
                     address, array.size, start, _address(points),
                     points.size, keys, len(keys), ctypes.byref(out))
        return out.value

    def set_prefix_policy(self, policy, snapshot_every=8):
        """"window", "snapshots" or "every-block" (steps from now on)."""
        self._invoke(self._lib.inkling_manager_set_prefix_policy,
                     policy.encode(), snapshot_every)

    def set_use_eagle(self, use_eagle):
        """EAGLE/MTP drafting (vLLM's use_eagle): lookups from now on drop
        the last matched block, so the drafter recomputes the block before
        the hit."""
        self._invoke(self._lib.inkling_manager_set_drop_last_matched_block,
                     1 if use_eagle else 0)

    def append_tokens(self, seq, tokens):
        array = _tokens(tokens)
        self._invoke(self._lib.inkling_append_tokens, seq, _address(array),
                     array.size)

    def schedule(self, seq, num_tokens):
        self._invoke(self._lib.inkling_schedule, seq, num_tokens)

    def schedule_ahead(self, seq, num_tokens):
        """Async scheduling: the step's first token (sampled by the running
        step) may be unknown; append it before building the step."""
        self._invoke(self._lib.inkling_schedule_ahead, seq, num_tokens)

    def commit(self, seq, accepted, tokens=()):
        """Accepts `accepted` scheduled tokens after appending `tokens`
        (accepted drafts, then the sampled token)."""
        array = _tokens(tokens)
        self._invoke(self._lib.inkling_commit, seq, accepted,
                     _address(array), array.size)

    # Batches: one call per step. Ids, counts and tokens may be lists or, at
    # C speed, numpy int64 (ids, counts, offsets) and int32 (tokens) arrays,
    # torch CPU tensors or buffers: those are passed without a copy.

    def schedule_batch(self, seqs, num_tokens):
        """Schedules num_tokens[i] for seqs[i]: all or nothing."""
        fast = self._fast
        if fast and type(seqs) is np.ndarray and \
                type(num_tokens) is np.ndarray and seqs.dtype is _INT64 and \
                num_tokens.dtype is _INT64 and \
                self._invoke_fast(fast.module.schedule_batch,
                                  fast.schedule_batch, seqs, num_tokens):
            return
        ids, id_ptr = _pointer(seqs, _INT64, "ids")
        counts, count_ptr = _pointer(num_tokens, _INT64, "token counts")
        if ids.size != counts.size:
            raise TokenError("schedule batch: %d ids but %d token counts"
                             % (ids.size, counts.size))
        self._invoke(self._lib.inkling_schedule_batch, id_ptr, count_ptr,
                     ids.size)

    def commit_batch(self, seqs, accepted, tokens, token_offsets=None):
        """Commits accepted[i] tokens of seqs[i], appending tokens[i] (a
        list of token lists); or, with `token_offsets` (len(seqs) + 1
        entries), the flat `tokens[token_offsets[i]:token_offsets[i+1]]`.
        All or nothing."""
        fast = self._fast
        if fast and token_offsets is not None and \
                type(seqs) is np.ndarray and type(accepted) is np.ndarray and \
                type(token_offsets) is np.ndarray and \
                type(tokens) is np.ndarray and seqs.dtype is _INT64 and \
                accepted.dtype is _INT64 and token_offsets.dtype is _INT64 and \
                tokens.dtype is _INT32 and \
                self._invoke_fast(fast.module.commit_batch, fast.commit_batch,
                                  seqs, accepted, token_offsets, tokens):
            return
        ids, id_ptr = _pointer(seqs, _INT64, "ids")
        counts, count_ptr = _pointer(accepted, _INT64, "accepted counts")
        if token_offsets is None:
            tokens = list(tokens)
            offsets = np.zeros(len(tokens) + 1, _INT64)
            np.cumsum([len(appended) for appended in tokens],
                      out=offsets[1:])
            flat = _tokens([t for appended in tokens for t in appended])
            offset_ptr, flat_ptr = _address(offsets), _address(flat)
        else:
            offsets, offset_ptr = _pointer(token_offsets, _INT64,
                                           "token offsets")
            flat, flat_ptr = _pointer(tokens, _INT32, "token ids")
        if ids.size != counts.size or offsets.size != ids.size + 1:
            raise TokenError("commit batch: %d ids, %d accepted counts and "
                             "%d token offsets (expected ids + 1)"
                             % (ids.size, counts.size, offsets.size))
        # The runtime checks that the ranges are ranges; their end is ours.
        if offsets.item(-1) > flat.size:
            raise TokenError("token offsets end at %d, past the %d tokens"
                             % (offsets.item(-1), flat.size))
        self._invoke(self._lib.inkling_commit_batch, id_ptr, count_ptr,
                     offset_ptr, flat_ptr, ids.size)

    def preempt(self, seq):
        self._invoke(self._lib.inkling_preempt, seq)

    def resume(self, seq, tokens=None, start=0):
        """Resumes a preempted sequence at 0 or a prefix hit. With `tokens`
        (all its known ids) the hash chain is rebuilt; without, a hit must
        be in the hashes the runtime still keeps."""
        if tokens is None:
            self._invoke(self._lib.inkling_resume, seq, start)
            return
        array = _tokens(tokens)
        self._invoke(self._lib.inkling_resume_with_tokens, seq,
                     _address(array), array.size, start)

    def finish(self, seq):
        self._invoke(self._lib.inkling_finish, seq)

    def fork(self, parent):
        out = _I64()
        self._invoke(self._lib.inkling_fork, parent, ctypes.byref(out))
        return out.value

    def longest_cached_prefix(self, tokens, max_length, extra_keys=None):
        array, address = _pointer(tokens, _INT32, "token ids")
        out = _I64()
        if extra_keys is None:
            self._invoke(self._lib.inkling_longest_cached_prefix, address,
                         array.size, max_length, ctypes.byref(out))
        else:
            keys = bytes(extra_keys)
            self._invoke(self._lib.inkling_longest_cached_prefix_with_keys,
                         address, array.size, max_length, keys,
                         len(keys), ctypes.byref(out))
        return out.value

    def longest_cached_prefix_batch(self, tokens, token_offsets,
                                    max_lengths, out=None):
        """A step's lookups in one call: entry i is the prompt
        tokens[token_offsets[i]:token_offsets[i+1]] (flat int32 tokens,
        len(max_lengths) + 1 offsets) capped at max_lengths[i]. Returns
        `out` (an int64 array of >= len(max_lengths) entries, allocated when
        None) with the hits in its first entries."""
        if out is None:
            out = np.empty(max(1, len(max_lengths)), _INT64)
        fast = self._fast
        if fast and type(tokens) is np.ndarray and \
                type(token_offsets) is np.ndarray and \
                type(max_lengths) is np.ndarray and type(out) is np.ndarray \
                and tokens.dtype is _INT32 and token_offsets.dtype is _INT64 \
                and max_lengths.dtype is _INT64 and out.dtype is _INT64 and \
                self._invoke_fast(fast.module.lookup_batch, fast.lookup_batch,
                                  tokens, token_offsets, max_lengths, out):
            return out
        flat, flat_ptr = _pointer(tokens, _INT32, "token ids")
        offsets, offset_ptr = _pointer(token_offsets, _INT64, "token offsets")
        limits, limit_ptr = _pointer(max_lengths, _INT64, "max lengths")
        if offsets.size != limits.size + 1:
            raise TokenError("lookup batch: %d max lengths need %d token "
                             "offsets, got %d" % (limits.size, limits.size + 1,
                                                  offsets.size))
        if offsets.item(-1) > flat.size:
            raise TokenError("token offsets end at %d, past the %d tokens"
                             % (offsets.item(-1), flat.size))
        if out is None:
            out = np.zeros(max(1, limits.size), _INT64)
        if type(out) is not np.ndarray or out.dtype is not _INT64 or \
                out.size < limits.size:
            raise TokenError("out: expected an int64 array of >= %d entries"
                             % limits.size)
        try:
            out_ptr = _addressof(_from_buffer(out))  # writable, contiguous
        except (TypeError, ValueError, BufferError):
            raise TokenError("out: expected a writable contiguous array")
        self._invoke(self._lib.inkling_longest_cached_prefix_batch, flat_ptr,
                     offset_ptr, limit_ptr, limits.size, out_ptr)
        return out

    def admission(self, num_tokens, start=0, watermark_blocks=0):
        """Admission (vLLM's watermark): an Admission(admit, needed_blocks,
        reserved_blocks, free_blocks) for a sequence of num_tokens tokens
        starting at `start` (its expected hit); admit when free - reserved
        - needed >= watermark_blocks."""
        out = _Admission()
        self._invoke(self._lib.inkling_admission, num_tokens, start,
                     watermark_blocks, ctypes.byref(out))
        return Admission(bool(out.admit), out.needed_blocks,
                         out.reserved_blocks, out.free_blocks)

    def sequence_longest_cached_prefix(self, seq, max_length):
        """The largest resume point among the hashes `seq` still keeps."""
        out = _I64()
        self._invoke(self._lib.inkling_sequence_longest_cached_prefix, seq,
                     max_length, ctypes.byref(out))
        return out.value

    def sequence_info(self, seq):
        info = _SequenceInfo()
        self._invoke(self._lib.inkling_sequence_info, seq, ctypes.byref(info))
        return SequenceInfo(SEQUENCE_STATES[info.state], info.num_computed,
                            info.num_tokens, info.num_scheduled,
                            info.num_blocks)

    def stats(self):
        stats = _ManagerStats()
        self._invoke(self._lib.inkling_manager_stats, ctypes.byref(stats))
        return ManagerStats(*(getattr(stats, f) for f in ManagerStats._fields))

    def check_invariants(self):
        self._invoke(self._lib.inkling_manager_check_invariants)

    def step_buffers(self, max_rows, num_cols, max_tokens, max_copies=None):
        """Fixed-shape step buffers owned by Python, updated in place."""
        with self._lock:
            self._check_open()
            buffers = StepBuffers(self, max_rows, num_cols, max_tokens,
                                  max_rows if max_copies is None
                                  else max_copies)
            self._buffers.append(buffers)
            return buffers


# Step buffers start on this boundary: the layers' 16-byte accesses, and a
# cache line so that pinning or uploading them never splits a line.
BUFFER_ALIGNMENT = 64


def aligned_empty(shape, dtype, alignment=BUFFER_ALIGNMENT):
    """An uninitialized C-contiguous numpy array whose data starts on a
    multiple of `alignment` bytes (numpy itself promises only 16)."""
    dtype = np.dtype(dtype)
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) \
        else tuple(int(n) for n in shape)
    count = int(np.prod(shape, dtype=np.int64))
    raw = np.empty(count * dtype.itemsize + alignment, dtype=np.uint8)
    start = -raw.ctypes.data % alignment
    return raw[start:start + count * dtype.itemsize].view(dtype).reshape(shape)


class Step:
    """The metadata of one built step: its counts (`info`) and numpy views
    of the step buffers, with the shapes a kernel reads:

      query_start_loc  int32 [num_rows + 1]
      num_computed     int32 [num_rows]
      block_table      int32 [num_rows, num_cols]
      slot_mapping     int64 [num_padded_tokens]
      block_copies     int32 [num_copies, 2]   (source, destination block)

    They are views, not copies: the next build() on the same StepBuffers
    rewrites them (see StepBuffers)."""

    __slots__ = ("_counts", "_buffers")

    def __init__(self, buffers, counts):
        self._counts = counts  # a StepInfo, or the _StepInfo's 5 values
        self._buffers = buffers

    @property
    def info(self):
        """StepInfo: num_sequences, num_rows, num_tokens,
        num_padded_tokens, num_copies."""
        if type(self._counts) is not StepInfo:
            self._counts = StepInfo(*self._counts)
        return self._counts

    # The views are made when read (a step an engine reads through its own
    # references to the buffers costs nothing here).
    @property
    def query_start_loc(self):
        return self._buffers.query_start_loc[:self.info.num_rows + 1]

    @property
    def num_computed(self):
        return self._buffers.num_computed[:self.info.num_rows]

    @property
    def block_table(self):
        return self._buffers.block_table[:self.info.num_rows]

    @property
    def slot_mapping(self):
        return self._buffers.slot_mapping[:self.info.num_padded_tokens]

    @property
    def token_seq(self):
        return self._buffers.token_seq[:self.info.num_padded_tokens]

    @property
    def block_copies(self):
        return self._buffers.block_copies[:self.info.num_copies]


class StepBuffers:
    """Caller-owned step metadata bound to a manager: numpy arrays that the
    runtime writes in place (zero copy; `torch.from_numpy` shares them too,
    and an engine may pin them).

      query_start_loc  int32 [max_rows + 1]
      num_computed     int32 [max_rows]
      block_table      int32 [max_rows, num_cols]
      slot_mapping     int64 [max_tokens]
      block_copies     int32 [max_copies, 2]

    Validity: numpy owns the memory, so an array (or a view of it, or a
    tensor sharing it) stays valid as long as any of them is referenced,
    even after the manager is closed. Its contents are those of the last
    build() and change at the next build() on these buffers; after close()
    nothing writes them. The shapes never change (graph capture). Read
    them; do not write them (the runtime rewrites only what changes).
    """

    def __init__(self, manager, max_rows, num_cols, max_tokens, max_copies):
        self._manager = manager
        self._handle = None
        self.num_cols = num_cols
        sizes = {"max_rows": max_rows, "num_cols": num_cols,
                 "max_tokens": max_tokens, "max_copies": max_copies}
        for name, value in sizes.items():
            if not isinstance(value, (int, np.integer)) or value < 0 or \
                    value > 1 << 40:
                raise InklingError(INVALID_ARGUMENT, "%s = %r: must be an "
                                   "integer in [0, 2^40]" % (name, value),
                                   "invalid argument")
        # At least one element each: the runtime wants non-null pointers.
        self._storage = {
            "query_start_loc": aligned_empty(max_rows + 1, np.int32),
            "num_computed": aligned_empty(max(1, max_rows), np.int32),
            "block_table": aligned_empty(max(1, max_rows * num_cols),
                                         np.int32),
            "slot_mapping": aligned_empty(max(1, max_tokens), np.int64),
            "block_copies": aligned_empty(max(2, 2 * max_copies), np.int32),
            "token_seq": aligned_empty(max(1, max_tokens), np.int32)}
        for array in self._storage.values():
            array.fill(0)
        self.query_start_loc = self._storage["query_start_loc"]
        self.num_computed = self._storage["num_computed"][:max_rows]
        self.block_table = self._storage["block_table"][
            :max_rows * num_cols].reshape(max_rows, num_cols)
        self.slot_mapping = self._storage["slot_mapping"][:max_tokens]
        self.block_copies = self._storage["block_copies"][
            :2 * max_copies].reshape(max_copies, 2)
        # The sequence of each token (sconv.step's token_seq).
        self.token_seq = self._storage["token_seq"][:max_tokens]

        def pointer(name, ctype):
            return self._storage[name].ctypes.data_as(_P(ctype))

        spec = _StepBufferSpec(
            pointer("query_start_loc", _I32), pointer("num_computed", _I32),
            pointer("block_table", _I32), pointer("slot_mapping", _I64),
            pointer("block_copies", _I32), max_rows, num_cols, max_tokens,
            max_copies, pointer("token_seq", _I32))
        self._info = _StepInfo()  # build()'s output, read under the lock
        self._info_ref = ctypes.byref(self._info)
        self._info_addr = ctypes.addressof(self._info)
        handle = ctypes.c_void_p()
        manager._invoke(manager._lib.inkling_step_buffers_create,
                        ctypes.byref(spec), ctypes.byref(handle))
        self._handle = handle

    def _destroy(self):
        if self._handle:
            self._manager._lib.inkling_step_buffers_destroy(self._handle)
            self._handle = None

    def data_pointers(self):
        """The addresses the runtime writes, by buffer name."""
        return {name: array.ctypes.data
                for name, array in self._storage.items()}

    def build(self, sequences, num_rows=0, num_padded_tokens=0):
        """Writes the step of the scheduled `sequences` (row b =
        sequences[b]; a list, or an int64 array passed without a copy) and
        returns a Step."""
        manager = self._manager
        info = self._info
        fast = manager._fast
        with manager._lock:
            if fast and type(sequences) is np.ndarray and \
                    sequences.dtype is _INT64 and self._handle and \
                    manager._invoke_fast(fast.module.build_step,
                                         fast.build_step, self._handle.value,
                                         sequences, num_rows,
                                         num_padded_tokens, self._info_addr):
                return Step(self, (
                    info.num_sequences, info.num_rows, info.num_tokens,
                    info.num_padded_tokens, info.num_copies))
        ids, address = _pointer(sequences, _INT64, "ids")
        with manager._lock:
            if not self._handle:
                manager._check_open()
                raise InklingError(FAILED_PRECONDITION,
                                   "the step buffers are destroyed",
                                   "failed precondition")
            manager._invoke(manager._lib.inkling_build_step, self._handle,
                            address, ids.size, num_rows, num_padded_tokens,
                            self._info_ref)
            return Step(self, (
                info.num_sequences, info.num_rows, info.num_tokens,
                info.num_padded_tokens, info.num_copies))


# Page-size unification and tensor parallelism ---------------------------------

def sconv_cache_spec(name, layout_config, lib=None):
    lib = lib or load()
    spec = CacheSpec()
    encoded = name.encode()
    _call(lib, lib.inkling_cache_spec_sconv, ctypes.byref(layout_config),
          encoded, ctypes.byref(spec))
    spec.name = encoded
    return spec


def attention_cache_spec(name, block_size, num_kv_heads, head_size,
                         dtype_bytes=2, reads_through_block_stride=False,
                         tensors_per_page=2, lib=None):
    lib = lib or load()
    spec = CacheSpec()
    encoded = name.encode()
    _call(lib, lib.inkling_cache_spec_attention, encoded, block_size,
          num_kv_heads, head_size, dtype_bytes,
          1 if reads_through_block_stride else 0, tensors_per_page,
          ctypes.byref(spec))
    spec.name = encoded
    return spec


def unify_page_sizes(specs, lib=None):
    """Returns (page_bytes, [dict per spec])."""
    lib = lib or load()
    specs = list(specs)
    array = (CacheSpec * max(1, len(specs)))(*specs)
    out = (_UnifiedSpec * max(1, len(specs)))()
    page = _I64()
    _call(lib, lib.inkling_unify_page_sizes, array, len(specs), out,
          ctypes.byref(page))
    return page.value, [
        {"name": specs[i].name.decode(), "block_size": out[i].block_size,
         "page_bytes": out[i].page_bytes,
         "block_stride_bytes": out[i].block_stride_bytes,
         "adjustment": PAGE_ADJUSTMENTS[out[i].adjustment],
         "scale": out[i].scale} for i in range(len(specs))]


def rank_layouts(layout_config, lib=None):
    """The layouts of every rank of layout_config.tp, as _RankLayout."""
    lib = lib or load()
    ranks = (_RankLayout * max(1, layout_config.tp))()
    _call(lib, lib.inkling_rank_layouts, ctypes.byref(layout_config), ranks,
          layout_config.tp)
    return list(ranks)[:layout_config.tp]


def check_rank_tiling(layout_config, ranks, lib=None):
    """Raises InklingError unless `ranks` tile the unsharded layout."""
    lib = lib or load()
    ranks = list(ranks)
    array = (_RankLayout * max(1, len(ranks)))(*ranks)
    _call(lib, lib.inkling_check_rank_tiling, ctypes.byref(layout_config),
          array, len(ranks))


# ---- Cache plan (CachePlan.h): a model's layers by name, blocks from a byte
# budget, per-layer views of one allocation per plan tensor. Self-contained
# (its own signatures, bound on first use) so that it can move as a unit.

__all__ += ["CacheRegistry", "CachePlan", "LayerView"]

CACHE_LAYER_KINDS = ("sconv", "attention")
CACHE_LAYOUTS = ("per-layer", "cross-layer")


class _AttentionLayer(ctypes.Structure):
    _fields_ = [("block_size", _I64), ("num_kv_heads", _I64),
                ("head_size", _I64), ("dtype_bytes", _I64),
                ("reads_through_block_stride", _I32),
                ("tensors_per_page", _I64)]


class _CachePlanInfo(ctypes.Structure):
    _fields_ = [("layout", _I32), ("budget_bytes", _I64),
                ("page_bytes", _I64), ("bytes_per_block", _I64),
                ("num_blocks", _I64), ("num_tensors", _I64),
                ("num_layers", _I64)]


class _LayerView(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("kind", _I32), ("tensor", _I64),
                ("byte_offset", _I64), ("element_bytes", _I64),
                ("block_size", _I64), ("page_bytes", _I64),
                ("block_stride_bytes", _I64), ("adjustment", _I32),
                ("scale", _I64), ("rank", _I32), ("shape", _I64 * 5),
                ("strides", _I64 * 5)]


_VOID = ctypes.c_void_p
_CACHE_PLAN_SIGNATURES = {
    "inkling_cache_registry_create": (_STATUS, (_P(_VOID),)),
    "inkling_cache_registry_destroy": (None, (_VOID,)),
    "inkling_cache_registry_last_error": (ctypes.c_char_p, (_VOID,)),
    "inkling_cache_registry_add_sconv": (
        _STATUS, (_VOID, ctypes.c_char_p, _P(LayoutConfig), _I64)),
    "inkling_cache_registry_add_attention": (
        _STATUS, (_VOID, ctypes.c_char_p, _P(_AttentionLayer))),
    "inkling_cache_registry_plan": (_STATUS, (_VOID, _I64, _I32, _P(_VOID))),
    "inkling_cache_plan_destroy": (None, (_VOID,)),
    "inkling_cache_plan_info": (_STATUS, (_VOID, _P(_CachePlanInfo))),
    "inkling_cache_plan_tensor_bytes": (_STATUS, (_VOID, _I64, _P(_I64))),
    "inkling_cache_plan_layer": (_STATUS, (_VOID, _I64, _P(_LayerView))),
}


def _bind_cache_plan(lib):
    if not getattr(lib, "_inkling_cache_plan_bound", False):
        for name, (restype, argtypes) in _CACHE_PLAN_SIGNATURES.items():
            function = getattr(lib, name)
            function.restype = restype
            function.argtypes = list(argtypes)
        lib._inkling_cache_plan_bound = True
    return lib


LayerView = namedtuple(
    "LayerView", "name kind tensor byte_offset element_bytes block_size "
    "page_bytes block_stride_bytes adjustment scale shape strides")
LayerView.__doc__ = """One layer's view of its plan tensor: shape and strides
in elements (strides[0] the block stride), byte_offset of its block 0."""

# Raw element storage by size (bf16 is uint16 bits, as in the .npy files).
_STORAGE_DTYPES = {1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"}


class CachePlan:
    """A planned cache (plain data): page_bytes (unified), num_blocks (block
    0 the null block), tensor_bytes and shared_by per tensor, and `layers`
    (LayerView, in registration order)."""

    def __init__(self, info, tensor_bytes, layers):
        self.layout = CACHE_LAYOUTS[info.layout]
        self.budget_bytes = info.budget_bytes
        self.page_bytes = info.page_bytes
        self.bytes_per_block = info.bytes_per_block
        self.num_blocks = info.num_blocks
        self.tensor_bytes = list(tensor_bytes)
        self.layers = list(layers)
        self.shared_by = [[v.name for v in self.layers if v.tensor == t]
                          for t in range(len(self.tensor_bytes))]

    def layer(self, name):
        for view in self.layers:
            if view.name == name:
                return view
        raise KeyError(name)

    def allocate_numpy(self):
        """One zeroed uint8 numpy array per plan tensor."""
        import numpy as np
        return [np.zeros(n, dtype=np.uint8) for n in self.tensor_bytes]

    def numpy_views(self, buffers=None):
        """{layer name: numpy view} into `buffers` (one uint8 array per plan
        tensor, allocate_numpy() when None): zero-copy, raw element storage
        (uint16 for bf16). Checks every view lies inside its buffer."""
        import numpy as np
        from numpy.lib.stride_tricks import as_strided
        buffers = self.allocate_numpy() if buffers is None else buffers
        if len(buffers) != len(self.tensor_bytes):
            raise ValueError("the plan has %d tensors, got %d buffers"
                             % (len(self.tensor_bytes), len(buffers)))
        for t, (buffer, size) in enumerate(zip(buffers, self.tensor_bytes)):
            if buffer.dtype != np.uint8 or buffer.ndim != 1 or \
                    buffer.nbytes < size:
                raise ValueError("buffer %d: expected a 1-D uint8 array of "
                                 ">= %d bytes" % (t, size))
        views = {}
        for v in self.layers:
            dtype = np.dtype(_STORAGE_DTYPES[v.element_bytes])
            end = v.byte_offset + v.element_bytes * (
                1 + sum((d - 1) * s for d, s in zip(v.shape, v.strides)))
            if end > self.tensor_bytes[v.tensor]:
                raise ValueError("layer '%s' ends at byte %d, beyond its "
                                 "tensor of %d" % (v.name, end,
                                                   self.tensor_bytes[v.tensor]))
            base = buffers[v.tensor][v.byte_offset:end].view(dtype)
            views[v.name] = as_strided(
                base, shape=v.shape,
                strides=[s * dtype.itemsize for s in v.strides])
        return views

    def torch_views(self, tensors):
        """{layer name: torch view} into `tensors` (one 1-D torch.uint8 tensor
        per plan tensor, on any device). Needs torch."""
        import torch
        dtypes = {1: torch.uint8, 2: torch.int16, 4: torch.int32,
                  8: torch.int64}
        views = {}
        for v in self.layers:
            size = self.tensor_bytes[v.tensor]
            if tensors[v.tensor].numel() < size:
                raise ValueError("tensor %d: expected >= %d bytes"
                                 % (v.tensor, size))
            base = tensors[v.tensor][v.byte_offset:size].view(
                dtypes[v.element_bytes])
            views[v.name] = torch.as_strided(base, v.shape, v.strides)
        return views


class CacheRegistry(Closing):
    """A model's cache layers by unique name, then its plan. A successful
    plan freezes it; failed calls raise InklingError and change nothing."""

    def __init__(self, lib=None):
        self._lib = _bind_cache_plan(lib or load())
        self._handle = _VOID()
        status = self._lib.inkling_cache_registry_create(
            ctypes.byref(self._handle))
        _raise_if_failed(self._lib, status, "cannot create a cache registry")

    def close(self):
        if self._handle:
            self._lib.inkling_cache_registry_destroy(self._handle)
            self._handle = _VOID()

    def _check(self, status):
        if status != OK:
            message = self._lib.inkling_cache_registry_last_error(
                self._handle)
            _raise_if_failed(self._lib, status,
                             message.decode(errors="replace"))

    def add_sconv(self, name, layout_config, page_bytes=0):
        """An sconv layer of `layout_config`; page_bytes: its bind's padded
        page, if the IR was compiled for one (0: the layout's page)."""
        self._check(self._lib.inkling_cache_registry_add_sconv(
            self._handle, name.encode(), ctypes.byref(layout_config),
            page_bytes))

    def add_attention(self, name, block_size, num_kv_heads, head_size,
                      dtype_bytes=2, reads_through_block_stride=False,
                      tensors_per_page=2):
        spec = _AttentionLayer(block_size, num_kv_heads, head_size,
                               dtype_bytes, int(reads_through_block_stride),
                               tensors_per_page)
        self._check(self._lib.inkling_cache_registry_add_attention(
            self._handle, name.encode(), ctypes.byref(spec)))

    def plan(self, budget_bytes, cross_layer=False):
        """The CachePlan of `budget_bytes` bytes."""
        lib = self._lib
        handle = _VOID()
        self._check(lib.inkling_cache_registry_plan(
            self._handle, budget_bytes, int(bool(cross_layer)),
            ctypes.byref(handle)))
        try:
            info = _CachePlanInfo()
            _raise_if_failed(lib, lib.inkling_cache_plan_info(
                handle, ctypes.byref(info)), "plan info")
            sizes = []
            for t in range(info.num_tensors):
                size = _I64()
                _raise_if_failed(lib, lib.inkling_cache_plan_tensor_bytes(
                    handle, t, ctypes.byref(size)), "plan tensor %d" % t)
                sizes.append(size.value)
            layers = []
            for i in range(info.num_layers):
                v = _LayerView()
                _raise_if_failed(lib, lib.inkling_cache_plan_layer(
                    handle, i, ctypes.byref(v)), "plan layer %d" % i)
                layers.append(LayerView(
                    v.name.decode(), CACHE_LAYER_KINDS[v.kind], v.tensor,
                    v.byte_offset, v.element_bytes, v.block_size,
                    v.page_bytes, v.block_stride_bytes,
                    PAGE_ADJUSTMENTS[v.adjustment], v.scale,
                    tuple(v.shape[:v.rank]), tuple(v.strides[:v.rank])))
            return CachePlan(info, sizes, layers)
        finally:
            lib.inkling_cache_plan_destroy(handle)
