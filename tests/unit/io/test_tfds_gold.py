"""--gold tfds:natural_questions_open/validation, through tensorflow_datasets.

There is no network here, so the data set comes from tfds.testing.mock_data: the
real builder and tfds.load, with generated examples in place of the download.
"""
import csv
import json

import pytest

from autoais.beam_jobs import evaluate
from tests.support.jobs import run_job
from autoais.transforms.io.gold import read_gold
from autoais.transforms.stats.squad import exact_match_and_f1

tfds = pytest.importorskip("tensorflow_datasets")
SOURCE = "tfds:natural_questions_open/validation"


def test_tfds_gold_feeds_evaluate(tmp_path):
  with tfds.testing.mock_data(num_examples=12):
    gold = list(read_gold(SOURCE))
    assert [g.gold_index for g in gold] == list(range(12))
    assert all(isinstance(g.question, str) and g.answers for g in gold)
    predictions = tmp_path / "tfds-system.csv"
    with open(predictions, "w", newline="", encoding="utf-8") as f:
      writer = csv.writer(f)
      writer.writerow(["question", "answer", "attribution", "passage"])
      for g in gold[:6]:  # half answered, right, with a passage that contains it
        writer.writerow([g.question, g.answers[0], "p", f"« T » « T » {g.answers[0]}"])
    code = run_job(evaluate, "--predictions", predictions, "--gold", SOURCE,
                   "--output_dir", tmp_path / "out", "--bootstrap_samples", 20)
  assert code == 0
  manifest = json.loads((tmp_path / "out" / "run.json").read_text())
  assert manifest["n_gold"] == 12
  assert manifest["counts"]["scored"] == 6
  row = json.loads((tmp_path / "out" / "leaderboard.json").read_text())["systems"][0]
  expected_em = 100 * (6 + sum(exact_match_and_f1(g.answers, "")[0]
                               for g in gold[6:])) / 12
  assert row["em"] == pytest.approx(expected_em)
  assert row["n_predicted"] == 6
