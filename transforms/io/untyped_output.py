"""UntypedOutputDoFn: the base of a DoFn whose output Beam types as Any
without reading the bytecode of its process method.

When a pipeline is built, Beam infers each DoFn's output type from process's
bytecode (apache_beam.typehints.trivial_inference, following the calls it
makes a few levels deep) unless the DoFn declares it. For the stages every job
applies several times (ReadRecords' reader, SortedRuns' spiller, the per-bundle
summing of counts.py) and for evaluate's leaderboard writer and citations'
item assembly, that walk concludes Any, the type their PCollections get in any
case, and it was the largest part of building a pipeline, paid again in every
test that runs a job (bench/pipeline_build.py: 8.5% of the CPU of the six
scoring jobs on their examples). DoFn.infer_output_type is the hook Beam names for
setting the type; tests/unit/test_beam_internals.py holds that Beam's own
inference still concludes Any for each subclass, with the input types every
scoring job gives them, so the PCollections' types (and coders) are unchanged.
"""
import apache_beam as beam
from apache_beam import typehints


class UntypedOutputDoFn(beam.DoFn):
  """A DoFn whose elements are typed Any, as Beam would infer them."""

  def infer_output_type(self, input_type):
    return typehints.Any
