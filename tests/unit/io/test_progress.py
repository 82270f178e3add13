"""Progress of long runs: console lines at a steady interval with rates and an
ETA (counted across worker processes), and Beam counters whose totals are the
run's."""
import io
import json
import re

import apache_beam as beam
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from autoais.beam_jobs import evaluate
from autoais.schemas import AttributionExample
from tests.support.jobs import run_job
from tests.support.paths import EXAMPLES
from tests.support.scorers import DigestHandler
from autoais.transforms.io import progress
from autoais.transforms.scoring import fanout

_LINE = re.compile(r"model (\d+) of (\d+) examples(?: \(([\d.,]+)/s(?:, ETA (\w+))?\))?")


def test_progress_line_reports_rates_and_time_left():
  totals = {"rows_to_score": 1200, "rows_scored": 400, "model_queued": 1000,
            "model_examples": 250, "cache_hits": 7}
  line = progress.progress_line("evaluate", totals, 20.0, 50.0)
  assert line == ("evaluate: 20s | rows 400 scored of 1,200 at the scorer (20/s) | "
                  "model 250 of 1,000 examples (50.0/s, ETA 15s) | cache hits 7")
  assert "ETA 1h23m" in progress.progress_line(
      "x", {"model_queued": 5000, "model_examples": 0}, 1.0, 1.0)


def test_progress_line_of_a_run_with_no_row_at_a_scorer():
  """A job that scores nothing (build-corpus, compare), or one still reading
  its inputs, says it is running, not "rows 0 scored of 0 at the scorer"."""
  assert progress.progress_line("build-corpus", {}, 20.0, None) == "build-corpus: 20s | running"
  assert progress.progress_line("compare", {"dead_lettered": 3}, 5.0, None) == (
      "compare: 5s | dead lettered 3")
  assert progress.progress_line("evaluate", {"rows_to_score": 10}, 2.0, None) == (
      "evaluate: 2s | rows 0 scored of 10 at the scorer (0/s)")


class _Console(io.StringIO):
  """The console the progress lines go to: once a line shows the model's work
  part done with an ETA, it creates `release_file`, which lets the held model
  (DigestHandler) go on."""

  def __init__(self, release_file):
    super().__init__()
    self._release_file = release_file

  def write(self, text):
    written = super().write(text)
    match = _LINE.search(text)
    if match and 0 < int(match.group(1)) < int(match.group(2)) and match.group(4):
      open(self._release_file, "a", encoding="utf-8").close()
    return written


def test_console_progress_counts_across_worker_processes(tmp_path):
  """A model on 2 worker processes, held after its first call in each until a
  progress line (every 0.4 s) has shown its work part done with a rate and an
  ETA: the lines count across processes while it runs, whatever the load."""
  examples = [(f"row{i}", AttributionExample(f"premise {i}", f"hypothesis {i}", "", ""))
              for i in range(200)]
  release_file = str(tmp_path / "release")
  stream = _Console(release_file)
  options = PipelineOptions(["--direct_running_mode=multi_processing",
                             "--direct_num_workers=2"])
  with progress.ConsoleProgress("test", 0.4, stream=stream,
                                directory=str(tmp_path / "progress")):
    pipeline = beam.Pipeline(runner=FnApiRunner(), options=options)
    scores = (pipeline | beam.Create(examples)
              | fanout.ScoreUniqueExamples(DigestHandler(release_file=release_file),
                                           "digest", str(tmp_path / "work"),
                                           max_examples_per_call=10))
    _ = scores["scored"] | beam.Map(lambda _: None)
    result = pipeline.run()
    result.wait_until_finish()
  models = [tuple(match.groups()) for match in map(_LINE.search, stream.getvalue().splitlines())
            if match]
  done = [int(m[0]) for m in models]
  queued = [int(m[1]) for m in models]
  # Every example is queued before the model starts: a line that shows model
  # work shows all 200 (before that, each process's queue count arrives when
  # its bundle ends).
  assert all(q == 200 for d, q in zip(done, queued) if d), stream.getvalue()
  assert queued == sorted(queued) and done == sorted(done)
  assert any(m[3] for m in models if 0 < int(m[0]) < 200), stream.getvalue()  # an ETA while it ran
  counters = {}
  for counter in result.metrics().query(
      MetricsFilter().with_namespace(progress.NAMESPACE))["counters"]:
    name = counter.key.metric.name
    counters[name] = counters.get(name, 0) + counter.committed
  assert counters["model_examples"] == counters["model_queued"] == 200
  assert counters["rows_to_score"] == counters["rows_scored"] == 200


def test_job_prints_the_runs_totals(example_corpus, tmp_path, capsys):
  assert run_job(evaluate, "--predictions", EXAMPLES / "predictions" / "*.csv",
                 "--corpus", example_corpus, "--gold", EXAMPLES / "gold.jsonl",
                 "--output_dir", tmp_path / "out", "--bootstrap_samples", 10) == 0
  manifest = json.loads((tmp_path / "out" / "run.json").read_text())
  counts = manifest["counts"]
  dead = (tmp_path / "out" / "dead_letter.jsonl").read_text().splitlines()
  last = capsys.readouterr().err.strip().splitlines()[-1]
  assert re.match(r"evaluate: \d+s \| rows \d+ scored of \d+ at the scorer", last), last
  scored, rows_in = map(int, re.search(r"rows (\d+) scored of (\d+) at the scorer",
                                       last).groups())
  assert scored == counts["scored"]
  assert rows_in == counts["read"] - counts["rejected"] - counts[
      "by_reason"]["unmatched:question_not_in_gold"]
  assert f"dead lettered {len(dead)}" in last
