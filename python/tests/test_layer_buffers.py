"""unittest for inkling.Layer: the buffers an engine hands a call (issue
#28): overlapping ones are refused before anything runs, naming both
arguments; an empty step is valid whatever the strides of its zero-size
arrays. The checks are the layer ABI's validator
(include/inkling/ExecutionEngine/LayerAbi.h).
"""

import unittest

import numpy as np

from test_layer import LayerCallCase


class LayerBuffersTest(LayerCallCase):
    def test_overlapping_buffers(self):
        # An output that is its input: later tokens would read overwritten
        # x (#28). Refused before anything runs, naming both arguments.
        x = self.f.args["input_k"]
        self.assertBad("argument 14 (output_k): overlaps argument 5 "
                       "(input_k)", **self.call_with(output_k=x))
        # Two outputs that are one array.
        self.assertBad("argument 15 (output_v): overlaps argument 14 "
                       "(output_k)",
                       **self.call_with(output_v=self.f.args["output_k"]))
        # An input inside the cache bytes (history rows overwritten).
        inside = self.f.cache[1024:1024 + x.nbytes].view(np.uint16)
        self.assertBad("argument 5 (input_k): overlaps argument 0 (cache)",
                       **self.call_with(input_k=inside.reshape(x.shape)))
        # Two inputs may be one array: the layer reads both.
        twin = self.call_with(input_v=self.f.args["input_k"])
        self.layer(**twin)

    def test_empty_step_from_zeros(self):
        # A T = 0 step is valid whatever the strides of its empty arrays
        # (#28: np.zeros((0, H, w)) was refused over its strides).
        args = dict(self.f.args)
        for name, value in self.f.args.items():
            spec = self.layer._by_name[name]
            if spec.role in ("input", "output"):
                args[name] = np.zeros((0,) + value.shape[1:], np.uint16)
        args["query_start_loc"] = np.zeros_like(self.f.step.query_start_loc)
        args["slot_mapping"] = np.zeros((0,), np.int64)
        # Strides 0, as a broadcast view of nothing has.
        args["output_k"] = np.lib.stride_tricks.as_strided(
            np.zeros(1, np.uint16), (0, 2, 8), (0, 0, 0), writeable=True)
        self.layer(**args)
        np.testing.assert_array_equal(self.f.cache.view(np.uint16),
                                      self.f.expected_cache)



if __name__ == "__main__":
    unittest.main()
