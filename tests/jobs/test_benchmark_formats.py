"""`autoais agreement --format aggrefact` and `--format true` on benchmark files
built here from the real labelled sets of ../shared/data (AttributionBench,
BEGIN, WiCE), laid out field for field as LLM-AggreFact's release (`dataset, doc,
claim, label, contamination_identifier`, label int64) and TRUE's CSVs (pandas'
`to_csv` with its unnamed index column, `grounding, generated_text, label`, one
file per data set named `<name>_download.csv`).

Per data set, balanced accuracy and ROC-AUC must equal scikit-learn on the job's
own rows (agreement_rows.parquet); their means must be the means; the bootstrap
intervals must be those of the merged counts; damaged files are refused or
dead-lettered naming file, line and field, and run.json's counts reconcile.
"""
import collections
import csv
import hashlib
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sklearn import metrics as skm

from autoais.beam_jobs import agreement
from tests.support.files import read_jsonl, write_jsonl
from tests.support.jobs import run_job
from tests.support.paths import EXAMPLES, shared_file
from autoais.transforms.labelled.readers import true_dataset_name
from autoais.transforms.stats import agreement as stats

pd = pytest.importorskip("pandas")


# ----------------------------------------------------------------------------
# Benchmark rows from the real sets: (dataset, doc, claim, label).


def _real_rows():
  rows = []
  for record in read_jsonl(shared_file(
      "attributionbench/dev_all_subset_balanced.jsonl")):
    rows.append((record["src_dataset"], "\n".join(record["references"]),
                 record["claim"], int(record["attribution_label"] == "attributable")))
  for name in ("wow", "cmu", "tc"):
    lines = shared_file(f"begin/begin_dev_{name}.tsv").read_text(
        encoding="utf-8").split("\n")
    columns = lines[0].split("\t")
    for text in lines[1:]:
      if text.strip():
        row = dict(zip(columns, text.split("\t")))
        rows.append((f"BEGIN-{name}", row["knowledge"], row["response"],
                     int(row["begin_label"] == "Fully attributable")))
  for record in read_jsonl(shared_file("wice/claim_dev.jsonl")):
    # Sentences joined by spaces: a CSV field of more than MAX_CSV_RECORD_LINES
    # (1000) lines is taken for an unclosed quote, and one WiCE article has more.
    rows.append(("Wice", " ".join(record["evidence"]), record["claim"],
                 int(record["label"] == "supported")))
  return rows


def _expected_counts(rows):
  """{dataset: (items, supported)} as written."""
  counts = collections.defaultdict(lambda: [0, 0])
  for dataset, _, _, label in rows:
    counts[dataset][0] += 1
    counts[dataset][1] += label
  return {name: tuple(value) for name, value in counts.items()}


def _aggrefact_frame(rows):
  frame = pd.DataFrame(rows, columns=["dataset", "doc", "claim", "label"])
  frame["label"] = frame["label"].astype("int64")
  frame["contamination_identifier"] = [
      hashlib.sha256(f"{i}".encode()).hexdigest() for i in range(len(frame))]
  return frame


@pytest.fixture(scope="module")
def real_rows():
  return _real_rows()


@pytest.fixture(scope="module")
def aggrefact_files(real_rows, tmp_path_factory):
  """The rows as LLM-AggreFact's Parquet, and split into a CSV and a JSONL."""
  root = tmp_path_factory.mktemp("aggrefact")
  frame = _aggrefact_frame(real_rows)
  parquet = root / "dev-00000-of-00001.parquet"
  pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), parquet)
  half = len(frame) // 2
  csv_path = root / "aggrefact_dev_a.csv"
  frame.iloc[:half].to_csv(csv_path, index=False)
  jsonl = write_jsonl(root / "aggrefact_dev_b.jsonl",
                      frame.iloc[half:].to_dict(orient="records"))
  return {"parquet": [parquet], "csv+jsonl": [csv_path, jsonl]}


@pytest.fixture(scope="module")
def true_files(real_rows, tmp_path_factory):
  """TRUE CSVs as its download script writes them (pandas to_csv, index kept):
  BEGIN in the layout of begin_dev_download.csv (the source's columns, the text
  pair renamed grounding / generated_text, then label), WiCE in that of
  vitc_dev_download.csv (id, grounding, generated_text, label), and
  AttributionBench as one file with a `dataset` column."""
  root = tmp_path_factory.mktemp("true")
  begin = []
  for name in ("wow", "cmu", "tc"):
    frame = pd.read_csv(shared_file(f"begin/begin_dev_{name}.tsv"), sep="\t",
                        quoting=3, keep_default_na=False, dtype=str)
    begin.append(frame)
  begin = pd.concat(begin, ignore_index=True).rename(
      columns={"knowledge": "grounding", "response": "generated_text"})
  begin["label"] = [int(label == "Fully attributable") for label in begin["begin_label"]]
  begin.to_csv(root / "begin_dev_download.csv")
  wice = pd.DataFrame.from_records(
      [{"id": f"wice-{i}", "grounding": " ".join(r["evidence"]),
        "generated_text": r["claim"], "label": int(r["label"] == "supported")}
       for i, r in enumerate(read_jsonl(shared_file("wice/claim_dev.jsonl")))])
  wice.to_csv(root / "wice_dev_download.csv")
  bench = pd.DataFrame.from_records(
      [{"dataset": r["src_dataset"], "grounding": "\n".join(r["references"]),
        "generated_text": r["claim"],
        "label": int(r["attribution_label"] == "attributable")}
       for r in read_jsonl(shared_file(
           "attributionbench/dev_all_subset_balanced.jsonl"))])
  bench.to_csv(root / "attributionbench_download.csv")
  expected = collections.defaultdict(lambda: [0, 0])
  for name, frame in (("begin_dev", begin), ("wice_dev", wice)):
    expected[name] = [len(frame), int(frame["label"].sum())]
  for dataset, label in zip(bench["dataset"], bench["label"]):
    expected[dataset][0] += 1
    expected[dataset][1] += int(label)
  files = sorted(root.glob("*.csv"))
  return files, {name: tuple(value) for name, value in expected.items()}


def _run(output, inputs, fmt, *flags):
  return run_job(agreement, "--input", ",".join(str(p) for p in inputs), "--format",
                 fmt, "--output_dir", output, "--scorer", "string-match", *flags)


# ----------------------------------------------------------------------------
# The check every run gets.


def _counts_of(rows):
  """AgreementCounts per dataset rebuilt here from the job's rows."""
  counts = collections.defaultdict(stats.AgreementCounts)
  for row in rows:
    counts[row["group"]].add(row["human_attributable"], row["decision"] == "Y",
                             row["nli_score"])
  return counts


def check_benchmark_run(output, expected_counts, samples=1000, seed=0):
  rows = pq.read_table(output / "agreement_rows.parquet").to_pylist()
  content = json.loads((output / "agreement.json").read_text())
  manifest = json.loads((output / "run.json").read_text())
  by_dataset = collections.defaultdict(list)
  for row in rows:
    by_dataset[row["group"]].append(row)
  assert {name: (len(selected), sum(r["human_attributable"] for r in selected))
          for name, selected in by_dataset.items()} == expected_counts
  table = content["groups"]["dataset"]
  assert sorted(table) == sorted(by_dataset)
  balanced, auc = {}, {}
  for name, selected in by_dataset.items():
    human = np.array([r["human_attributable"] for r in selected])
    decided = np.array([r["decision"] == "Y" for r in selected])
    scores = np.array([r["nli_score"] for r in selected])
    assert 0 < human.sum() < len(human), name  # every set built here has both labels
    balanced[name] = skm.balanced_accuracy_score(human, decided)
    auc[name] = skm.roc_auc_score(human, scores)
    assert table[name]["balanced_accuracy"] == pytest.approx(balanced[name], abs=1e-12)
    assert table[name]["roc_auc"] == pytest.approx(auc[name], abs=1e-12)
    assert table[name]["n_rated"] == len(selected)
  means = content["group_means"]["dataset"]
  for metric, figures in (("balanced_accuracy", balanced), ("roc_auc", auc)):
    entry = means[metric]
    assert entry["groups"] == sorted(by_dataset) and entry["left_out"] == []
    assert entry["mean"] == pytest.approx(np.mean(list(figures.values())), abs=1e-12)
    low, high = entry["ci"]
    assert low <= entry["mean"] <= high
    assert entry["resamples_used"] == samples
  assert means["bootstrap"]["samples"] == samples and means["bootstrap"]["seed"] == seed
  # The intervals are those of the counts the pipeline merged: the same as
  # from counts rebuilt here from the rows.
  again = stats.mean_over_groups(_counts_of(rows), table, samples, seed)
  assert again == means
  counts = manifest["counts"]
  assert counts["reconciled"] and counts["items"] == len(rows)
  assert counts["read"] == counts["scored"] + counts["rejected"] + counts["unmatched"]
  markdown = (output / "agreement.md").read_text()
  assert "Unweighted mean over the dataset groups" in markdown
  report = (output / "report.html").read_text()
  assert "Unweighted mean over the dataset groups" in report
  assert f"<td>roc_auc</td><td>{means['roc_auc']['mean']:.3f}</td>" in report
  return rows, content, manifest


# ----------------------------------------------------------------------------
# aggrefact


@pytest.mark.parametrize("layout", ["parquet", "csv+jsonl"])
def test_aggrefact_per_dataset_figures_equal_sklearn(layout, aggrefact_files,
                                                     real_rows, tmp_path):
  output = tmp_path / "out"
  assert _run(output, aggrefact_files[layout], "aggrefact") == 0
  rows, content, manifest = check_benchmark_run(output, _expected_counts(real_rows))
  assert manifest["counts"]["read"] == len(real_rows) == len(rows)
  assert manifest["counts"]["rejected"] == manifest["counts"]["unmatched"] == 0
  assert {row["human_label"] for row in rows} == {"0", "1"}
  assert content["format"] == "aggrefact" and content["groupings"] == ["dataset"]


def test_true_per_dataset_figures_equal_sklearn(true_files, tmp_path):
  files, expected = true_files
  output = tmp_path / "out"
  assert _run(output, files, "true", "--bootstrap_samples", 200, "--seed", 7) == 0
  rows, _, manifest = check_benchmark_run(output, expected, samples=200, seed=7)
  # File names give the data set where there is no dataset column.
  assert {row["group"] for row in rows if "begin_dev" in row["source_file"]} == {
      "begin_dev"}
  assert manifest["counts"]["read"] == len(rows)


def test_true_dataset_name_rule():
  assert true_dataset_name("gs://b/data/begin_dev_download.csv") == "begin_dev"
  assert true_dataset_name("/x/qags_xsum_download.csv.gz") == "qags_xsum"
  assert true_dataset_name("/x/summeval.csv") == "summeval"
  assert true_dataset_name("/x/_download.csv") == "_download"


# ----------------------------------------------------------------------------
# The bootstrap's arithmetic.


class _FixedDraws:
  """Stands in for numpy's Generator: hands out given multinomial draws."""

  def __init__(self, draws):
    self._draws = np.asarray(draws)
    self._used = 0

  def multinomial(self, n, shares, size):
    assert np.all(self._draws[self._used:self._used + size].sum(axis=1) == n)
    assert len(shares) == self._draws.shape[1]
    out = self._draws[self._used:self._used + size]
    self._used += size
    return out


def test_resampled_figures_are_sklearns_on_the_resampled_items():
  rng = np.random.default_rng(3)
  scores = np.round(rng.random(300), 2)  # ties on purpose
  human = rng.random(300) < scores
  counts = stats.ScoreCounts()
  counts.add_arrays(scores, human)
  k = len(counts.scores)
  cells = np.concatenate([counts.positives, counts.negatives])
  draws = rng.multinomial(int(cells.sum()), cells / cells.sum(), size=7)
  resampled = stats.resampled_roc_auc(counts, 7, _FixedDraws(draws))
  for draw, value in zip(draws, resampled):
    labels = np.concatenate([np.ones(k), np.zeros(k)])
    values = np.concatenate([counts.scores, counts.scores])
    assert value == pytest.approx(skm.roc_auc_score(labels, values,
                                                    sample_weight=draw), abs=1e-12)
  confusion = [40, 10, 20, 30]  # tn, fp, fn, tp
  draws = rng.multinomial(100, np.array(confusion) / 100, size=5)
  draws[0] = [50, 50, 0, 0]  # a resample with no positive defines nothing
  resampled = stats.resampled_balanced_accuracy(confusion, 5, _FixedDraws(draws))
  assert np.isnan(resampled[0])
  for draw, value in zip(draws[1:], resampled[1:]):
    human = np.array([0, 0, 1, 1])
    decided = np.array([0, 1, 0, 1])
    assert value == pytest.approx(skm.balanced_accuracy_score(
        human, decided, sample_weight=draw), abs=1e-12)


def test_bootstrap_is_seeded_and_per_group():
  counts = {}
  for name, share in (("a", 0.3), ("b", 0.6), ("c", 0.5)):
    group = stats.AgreementCounts()
    rng = np.random.default_rng(len(name) + int(share * 10))
    for score, human in zip(rng.random(80), rng.random(80) < share + 0.2):
      group.add(bool(human), bool(score > 0.5), float(score))
    counts[name] = group
  table = {name: stats.agreement_statistics(group) for name, group in counts.items()}
  first = stats.mean_over_groups(counts, table, 300, 5)
  assert first == stats.mean_over_groups(dict(reversed(list(counts.items()))), table,
                                         300, 5)
  assert first["roc_auc"]["ci"] != stats.mean_over_groups(counts, table, 300, 6)[
      "roc_auc"]["ci"]


# ----------------------------------------------------------------------------
# Damaged input.


@pytest.mark.parametrize("fmt, header, missing", [
    ("aggrefact", "dataset,doc,label", "claim"),
    ("true", ",grounding,label", "generated_text"),
])
def test_missing_column_names_file_and_column(fmt, header, missing, tmp_path, capsys):
  path = tmp_path / "bench_download.csv"
  path.write_text(header + "\n" + ",".join(["x"] * (header.count(",") + 1)) + "\n",
                  encoding="utf-8")
  assert _run(tmp_path / "out", [path], fmt) == 2
  assert f"{path}:1: missing required column(s) {missing}" in capsys.readouterr().err
  assert not (tmp_path / "out").exists()


def test_missing_column_in_parquet_names_file_and_column(tmp_path, capsys):
  path = tmp_path / "dev.parquet"
  pq.write_table(pa.table({"dataset": ["d"], "doc": ["a b"], "claim": ["a"]}), path)
  assert _run(tmp_path / "out", [path], "aggrefact") == 2
  assert f"{path}:1: missing required column(s) label" in capsys.readouterr().err


def _record_lines(path):
  """The physical line where each data record of a CSV starts (csv's reading,
  apart from the project's): quoted fields may span lines."""
  starts = []
  with open(path, encoding="utf-8", newline="") as f:
    reader = csv.reader(f)
    start = 1
    for _ in reader:
      starts.append(start)
      start = reader.line_num + 1
  return starts[1:]


def test_bad_label_is_dead_lettered_and_counts_reconcile(real_rows, tmp_path):
  rows = [row for row in real_rows if row[0] in ("LFQA", "BEGIN-cmu")]
  frame = _aggrefact_frame(rows)
  frame["label"] = frame["label"].astype(str)
  frame.loc[4, "label"] = "supported"  # not 1 / 0: rejected
  frame.loc[9, "label"] = ""  # no label: unmatched
  path = tmp_path / "aggrefact.csv"
  frame.to_csv(path, index=False)
  output = tmp_path / "out"
  assert _run(output, [path], "aggrefact") == 0
  dead = read_jsonl(output / "dead_letter.jsonl")
  lines = _record_lines(path)
  by_reason = {(entry["kind"], entry["reason"]): entry for entry in dead}
  bad = by_reason[("rejected", "invalid_value")]
  assert (bad["source_file"], bad["source_line"], bad["field"]) == (str(path), lines[4],
                                                                   "label")
  assert f"{path}:{lines[4]}: field 'label'" in bad["message"]
  missing = by_reason[("unmatched", "no_human_label")]
  assert (missing["source_line"], missing["field"]) == (lines[9], "label")
  assert len(dead) == 2
  expected = _expected_counts([row for i, row in enumerate(rows) if i not in (4, 9)])
  _, _, manifest = check_benchmark_run(output, expected)
  counts = manifest["counts"]
  assert (counts["read"], counts["scored"], counts["rejected"], counts["unmatched"]) == (
      len(rows), len(rows) - 2, 1, 1)


# ----------------------------------------------------------------------------
# A threshold tuned per data set on --calibrate_on (--calibrate_per_dataset),
# with a tiny random classifier so that scores spread over (0, 1).


def _split_for_calibration(real_rows, per_dataset=24):
  """Input and calibration rows: the first `per_dataset` / 2 rows of each label
  of each data set, shuffled by a digest (docs cut to 300 characters so the tiny model reads one window or two), the
  even ones to the input, the odd ones to the calibration set; LFQA stays out
  of the calibration set (decided at the overall threshold) and the
  calibration set's ExpertQA rows are all of one label (no balanced accuracy
  there: not tuned)."""
  by_label = collections.defaultdict(list)
  for dataset, doc, claim, label in real_rows:
    if len(by_label[dataset, label]) < per_dataset // 2:
      by_label[dataset, label].append((dataset, doc[:300], claim, label))
  taken = collections.defaultdict(list)
  for (dataset, _), rows in sorted(by_label.items()):
    taken[dataset] += rows
  inputs, calibration = [], []
  for dataset, rows in sorted(taken.items()):
    rows = sorted(rows, key=lambda row: hashlib.sha256(repr(row).encode()).digest())
    inputs += rows[0::2]
    if dataset == "LFQA":
      continue
    odd = rows[1::2]
    if dataset == "ExpertQA":
      odd = [row for row in odd if row[3] == 1]
    calibration += odd
  return inputs, calibration


def _best_value(scores, human, metric):
  """The most `metric` of `score > t` reaches over every t (sklearn's figure)."""
  score_of = {"accuracy": skm.accuracy_score,
              "balanced_accuracy": skm.balanced_accuracy_score}[metric]
  cuts = [min(scores) - 1.0] + sorted(set(scores))
  return max(score_of(human, np.asarray(scores) > cut) for cut in cuts)


def test_threshold_tuned_per_dataset_on_the_calibration_set(real_rows,
                                                            tiny_nli_classifier,
                                                            tmp_path):
  inputs, calibration = _split_for_calibration(real_rows)
  assert {"LFQA", "ExpertQA"} <= {row[0] for row in inputs}
  paths = {}
  for name, rows in (("input", inputs), ("calibration", calibration)):
    paths[name] = tmp_path / f"{name}.parquet"
    pq.write_table(pa.Table.from_pandas(_aggrefact_frame(rows), preserve_index=False),
                   paths[name])
  scorer = ("--scorer", "nli-classifier", "--model", tiny_nli_classifier)
  output = tmp_path / "out"
  assert run_job(agreement, "--input", paths["input"], "--format", "aggrefact",
                 "--output_dir", output, *scorer, "--calibrate_on",
                 paths["calibration"], "--calibrate_metric", "balanced_accuracy",
                 "--calibrate_per_dataset", "--bootstrap_samples", 100) == 0
  # The calibration set's own scores: the same model on the same two files as
  # inputs. The run above scored its calibration items with its input items,
  # and a model's float result depends on the batch (issue 51); the same
  # examples make the same model calls, so these are the scores, bit for bit,
  # that the thresholds were chosen on (a threshold is one of them, and is
  # compared with `>`).
  assert run_job(agreement, "--input", f"{paths['input']},{paths['calibration']}",
                 "--format", "aggrefact", "--output_dir", tmp_path / "calibration_scores",
                 *scorer, "--bootstrap_samples", 10) == 0
  calibration_rows = collections.defaultdict(list)
  for row in pq.read_table(tmp_path / "calibration_scores" /
                           "agreement_rows.parquet").to_pylist():
    if row["source_file"] == str(paths["calibration"]):
      calibration_rows[row["group"]].append(row)
  content = json.loads((output / "agreement.json").read_text())
  chosen = content["calibration"]
  per_dataset = chosen["per_dataset"]
  assert per_dataset["grouping"] == "dataset"
  assert set(per_dataset["not_tuned"]) == {"ExpertQA"}
  assert per_dataset["decided_at_overall_threshold"] == ["ExpertQA", "LFQA"]
  assert set(per_dataset["thresholds"]) == set(calibration_rows) - {"ExpertQA"}
  # Each data set's threshold reaches the best balanced accuracy there is on its
  # calibration rows, and the overall one on all of them.
  for dataset, entry in per_dataset["thresholds"].items():
    scores = [row["nli_score"] for row in calibration_rows[dataset]]
    human = [row["human_attributable"] for row in calibration_rows[dataset]]
    assert entry["value"] == pytest.approx(
        _best_value(scores, human, "balanced_accuracy"), abs=1e-12)
    assert entry["value"] == pytest.approx(skm.balanced_accuracy_score(
        human, np.asarray(scores) > entry["threshold"]), abs=1e-12)
  every = [row for rows in calibration_rows.values() for row in rows]
  assert chosen["value"] == pytest.approx(_best_value(
      [row["nli_score"] for row in every], [row["human_attributable"] for row in every],
      "balanced_accuracy"), abs=1e-12)
  # Thresholds differ across data sets (else the test shows nothing).
  assert len({entry["threshold"] for entry in per_dataset["thresholds"].values()}) > 1
  # Each input row is decided at its data set's threshold (the overall one where
  # it has none), and the per-dataset figures and their mean follow.
  rows = pq.read_table(output / "agreement_rows.parquet").to_pylist()
  by_dataset = collections.defaultdict(list)
  for row in rows:
    threshold = per_dataset["thresholds"].get(row["group"], {}).get(
        "threshold", chosen["threshold"])
    assert row["calibrated_decision"] == ("Y" if row["nli_score"] > threshold else "N")
    by_dataset[row["group"]].append(row)
  balanced = {}
  for dataset, selected in by_dataset.items():
    human = [row["human_attributable"] for row in selected]
    if 0 < sum(human) < len(human):
      balanced[dataset] = skm.balanced_accuracy_score(
          human, [row["calibrated_decision"] == "Y" for row in selected])
      assert content["groups"]["dataset"][dataset]["at_calibrated_threshold"][
          "balanced_accuracy"] == pytest.approx(balanced[dataset], abs=1e-12)
  mean = content["group_means"]["dataset"][stats.CALIBRATED_MEAN]
  assert mean["groups"] == sorted(balanced)
  assert mean["mean"] == pytest.approx(np.mean(list(balanced.values())), abs=1e-12)
  assert mean["ci"][0] <= mean["mean"] <= mean["ci"][1]
  markdown = (output / "agreement.md").read_text()
  assert "Thresholds tuned per dataset" in markdown
  assert "ExpertQA | not tuned" in markdown
  report = (output / "report.html").read_text()
  assert "Thresholds tuned per dataset on the calibration set" in report
  assert (f"<td>{stats.CALIBRATED_MEAN}</td><td>{mean['mean']:.3f}</td>" in report)
  assert "<td>LFQA</td>" in report and "decided at the overall threshold" in report
  manifest = json.loads((output / "run.json").read_text())
  assert manifest["inputs"]["calibrate_per_dataset"] is True
  assert manifest["counts"]["reconciled"] and manifest["calibration_counts"]["reconciled"]


def test_calibrate_per_dataset_needs_datasets_and_a_calibration_set(tmp_path, capsys):
  path = tmp_path / "bench.csv"
  path.write_text("dataset,doc,claim,label\nd,a b,a,1\n", encoding="utf-8")
  assert _run(tmp_path / "out", [path], "aggrefact", "--calibrate_per_dataset") == 2
  assert "--calibrate_per_dataset tunes thresholds on --calibrate_on" in (
      capsys.readouterr().err)
  ratings = tmp_path / "ratings.csv"
  ratings.write_text((EXAMPLES / "agreement" / "ratings.csv").read_text(encoding="utf-8"),
                     encoding="utf-8")
  assert _run(tmp_path / "out", [ratings], "ratings", "--calibrate_on", ratings,
              "--calibrate_per_dataset") == 2
  assert "the groups of --format ratings are not data sets" in capsys.readouterr().err
