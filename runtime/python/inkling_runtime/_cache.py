"""Layouts, page-size unification, tensor parallelism and the cache plan
(Layout.h, PageUnification.h, TensorParallel.h, CachePlan.h): what an
engine plans once per model. Every value is checked before ctypes sees it;
every error is an InklingError."""

import ctypes
from collections import namedtuple

from ._native import (FAILED_PRECONDITION, NOT_FOUND, OK, PAGE_ADJUSTMENTS,
                      CacheSpec, Closing, InklingError, LayoutConfig, TokenError, _I32, _I64, _P,
                      _STATUS, _Layout, _RankLayout, _UnifiedSpec, _call,
                      _int64, _raise_if_failed, _text, load)


def _layout_config(config):
    if not isinstance(config, LayoutConfig):
        raise TokenError("layout config = %r: expected a LayoutConfig"
                         % (config,))
    return ctypes.byref(config)


def _structs(values, struct, what):
    """A ctypes array of `struct` from a sequence of them (at least one
    entry: the runtime wants non-null pointers)."""
    values = list(values)
    for value in values:
        if not isinstance(value, struct):
            raise TokenError("%s: expected %s entries, got %r"
                             % (what, struct.__name__, value))
    return values, (struct * max(1, len(values)))(*values)


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
    _call(lib, lib.inkling_layout_derive, _layout_config(config),
          ctypes.byref(layout))
    return _layout_dict(layout)


# Page-size unification and tensor parallelism ---------------------------------

def sconv_cache_spec(name, layout_config, lib=None):
    lib = lib or load()
    spec = CacheSpec()
    encoded = _text(name, "cache spec name")
    _call(lib, lib.inkling_cache_spec_sconv, _layout_config(layout_config),
          encoded, ctypes.byref(spec))
    spec.name = encoded
    return spec


def attention_cache_spec(name, block_size, num_kv_heads, head_size,
                         dtype_bytes=2, reads_through_block_stride=False,
                         tensors_per_page=2, lib=None):
    lib = lib or load()
    spec = CacheSpec()
    encoded = _text(name, "cache spec name")
    _call(lib, lib.inkling_cache_spec_attention, encoded,
          _int64(block_size, "block_size"),
          _int64(num_kv_heads, "num_kv_heads"),
          _int64(head_size, "head_size"), _int64(dtype_bytes, "dtype_bytes"),
          1 if reads_through_block_stride else 0,
          _int64(tensors_per_page, "tensors_per_page"), ctypes.byref(spec))
    spec.name = encoded
    return spec


def unify_page_sizes(specs, lib=None):
    """Returns (page_bytes, [dict per spec])."""
    lib = lib or load()
    specs, array = _structs(specs, CacheSpec, "cache specs")
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
    config = _layout_config(layout_config)
    # An array of tp entries; a tp the layout refuses (tp < 1 or above
    # kv_heads) gets none, and the runtime names it.
    tp = layout_config.tp
    count = tp if 1 <= tp <= layout_config.kv_heads else 0
    ranks = (_RankLayout * max(1, count))()
    _call(lib, lib.inkling_rank_layouts, config, ranks, count)
    return list(ranks)[:count]


def check_rank_tiling(layout_config, ranks, lib=None):
    """Raises InklingError unless `ranks` tile the unsharded layout."""
    lib = lib or load()
    ranks, array = _structs(ranks, _RankLayout, "ranks")
    _call(lib, lib.inkling_check_rank_tiling, _layout_config(layout_config),
          array, len(ranks))


# ---- Cache plan (CachePlan.h): a model's layers by name, blocks from a byte
# budget, per-layer views of one allocation per plan tensor (its own
# signatures, bound on first use).

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


class _LayerNotFound(InklingError, KeyError):
    """No layer of that name in the plan (also a KeyError)."""

    def __init__(self, name):
        super().__init__(NOT_FOUND, "no layer '%s' in the cache plan" % name)

    __str__ = InklingError.__str__


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
        raise _LayerNotFound(name)

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
            raise TokenError("the plan has %d tensors, got %d buffers"
                             % (len(self.tensor_bytes), len(buffers)))
        for t, (buffer, size) in enumerate(zip(buffers, self.tensor_bytes)):
            if not isinstance(buffer, np.ndarray) or \
                    buffer.dtype != np.uint8 or buffer.ndim != 1 or \
                    buffer.nbytes < size:
                raise TokenError("buffer %d: expected a 1-D uint8 array of "
                                 ">= %d bytes" % (t, size))
        views = {}
        for v in self.layers:
            dtype = np.dtype(_STORAGE_DTYPES[v.element_bytes])
            end = v.byte_offset + v.element_bytes * (
                1 + sum((d - 1) * s for d, s in zip(v.shape, v.strides)))
            if end > self.tensor_bytes[v.tensor]:
                raise TokenError("layer '%s' ends at byte %d, beyond its "
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
                raise TokenError("tensor %d: expected >= %d bytes"
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

    def _live(self):
        if not self._handle:
            raise InklingError(FAILED_PRECONDITION,
                               "the cache registry is closed")
        return self._handle

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
            self._live(), _text(name, "layer name"),
            _layout_config(layout_config), _int64(page_bytes, "page_bytes")))

    def add_attention(self, name, block_size, num_kv_heads, head_size,
                      dtype_bytes=2, reads_through_block_stride=False,
                      tensors_per_page=2):
        spec = _AttentionLayer(
            _int64(block_size, "block_size"),
            _int64(num_kv_heads, "num_kv_heads"),
            _int64(head_size, "head_size"), _int64(dtype_bytes, "dtype_bytes"),
            int(bool(reads_through_block_stride)),
            _int64(tensors_per_page, "tensors_per_page"))
        self._check(self._lib.inkling_cache_registry_add_attention(
            self._live(), _text(name, "layer name"), ctypes.byref(spec)))

    def plan(self, budget_bytes, cross_layer=False):
        """The CachePlan of `budget_bytes` bytes."""
        lib = self._lib
        handle = _VOID()
        self._check(lib.inkling_cache_registry_plan(
            self._live(), _int64(budget_bytes, "budget_bytes"),
            int(bool(cross_layer)), ctypes.byref(handle)))
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
