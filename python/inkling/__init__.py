"""Inkling sconv for serving engines (README "Python").

    import inkling
    manager = inkling.Manager(inkling.LayoutConfig(2, 8, 16, kernel=4), 64)
    buffers = manager.step_buffers(max_rows=4, num_cols=16, max_tokens=64)
    layer = inkling.Layer.from_file("small_layer.mlir")

`inkling.runtime`: the runtime's bindings (block tables, step buffers as
zero-copy numpy arrays, page unification); `inkling.layer`: compiled layers
callable on numpy arrays and torch tensors. The shared libraries are found
next to the package (inkling/_paths.py); no environment variable is read.
Standard library and numpy; torch is optional.
"""

from . import runtime
from .layer import ArgSpec, Cuda, DeviceArray, Layer
from .runtime import (FAILED_PRECONDITION, INTERNAL, INVALID_ARGUMENT,
                      NOT_FOUND, OK, OUT_OF_BLOCKS, OUT_OF_RANGE, UNAVAILABLE,
                      InklingError, LayoutConfig, Manager, Step, StepBuffers,
                      aligned_empty)

__all__ = [
    "runtime", "Layer", "Cuda", "DeviceArray", "ArgSpec", "InklingError",
    "LayoutConfig", "Manager", "Step", "StepBuffers", "aligned_empty", "OK",
    "INVALID_ARGUMENT", "OUT_OF_BLOCKS", "NOT_FOUND", "FAILED_PRECONDITION",
    "OUT_OF_RANGE", "UNAVAILABLE", "INTERNAL",
]
