"""Same-step hits through the Python package (Manager(same_step_hits=True)):
vLLM's two requests with one prompt prefix admitted in one step, the step's
ordering flag, and the readers invalidated with a dropped writer.

Run: INKLING_RUNTIME_LIB=.../libinkling_runtime.so python3 -m unittest
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import inkling_runtime as rt  # noqa: E402


def manager(same_step_hits):
    m = rt.Manager(rt.LayoutConfig(2, 8, 16, kernel=4), num_blocks=64,
                   same_step_hits=same_step_hits)
    m.set_prefix_policy("every-block")
    return m


# 22 shared tokens: the second request's first 5 blocks are the first's.
SHARED = list(range(22))
FIRST = SHARED + list(range(100, 108))
SECOND = SHARED + list(range(200, 205))


class SameStepHitsTest(unittest.TestCase):
    def admit_both(self, m):
        first = m.add_sequence(FIRST)
        m.schedule(first, len(FIRST))
        hit = m.longest_cached_prefix(SECOND, len(SECOND) - 1)
        return first, hit

    def test_second_request_hits_the_first_in_the_same_step(self):
        m = manager(True)
        buffers = m.step_buffers(max_rows=4, num_cols=16, max_tokens=64)
        first, hit = self.admit_both(m)
        self.assertEqual(hit, 20)  # vLLM: blocks 0..4 of the shared prefix
        second = m.add_sequence(SECOND, hit)
        m.schedule(second, len(SECOND) - hit)
        step = buffers.build([first, second])
        self.assertTrue(step.ordered_inserts_required)
        m.commit(first, len(FIRST), [1])
        m.commit(second, len(SECOND) - hit, [2])
        m.schedule(first, 1)
        m.schedule(second, 1)
        self.assertFalse(buffers.build([first, second])
                         .ordered_inserts_required)
        m.check_invariants()
        m.close()

    def test_without_the_option_the_hit_waits_for_the_commit(self):
        m = manager(False)
        first, hit = self.admit_both(m)
        self.assertEqual(hit, 0)
        m.commit(first, len(FIRST), [1])
        self.assertEqual(m.longest_cached_prefix(SECOND, len(SECOND) - 1), 20)
        m.close()

    def test_a_dropped_writer_invalidates_its_reader(self):
        m = manager(True)
        buffers = m.step_buffers(max_rows=4, num_cols=16, max_tokens=64)
        first, hit = self.admit_both(m)
        second = m.add_sequence(SECOND, hit)
        m.schedule(second, len(SECOND) - hit)
        with self.assertRaises(rt.InklingError) as error:
            buffers.build([second])  # without its writer
        self.assertEqual(error.exception.code, rt.FAILED_PRECONDITION)
        self.assertIn("same-step hit", error.exception.message)
        m.finish(first)
        self.assertEqual(m.take_invalidated_readers(), [second])
        self.assertEqual(m.take_invalidated_readers(), [])
        self.assertEqual(m.sequence_info(second).state, "preempted")
        m.check_invariants()
        m.close()


if __name__ == "__main__":
    unittest.main()
