"""Refusals at launch, for every job (issue 28, item 4): exit 2, a message naming
the flag and the path, nothing written.

  * An output directory that is, or holds, an input file or a directory the job
    reads (beam_jobs/output_dir.py): the first run is refused, not only the
    second one, which would read the first run's outputs over the same glob.
  * A JSON Lines input whose first record lacks a required field, as a CSV or
    Parquet header without that column is (transforms/io/records.py
    `require_columns`), for every reader of JSON Lines.

Each case copies a job's example inputs (examples/<job>/) and runs the job in
process on them.
"""
import shutil

import pytest

from autoais.beam_jobs import (agreement, ais_annotations, audit, build_corpus, citations,
                               claims, evaluate, sck)
from tests.support.jobs import run_job
from tests.support.paths import PROJECT_ROOT
from tests.robustness.test_output_safety import snapshot

EXAMPLES = PROJECT_ROOT / "examples"
GOLD = EXAMPLES / "gold.jsonl"


def _copy_examples(name, destination):
  shutil.copytree(EXAMPLES / name, destination)
  return destination


# job, the example folder copied, and its arguments given that folder (d) and
# the example corpus (c); every input lies in d.
_JOBS_READING_A_FOLDER = {
    "evaluate": (evaluate, "predictions", lambda d, c: [
        "--predictions", d / "*.csv", "--gold", GOLD, "--corpus", c]),
    "build-corpus": (build_corpus, "corpus", lambda d, c: ["--input", d / "*.jsonl"]),
    "agreement": (agreement, "agreement", lambda d, c: [
        "--input", d / "ratings.csv", "--format", "ratings"]),
    "ais-annotations": (ais_annotations, "ais-annotations", lambda d, c: [
        "--input", d / "ann_*.csv"]),
    "audit": (audit, "audit", lambda d, c: [
        "--answers", d / "answers.csv", "--candidates", d / "runs" / "*.trec",
        "--topics", d / "topics.tsv", "--corpus", c]),
    "citations": (citations, "citations", lambda d, c: ["--input", d / "*.json"]),
    "claims": (claims, "claims", lambda d, c: [
        "--input", d / "expertqa.jsonl", "--format", "expertqa"]),
    "sck": (sck, "sck", lambda d, c: ["--input", d / "answers.csv", "--kg", d / "kg.csv"]),
}


@pytest.mark.parametrize("job", sorted(_JOBS_READING_A_FOLDER))
def test_an_output_directory_holding_the_inputs_is_refused(job, tmp_path, example_corpus,
                                                           capsys):
  """The reported case (`--output_dir` the predictions' folder), for every job:
  refused on the first run."""
  module, examples, arguments = _JOBS_READING_A_FOLDER[job]
  folder = _copy_examples(examples, tmp_path / "inputs")
  output_flag = "--output" if job == "build-corpus" else "--output_dir"
  before = snapshot(tmp_path)
  assert run_job(module, *arguments(folder, example_corpus), output_flag, folder) == 2
  error = capsys.readouterr().err
  assert f"lies inside {output_flag} {folder}" in error, error
  assert "nothing was written" in error
  assert snapshot(tmp_path) == before


def test_an_output_directory_holding_an_input_deeper_down_is_refused(
    tmp_path, example_corpus, capsys):
  folder = _copy_examples("predictions", tmp_path / "runs" / "2024" / "predictions")
  before = snapshot(tmp_path)
  assert run_job(evaluate, "--predictions", folder / "keyword-baseline.csv", "--gold",
                 GOLD, "--corpus", example_corpus, "--output_dir", tmp_path / "runs") == 2
  error = capsys.readouterr().err
  assert (f"--predictions {folder / 'keyword-baseline.csv'} lies inside --output_dir "
          f"{tmp_path / 'runs'}") in error, error
  assert snapshot(tmp_path) == before


def test_an_output_directory_holding_a_directory_the_job_reads_is_refused(
    tmp_path, example_corpus, capsys):
  corpus = tmp_path / "work" / "corpus"
  shutil.copytree(example_corpus, corpus)
  before = snapshot(tmp_path)
  assert run_job(evaluate, "--predictions", EXAMPLES / "predictions" / "*.csv",
                 "--gold", GOLD, "--corpus", corpus, "--output_dir",
                 tmp_path / "work") == 2
  error = capsys.readouterr().err
  assert f"--output_dir {tmp_path / 'work'} holds --corpus {corpus}" in error, error
  assert snapshot(tmp_path) == before
