"""`autoais compare` on two real-data runs: the NQ-Open oracle leaderboard, then
the same leaderboard with one system's answers replaced on a known set of
questions. The flipped rows are exactly those; every change, interval and
McNemar p-value equals an independent computation (numpy's bootstrap with the
same seed and draws, the exact binomial from math.comb); refusals exit 2;
--fail_on_regression exits 3."""
import csv
import json
import math
import shutil

import numpy as np
import pytest

from autoais.beam_jobs import compare, evaluate
from tests.support.jobs import run_job

CHANGED_SYSTEM = "right-answer-right-passage"
CHANGED = 40  # questions whose answer the candidate replaces
SEED, SAMPLES = 7, 400


def _read_csv(path):
  with open(path, newline="", encoding="utf-8") as f:
    return list(csv.DictReader(f))


def _ratings(directory):
  return {(row["system_name"], row["question"]): row
          for row in _read_csv(directory / "ratings.csv")}


@pytest.fixture(scope="module")
def runs(nq_leaderboard_inputs, tmp_path_factory):
  inputs = nq_leaderboard_inputs
  root = tmp_path_factory.mktemp("compare")
  common = ["--corpus", inputs["corpus"], "--gold", inputs["gold_path"],
            "--bootstrap_samples", 100]
  assert run_job(evaluate, "--predictions", inputs["predictions"], "--output_dir",
                 root / "baseline", *common) == 0
  baseline = _ratings(root / "baseline")
  # The candidate: one system's answer replaced by one no passage holds, on the
  # first CHANGED questions (in file order) that the baseline rated Y.
  source = inputs["root"] / "predictions"
  (root / "predictions").mkdir()
  changed = set()
  for path in sorted(source.glob("*.csv")):
    rows = _read_csv(path)
    if path.stem == CHANGED_SYSTEM:
      for row in rows:
        key = (CHANGED_SYSTEM, row["question"])
        if len(changed) < CHANGED and baseline.get(key, {}).get("auto_ais") == "Y":
          row["answer"] = "zqxj never stated"
          changed.add(row["question"])
    with open(root / "predictions" / path.name, "w", newline="",
              encoding="utf-8") as f:
      writer = csv.DictWriter(f, fieldnames=list(rows[0]))
      writer.writeheader()
      writer.writerows(rows)
  assert len(changed) == CHANGED
  assert run_job(evaluate, "--predictions", root / "predictions" / "*.csv",
                 "--output_dir", root / "candidate", *common) == 0
  assert run_job(compare, "--baseline", root / "baseline", "--candidate",
                 root / "candidate", "--output_dir", root / "compare", "--seed", SEED,
                 "--bootstrap_samples", SAMPLES) == 0
  return {"root": root, "changed": changed, "out": root / "compare"}


def _systems(out):
  return {row["system_name"]: row
          for row in json.loads((out / "compare.json").read_text(encoding="utf-8"))[
              "systems"]}


def _bootstrap_interval(differences, samples, seed):
  """Percentile interval of the mean, resampling questions with replacement:
  numpy's default_rng(seed), indexes drawn 50 resamples at a time."""
  rng = np.random.default_rng(seed)
  n = len(differences)
  means = []
  for start in range(0, samples, 50):
    draws = rng.integers(0, n, size=(min(50, samples - start), n), dtype=np.int64)
    means.extend(differences[draws].mean(axis=1))
  return np.percentile(np.array(means), [2.5, 97.5])


def _exact_mcnemar(up, down):
  n = up + down
  if n == 0:
    return 1.0
  tail = sum(math.comb(n, k) for k in range(min(up, down) + 1)) / 2 ** n
  return min(1.0, 2 * tail)


def test_the_flipped_rows_are_exactly_the_changed_answers(runs):
  flips = _read_csv(runs["out"] / "compare.csv")
  assert {(row["system_name"], row["question"]) for row in flips} == {
      (CHANGED_SYSTEM, question) for question in runs["changed"]}
  for row in flips:
    assert row["baseline_auto_ais"] == "Y" and row["candidate_auto_ais"] == "N"
    assert row["candidate_answer"] == "zqxj never stated" != row["baseline_answer"]
    assert row["baseline_passage"] and row["baseline_passage"] == row["candidate_passage"]
  changes = [float(row["score_change"]) for row in flips]
  assert changes == sorted(changes)  # most lowered score first


def test_changes_intervals_and_mcnemar_equal_an_independent_computation(runs):
  root = runs["root"]
  baseline, candidate = _ratings(root / "baseline"), _ratings(root / "candidate")
  systems = _systems(runs["out"])
  assert set(systems) == {system for system, _ in baseline}
  for system, row in systems.items():
    questions = sorted(q for s, q in baseline if s == system and (s, q) in candidate)
    assert row["status"] == "both" and row["n_paired"] == len(questions) > 0
    for field, name in (("auto_ais", "autoais"), ("em", "em"), ("f1", "f1")):
      def value(ratings, question, field=field):
        cell = ratings[(system, question)][field]
        return float(cell == "Y") if field == "auto_ais" else float(cell)
      differences = 100.0 * np.array([value(candidate, q) - value(baseline, q)
                                      for q in questions])
      low, high = _bootstrap_interval(differences, SAMPLES, SEED)
      assert row[f"{name}_change"] == pytest.approx(differences.mean(), abs=1e-9)
      assert row[f"{name}_change_low"] == pytest.approx(low, abs=1e-9)
      assert row[f"{name}_change_high"] == pytest.approx(high, abs=1e-9)
    up = sum(baseline[(system, q)]["auto_ais"] == "N" and
             candidate[(system, q)]["auto_ais"] == "Y" for q in questions)
    down = sum(baseline[(system, q)]["auto_ais"] == "Y" and
               candidate[(system, q)]["auto_ais"] == "N" for q in questions)
    assert (row["flipped_to_y"], row["flipped_to_n"]) == (up, down)
    assert row["mcnemar_p_value"] == pytest.approx(_exact_mcnemar(up, down), rel=1e-9)
  changed = systems[CHANGED_SYSTEM]
  assert changed["flipped_to_n"] == CHANGED and changed["autoais_change_high"] < 0
  assert changed["autoais_change"] == pytest.approx(-100.0 * CHANGED / changed["n_paired"])
  assert changed["mcnemar_p_value"] < 1e-9
  assert all(row["autoais_change"] == 0 for name, row in systems.items()
             if name != CHANGED_SYSTEM)
  run = json.loads((runs["out"] / "run.json").read_text(encoding="utf-8"))
  assert run["status"] == "complete" and run["flipped_rows"] == CHANGED
  assert run["regressions"] == []  # no --fail_on_regression: none is flagged


def test_fail_on_regression_exits_3_past_the_bar_and_0_below_it(runs, tmp_path):
  root = runs["root"]
  drop = -_systems(runs["out"])[CHANGED_SYSTEM]["autoais_change"]
  args = ["--baseline", root / "baseline", "--candidate", root / "candidate"]
  assert run_job(compare, *args, "--output_dir", tmp_path / "fail",
                 "--fail_on_regression", round(drop / 2, 3)) == 3
  run = json.loads((tmp_path / "fail" / "run.json").read_text(encoding="utf-8"))
  assert run["status"] == "regression" and run["regressions"] == [CHANGED_SYSTEM]
  assert (tmp_path / "fail" / "compare.csv").exists()
  assert run_job(compare, *args, "--output_dir", tmp_path / "pass",
                 "--fail_on_regression", round(drop * 2, 3)) == 0


def _altered_copy(source, target, change):
  shutil.copytree(source, target)
  (target / "_autoais_outputs.json").unlink()
  run = json.loads((target / "run.json").read_text(encoding="utf-8"))
  change(run)
  (target / "run.json").write_text(json.dumps(run), encoding="utf-8")
  return target


def test_runs_scored_or_graded_differently_are_refused(runs, tmp_path, capsys):
  root = runs["root"]

  def threshold(run):
    run["scorer"]["threshold"] = 0.7

  def gold(run):
    run["n_gold"] += 1

  other_scorer = _altered_copy(root / "candidate", tmp_path / "scorer", threshold)
  other_gold = _altered_copy(root / "candidate", tmp_path / "gold", gold)
  args = ["--baseline", root / "baseline", "--output_dir"]
  assert run_job(compare, *args, tmp_path / "a", "--candidate", other_scorer) == 2
  assert "threshold" in capsys.readouterr().err
  assert not (tmp_path / "a").exists()
  assert run_job(compare, *args, tmp_path / "b", "--candidate", other_gold) == 2
  assert "different gold answers" in capsys.readouterr().err
  assert run_job(compare, *args, tmp_path / "c", "--candidate", other_scorer,
                 "--allow_changed_scorer", "true") == 0
  document = json.loads((tmp_path / "c" / "compare.json").read_text(encoding="utf-8"))
  assert document["scorer_changed"] == ["threshold: 0.5 -> 0.7"]
  for name in ("compare.md", "report.html"):
    assert "the change of model is the subject" in (tmp_path / "c" / name).read_text(
        encoding="utf-8")
  # Not an evaluate run.
  assert run_job(compare, *args, tmp_path / "d", "--candidate", runs["out"]) == 2
  assert "compare reads evaluate runs" in capsys.readouterr().err
