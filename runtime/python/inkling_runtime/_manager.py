"""The sequence manager and its step buffers (SequenceManager.h, the C
API's inkling_manager_* and inkling_step_buffers_*): what a serving engine
calls every step. Every integer is range-checked (_native._int64) before
ctypes sees it; every error is an InklingError."""

import ctypes
import threading
from collections import namedtuple

import numpy as np

from ._native import (FAILED_PRECONDITION, INVALID_ARGUMENT, OK,
                      OUT_OF_RANGE,
                      SEQUENCE_STATES, Closing, InklingError, LayoutConfig,
                      TokenError, _Admission, _FAST_SLOW_PATH, _I32, _I64,
                      _INT32, _INT64, _ManagerConfig, _ManagerStats, _P,
                      _SequenceInfo, _StepBufferSpec, _StepInfo, _address,
                      _addressof, _call, _fast_path, _from_buffer,
                      _int64, _int64s, _key_bytes, _pointer,
                      _raise_if_failed, _text, _tokens, _uint64, load)

SequenceInfo = namedtuple(
    "SequenceInfo", "state num_computed num_tokens num_scheduled num_blocks")
ManagerStats = namedtuple("ManagerStats", [f for f, _ in _ManagerStats._fields_])
StepInfo = namedtuple("StepInfo", [f for f, _ in _StepInfo._fields_])
Admission = namedtuple("Admission", [f for f, _ in _Admission._fields_])


class Manager(Closing):
    """Block tables of one group of sconv layers (SequenceManager)."""

    def __init__(self, layout_config, num_blocks, lookahead=0,
                 prefix_caching=True, prefix_seed=0, use_eagle=False,
                 same_step_hits=False, lib=None):
        """use_eagle: the EAGLE/MTP hit rule of vLLM (a lookup drops the
        last matched block); see set_use_eagle. same_step_hits: see
        set_same_step_hits."""
        self._lock = threading.RLock()
        self._handle = None
        self._buffers = []
        if not isinstance(layout_config, LayoutConfig):
            raise TokenError("layout_config = %r: expected a LayoutConfig"
                             % (layout_config,))
        config = _ManagerConfig(layout_config,
                                _int64(num_blocks, "num_blocks"),
                                _int64(lookahead, "lookahead"),
                                1 if prefix_caching else 0,
                                _uint64(prefix_seed, "prefix_seed"))
        self._lib = lib or load()
        handle = ctypes.c_void_p()
        _call(self._lib, self._lib.inkling_manager_create,
              ctypes.byref(config), ctypes.byref(handle))
        self._handle = handle
        self._fast = _fast_path(self._lib)
        if use_eagle:
            self.set_use_eagle(True)
        if same_step_hits:
            self.set_same_step_hits(True)

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
            raise InklingError(FAILED_PRECONDITION, "the manager is closed")

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
        start = _int64(start, "start")
        keys = _key_bytes(extra_keys)
        if fast and type(tokens) is np.ndarray and tokens.dtype is _INT32:
            points = fast.no_points if cache_points is None else cache_points
            if type(points) is np.ndarray and points.dtype is _INT64 and \
                    self._invoke_fast(fast.module.add_sequence,
                                      fast.add_sequence, tokens, start,
                                      points, keys, ctypes.addressof(out)):
                return out.value
        array, address = _pointer(tokens, _INT32, "token ids")
        if cache_points is None and extra_keys is None:
            self._invoke(self._lib.inkling_add_sequence, address, array.size,
                         start, ctypes.byref(out))
            return out.value
        points = _int64s(() if cache_points is None else cache_points,
                         "cache points")
        self._invoke(self._lib.inkling_add_sequence_with_keys,
                     address, array.size, start, _address(points),
                     points.size, keys, len(keys), ctypes.byref(out))
        return out.value

    def set_prefix_policy(self, policy, snapshot_every=8):
        """"window", "snapshots" or "every-block" (steps from now on)."""
        self._invoke(self._lib.inkling_manager_set_prefix_policy,
                     _text(policy, "prefix policy"),
                     _int64(snapshot_every, "snapshot_every"))

    def set_use_eagle(self, use_eagle):
        """EAGLE/MTP drafting (vLLM's use_eagle): lookups from now on drop
        the last matched block, so the drafter recomputes the block before
        the hit."""
        self._invoke(self._lib.inkling_manager_set_drop_last_matched_block,
                     1 if use_eagle else 0)

    def set_same_step_hits(self, enable):
        """Same-step hits (vLLM's behaviour), for steps scheduled from now
        on: a schedule registers the blocks its step fills as pending cache
        entries, so a prompt looked up and added later in the same step
        hits them. A step holding such a reader and its writer has
        `Step.ordered_inserts_required`: run every insert before every conv
        (the unfused order). A writer preempted or finished before its
        commit withdraws them and preempts its readers: see
        take_invalidated_readers."""
        self._invoke(self._lib.inkling_manager_set_same_step_hits,
                     1 if enable else 0)

    def take_invalidated_readers(self):
        """The sequences preempted with their writer (same-step hits) since
        the last call, as a list of ids; resume them."""
        capacity = 16
        while True:
            out = np.zeros(capacity, _INT64)
            count = ctypes.c_int64(0)
            try:
                self._invoke(self._lib.inkling_take_invalidated_readers,
                             out.ctypes.data, capacity, ctypes.byref(count))
            except InklingError as error:
                if error.code != OUT_OF_RANGE:
                    raise
                capacity *= 4
                continue
            return [int(x) for x in out[:count.value]]

    def append_tokens(self, seq, tokens):
        array = _tokens(tokens)
        self._invoke(self._lib.inkling_append_tokens, _int64(seq, "sequence"),
                     _address(array), array.size)

    def schedule(self, seq, num_tokens):
        self._invoke(self._lib.inkling_schedule, _int64(seq, "sequence"),
                     _int64(num_tokens, "num_tokens"))

    def schedule_ahead(self, seq, num_tokens):
        """Async scheduling: the step's first token (sampled by the running
        step) may be unknown; append it before building the step."""
        self._invoke(self._lib.inkling_schedule_ahead,
                     _int64(seq, "sequence"), _int64(num_tokens, "num_tokens"))

    def commit(self, seq, accepted, tokens=()):
        """Accepts `accepted` scheduled tokens after appending `tokens`
        (accepted drafts, then the sampled token)."""
        array = _tokens(tokens)
        self._invoke(self._lib.inkling_commit, _int64(seq, "sequence"),
                     _int64(accepted, "accepted"), _address(array), array.size)

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
        self._invoke(self._lib.inkling_preempt, _int64(seq, "sequence"))

    def resume(self, seq, tokens=None, start=0):
        """Resumes a preempted sequence at 0 or a prefix hit. With `tokens`
        (all its known ids) the hash chain is rebuilt; without, a hit must
        be in the hashes the runtime still keeps."""
        seq, start = _int64(seq, "sequence"), _int64(start, "start")
        if tokens is None:
            self._invoke(self._lib.inkling_resume, seq, start)
            return
        array = _tokens(tokens)
        self._invoke(self._lib.inkling_resume_with_tokens, seq,
                     _address(array), array.size, start)

    def finish(self, seq):
        self._invoke(self._lib.inkling_finish, _int64(seq, "sequence"))

    def fork(self, parent):
        out = _I64()
        self._invoke(self._lib.inkling_fork, _int64(parent, "parent"),
                     ctypes.byref(out))
        return out.value

    def longest_cached_prefix(self, tokens, max_length, extra_keys=None):
        array, address = _pointer(tokens, _INT32, "token ids")
        out = _I64()
        max_length = _int64(max_length, "max_length")
        if extra_keys is None:
            self._invoke(self._lib.inkling_longest_cached_prefix, address,
                         array.size, max_length, ctypes.byref(out))
        else:
            keys = _key_bytes(extra_keys)
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
        self._invoke(self._lib.inkling_admission,
                     _int64(num_tokens, "num_tokens"), _int64(start, "start"),
                     _int64(watermark_blocks, "watermark_blocks"),
                     ctypes.byref(out))
        return Admission(bool(out.admit), out.needed_blocks,
                         out.reserved_blocks, out.free_blocks)

    def sequence_longest_cached_prefix(self, seq, max_length):
        """The largest resume point among the hashes `seq` still keeps."""
        out = _I64()
        self._invoke(self._lib.inkling_sequence_longest_cached_prefix,
                     _int64(seq, "sequence"), _int64(max_length, "max_length"),
                     ctypes.byref(out))
        return out.value

    def sequence_info(self, seq):
        info = _SequenceInfo()
        self._invoke(self._lib.inkling_sequence_info, _int64(seq, "sequence"),
                     ctypes.byref(info))
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
    def ordered_inserts_required(self):
        """True when the step holds a same-step hit (a row starts from
        blocks another row writes in it): run every insert of a cache before
        every conv of it. Like the views, it describes the last build() on
        these buffers."""
        buffers = self._buffers
        return bool(buffers._manager._lib
                    .inkling_step_buffers_ordered_inserts_required(
                        buffers._handle))

    @property
    def info(self):
        """StepInfo: num_sequences, num_rows, num_tokens,
        num_padded_tokens, num_copies."""
        if type(self._counts) is not StepInfo:
            self._counts = StepInfo(*self._counts)
        return self._counts

    # The views are made when read (a step an engine reads through its own
    # references to the buffers costs nothing here): buffer[:count + extra].
    def _view(buffer, count, extra=0):
        def view(self):
            return getattr(self._buffers, buffer)[
                :getattr(self.info, count) + extra]
        return property(view, doc="%s[:%s%s]" % (
            buffer, count, " + %d" % extra if extra else ""))

    query_start_loc = _view("query_start_loc", "num_rows", 1)
    num_computed = _view("num_computed", "num_rows")
    block_table = _view("block_table", "num_rows")
    slot_mapping = _view("slot_mapping", "num_padded_tokens")
    token_seq = _view("token_seq", "num_padded_tokens")
    block_copies = _view("block_copies", "num_copies")
    del _view


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
        sizes = {"max_rows": max_rows, "num_cols": num_cols,
                 "max_tokens": max_tokens, "max_copies": max_copies}
        for name, value in sizes.items():
            if isinstance(value, bool) or \
                    not isinstance(value, (int, np.integer)) or value < 0 or \
                    value > 1 << 40:
                raise InklingError(INVALID_ARGUMENT, "%s = %r: must be an "
                                   "integer in [0, 2^40]" % (name, value))
        max_rows, num_cols, max_tokens, max_copies = (
            int(sizes[name]) for name in sizes)
        self.num_cols = num_cols
        # The runtime's bound on the table, before allocating it.
        if max_rows * num_cols > 1 << 40:
            raise InklingError(INVALID_ARGUMENT, "block table of %d x %d "
                               "entries is too large" % (max_rows, num_cols))
        # At least one element each: the runtime wants non-null pointers.
        try:
            self._storage = {
                "query_start_loc": aligned_empty(max_rows + 1, np.int32),
                "num_computed": aligned_empty(max(1, max_rows), np.int32),
                "block_table": aligned_empty(max(1, max_rows * num_cols),
                                             np.int32),
                "slot_mapping": aligned_empty(max(1, max_tokens), np.int64),
                "block_copies": aligned_empty(max(2, 2 * max_copies),
                                              np.int32),
                "token_seq": aligned_empty(max(1, max_tokens), np.int32)}
        except MemoryError:
            raise InklingError(OUT_OF_RANGE, "step buffers of %d rows x %d "
                               "columns and %d tokens do not fit in memory"
                               % (max_rows, num_cols, max_tokens)) from None
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
        num_rows = _int64(num_rows, "num_rows")
        num_padded_tokens = _int64(num_padded_tokens, "num_padded_tokens")
        with manager._lock:
            if not self._handle:
                manager._check_open()
                raise InklingError(FAILED_PRECONDITION,
                                   "the step buffers are destroyed")
            manager._invoke(manager._lib.inkling_build_step, self._handle,
                            address, ids.size, num_rows, num_padded_tokens,
                            self._info_ref)
            return Step(self, (
                info.num_sequences, info.num_rows, info.num_tokens,
                info.num_padded_tokens, info.num_copies))
