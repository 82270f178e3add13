"""The Python API (autoais/api.py, docs/python-api.md): jobs as functions,
their results read back, errors raised, and load_scorer scoring pairs as the
jobs score them."""
import csv
import json
import pathlib

import pytest

import autoais
from tests.support.paths import EXAMPLES

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def t5_run(tmp_path_factory, tiny_t5_dirs, examples_corpus_dir):
  output = tmp_path_factory.mktemp("api") / "t5"
  result = autoais.evaluate(predictions=[EXAMPLES / "predictions" / "retrieve-then-read.csv",
                                         EXAMPLES / "predictions" / "closed-book-lm.csv"],
                            corpus=examples_corpus_dir, gold=EXAMPLES / "gold.jsonl",
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
  with pytest.raises(autoais.ConfigError, match="unknown argument"):
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
  with pytest.raises(autoais.ConfigError, match="--corpus: not a flag of this job"):
    autoais.claims(input=EXAMPLES / "claims" / "expertqa.jsonl", format="expertqa",
                   output_dir=tmp_path / "claims", corpus=tmp_path)
  with pytest.raises(autoais.ConfigError, match="--scorer --model: not a flag of this job"):
    autoais.build_corpus(input=EXAMPLES / "corpus" / "*.jsonl", output=tmp_path / "corpus",
                         scorer="t5", model=tmp_path)
  assert not (tmp_path / "claims").exists() and not (tmp_path / "corpus").exists()
