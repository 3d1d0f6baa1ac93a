"""Compiled sconv layers, callable on arrays (libinkling_layer.so).

    layer = inkling.Layer(ir_text)            # or Layer.from_file(path)
    layer(cache=cache, query_start_loc=step.query_start_loc, ...,
          input_k=x_k, weights_k=w_k, output_k=y_k, ...)

A layer with epilogues (docs/Design.md section 8) also takes the attention
layer's KV caches (kv_cache_k, kv_cache_v: [num_blocks, block_size, H, w]),
its slot mapping (attn_slot_mapping), the norm weights (norm_weight_k,
norm_weight_attn, ...), the residual stream (residual_attn) and writes the
sums and normed rows (sum_attn, normed_attn, ...).

The layer function's IR compiles once (the CPU JIT, or the GPU kernel
bundle with device="cuda"); each call passes one array per argument of the
function, by position or by name (`layer.args`). Accepted: numpy arrays and
torch CPU tensors on a CPU layer; torch CUDA tensors and objects with
`__cuda_array_interface__` (e.g. `Cuda.empty`) on a GPU layer. bf16 is
numpy uint16 (the bit patterns) or torch.bfloat16; the cache is any
contiguous array, taken as its bytes. Nothing is copied: a wrong dtype,
device, shape, stride, alignment or size raises InklingError (INVALID_ARGUMENT)
naming the argument. See include/inkling-c/Layer.h for the checks.

Threads: a Layer may be shared; calls are serialized.
"""

import ctypes
import threading
import weakref
from collections import namedtuple

import numpy as np

from . import _paths, runtime
from .runtime import (FAILED_PRECONDITION, INVALID_ARGUMENT, OK, Closing,
                      InklingError, load_cdll)

__all__ = ["Layer", "Cuda", "DeviceArray", "ArgSpec", "load_library"]

_I32 = ctypes.c_int32
_I64 = ctypes.c_int64
_P = ctypes.POINTER
_ERROR_CAPACITY = 2048
# The C API's `threads` (Layer.h): 0 (every core) to this.
MAX_THREADS = 1024

# The numpy dtype of each element type (bf16: its bit patterns).
NUMPY_DTYPES = {"bf16": np.dtype(np.uint16), "i8": np.dtype(np.int8),
                "i32": np.dtype(np.int32), "i64": np.dtype(np.int64)}
_TORCH_DTYPES = {"bf16": "bfloat16", "i8": "int8", "i32": "int32",
                 "i64": "int64"}
# __cuda_array_interface__ typestr of each element type.
_TYPESTRS = {"bf16": ("<u2", "<V2"), "i8": ("|i1", "<i1"),
             "i32": ("<i4",), "i64": ("<i8",)}


# The roles of the arguments a layer writes (LayerAbi.h, ArgInfo::written):
# the cache, the conv outputs, the status and the epilogues' KV caches, sums
# and normed rows.
_WRITTEN_ROLES = ("cache", "output", "status", "kv_cache", "sum", "normed")


class _Options(ctypes.Structure):
    _fields_ = [("entry", ctypes.c_char_p), ("fusion", ctypes.c_char_p),
                ("checked", _I32), ("cuda", ctypes.c_void_p),
                ("chip", ctypes.c_char_p), ("threads", _I32)]


class _ArgInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("role", ctypes.c_char_p),
                ("stream", ctypes.c_char_p), ("element", ctypes.c_char_p),
                ("element_bytes", _I64), ("rank", _I64),
                ("shape", _P(_I64)), ("strides", _P(_I64)),
                ("type", ctypes.c_char_p)]


class _LayoutInfo(ctypes.Structure):
    _fields_ = [("heads_per_rank", _I64), ("head_size", _I64),
                ("block_size", _I64), ("kernel", _I64), ("page_bytes", _I64),
                ("stream_offset", _I64 * 4), ("stream_width", _I64 * 4)]


class _MemRef(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("rank", _I64),
                ("sizes", _P(_I64)), ("strides", _P(_I64))]


_ERR = (ctypes.c_char_p, ctypes.c_size_t)
_SIGNATURES = {
    "inkling_layer_create": (_I32, (ctypes.c_char_p, ctypes.c_size_t,
                                  ctypes.c_char_p, _P(_Options),
                                  _P(ctypes.c_void_p)) + _ERR),
    "inkling_layer_create_from_file": (_I32, (ctypes.c_char_p, _P(_Options),
                                          _P(ctypes.c_void_p)) + _ERR),
    "inkling_layer_destroy": (None, (ctypes.c_void_p,)),
    "inkling_layer_function": (ctypes.c_char_p, (ctypes.c_void_p,)),
    "inkling_layer_num_args": (_I64, (ctypes.c_void_p,)),
    "inkling_layer_get_arg": (_I32, (ctypes.c_void_p, _I64, _P(_ArgInfo))),
    "inkling_layer_get_layout": (None, (ctypes.c_void_p, _P(_LayoutInfo))),
    "inkling_layer_call": (_I32, (ctypes.c_void_p, _P(_MemRef), _I64,
                                ctypes.c_void_p) + _ERR),
    "inkling_layer_scratch_bytes": (ctypes.c_size_t, (ctypes.c_void_p,)),
    "inkling_layer_release_scratch": (_I32, (ctypes.c_void_p,) + _ERR),
    "inkling_cuda_open": (_I32, (ctypes.c_char_p, _P(ctypes.c_void_p)) + _ERR),
    "inkling_cuda_close": (None, (ctypes.c_void_p,)),
    "inkling_cuda_chip": (ctypes.c_char_p, (ctypes.c_void_p,)),
    "inkling_cuda_alloc": (_I32, (ctypes.c_void_p, ctypes.c_size_t,
                                _P(ctypes.c_uint64)) + _ERR),
    "inkling_cuda_free": (_I32, (ctypes.c_void_p, ctypes.c_uint64)),
    "inkling_cuda_copy_to_device": (_I32, (ctypes.c_void_p, ctypes.c_uint64,
                                       ctypes.c_void_p, ctypes.c_size_t)
                                + _ERR),
    "inkling_cuda_copy_to_host": (_I32, (ctypes.c_void_p, ctypes.c_void_p,
                                     ctypes.c_uint64, ctypes.c_size_t)
                              + _ERR),
}

def load_library(path=None):
    """Loads (once per path) libinkling_layer.so: by default the one next to
    the package."""
    return load_cdll(path or _paths.library("libinkling_layer.so"),
                     _SIGNATURES)


def _error(status, message):
    # The names are the C table's (inkling_status_name), as the runtime's.
    name = runtime.load().inkling_status_name(status).decode()
    return InklingError(status, message, name)


def _call(function, *args):
    error = ctypes.create_string_buffer(_ERROR_CAPACITY)
    status = function(*args, error, _ERROR_CAPACITY)
    if status != OK:
        raise _error(status, error.value.decode(errors="replace"))


def _bad(what, message):
    return _error(INVALID_ARGUMENT, "%s: %s" % (what, message))


ArgSpec = namedtuple(
    "ArgSpec", "index name role stream element dtype shape strides type")


class Cuda(Closing):
    """A CUDA driver for GPU layers: device 0's primary context (the one
    PyTorch uses). `library`: None for libcuda.so.1, or another driver (the
    tests' fake one)."""

    def __init__(self, library=None, lib=None):
        self._lib = lib or load_library()
        handle = ctypes.c_void_p()
        _call(self._lib.inkling_cuda_open,
              library.encode() if library else None, ctypes.byref(handle))
        self._handle = handle
        self.chip = self._lib.inkling_cuda_chip(handle).decode()
        # Layers and device arrays made with this driver: closed first.
        self._children = weakref.WeakSet()

    def close(self):
        """Closes every Layer and DeviceArray made with it, then the
        driver."""
        if self._handle:
            for child in list(self._children):
                child.close()
            self._lib.inkling_cuda_close(self._handle)
            self._handle = None

    def _check_open(self):
        if not self._handle:
            raise _error(FAILED_PRECONDITION, "the CUDA driver is closed")

    def empty(self, shape, dtype):
        """A DeviceArray of `shape` (C-contiguous) and numpy `dtype`."""
        return DeviceArray(self, shape, dtype)

    def to_device(self, array):
        """A DeviceArray holding a copy of the numpy `array`."""
        array = np.ascontiguousarray(array)
        device = DeviceArray(self, array.shape, array.dtype)
        device.copy_from(array)
        return device


class DeviceArray(Closing):
    """Device memory with `__cuda_array_interface__` (version 3), for hosts
    without torch; freed by close() or when collected."""

    def __init__(self, cuda, shape, dtype):
        cuda._check_open()
        self._cuda = cuda
        self.shape = tuple(int(n) for n in shape)
        self.dtype = np.dtype(dtype)
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * \
            self.dtype.itemsize
        address = ctypes.c_uint64()
        self.address = 0
        _call(cuda._lib.inkling_cuda_alloc, cuda._handle, max(1, self.nbytes),
              ctypes.byref(address))
        self.address = address.value
        cuda._children.add(self)

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str,
                "data": (self.address, False), "strides": None,
                "version": 3}

    def copy_from(self, array):
        array = np.ascontiguousarray(array, dtype=self.dtype)
        if array.nbytes != self.nbytes:
            raise _bad("copy_from", "%d bytes into a device array of %d"
                       % (array.nbytes, self.nbytes))
        _call(self._cuda._lib.inkling_cuda_copy_to_device, self._cuda._handle,
              self.address, array.ctypes.data, self.nbytes)

    def numpy(self):
        """A host copy."""
        host = np.empty(self.shape, self.dtype)
        _call(self._cuda._lib.inkling_cuda_copy_to_host, self._cuda._handle,
              host.ctypes.data, self.address, self.nbytes)
        return host

    def close(self):
        if self.address and self._cuda._handle:
            self._cuda._lib.inkling_cuda_free(self._cuda._handle, self.address)
        self.address = 0


def _torch_tensor(value):
    """`value` if it is a torch.Tensor (torch is optional: never imported
    here)."""
    cls = type(value)
    if cls.__module__.split(".")[0] == "torch" and hasattr(value, "data_ptr"):
        return value
    return None


class Layer(Closing):
    """A layer function compiled once; call it on arrays.

    ir: the IR text (str or bytes); or Layer.from_file(path).
    entry: the function (default: the module's only function with a body).
    fusion: "conv-insert" (default), "packed-inserts" or "none".
    checked: the kernels check slot and block ids and a bad one fails the
        call (on the CPU the metadata is always checked on the host first).
    device: "cpu" (the JIT) or "cuda" (the kernel bundle on `cuda`, a Cuda;
        default: libcuda.so.1); chip: e.g. "sm_90" (default: the device's).
    threads: CPU threads of the loop nests, 0 to 1024 (0, default: every
        core; 1: the calling thread); results are the same bits for every
        count.
    """

    def __init__(self, ir=None, *, entry=None, fusion=None, checked=False,
                 device="cpu", cuda=None, chip=None, threads=0,
                 name="<layer>", path=None, lib=None):
        self._lock = threading.RLock()
        self._handle = None
        if device not in ("cpu", "cuda"):
            raise _bad("device", "%r: expected \"cpu\" or \"cuda\"" % device)
        self.device = device
        self._lib = lib or load_library()
        if device == "cuda" and cuda is None:
            cuda = Cuda(lib=self._lib)
        self._cuda = cuda if device == "cuda" else None
        if self._cuda is not None:
            self._cuda._check_open()
        if isinstance(threads, bool) or not isinstance(threads, int) \
                or not 0 <= threads <= MAX_THREADS:
            raise _bad("threads", "%r: expected an int from 0 (every core) "
                       "to %d" % (threads, MAX_THREADS))
        for what, text in (("entry", entry), ("fusion", fusion),
                           ("chip", chip), ("name", name)):
            if text is not None and not isinstance(text, str):
                raise _bad(what, "%r: expected a str" % (text,))
        options = _Options(entry.encode() if entry else None,
                           fusion.encode() if fusion else None,
                           1 if checked else 0,
                           self._cuda._handle if self._cuda else None,
                           chip.encode() if chip else None, threads)
        handle = ctypes.c_void_p()
        if path is not None:
            _call(self._lib.inkling_layer_create_from_file, str(path).encode(),
                  ctypes.byref(options), ctypes.byref(handle))
        else:
            if ir is None:
                raise _bad("ir", "no IR given (text, or Layer.from_file)")
            if not isinstance(ir, (str, bytes, bytearray, memoryview)):
                raise _bad("ir", "a %s; expected the IR as str or bytes"
                           % type(ir).__name__)
            text = ir.encode() if isinstance(ir, str) else bytes(ir)
            _call(self._lib.inkling_layer_create, text, len(text),
                  name.encode(), ctypes.byref(options), ctypes.byref(handle))
        self._handle = handle
        if self._cuda is not None:
            self._cuda._children.add(self)
        self.function = self._lib.inkling_layer_function(handle).decode()
        self.args = []
        for index in range(self._lib.inkling_layer_num_args(handle)):
            info = _ArgInfo()
            self._lib.inkling_layer_get_arg(handle, index, ctypes.byref(info))
            rank = info.rank
            element = info.element.decode()
            self.args.append(ArgSpec(
                index, info.name.decode(), info.role.decode(),
                info.stream.decode() if info.stream else None, element,
                NUMPY_DTYPES[element],
                tuple(None if info.shape[d] < 0 else info.shape[d]
                      for d in range(rank)),
                tuple(None if info.strides[d] < 0 else info.strides[d]
                      for d in range(rank)),
                info.type.decode()))
        self._by_name = {arg.name: arg for arg in self.args}
        layout = _LayoutInfo()
        self._lib.inkling_layer_get_layout(handle, ctypes.byref(layout))
        self.layout = {
            "heads_per_rank": layout.heads_per_rank,
            "head_size": layout.head_size, "block_size": layout.block_size,
            "kernel": layout.kernel, "page_bytes": layout.page_bytes,
            "streams": {s: (layout.stream_offset[i], layout.stream_width[i])
                        for i, s in enumerate(("k", "v", "attn", "mlp"))}}

    @classmethod
    def from_file(cls, path, **options):
        return cls(path=path, **options)

    @property
    def arg_names(self):
        return [arg.name for arg in self.args]

    def close(self):
        with self._lock:
            if self._handle:
                self._lib.inkling_layer_destroy(self._handle)
                self._handle = None

    @property
    def scratch_bytes(self):
        """The device bytes this GPU layer's own buffers hold (an unfused
        layer's conv outputs: they grow to the longest step's size); 0 on
        the CPU and for a layer without them."""
        with self._lock:
            if not self._handle:
                return 0
            return self._lib.inkling_layer_scratch_bytes(self._handle)

    def release_scratch(self):
        """Frees those buffers (after a device synchronize); the next call
        allocates what it needs again."""
        with self._lock:
            if not self._handle:
                raise _error(FAILED_PRECONDITION, "the layer is closed")
            _call(self._lib.inkling_layer_release_scratch, self._handle)

    # Calls -----------------------------------------------------------------

    def __call__(self, *args, stream=None, **kwargs):
        """Runs the layer: one array per argument, by position (in the
        function's order) or by name. `stream` (GPU): a CUstream as an int,
        or an object with `.cuda_stream` (torch.cuda.Stream); None: the
        default stream."""
        values = self._bind(args, kwargs)
        keep = []  # the ctypes arrays of sizes and strides, until the call
        memrefs = (_MemRef * max(1, len(values)))()
        for spec, value in zip(self.args, values):
            data, sizes, strides = self._describe(spec, value)
            sizes_array = (_I64 * max(1, len(sizes)))(*sizes)
            strides_array = (_I64 * max(1, len(strides)))(*strides)
            keep.append((sizes_array, strides_array))
            memrefs[spec.index] = _MemRef(data, len(sizes), sizes_array,
                                          strides_array)
        if stream is not None and hasattr(stream, "cuda_stream"):
            stream = stream.cuda_stream
        if stream is not None and (isinstance(stream, bool) or
                                   not isinstance(stream, int) or
                                   not 0 <= stream < 2**64):
            raise _bad("stream", "%r: expected a CUstream as an int, an "
                       "object with .cuda_stream, or None" % (stream,))
        with self._lock:
            if not self._handle:
                raise _error(FAILED_PRECONDITION, "the layer is closed")
            _call(self._lib.inkling_layer_call, self._handle, memrefs,
                  len(values), stream or None)
        del keep

    def _bind(self, args, kwargs):
        if len(args) > len(self.args):
            raise _bad("@" + self.function, "takes %d arguments, got %d"
                       % (len(self.args), len(args)))
        values = list(args) + [None] * (len(self.args) - len(args))
        for name, value in kwargs.items():
            spec = self._by_name.get(name)
            if spec is None:
                raise _bad(name, "not an argument of @%s (%s)"
                           % (self.function, ", ".join(self.arg_names)))
            if spec.index < len(args):
                raise _bad(name, "given by position and by name")
            values[spec.index] = value
        missing = [spec.name for spec, value in zip(self.args, values)
                   if value is None]
        if missing:
            raise _bad("@" + self.function, "missing argument(s) %s"
                       % ", ".join(missing))
        return values

    def _describe(self, spec, value):
        """(data address, sizes, strides in elements) of `value`, checked
        for the argument's kind, device and dtype; the C side checks the
        shapes, strides, alignment and sizes."""
        what = "argument %d (%s)" % (spec.index, spec.name)
        tensor = _torch_tensor(value)
        writes = spec.role in _WRITTEN_ROLES
        if tensor is not None:
            on_gpu = tensor.device.type == "cuda"
            if on_gpu != (self.device == "cuda"):
                raise _bad(what, "a torch tensor on %s; this layer runs on "
                           "the %s" % (tensor.device, self.device.upper()))
            itemsize = tensor.element_size()
            if spec.role == "cache":
                return self._cache_bytes(what, tensor.data_ptr(),
                                         tensor.is_contiguous(),
                                         tensor.numel() * itemsize)
            want = _TORCH_DTYPES[spec.element]
            if str(tensor.dtype) != "torch." + want:
                raise _bad(what, "dtype %s, expected torch.%s"
                           % (tensor.dtype, want))
            return (tensor.data_ptr(), list(tensor.shape),
                    list(tensor.stride()))
        if hasattr(value, "__cuda_array_interface__"):
            if self.device != "cuda":
                raise _bad(what, "device memory (__cuda_array_interface__);"
                           " this layer runs on the CPU")
            return self._describe_cuda(what, spec,
                                       value.__cuda_array_interface__)
        if isinstance(value, np.ndarray):
            if self.device == "cuda":
                raise _bad(what, "a host numpy array; this layer runs on "
                           "the GPU: pass a torch CUDA tensor or device "
                           "memory (__cuda_array_interface__)")
            if writes and not value.flags.writeable:
                raise _bad(what, "a read-only array; the layer writes it")
            # (cheaper than value.ctypes.data)
            address = value.__array_interface__["data"][0]
            if spec.role == "cache":
                return self._cache_bytes(what, address,
                                         value.flags.c_contiguous,
                                         value.nbytes)
            if value.dtype != spec.dtype:
                raise _bad(what, "dtype %s, expected %s%s"
                           % (value.dtype, spec.dtype,
                              " (bf16 bit patterns)"
                              if spec.element == "bf16" else ""))
            itemsize = value.dtype.itemsize
            if any(s % itemsize for s in value.strides):
                raise _bad(what, "strides %s bytes are not multiples of the "
                           "element size" % (value.strides,))
            return (address, list(value.shape),
                    [s // itemsize for s in value.strides])
        raise _bad(what, "a %s; expected a numpy array or a torch tensor "
                   "(nothing is copied or converted)" % type(value).__name__)

    @staticmethod
    def _cache_bytes(what, address, contiguous, nbytes):
        if not contiguous:
            raise _bad(what, "not contiguous; the cache is taken as its "
                       "bytes")
        return address, [nbytes], [1]

    def _describe_cuda(self, what, spec, interface):
        shape = [int(n) for n in interface["shape"]]
        typestr = interface["typestr"]
        address = int(interface["data"][0])
        itemsize = int(typestr[2:])
        strides = interface.get("strides")
        if strides is None:  # C-contiguous
            strides, step = [], itemsize
            for n in reversed(shape):
                strides.insert(0, step)
                step *= max(1, n)
        if spec.role == "cache":
            contiguous = list(strides) == \
                [int(np.prod(shape[d + 1:], dtype=np.int64)) * itemsize
                 for d in range(len(shape))]
            return self._cache_bytes(
                what, address, contiguous,
                int(np.prod(shape, dtype=np.int64)) * itemsize)
        if typestr not in _TYPESTRS[spec.element]:
            raise _bad(what, "typestr %s, expected %s" % (
                typestr, _TYPESTRS[spec.element][0]))
        if any(s % itemsize for s in strides):
            raise _bad(what, "strides %s bytes are not multiples of the "
                       "element size" % (tuple(strides),))
        return address, shape, [s // itemsize for s in strides]
