"""UntypedOutputDoFn: the base of a DoFn whose output Beam types as Any
without reading the bytecode of its process method.

When a pipeline is built, Beam infers each DoFn's output type from process's
bytecode (apache_beam.typehints.trivial_inference, following the calls it
makes a few levels deep) unless the DoFn declares it. For the stages that
every job applies several times (ReadRecords' reader, SortedRuns' spiller)
that walk concludes Any, the type the PCollection gets in any case, and was
the largest part of building a pipeline: about 0.1 s of CPU of the 1.0 to
1.3 s of a whole evaluate run on the bundled example, paid again in every
test that builds one. DoFn.infer_output_type is the hook Beam names for
setting the type; tests/unit/test_beam_internals.py holds that Beam's own
inference still concludes Any for each subclass, so the PCollections' types
(and their coders) are what they were.
"""
import apache_beam as beam
from apache_beam import typehints


class UntypedOutputDoFn(beam.DoFn):
  """A DoFn whose elements are typed Any, as Beam would infer them."""

  def infer_output_type(self, input_type):
    return typehints.Any
