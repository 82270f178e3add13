"""Test-only: a runner whose module declares pipeline options of its own, as
Beam's DaskRunner (--dask_client_address) and RenderRunner (--render_output)
do. They exist for the parser only once this module is imported, which
`--runner tests.support.runners.LabelledRunner` does
(beam_jobs.parsing.import_runner_options). Nothing else imports it."""
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner


class LabelledRunnerOptions(PipelineOptions):

  @classmethod
  def _add_argparse_args(cls, parser):
    parser.add_argument("--run_label", default=None,
                        help="A label for LabelledRunner's runs (test-only).")


class LabelledRunner(FnApiRunner):
  """The FnApiRunner under another name, with options of its own."""
