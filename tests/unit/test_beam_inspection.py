"""The suite's remembered reading of a callable's arguments
(tests/support/beam_inspection.py) equals Beam's own, for every kind of
callable a pipeline hands it."""
import functools

import apache_beam as beam

from tests.support import beam_inspection


class _Doubler(beam.DoFn):

  def process(self, element, factor=2, *args, timestamp=beam.DoFn.TimestampParam):
    yield element * factor

  @staticmethod
  def static(a, b=1):
    return a + b

  @classmethod
  def classy(cls, a, b=3):
    return a


def _decorated(function):
  @functools.wraps(function)
  def wrapper(*args, **kwargs):
    return function(*args, **kwargs)
  return wrapper


@_decorated
def _wrapped(x, y=5):
  return x + y


def test_remembered_reading_equals_beams():
  first, second = _Doubler(), _Doubler()
  callables = [first.process, second.process, _Doubler.process, first.static,
               _Doubler.classy, first.classy, lambda row, k=1: row, _wrapped,
               functools.partial(_wrapped, 1), len, str.strip, _Doubler,
               beam.Map(lambda x: x).fn.process]
  for _ in range(2):  # the second round is read from what was remembered
    for f in callables:
      assert (beam_inspection.remembered_args_defaults(f) ==
              beam_inspection._beams_reading(f)), f  # pylint: disable=protected-access


def test_a_bound_method_does_not_keep_its_instance_alive():
  import gc  # pylint: disable=import-outside-toplevel
  import weakref  # pylint: disable=import-outside-toplevel
  dofn = _Doubler()
  beam_inspection.remembered_args_defaults(dofn.process)
  alive = weakref.ref(dofn)
  del dofn
  gc.collect()
  assert alive() is None
