"""Every figure says what made it (issue 46, item 1): each job that scores names
its scorer on every surface a person reads, and string-match is never called
AutoAIS (tests/support/scorer_surfaces.py holds the checks).

Here evaluate runs on its bundled example (string-match) in this process, its
console captured, and on rows with a human rating (report.html); it also runs
with a T5 model named by a hub id from an offline cache (the commit must be
named) and with a model directory, and compare compares the string-match run
with the T5 run. The other jobs' bundled examples (agreement, audit, claims,
citations, sck: string-match) are checked where the docs' commands already run
them, from the wheel (tests/deploy/test_newcomer.py, the same checks): running
them here again checked the same surfaces a second time.
"""
import contextlib
import io
import json

import pytest

from autoais import api
from autoais.transforms.scoring.label import measure_name, scored_by, scorer_id
from tests.support.hub_cache import add_to_hub_cache
from tests.support.paths import PROJECT_ROOT
from tests.support.scorer_surfaces import SURFACES, check_scorer_named

EXAMPLES = PROJECT_ROOT / "examples"
REPO = "org/tiny-true"


# The jobs with bootstrap intervals: fewer resamples, the same surfaces.
_BOOTSTRAPPED = ("evaluate", "audit", "claims", "citations", "compare")


def _run(job, **flags):
  """Runs `job` in this process; returns the console (stdout) it printed."""
  if job in _BOOTSTRAPPED:
    flags.setdefault("bootstrap_samples", 20)
  console = io.StringIO()
  with contextlib.redirect_stdout(console):
    api.run(job, verbose=True, **flags)
  return console.getvalue()


@pytest.fixture(scope="module")
def runs(tmp_path_factory, example_corpus, tiny_t5):
  """{name: (job, output dir, console)} of evaluate's runs and compare's."""
  out = tmp_path_factory.mktemp("named")
  evaluate = dict(predictions=str(EXAMPLES / "predictions" / "*.csv"),
                  corpus=str(example_corpus), gold=str(EXAMPLES / "gold.jsonl"))
  table = {
      "evaluate": ("evaluate", evaluate),
      "evaluate-t5": ("evaluate", dict(evaluate, scorer="t5", model=tiny_t5,
                                       torch_threads=1)),
      # Rows with their passage and a human rating: report.html too.
      "evaluate-rated": ("evaluate", dict(
          predictions=str(EXAMPLES / "agreement" / "ratings.csv"))),
  }
  done = {}
  for name, (job, flags) in table.items():
    done[name] = (job, out / name, _run(job, output_dir=str(out / name), **flags))
  done["compare"] = ("compare", out / "compare", _run(
      "compare", baseline=str(out / "evaluate"), candidate=str(out / "evaluate-t5"),
      allow_changed_scorer=True, output_dir=str(out / "compare")))
  return done


@pytest.mark.parametrize("name", ["evaluate", "evaluate-t5", "evaluate-rated", "compare"])
def test_every_surface_names_the_scorer(runs, name):
  job, output_dir, console = runs[name]
  checked = check_scorer_named(job, output_dir, console)
  # The pages a person reads first are among those checked, and every page.
  assert SURFACES[job][0] in checked
  if job == "compare" or name == "evaluate-rated":
    assert "report.html" in checked


def test_every_job_that_scores_is_checked():
  from autoais.beam_jobs.cli import JOBS  # pylint: disable=import-outside-toplevel
  from autoais.beam_jobs.options import ScorerOptions  # pylint: disable=import-outside-toplevel
  import importlib  # pylint: disable=import-outside-toplevel
  scoring = {job for job, module in JOBS.items()
             if ScorerOptions in getattr(_options_class(importlib.import_module(module)),
                                         "SHARED_OPTIONS", ())}
  assert scoring, "no job found that takes the scorer flags"
  assert scoring | {"compare"} <= set(SURFACES), sorted(scoring - set(SURFACES))


def _options_class(module):
  from apache_beam.options.pipeline_options import PipelineOptions  # pylint: disable=import-outside-toplevel
  for value in vars(module).values():
    if (isinstance(value, type) and issubclass(value, PipelineOptions)
        and value.__module__ == module.__name__):
      return value
  return None


def test_a_string_match_leaderboard_says_string_match(runs):
  _, output_dir, console = runs["evaluate"]
  board = (output_dir / "leaderboard.md").read_text(encoding="utf-8")
  assert "| string-match % |" in board and "AutoAIS %" not in board
  assert "\nstring-match: 0.125\n" in (output_dir / "scores.txt").read_text()
  assert console.startswith("Scored by: string-match")


# The figure's columns of leaderboard.csv, after its name.
_FIGURE_COLUMNS = ("", "_ci_low", "_ci_high", "_scored", "_rated")


def test_the_figure_columns_are_named_after_the_scorer(runs):
  """leaderboard.csv/.json say `string_match...` for the baseline and
  `autoais...` for a model; the Python API reads either, and compare reads
  each run's figure under its name (a string-match run beside a model's:
  `attribution...`)."""
  results = {name: api.JobResult(job, str(output_dir), 0)
             for name, (job, output_dir, _) in runs.items()
             if name in ("evaluate", "evaluate-t5", "compare")}
  for name, figure, other in (("evaluate", "string_match", "autoais"),
                              ("evaluate-t5", "autoais", "string_match")):
    board = results[name].leaderboard
    assert board and all(f"{figure}{end}" in row for row in board for end in _FIGURE_COLUMNS)
    assert not [column for column in board[0] if other in column], name
    document = json.loads((runs[name][1] / "leaderboard.json").read_text())
    assert set(document["systems"][0]) == set(board[0]) - {"scorer"}
    assert f"{figure}_ci_low" in document["units"]
  compared = {row["system_name"]: row for row in results["compare"].leaderboard}
  for name, run in (("evaluate", "baseline"), ("evaluate-t5", "candidate")):
    figure = "string_match" if name == "evaluate" else "autoais"
    for row in results[name].leaderboard:
      assert compared[row["system_name"]][f"leaderboard_attribution_{run}"] == row[figure]
  assert all("attribution_change" in row for row in compared.values())


def test_a_model_leaderboard_names_the_model(runs, tiny_t5):
  _, output_dir, console = runs["evaluate-t5"]
  board = (output_dir / "leaderboard.md").read_text(encoding="utf-8")
  assert "| AutoAIS % |" in board and str(tiny_t5) in board.split("\n")[0]
  assert f"scorer: t5 {tiny_t5}\nAutoAIS: " in (output_dir / "scores.txt").read_text()
  assert str(tiny_t5) in console.split("\n")[0]


def test_compare_names_both_scorers(runs):
  _, output_dir, _ = runs["compare"]
  page = (output_dir / "compare.md").read_text(encoding="utf-8")
  # Baseline string-match, candidate a model: the figures are neither's name.
  assert "| attribution % baseline |" in page
  html = (output_dir / "report.html").read_text(encoding="utf-8")
  assert "EM change (points)" in html  # as compare.md shows it
  flipped = json.loads((output_dir / "run.json").read_text())["flipped_rows"]
  assert f"{flipped} row(s) flipped decision between the runs: compare.csv" in html


def test_a_hub_model_is_named_with_its_commit(tmp_path, monkeypatch, example_corpus,
                                             tiny_t5):
  commit = add_to_hub_cache(tmp_path / "hf_home", REPO, tiny_t5)
  monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
  monkeypatch.delenv("HF_HUB_CACHE", raising=False)
  monkeypatch.setenv("HF_HUB_OFFLINE", "1")
  output_dir = tmp_path / "out"
  console = _run("evaluate", predictions=str(EXAMPLES / "predictions" / "*.csv"),
                 corpus=str(example_corpus), gold=str(EXAMPLES / "gold.jsonl"),
                 scorer="t5", model=REPO, torch_threads=1, output_dir=str(output_dir))
  check_scorer_named("evaluate", output_dir, console)
  first = console.split("\n")[0]
  assert first == f"Scored by: t5, model {REPO} at commit {commit} (revision main)."
  assert f"t5 {REPO}@{commit}" in (output_dir / "leaderboard.csv").read_text()


@pytest.mark.parametrize("block, measure, cell, line", [
    ({"name": "string-match", "family": "string-match", "model": None}, "string-match",
     "string-match", "Scored by: string-match, the baseline"),
    ({"name": "t5", "family": "t5", "model": "org/m", "model_revision": "v1",
      "model_commit": "a" * 40}, "AutoAIS", "t5 org/m@" + "a" * 40,
     "Scored by: t5, model org/m at commit " + "a" * 40 + " (revision v1)."),
    ({"name": "remote", "family": "remote", "endpoint": "http://h:8080"}, "AutoAIS",
     "remote http://h:8080", "Scored by: remote, http://h:8080."),
    ({"name": "llm-judge", "family": "llm-judge", "judge_model": "q",
      "judge_url": "http://j"}, "AutoAIS", "llm-judge q at http://j",
     "Scored by: llm-judge, q at http://j."),
])
def test_the_words_of_each_family(block, measure, cell, line):
  assert measure_name(block) == measure
  assert scorer_id(block) == cell
  assert scored_by(block).startswith(line)
