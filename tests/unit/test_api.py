"""The Python API (autoais/api.py, docs/python-api.md): jobs as functions,
their results read back, errors raised, and load_scorer scoring pairs as the
jobs score them."""
import csv
import json
import pathlib

import re

import pytest

import autoais
from tests.support.paths import EXAMPLES

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def t5_run(tmp_path_factory, tiny_t5_dirs, example_corpus):
  output = tmp_path_factory.mktemp("api") / "t5"
  result = autoais.evaluate(predictions=[EXAMPLES / "predictions" / "retrieve-then-read.csv",
                                         EXAMPLES / "predictions" / "closed-book-lm.csv"],
                            corpus=example_corpus, gold=EXAMPLES / "gold.jsonl",
                            output_dir=output, scorer="t5", model=tiny_t5_dirs[3],
                            bootstrap_samples=10)
  return result


def test_a_job_returns_its_outputs(t5_run):
  assert t5_run.output_dir and t5_run.exit_code == 0
  assert t5_run.run == json.loads((pathlib.Path(t5_run.output_dir) / "run.json").read_text())
  with open(f"{t5_run.output_dir}/leaderboard.csv", newline="", encoding="utf-8") as f:
    written = list(csv.DictReader(f))
  assert [row["system_name"] for row in t5_run.leaderboard] == [
      row["system_name"] for row in written] == ["closed-book-lm", "retrieve-then-read"]
  for typed, text in zip(t5_run.leaderboard, written):
    assert set(typed) == set(text)
    assert isinstance(typed["n_gold"], int) and typed["n_gold"] == int(text["n_gold"])
    assert isinstance(typed["autoais"], (int, float))
    assert typed["autoais"] == float(text["autoais"])
    assert typed["human_ais"] is None and text["human_ais"] == ""


def test_load_scorer_scores_pairs_as_the_job_did(t5_run, tiny_t5_dirs):
  passages = {}
  with open(EXAMPLES / "corpus" / "wiki_sample.jsonl", encoding="utf-8") as f:
    for line in f:
      record = json.loads(line)
      passages[record["id"]] = record["contents"]
  rows = [row for row in t5_run.table("ratings.csv") if row["nli_score"] is not None]
  assert len(rows) > 10
  scorer = autoais.load_scorer("t5", model=tiny_t5_dirs[3])
  scores = scorer.score([autoais.premise(passages[row["attribution"]]) for row in rows],
                        [autoais.hypothesis(row["question"], row["answer"]) for row in rows])
  assert scores == pytest.approx([row["nli_score"] for row in rows], abs=1e-6)
  assert scorer.description["model"] == str(tiny_t5_dirs[3])


def test_errors_are_raised_with_the_commands_message(tmp_path, tiny_t5_dirs):
  with pytest.raises(autoais.ConfigError, match="missing required option.*--output_dir"):
    autoais.evaluate(predictions=EXAMPLES / "predictions" / "*.csv",
                     gold=EXAMPLES / "gold.jsonl")
  with pytest.raises(autoais.ConfigError, match="--model needs a model scorer"):
    autoais.evaluate(predictions=EXAMPLES / "predictions" / "*.csv",
                     gold=EXAMPLES / "gold.jsonl", output_dir=tmp_path / "out",
                     model=tiny_t5_dirs[3])
  # In the keyword's own form, with the flag it most likely meant (issue 46).
  with pytest.raises(autoais.ConfigError, match=r"evaluate\(\) got unknown keyword "
                     r"argument\(s\): treshold= \(did you mean threshold=\?\)"):
    autoais.evaluate(predictions=EXAMPLES / "predictions" / "*.csv",
                     gold=EXAMPLES / "gold.jsonl", output_dir=tmp_path / "out",
                     treshold=0.4)
  assert not (tmp_path / "out").exists()


def test_load_scorer_refuses_what_it_would_ignore(tiny_t5_dirs):
  with pytest.raises(autoais.ConfigError, match="scorer flags only, not output_dir="):
    autoais.load_scorer("t5", model=tiny_t5_dirs[3], output_dir="out")
  with pytest.raises(autoais.ConfigError, match="--endpoint is for --scorer remote"):
    autoais.load_scorer("t5", model=tiny_t5_dirs[3], endpoint="http://127.0.0.1:9")
  with pytest.raises(autoais.ConfigError, match="scores an answer against a passage"):
    autoais.load_scorer("string-match")
  for unused in ({"threshold": 0.9}, {"score_cache": "cache"}, {"large_model": True}):
    with pytest.raises(autoais.ConfigError, match=f"so {next(iter(unused))}= would change "
                       "nothing"):
      autoais.load_scorer("t5", model=tiny_t5_dirs[3], **unused)


def test_a_value_argparse_refuses_raises_config_error_with_its_message(tmp_path):
  """Before, SystemExit(2), the message left in the redirected console."""
  with pytest.raises(autoais.ConfigError, match="--bootstrap_samples: invalid int value"):
    autoais.evaluate(predictions=tmp_path / "p.csv", output_dir=tmp_path / "out",
                     bootstrap_samples="many")


def test_flags_become_the_commands_flags():
  from autoais.api import flags_to_argv  # pylint: disable=import-outside-toplevel
  assert flags_to_argv({"predictions": ["a.csv", "b.csv"], "large_model": True,
                        "corpus": None, "threshold": 0.25}) == [
                            "--predictions=a.csv,b.csv", "--large_model=true",
                            "--threshold=0.25"]


def test_a_flag_of_another_job_is_refused_in_one_process(tmp_path):
  # Every job's options are registered once its module is imported: a flag of
  # evaluate given to claims (or a scorer flag given to build-corpus) would
  # parse, and be ignored.
  from autoais.beam_jobs import evaluate  # pylint: disable=import-outside-toplevel,unused-import
  with pytest.raises(autoais.ConfigError, match=r"claims\(\) got unknown keyword "
                     r"argument\(s\): corpus= \(another job's flag\)"):
    autoais.claims(input=EXAMPLES / "claims" / "expertqa.jsonl", format="expertqa",
                   output_dir=tmp_path / "claims", corpus=tmp_path)
  with pytest.raises(autoais.ConfigError, match=r"scorer= \(another job's flag\), "
                     r"model= \(another job's flag\)"):
    autoais.build_corpus(input=EXAMPLES / "corpus" / "*.jsonl", output=tmp_path / "corpus",
                         scorer="t5", model=tmp_path)
  assert not (tmp_path / "claims").exists() and not (tmp_path / "corpus").exists()


# ----------------------------------------------------------------------------
# A notebook user's API (issue 46, item 4).


def _jobs():
  from autoais.beam_jobs.cli import JOBS  # pylint: disable=import-outside-toplevel
  return JOBS


@pytest.mark.parametrize("job", sorted(_jobs()))
def test_every_job_has_a_real_signature_and_docstring(job):
  import inspect  # pylint: disable=import-outside-toplevel
  from autoais import api  # pylint: disable=import-outside-toplevel
  # autoais.api's: `autoais.serve` is the serve/ subpackage once it is imported.
  function = getattr(api, job.replace("-", "_"))
  signature = inspect.signature(function)
  flags = {action.dest: action for _, actions in api._flag_groups(job)  # pylint: disable=protected-access
           for action in actions}
  assert flags
  for name, action in flags.items():
    parameter = signature.parameters[name]
    assert parameter.kind is inspect.Parameter.KEYWORD_ONLY
    if name == "progress_interval" and job != "serve":
      # A call prints no progress lines unless verbose: the signature said the
      # command's 10.0, which a call without verbose did not use.
      assert parameter.default is None
      assert (f" {name} (default None: off, or with verbose=True the command's "
              f"{action.default!r}): ") in " ".join(function.__doc__.split())
      continue
    assert parameter.default == action.default, name  # typed: 0.5, False, None, 1000
    assert f"  {name} (default {action.default!r}): " in function.__doc__, name
  assert signature.parameters["verbose"].default is False
  assert function.__doc__.startswith(f"`autoais {job}` in this process")
  assert job in autoais.__all__ or job.replace("-", "_") in autoais.__all__


def test_typed_defaults_name_their_types():
  import inspect  # pylint: disable=import-outside-toplevel
  parameters = inspect.signature(autoais.evaluate).parameters
  assert (parameters["threshold"].default, parameters["threshold"].annotation) == (
      0.5, float)
  assert parameters["large_model"].default is False
  assert parameters["large_model"].annotation is bool
  assert parameters["bootstrap_samples"].annotation is int
  assert parameters["corpus"].default is None
  assert "compare" in dir(autoais) and callable(autoais.compare)


def test_a_new_job_needs_no_api_edit(monkeypatch):
  """A job added to beam_jobs/cli.py's JOBS (as issue 48 adds training-data)
  is a function of the API, its flags its keywords."""
  import sys  # pylint: disable=import-outside-toplevel
  import types  # pylint: disable=import-outside-toplevel
  from apache_beam.options.pipeline_options import PipelineOptions  # pylint: disable=import-outside-toplevel
  from autoais.beam_jobs import cli  # pylint: disable=import-outside-toplevel
  module = types.ModuleType("autoais_fake_job")
  module.__doc__ = "fake-job: a job the API has never heard of."

  class FakeJobOptions(PipelineOptions):
    @classmethod
    def _add_argparse_args(cls, parser):
      parser.add_argument("--flavour", default="plain", help="The flavour.")
      parser.add_argument("--strength", type=float, default=0.25, help="How strong.")

  FakeJobOptions.__module__ = module.__name__
  module.FakeJobOptions = FakeJobOptions
  monkeypatch.setitem(sys.modules, module.__name__, module)
  monkeypatch.setitem(cli.JOBS, "fake-job", module.__name__)
  import inspect  # pylint: disable=import-outside-toplevel
  function = autoais.fake_job
  assert inspect.signature(function).parameters["strength"].default == 0.25
  assert "flavour (default 'plain'): The flavour." in function.__doc__


def test_a_job_prints_nothing_unless_asked(tmp_path, capsys, example_corpus):
  flags = dict(predictions=EXAMPLES / "predictions" / "*.csv", corpus=example_corpus,
               gold=EXAMPLES / "gold.jsonl", bootstrap_samples=10)
  quiet = autoais.evaluate(output_dir=tmp_path / "quiet", **flags)
  printed = capsys.readouterr()
  assert printed.out == "" and "rows" not in printed.err
  assert quiet.console.startswith("Scored by: string-match")
  progress = re.compile(r"(^|\n)evaluate: \d+s \|")  # a progress line
  assert not progress.search(quiet.console)
  # progress_interval=None is the signature's default: as not given.
  quiet = autoais.evaluate(output_dir=tmp_path / "none", progress_interval=None, **flags)
  assert not progress.search(quiet.console) and capsys.readouterr().out == ""
  shown = autoais.evaluate(output_dir=tmp_path / "shown", progress_interval=10, **flags)
  assert progress.search(shown.console)  # the check can fail
  assert "| closed-book-lm |" in quiet.console
  loud = autoais.evaluate(output_dir=tmp_path / "loud", verbose=True, **flags)
  assert capsys.readouterr().out.startswith("Scored by: string-match")
  assert loud.console == ""


def test_tables_are_typed_and_found_by_stem(tmp_path, example_corpus):
  result = autoais.evaluate(predictions=EXAMPLES / "predictions" / "*.csv",
                            corpus=example_corpus, gold=EXAMPLES / "gold.jsonl",
                            output_dir=tmp_path / "out", bootstrap_samples=10)
  ratings = result.table("ratings")
  assert ratings == result.table("ratings.csv")
  # A true/false column is bools ('false' as a string would be truthy).
  assert {row["truncated"] for row in ratings} == {False}
  assert all(isinstance(row["em"], (int, float)) for row in ratings)
  assert result.table("leaderboard") == result.leaderboard
  with pytest.raises(FileNotFoundError, match=r"wrote no leaderbord.csv .*; its tables: "
                     r"leaderboard, ratings"):
    result.table("leaderbord")


def test_the_docs_table_names_every_job():
  text = (EXAMPLES.parent / "docs" / "python-api.md").read_text(encoding="utf-8")
  table = text.split("## Notebook")[0]
  for job in _jobs():
    name = job.replace("-", "_")
    assert f"autoais.{name}(" in table or f"autoais.api.{name}(" in table, job
