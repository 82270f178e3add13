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
  assert line == ("evaluate: 20s | rows 400 scored of 1,200 in (20/s) | model 250 of "
                  "1,000 examples (50.0/s, ETA 15s) | cache hits 7")
  assert "ETA 1h23m" in progress.progress_line(
      "x", {"model_queued": 5000, "model_examples": 0}, 1.0, 1.0)


def test_console_progress_counts_across_worker_processes(tmp_path):
  """A slow model (0.3 s a call of at most 10 examples) on 2 worker processes:
  lines every 0.4 s show the model's work advancing, with a rate and an ETA."""
  examples = [(f"row{i}", AttributionExample(f"premise {i}", f"hypothesis {i}", "", ""))
              for i in range(200)]
  stream = io.StringIO()
  options = PipelineOptions(["--direct_running_mode=multi_processing",
                             "--direct_num_workers=2"])
  with progress.ConsoleProgress("test", 0.4, stream=stream,
                                directory=str(tmp_path / "progress")):
    pipeline = beam.Pipeline(runner=FnApiRunner(), options=options)
    scores = (pipeline | beam.Create(examples)
              | fanout.ScoreUniqueExamples(DigestHandler(seconds_per_call=0.3),
                                              "digest", max_examples_per_call=10))
    _ = scores["scored"] | beam.Map(lambda _: None)
    result = pipeline.run()
    result.wait_until_finish()
  models = [tuple(match.groups()) for match in map(_LINE.search, stream.getvalue().splitlines())
            if match]
  done = [int(m[0]) for m in models]
  assert all(int(m[1]) == 200 for m in models)  # every example queued before the model
  assert any(0 < d < 200 for d in done), stream.getvalue()  # seen while it ran
  assert done == sorted(done)
  assert any(m[3] for m in models if 0 < int(m[0]) < 200)  # an ETA while it ran
  counters = {}
  for counter in result.metrics().query(
      MetricsFilter().with_namespace(progress.NAMESPACE))["counters"]:
    name = counter.key.metric.name
    counters[name] = counters.get(name, 0) + counter.committed
  assert counters["model_examples"] == counters["model_queued"] == 200
  assert counters["rows_to_score"] == counters["rows_scored"] == 200


def test_job_prints_the_runs_totals(examples_corpus_dir, tmp_path, capsys):
  assert run_job(evaluate, "--predictions", EXAMPLES / "predictions" / "*.csv",
                 "--corpus", examples_corpus_dir, "--gold", EXAMPLES / "gold.jsonl",
                 "--output_dir", tmp_path / "out", "--bootstrap_samples", 10) == 0
  manifest = json.loads((tmp_path / "out" / "run.json").read_text())
  counts = manifest["counts"]
  dead = (tmp_path / "out" / "dead_letter.jsonl").read_text().splitlines()
  last = capsys.readouterr().err.strip().splitlines()[-1]
  assert re.match(r"evaluate: \d+s \| rows \d+ scored of \d+ in", last), last
  scored, rows_in = map(int, re.search(r"rows (\d+) scored of (\d+) in", last).groups())
  assert scored == counts["scored"]
  assert rows_in == counts["read"] - counts["rejected"] - counts[
      "by_reason"]["unmatched:question_not_in_gold"]
  assert f"dead lettered {len(dead)}" in last
