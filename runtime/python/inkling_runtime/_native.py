"""The native side of inkling_runtime: status codes and errors, the C
structs and signatures of inkling_runtime.h, loading the library and its
compiled fast path, and the checks every Python value passes before ctypes
sees it (ctypes wraps an int64 modulo 2^64 without a word)."""

import ctypes
import operator
import os
import threading

import numpy as np

# Status codes: the numbers of inkling_status_t (the ABI); their names are
# the C table's (inkling_status_name), read when the library loads.
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


# Code -> name, from the C table of the first library loaded.
_status_names = {}


def status_name(code):
    """The runtime's name of a status code (inkling_status_name)."""
    if not _status_names:
        try:
            load()
        except OSError:  # no library: the number is the name
            pass
    return _status_names.get(code, str(code))


class InklingError(Exception):
    """A failed runtime call: `code` (a status code) and `message`."""

    def __init__(self, code, message, name=""):
        super().__init__("%s: %s" % (name or status_name(code), message))
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
        sizes = [_int64(value, name) for name, value in (
            ("kv_heads", kv_heads), ("head_dim", head_dim),
            ("hidden", hidden), ("kernel", kernel), ("tp", tp))]
        super().__init__(*sizes, _text(element_type, "element_type"),
                         _int64(block_size, "block_size"))


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
    "inkling_manager_set_same_step_hits": (
        _STATUS, (ctypes.c_void_p, _I32)),
    "inkling_take_invalidated_readers": (
        _STATUS, (ctypes.c_void_p, _V, _I64, _P(_I64))),
    "inkling_step_buffers_ordered_inserts_required": (
        _I32, (ctypes.c_void_p,)),
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
    """The library next to the installed package, if this is one: as
    `inkling.runtime` this package has a parent with _paths.py."""
    if __package__ and "." in __package__:
        from .. import _paths  # generated by CMake (python/CMakeLists.txt)
        return _paths.library("libinkling_runtime.so")
    return "libinkling_runtime.so"


def load(path=None):
    """Loads (once per path) and returns the runtime's shared library."""
    path = path or os.environ.get("INKLING_RUNTIME_LIB") or \
        _default_library()
    lib = load_cdll(path, _SIGNATURES)
    if not _status_names:
        for code in range(OK, INTERNAL + 1):
            _status_names[code] = lib.inkling_status_name(code).decode()
    return lib


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
    """A token id, count or other value the C API cannot take: out of its
    C type's range or not an integer (INVALID_ARGUMENT; also a ValueError,
    as before the batch API)."""

    def __init__(self, message):
        super().__init__(INVALID_ARGUMENT, message)


# The C types' ranges, as messages name them.
_RANGES = {"int64": (-(1 << 63), (1 << 63) - 1, "[-2^63, 2^63 - 1]"),
           "uint64": (0, (1 << 64) - 1, "[0, 2^64 - 1]"),
           "int32": (-(1 << 31), (1 << 31) - 1, "[-2^31, 2^31 - 1]")}


def _int64(value, what, ctype="int64"):
    """`value` as a Python int in the range of the C type `ctype` (which
    ctypes would otherwise wrap modulo 2^64 without a word); TokenError
    naming `what` for anything else (floats, strings, None, out of range).
    The runtime checks the value's own bounds and names them."""
    try:
        number = operator.index(value)
    except TypeError:
        raise TokenError("%s = %r: expected an integer" % (what, value)) \
            from None
    low, high, text = _RANGES[ctype]
    if number < low or number > high:
        raise TokenError("%s (%d) does not fit %s, the C API's type (%s)"
                         % (what, number, ctype, text))
    return number


def _uint64(value, what):
    return _int64(value, what, "uint64")


def _text(value, what):
    """A str as the C API's UTF-8 bytes; TokenError for anything else."""
    if not isinstance(value, str):
        raise TokenError("%s = %r: expected a str" % (what, value))
    return value.encode()


def _key_bytes(value, what="extra_keys"):
    """bytes-like (bytes, bytearray, memoryview) as bytes; a str or any
    other object is a TokenError (its encoding is the caller's choice)."""
    if value is None:
        return b""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TokenError("%s = %r: expected bytes (a str must be encoded "
                     "first)" % (what, value))


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
