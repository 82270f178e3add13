"""`autoais evaluate` with human ratings: a synthetic 23-system leaderboard built
to known correlations. Every agreement figure must equal scikit-learn / scipy on
the rows the job wrote, the bootstrap CIs must be the percentiles of scipy's
correlations over the documented resamples, and the outputs must be
byte-identical across runs and the multi-process runner."""
import csv
import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from scipy import stats
from sklearn import metrics as skm

from autoais.beam_jobs import evaluate
from tests.support.files import read_jsonl, write_jsonl
from tests.support.jobs import run_job
from tests.support.report_html import decoded_images
from autoais.transforms.stats.metrics import BootstrapWeights

N_GOLD = 100
N_SYSTEMS = 23
SAMPLES, SEED = 200, 7
COMPARED = ("leaderboard.csv", "leaderboard.json", "leaderboard.md", "agreement.json",
            "report.html", "ratings.parquet", "dead_letter.jsonl", "scores.txt")


def _design(system: int):
  """(questions AutoAIS Y, questions humans rate Y): prefixes of the questions,
  AutoAIS share n/100 and human share floor(n^2/100) + s over 100, strictly
  increasing in s but not linearly: Spearman and Kendall are 1, Pearson is not."""
  n = 10 + 3 * system
  return n, n * n // 100 + system


def _question(i):
  return f"q{i:03d} who wrote the book numbered {i}"


def _write_inputs(root):
  write_jsonl(root / "gold.jsonl", [{"question": _question(i), "answer": [f"author{i}"]}
                                    for i in range(N_GOLD)])
  predictions, ratings = [], []
  for s in range(N_SYSTEMS):
    auto_yes, human_yes = _design(s)
    for i in range(N_GOLD):
      if s == N_SYSTEMS - 1 and i == N_GOLD - 1:
        ratings.append((f"system-{s:02d}", _question(i), "Y"))  # no prediction
        continue
      writer = f"author{i}" if i < auto_yes else "someone else"
      predictions.append((f"system-{s:02d}", _question(i), f"author{i}", f"book-{i}",
                          f"Title: Book {i}\n\nThe book was written by {writer}."))
      ratings.append((f"system-{s:02d}", _question(i), "Y" if i < human_yes else "N"))
  ratings.append(("system-03", _question(5), "N"))  # a second rating: rejected
  ratings.append(("system-04", _question(6), "maybe"))  # not Y/N: rejected
  with open(root / "predictions.csv", "w", newline="", encoding="utf-8") as f:
    writer = csv.writer(f)
    writer.writerow(["system_name", "question", "answer", "attribution", "passage"])
    writer.writerows(predictions)
  with open(root / "ratings.csv", "w", newline="", encoding="utf-8") as f:
    writer = csv.writer(f)
    writer.writerow(["system_name", "question", "human_rating"])
    writer.writerows(ratings)
  return len(ratings)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
  root = tmp_path_factory.mktemp("evaluate_agreement")
  n_ratings = _write_inputs(root)
  outputs = {}
  for name, flags in {"first": [], "second": [],
                      "multi_process": ["--direct_running_mode=multi_processing",
                                        "--direct_num_workers=2"]}.items():
    outputs[name] = root / name
    assert run_job(evaluate, "--predictions", root / "predictions.csv", "--gold",
                   root / "gold.jsonl", "--human_ratings", root / "ratings.csv",
                   "--output_dir", outputs[name], "--bootstrap_samples", SAMPLES,
                   "--seed", SEED, *flags) == 0
  return dict(outputs, root=root, n_ratings=n_ratings)


def _rows(output):
  return pq.read_table(output / "ratings.parquet").to_pylist()


def _leaderboard(output):
  with open(output / "leaderboard.csv", newline="", encoding="utf-8") as f:
    return {row["system_name"]: row for row in csv.DictReader(f)}


def test_outputs_are_identical_across_runs_and_runners(runs):
  for name in COMPARED:
    first = (runs["first"] / name).read_bytes()
    assert first == (runs["second"] / name).read_bytes(), name
    assert first == (runs["multi_process"] / name).read_bytes(), name
  level = json.loads((runs["first"] / "agreement.json").read_text())["system_level"]
  assert level["string_match_rated_vs_human_ais"]["spearman"]["ci"]  # CIs were compared


def test_per_system_and_overall_figures_equal_sklearn(runs):
  rows = _rows(runs["first"])
  board = _leaderboard(runs["first"])
  content = json.loads((runs["first"] / "agreement.json").read_text())
  assert len(board) == N_SYSTEMS

  def figures(selected):
    human = np.array([row["human_rating"] == "Y" for row in selected])
    auto = np.array([row["auto_ais"] == "Y" for row in selected])
    scores = np.array([row["nli_score"] for row in selected])
    return {"n_rated": len(selected), "human_ais": human.mean(),
            "predicted_ais": auto.mean(), "accuracy": skm.accuracy_score(human, auto),
            "balanced_accuracy": skm.balanced_accuracy_score(human, auto),
            "cohen_kappa": skm.cohen_kappa_score(human, auto),
            "roc_auc": skm.roc_auc_score(human, scores),
            "pr_auc": skm.average_precision_score(human, scores)}

  columns = {"n_rated": "n_human_rated", "human_ais": "human_ais",
             "predicted_ais": "string_match_rated", "accuracy": "human_agreement",
             "balanced_accuracy": "human_balanced_accuracy",
             "cohen_kappa": "human_kappa", "roc_auc": "human_roc_auc",
             "pr_auc": "human_pr_auc"}
  # leaderboard.csv holds the rates in percent, 12 significant digits; the
  # statistics (kappa, AUCs) and agreement.json on their own scale.
  percents = {"human_ais", "predicted_ais", "accuracy", "balanced_accuracy"}
  for s in range(N_SYSTEMS):
    name = f"system-{s:02d}"
    expected = figures([row for row in rows if row["system_name"] == name])
    for key, column in columns.items():
      scale = 100 if key in percents else 1
      assert float(board[name][column]) == pytest.approx(
          expected[key] * scale, rel=1e-11, abs=1e-12), (name, key)
      assert content["systems"][name][key] == pytest.approx(expected[key], abs=1e-12)
  overall = figures(rows)
  for key, value in overall.items():
    assert content["overall"][key] == pytest.approx(value, abs=1e-12), key
  assert content["overall"]["n_rated"] == N_SYSTEMS * N_GOLD - 1
  assert 0.5 < overall["accuracy"] < 1 and overall["cohen_kappa"] > 0


def test_system_level_correlations_are_the_designed_ones(runs):
  board = _leaderboard(runs["first"])
  level = json.loads((runs["first"] / "agreement.json").read_text())["system_level"]
  names = sorted(board)
  # The leaderboard's percents as fractions, agreement.json's scale.
  x = np.array([float(board[name]["string_match_rated"]) / 100 for name in names])
  y = np.array([float(board[name]["human_ais"]) / 100 for name in names])
  designed = [_design(s) for s in range(N_SYSTEMS)]
  rated = [N_GOLD] * (N_SYSTEMS - 1) + [N_GOLD - 1]
  np.testing.assert_allclose(x, [a / n for (a, _), n in zip(designed, rated)])
  np.testing.assert_allclose(y, [h / n for (_, h), n in zip(designed, rated)])
  entry = level["string_match_rated_vs_human_ais"]
  assert entry["systems"] == names
  np.testing.assert_allclose(entry["x"], x, rtol=1e-11, atol=0)
  np.testing.assert_allclose(entry["y"], y, rtol=1e-11, atol=0)
  x, y = np.array(entry["x"]), np.array(entry["y"])
  assert entry["spearman"]["statistic"] == pytest.approx(1.0, abs=1e-12)
  assert entry["kendall"]["statistic"] == pytest.approx(1.0, abs=1e-12)
  assert entry["pearson"]["statistic"] == stats.pearsonr(x, y).statistic < 0.99
  paper = level["string_match_vs_human_ais"]
  autoais = np.array(paper["x"])
  np.testing.assert_allclose(
      autoais, [float(board[name]["string_match"]) / 100 for name in names], rtol=1e-11,
      atol=0)
  assert paper["pearson"]["statistic"] == stats.pearsonr(autoais, y).statistic
  assert paper["kendall"]["statistic"] == stats.kendalltau(autoais, y).statistic


def test_bootstrap_intervals_are_percentiles_of_scipy_over_paired_resamples(runs):
  """Resamples of gold questions, the same for every system (the job's
  BootstrapWeights, seeded); scipy's correlation per resample; percentiles."""
  rows = _rows(runs["first"])
  content = json.loads((runs["first"] / "agreement.json").read_text())
  names = sorted({row["system_name"] for row in rows})
  bootstrap = BootstrapWeights(N_GOLD, SAMPLES, SEED)
  x, y = [], []
  for name in names:
    arrays = np.zeros((3, N_GOLD))
    for row in rows:
      if row["system_name"] == name and row["human_rating"] is not None:
        arrays[:, row["gold_index"]] = (row["auto_ais"] == "Y",
                                        row["human_rating"] == "Y", 1)
    means = bootstrap.resample_means(list(arrays))
    x.append(means[:, 0] / means[:, 2])
    y.append(means[:, 1] / means[:, 2])
  x, y = np.array(x).T, np.array(y).T
  entry = content["system_level"]["string_match_rated_vs_human_ais"]
  for method, function in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr),
                           ("kendall", stats.kendalltau)):
    values = [function(a, b).statistic for a, b in zip(x, y)]
    np.testing.assert_allclose(entry[method]["ci"], np.percentile(values, [2.5, 97.5]),
                               rtol=0, atol=1e-9)
  assert entry["resamples_used"] == SAMPLES
  assert entry["pearson"]["ci"][0] < entry["pearson"]["statistic"] <= \
      entry["pearson"]["ci"][1]


def test_neighbour_tests_equal_scipy_mcnemar(runs):
  rows = _rows(runs["first"])
  board = _leaderboard(runs["first"])
  tests = json.loads((runs["first"] / "agreement.json").read_text())[
      "system_level"]["neighbour_tests"]
  assert "McNemar" in tests["test"]
  ranking = sorted(board, key=lambda name: (-float(board[name]["string_match"]), name))
  auto = {name: np.zeros(N_GOLD, bool) for name in board}
  for row in rows:
    auto[row["system_name"]][row["gold_index"]] = row["auto_ais"] == "Y"
  assert [(t["higher"], t["lower"]) for t in tests["pairs"]] == list(
      zip(ranking, ranking[1:]))
  for test in tests["pairs"]:
    a, b = auto[test["higher"]], auto[test["lower"]]
    only_a, only_b = int((a & ~b).sum()), int((~a & b).sum())
    assert (test["only_higher"], test["only_lower"]) == (only_a, only_b) == (3, 0)
    assert test["p_value"] == stats.binomtest(only_a, only_a + only_b, 0.5).pvalue


def test_ratings_are_joined_and_the_unused_ones_dead_lettered(runs):
  manifest = json.loads((runs["first"] / "run.json").read_text())
  counts = manifest["human_rating_counts"]
  assert counts == {"read": runs["n_ratings"], "joined": runs["n_ratings"] - 3,
                    "rejected": 2, "unmatched": 1, "reconciled": True,
                    "by_reason": {"rejected:duplicate_human_rating": 1,
                                  "rejected:invalid_value": 1,
                                  "unmatched:no_prediction": 1},
                    "replaced_column_value": 0}
  dead = [d for d in read_jsonl(runs["first"] / "dead_letter.jsonl")
          if d["source_file"].endswith("ratings.csv")]
  assert {d["reason"] for d in dead} == {"duplicate_human_rating", "invalid_value",
                                         "no_prediction"}
  assert all(d["source_line"] > 1 for d in dead)
  rows = _rows(runs["first"])
  assert all(row["human_rating"] in ("Y", "N") for row in rows)
  markdown = (runs["first"] / "leaderboard.md").read_text()
  assert "## Agreement with human ratings" in markdown and "McNemar" in markdown


def test_report_images_decode(runs):
  alts = [alt for alt, _ in decoded_images(runs["first"] / "report.html")]
  assert len(alts) == 5 and "string-match ranking" in alts[0]  # the default scorer, named


def test_rating_column_with_perfect_agreement(tmp_path):
  """Ratings in the predictions' own human_rating column; humans agree with
  AutoAIS on every row: every correlation and kappa is 1."""
  write_jsonl(tmp_path / "gold.jsonl", [{"question": _question(i),
                                         "answer": [f"author{i}"]} for i in range(30)])
  with open(tmp_path / "predictions.csv", "w", newline="", encoding="utf-8") as f:
    writer = csv.writer(f)
    writer.writerow(["system_name", "question", "answer", "attribution", "passage",
                     "human_rating"])
    for s in range(5):
      for i in range(30):
        yes = i < 5 + 4 * s
        writer.writerow([f"s{s}", _question(i), f"author{i}", f"b{i}",
                         f"Written by {'author' + str(i) if yes else 'nobody'}.",
                         "Y" if yes else "N"])
  assert run_job(evaluate, "--predictions", tmp_path / "predictions.csv", "--gold",
                 tmp_path / "gold.jsonl", "--output_dir", tmp_path / "out",
                 "--bootstrap_samples", 50) == 0
  content = json.loads((tmp_path / "out" / "agreement.json").read_text())
  assert content["overall"]["accuracy"] == 1.0
  assert content["overall"]["cohen_kappa"] == 1.0
  for name in ("pearson", "spearman", "kendall"):
    entry = content["system_level"]["string_match_rated_vs_human_ais"][name]
    assert entry["statistic"] == pytest.approx(1.0)
    # Five systems in the same order: 2 of the 5! orderings are as extreme, an
    # exact p-value (scipy's asymptotic Spearman p-value here is 0).
    assert entry["p_value"] == pytest.approx(2 / 120)
    assert entry["p_value_method"] == "exact permutation: all 120 orderings of the 5 points"
  report = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
  assert "exact permutation: all 120 orderings" in report
