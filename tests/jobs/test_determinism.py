"""Same inputs, byte-identical outputs: across runs, and between the in-process
and the multi-process DirectRunner (FnApiRunner with 2 worker processes)."""
import hashlib

import pytest

from autoais.beam_jobs import evaluate
from tests.support.jobs import run_job

COMPARED = ("ratings.parquet", "ratings.csv", "leaderboard.csv", "leaderboard.json",
            "leaderboard.md", "scores.txt", "dead_letter.jsonl")


def _digests(directory):
  return {name: hashlib.sha256((directory / name).read_bytes()).hexdigest()
          for name in COMPARED}


@pytest.fixture(scope="module")
def runs(nq_leaderboard_inputs, tmp_path_factory):
  inputs = nq_leaderboard_inputs
  root = tmp_path_factory.mktemp("determinism")
  modes = {
      "first": [],
      "second": [],
      "multi_process": ["--direct_running_mode=multi_processing",
                        "--direct_num_workers=2"],
  }
  outputs = {}
  for name, flags in modes.items():
    output = root / name
    assert run_job(evaluate, "--predictions", inputs["predictions"], "--corpus",
                   inputs["corpus"], "--gold", inputs["gold_path"], "--output_dir",
                   output, "--bootstrap_samples", 100, *flags) == 0
    outputs[name] = output
  return outputs


def test_two_runs_are_byte_identical(runs):
  assert _digests(runs["first"]) == _digests(runs["second"])


def test_multi_process_run_is_byte_identical(runs):
  assert _digests(runs["first"]) == _digests(runs["multi_process"])


def test_outputs_are_not_trivially_equal(runs):
  ratings = (runs["first"] / "ratings.csv").read_text(encoding="utf-8")
  assert ratings.count("\n") > 10000
