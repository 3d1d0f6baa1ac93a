"""ctypes bindings for the Inkling sconv runtime (libinkling_runtime.so).

Standard library only. The shared library is found through, in order: the
`path` argument of `load`, the INKLING_RUNTIME_LIB environment variable, the
dynamic loader's search path ("libinkling_runtime.so").

A serving engine drives one step like this (see test_inkling_runtime.py):

    manager = Manager(LayoutConfig(8, 128, 4096, kernel=4), num_blocks=4096)
    buffers = manager.step_buffers(max_rows=256, num_cols=8192,
                                   max_tokens=8192)
    seq = manager.add_sequence(prompt_ids)          # or at a prefix hit
    manager.schedule_batch([seq], [len(prompt_ids)])  # every running sequence
    step = buffers.build([seq], num_rows=8, num_padded_tokens=512)
    # copy step.block_copies pages, upload the buffers, run the layers
    manager.commit_batch([seq], [len(prompt_ids)], [[sampled_token]])

Errors raise InklingError with the runtime's status code and message; the
runtime's state is unchanged by a failed call.
"""

import ctypes
import os
from collections import namedtuple

__all__ = [
    "OK", "INVALID_ARGUMENT", "OUT_OF_BLOCKS", "NOT_FOUND",
    "FAILED_PRECONDITION", "OUT_OF_RANGE", "UNAVAILABLE", "INTERNAL",
    "InklingError", "LayoutConfig", "Manager", "StepBuffers", "CacheSpec",
    "load", "derive_layout", "sconv_cache_spec", "attention_cache_spec",
    "unify_page_sizes", "rank_layouts", "check_rank_tiling",
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
_ERROR_CAPACITY = 1024


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
                ("element_type", ctypes.c_char_p)]

    def __init__(self, kv_heads, head_dim, hidden, kernel, tp=1,
                 element_type="bf16"):
        super().__init__(kv_heads, head_dim, hidden, kernel, tp,
                         element_type.encode())


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
    "inkling_add_sequence": (
        _STATUS, (ctypes.c_void_p, _P(_I32), _I64, _I64, _P(_I64))),
    "inkling_append_tokens": (
        _STATUS, (ctypes.c_void_p, _I64, _P(_I32), _I64)),
    "inkling_schedule": (_STATUS, (ctypes.c_void_p, _I64, _I64)),
    "inkling_schedule_ahead": (_STATUS, (ctypes.c_void_p, _I64, _I64)),
    "inkling_commit": (
        _STATUS, (ctypes.c_void_p, _I64, _I64, _P(_I32), _I64)),
    "inkling_schedule_batch": (
        _STATUS, (ctypes.c_void_p, _P(_I64), _P(_I64), _I64)),
    "inkling_commit_batch": (
        _STATUS, (ctypes.c_void_p, _P(_I64), _P(_I64), _P(_I64), _P(_I32),
                  _I64)),
    "inkling_preempt": (_STATUS, (ctypes.c_void_p, _I64)),
    "inkling_resume": (_STATUS, (ctypes.c_void_p, _I64, _I64)),
    "inkling_resume_with_tokens": (
        _STATUS, (ctypes.c_void_p, _I64, _P(_I32), _I64, _I64)),
    "inkling_sequence_longest_cached_prefix": (
        _STATUS, (ctypes.c_void_p, _I64, _I64, _P(_I64))),
    "inkling_finish": (_STATUS, (ctypes.c_void_p, _I64)),
    "inkling_fork": (_STATUS, (ctypes.c_void_p, _I64, _P(_I64))),
    "inkling_longest_cached_prefix": (
        _STATUS, (ctypes.c_void_p, _P(_I32), _I64, _I64, _P(_I64))),
    "inkling_sequence_info": (
        _STATUS, (ctypes.c_void_p, _I64, _P(_SequenceInfo))),
    "inkling_step_buffers_create": (
        _STATUS, (ctypes.c_void_p, _P(_StepBufferSpec),
                  _P(ctypes.c_void_p))),
    "inkling_step_buffers_destroy": (None, (ctypes.c_void_p,)),
    "inkling_build_step": (
        _STATUS, (ctypes.c_void_p, ctypes.c_void_p, _P(_I64), _I64, _I64,
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


def load(path=None):
    """Loads (once per path) and returns the runtime's shared library."""
    path = path or os.environ.get("INKLING_RUNTIME_LIB") or \
        "libinkling_runtime.so"
    if path not in _loaded:
        lib = ctypes.CDLL(path)
        for name, (restype, argtypes) in _SIGNATURES.items():
            function = getattr(lib, name)
            function.restype = restype
            function.argtypes = list(argtypes)
        _loaded[path] = lib
    return _loaded[path]


def _raise_if_failed(lib, status, message):
    if status != OK:
        name = lib.inkling_status_name(status).decode()
        raise InklingError(status, message, name)


def _call(lib, function, *args):
    """Calls a manager-less function with an error buffer."""
    error = ctypes.create_string_buffer(_ERROR_CAPACITY)
    status = function(*args, error, _ERROR_CAPACITY)
    _raise_if_failed(lib, status, error.value.decode(errors="replace"))


def _int32_array(values):
    values = list(values)
    return (_I32 * max(1, len(values)))(*values), len(values)


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


class Manager:
    """Block tables of one group of sconv layers (SequenceManager)."""

    def __init__(self, layout_config, num_blocks, lookahead=0,
                 prefix_caching=True, prefix_seed=0, lib=None):
        self._lib = lib or load()
        config = _ManagerConfig(layout_config, num_blocks, lookahead,
                                1 if prefix_caching else 0, prefix_seed)
        handle = ctypes.c_void_p()
        _call(self._lib, self._lib.inkling_manager_create,
              ctypes.byref(config), ctypes.byref(handle))
        self._handle = handle
        self._buffers = []

    def close(self):
        """Destroys the manager and its step buffers."""
        for buffers in self._buffers:
            buffers._destroy()
        self._buffers = []
        if self._handle:
            self._lib.inkling_manager_destroy(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    def _check(self, status):
        if status != OK:
            message = self._lib.inkling_manager_last_error(self._handle)
            _raise_if_failed(self._lib, status,
                             message.decode(errors="replace"))

    # Sequences --------------------------------------------------------------

    def add_sequence(self, tokens, start=0):
        """Adds a prompt; `start` is 0 or a prefix hit. Returns its id."""
        array, count = _int32_array(tokens)
        out = _I64()
        self._check(self._lib.inkling_add_sequence(
            self._handle, array, count, start, ctypes.byref(out)))
        return out.value

    def append_tokens(self, seq, tokens):
        array, count = _int32_array(tokens)
        self._check(self._lib.inkling_append_tokens(
            self._handle, seq, array, count))

    def schedule(self, seq, num_tokens):
        self._check(self._lib.inkling_schedule(self._handle, seq, num_tokens))

    def schedule_ahead(self, seq, num_tokens):
        """Async scheduling: the step's first token (sampled by the running
        step) may be unknown; append it before building the step."""
        self._check(self._lib.inkling_schedule_ahead(
            self._handle, seq, num_tokens))

    def commit(self, seq, accepted, tokens=()):
        """Accepts `accepted` scheduled tokens after appending `tokens`
        (accepted drafts, then the sampled token)."""
        array, count = _int32_array(tokens)
        self._check(self._lib.inkling_commit(
            self._handle, seq, accepted, array, count))

    def schedule_batch(self, seqs, num_tokens):
        """Schedules num_tokens[i] for seqs[i]: all or nothing."""
        seqs, num_tokens = list(seqs), list(num_tokens)
        count = len(seqs)
        self._check(self._lib.inkling_schedule_batch(
            self._handle, (_I64 * max(1, count))(*seqs),
            (_I64 * max(1, count))(*num_tokens), count))

    def commit_batch(self, seqs, accepted, tokens):
        """Commits accepted[i] tokens of seqs[i], appending the list
        tokens[i]: all or nothing."""
        seqs, accepted, tokens = list(seqs), list(accepted), list(tokens)
        count = len(seqs)
        offsets = [0]
        for appended in tokens:
            offsets.append(offsets[-1] + len(appended))
        flat, _ = _int32_array(t for appended in tokens for t in appended)
        self._check(self._lib.inkling_commit_batch(
            self._handle, (_I64 * max(1, count))(*seqs),
            (_I64 * max(1, count))(*accepted), (_I64 * (count + 1))(*offsets),
            flat, count))

    def preempt(self, seq):
        self._check(self._lib.inkling_preempt(self._handle, seq))

    def resume(self, seq, tokens=None, start=0):
        """Resumes a preempted sequence at 0 or a prefix hit. With `tokens`
        (all its known ids) the hash chain is rebuilt; without, a hit must
        be in the hashes the runtime still keeps."""
        if tokens is None:
            self._check(self._lib.inkling_resume(self._handle, seq, start))
            return
        array, count = _int32_array(tokens)
        self._check(self._lib.inkling_resume_with_tokens(
            self._handle, seq, array, count, start))

    def finish(self, seq):
        self._check(self._lib.inkling_finish(self._handle, seq))

    def fork(self, parent):
        out = _I64()
        self._check(self._lib.inkling_fork(self._handle, parent,
                                           ctypes.byref(out)))
        return out.value

    def longest_cached_prefix(self, tokens, max_length):
        array, count = _int32_array(tokens)
        out = _I64()
        self._check(self._lib.inkling_longest_cached_prefix(
            self._handle, array, count, max_length, ctypes.byref(out)))
        return out.value

    def sequence_longest_cached_prefix(self, seq, max_length):
        """The largest resume point among the hashes `seq` still keeps."""
        out = _I64()
        self._check(self._lib.inkling_sequence_longest_cached_prefix(
            self._handle, seq, max_length, ctypes.byref(out)))
        return out.value

    def sequence_info(self, seq):
        info = _SequenceInfo()
        self._check(self._lib.inkling_sequence_info(
            self._handle, seq, ctypes.byref(info)))
        return SequenceInfo(SEQUENCE_STATES[info.state], info.num_computed,
                            info.num_tokens, info.num_scheduled,
                            info.num_blocks)

    def stats(self):
        stats = _ManagerStats()
        self._check(self._lib.inkling_manager_stats(self._handle,
                                                    ctypes.byref(stats)))
        return ManagerStats(*(getattr(stats, f) for f in ManagerStats._fields))

    def check_invariants(self):
        self._check(self._lib.inkling_manager_check_invariants(self._handle))

    def step_buffers(self, max_rows, num_cols, max_tokens, max_copies=None):
        """Fixed-shape step buffers owned by Python, updated in place."""
        buffers = StepBuffers(self, max_rows, num_cols, max_tokens,
                              max_rows if max_copies is None else max_copies)
        self._buffers.append(buffers)
        return buffers


class Step:
    """The metadata of one built step: counts and list views."""

    def __init__(self, buffers, info):
        self.info = info
        rows, cols = info.num_rows, buffers.num_cols
        self.query_start_loc = list(buffers.query_start_loc[:rows + 1])
        self.num_computed = list(buffers.num_computed[:rows])
        self.block_table = [list(buffers.block_table[r * cols:(r + 1) * cols])
                            for r in range(rows)]
        self.slot_mapping = list(buffers.slot_mapping[:info.num_padded_tokens])
        self.token_seq = list(buffers.token_seq[:info.num_padded_tokens])
        self.block_copies = [(buffers.block_copies[2 * i],
                              buffers.block_copies[2 * i + 1])
                             for i in range(info.num_copies)]


class StepBuffers:
    """Caller-owned step metadata (ctypes arrays) bound to a manager.

    The arrays keep their shapes for the manager's lifetime (graph capture);
    the runtime rewrites only what changes between steps. Read them freely;
    do not write them.
    """

    def __init__(self, manager, max_rows, num_cols, max_tokens, max_copies):
        self._manager = manager
        self.num_cols = num_cols
        self.query_start_loc = (_I32 * (max_rows + 1))()
        self.num_computed = (_I32 * max(1, max_rows))()
        self.block_table = (_I32 * max(1, max_rows * num_cols))()
        self.slot_mapping = (_I64 * max(1, max_tokens))()
        self.block_copies = (_I32 * max(2, 2 * max_copies))()
        self.token_seq = (_I32 * max(1, max_tokens))()
        spec = _StepBufferSpec(
            self.query_start_loc, self.num_computed, self.block_table,
            self.slot_mapping, self.block_copies, max_rows, num_cols,
            max_tokens, max_copies, self.token_seq)
        handle = ctypes.c_void_p()
        manager._check(manager._lib.inkling_step_buffers_create(
            manager._handle, ctypes.byref(spec), ctypes.byref(handle)))
        self._handle = handle

    def _destroy(self):
        if self._handle:
            self._manager._lib.inkling_step_buffers_destroy(self._handle)
            self._handle = None

    def build(self, sequences, num_rows=0, num_padded_tokens=0):
        """Writes the step of the scheduled `sequences` (row b =
        sequences[b]) and returns a Step."""
        sequences = list(sequences)
        ids = (_I64 * max(1, len(sequences)))(*sequences)
        info = _StepInfo()
        manager = self._manager
        manager._check(manager._lib.inkling_build_step(
            manager._handle, self._handle, ids, len(sequences), num_rows,
            num_padded_tokens, ctypes.byref(info)))
        return Step(self, StepInfo(*(getattr(info, f)
                                     for f in StepInfo._fields)))


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
