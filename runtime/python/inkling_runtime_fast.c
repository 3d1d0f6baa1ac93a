/*===- inkling_runtime_fast.c - The batch calls without ctypes' cost ------===//
 *
 * An optional CPython extension (stable ABI, Python >= 3.11) for the calls a
 * serving engine makes every step: schedule, build, commit and lookup
 * batches and adds. The inkling_runtime package uses it when it is next to
 * the library it loaded (`_inkling_runtime_fast.so`) and falls back to
 * ctypes otherwise (or with INKLING_RUNTIME_NO_FAST=1); docs/runtime.md, "The
 * batch API".
 *
 * It links nothing: each function takes the address of the C API function
 * to call (from the ctypes-loaded library, so both paths run the same
 * library), the manager handle and the arrays as buffers (C-contiguous,
 * 8-byte ids/counts/offsets, 4-byte token ids; the Python side has checked
 * the dtypes). It returns the C status, or kSlowPath when a buffer is not
 * usable here (not contiguous, read-only where written, another item
 * size), and the Python side then takes the checked ctypes path. Errors of
 * the calls themselves are the runtime's (the status): no exception.
 *
 *===----------------------------------------------------------------------===*/

#define Py_LIMITED_API 0x030B0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "inkling/Runtime/inkling_runtime.h"

enum { kSlowPath = -1000 };

typedef struct {
  Py_buffer views[4];
  int count;
} Buffers;

/* The data of `object` as a C-contiguous buffer of `itemSize`-byte items;
   NULL (no exception) when it is not one. */
static void *acquire(Buffers *held, PyObject *object, Py_ssize_t itemSize,
                     int writable, Py_ssize_t *items) {
  Py_buffer *view = &held->views[held->count];
  int flags =
      PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
  if (PyObject_GetBuffer(object, view, flags) != 0) {
    PyErr_Clear();
    return NULL;
  }
  ++held->count;
  if (view->itemsize != itemSize) {
    return NULL;
  }
  *items = view->len / itemSize;
  /* Empty arrays may have any address; the runtime wants non-null. */
  return view->len > 0 ? view->buf : (void *)held;
}

static void releaseAll(Buffers *held) {
  for (int i = 0; i < held->count; ++i)
    PyBuffer_Release(&held->views[i]);
}

/* An int64 scalar; 0 (no exception) for anything else, which the checked
   path then names (the Python side range-checks what reaches ctypes). */
static int toInt64(PyObject *object, int64_t *out) {
  long long value = PyLong_AsLongLong(object);
  if (value == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return 0;
  }
  *out = (int64_t)value;
  return 1;
}

static void *toPointer(PyObject *object) { return PyLong_AsVoidPtr(object); }

static PyObject *status(Buffers *held, int64_t value) {
  releaseAll(held);
  return PyLong_FromLongLong(value);
}

static int checkArgs(Py_ssize_t nargs, Py_ssize_t want, const char *name) {
  if (nargs != want) {
    PyErr_Format(PyExc_TypeError, "%s takes %zd arguments (%zd given)", name,
                 want, nargs);
    return -1;
  }
  return 0;
}

typedef inkling_status_t (*ScheduleBatch)(inkling_manager_t *, const int64_t *,
                                          const int64_t *, int64_t);
typedef inkling_status_t (*CommitBatch)(inkling_manager_t *, const int64_t *,
                                        const int64_t *, const int64_t *,
                                        const int32_t *, int64_t);
typedef inkling_status_t (*BuildStep)(inkling_manager_t *,
                                      inkling_step_buffers_t *, const int64_t *,
                                      int64_t, int64_t, int64_t,
                                      inkling_step_info_t *);
typedef inkling_status_t (*LookupBatch)(inkling_manager_t *, const int32_t *,
                                        const int64_t *, const int64_t *,
                                        int64_t, int64_t *);
typedef inkling_status_t (*AddSequence)(inkling_manager_t *, const int32_t *,
                                        int64_t, int64_t, const int64_t *,
                                        int64_t, const uint8_t *, int64_t,
                                        int64_t *);

/* What every call here starts with: its argument count, the C function
   (args[0]) and the manager handle (args[1]); the buffers it acquires. */
typedef struct {
  Buffers held;
  void *fn;
  inkling_manager_t *manager;
} Call;

static int begin(Call *call, PyObject *const *args, Py_ssize_t nargs,
                 Py_ssize_t want, const char *name) {
  call->held.count = 0;
  if (checkArgs(nargs, want, name))
    return -1;
  call->fn = toPointer(args[0]);
  call->manager = toPointer(args[1]);
  return PyErr_Occurred() ? -1 : 0;
}

/* The start of every call below: `c`, or NULL returned with the error. */
#define BEGIN_CALL(count, name)                                                \
  (void)self;                                                                  \
  Call c;                                                                      \
  if (begin(&c, args, nargs, count, name))                                     \
  return NULL

/* schedule_batch(fn, manager, ids, counts): ids and counts of one size. */
static PyObject *scheduleBatch(PyObject *self, PyObject *const *args,
                               Py_ssize_t nargs) {
  BEGIN_CALL(4, "schedule_batch");
  Py_ssize_t n = 0, m = 0;
  const int64_t *ids = acquire(&c.held, args[2], 8, 0, &n);
  const int64_t *counts = ids ? acquire(&c.held, args[3], 8, 0, &m) : NULL;
  if (!counts || n != m)
    return status(&c.held, kSlowPath);
  return status(&c.held, ((ScheduleBatch)c.fn)(c.manager, ids, counts, n));
}

/* commit_batch(fn, manager, ids, accepted, offsets, tokens). */
static PyObject *commitBatch(PyObject *self, PyObject *const *args,
                             Py_ssize_t nargs) {
  BEGIN_CALL(6, "commit_batch");
  Py_ssize_t n = 0, m = 0, o = 0, t = 0;
  const int64_t *ids = acquire(&c.held, args[2], 8, 0, &n);
  const int64_t *accepted = ids ? acquire(&c.held, args[3], 8, 0, &m) : NULL;
  const int64_t *offsets =
      accepted ? acquire(&c.held, args[4], 8, 0, &o) : NULL;
  const int32_t *tokens = offsets ? acquire(&c.held, args[5], 4, 0, &t) : NULL;
  /* The runtime checks each range; its end within the tokens is ours. */
  if (!tokens || n != m || o != n + 1 || offsets[n] > t)
    return status(&c.held, kSlowPath);
  return status(&c.held, ((CommitBatch)c.fn)(c.manager, ids, accepted, offsets,
                                             tokens, n));
}

/* build_step(fn, manager, buffers, ids, num_rows, num_padded, info). */
static PyObject *buildStep(PyObject *self, PyObject *const *args,
                           Py_ssize_t nargs) {
  BEGIN_CALL(7, "build_step");
  inkling_step_buffers_t *buffers = toPointer(args[2]);
  inkling_step_info_t *info = toPointer(args[6]);
  if (PyErr_Occurred())
    return NULL;
  Py_ssize_t n = 0;
  int64_t rows = 0, padded = 0;
  const int64_t *ids = acquire(&c.held, args[3], 8, 0, &n);
  if (!ids || !toInt64(args[4], &rows) || !toInt64(args[5], &padded))
    return status(&c.held, kSlowPath);
  return status(&c.held, ((BuildStep)c.fn)(c.manager, buffers, ids, n, rows,
                                           padded, info));
}

/* lookup_batch(fn, manager, tokens, offsets, max_lengths, out). */
static PyObject *lookupBatch(PyObject *self, PyObject *const *args,
                             Py_ssize_t nargs) {
  BEGIN_CALL(6, "lookup_batch");
  Py_ssize_t t = 0, o = 0, n = 0, m = 0;
  const int32_t *tokens = acquire(&c.held, args[2], 4, 0, &t);
  const int64_t *offsets = tokens ? acquire(&c.held, args[3], 8, 0, &o) : NULL;
  const int64_t *limits = offsets ? acquire(&c.held, args[4], 8, 0, &n) : NULL;
  int64_t *out = limits ? acquire(&c.held, args[5], 8, 1, &m) : NULL;
  if (!out || o != n + 1 || m < n || offsets[n] > t)
    return status(&c.held, kSlowPath);
  return status(
      &c.held, ((LookupBatch)c.fn)(c.manager, tokens, offsets, limits, n, out));
}

/* add_sequence(fn, manager, tokens, start, cache_points, extra_keys, out):
   inkling_add_sequence_with_keys (cache points 8-byte, keys bytes). */
static PyObject *addSequence(PyObject *self, PyObject *const *args,
                             Py_ssize_t nargs) {
  BEGIN_CALL(7, "add_sequence");
  int64_t *out = toPointer(args[6]);
  if (PyErr_Occurred())
    return NULL;
  Py_ssize_t t = 0, p = 0, k = 0;
  int64_t start = 0;
  const int32_t *tokens = acquire(&c.held, args[2], 4, 0, &t);
  const int64_t *points = tokens ? acquire(&c.held, args[4], 8, 0, &p) : NULL;
  const uint8_t *keys = points ? acquire(&c.held, args[5], 1, 0, &k) : NULL;
  if (!keys || !toInt64(args[3], &start))
    return status(&c.held, kSlowPath);
  return status(&c.held, ((AddSequence)c.fn)(c.manager, tokens, t, start,
                                             points, p, keys, k, out));
}

#define FAST_METHOD(name, function, doc)                                       \
  {name, (PyCFunction)(void (*)(void))function, METH_FASTCALL, doc}

static PyMethodDef kMethods[] = {
    FAST_METHOD("schedule_batch", scheduleBatch,
                "inkling_schedule_batch over buffers"),
    FAST_METHOD("commit_batch", commitBatch,
                "inkling_commit_batch over buffers"),
    FAST_METHOD("build_step", buildStep,
                "inkling_build_step over a buffer of ids"),
    FAST_METHOD("lookup_batch", lookupBatch,
                "inkling_longest_cached_prefix_batch over buffers"),
    FAST_METHOD("add_sequence", addSequence,
                "inkling_add_sequence_with_keys over buffers"),
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef kModule = {
    PyModuleDef_HEAD_INIT,
    "_inkling_runtime_fast",
    "The batch calls of inkling_runtime without ctypes' per-call cost.",
    -1,
    kMethods,
    NULL,
    NULL,
    NULL,
    NULL};

PyMODINIT_FUNC PyInit__inkling_runtime_fast(void) {
  PyObject *module = PyModule_Create(&kModule);
  if (module && PyModule_AddIntConstant(module, "SLOW_PATH", kSlowPath) != 0) {
    Py_DECREF(module);
    return NULL;
  }
  return module;
}
