"""`autoais citations`' human check (issue 18, item 4) on ALCE's human
evaluation layout (tests/support/citations.py write_human_eval: judged items
built from NQ-Open oracle passages; which of the published file's properties
are rebuilt is said there), and on the same judged items inline in an ALCE
result file.

Each figure of citations_human.csv is recomputed here from the judgements as
written in the file and the automatic decisions of citations_rows.parquet,
with scikit-learn and scipy on explicit lists (not the job's merged counts),
and the human figures with the arithmetic of ALCE's analysis of its human
evaluation (per item means, then 100 x the mean over items).
"""
import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from sklearn.metrics import (accuracy_score, balanced_accuracy_score, cohen_kappa_score,
                             confusion_matrix, roc_auc_score)

from autoais.beam_jobs import citations
from tests.support.citations import (HUMAN_DATASETS, HUMAN_ITEMS, human_system_file,
                                     write_alce, write_human_eval)
from tests.support.jobs import run_job
from tests.support.nq import nq_oracle_records

INLINE = "inline-judged"
# The same items with their judgements removed: a system the check reads no
# judgement of, whose items count in the pooled row's items and nowhere else.
UNJUDGED = "unjudged"
_JUDGEMENT_FIELDS = ("sentences", "automatic_recall_scores", "automatic_precision_scores",
                     "automatic_citation_precision_scores")
MISALIGNED = {3: "sentence_count_differs", 7: "citation_count_differs"}


@pytest.fixture(scope="module")
def human_run(tmp_path_factory):
  root = tmp_path_factory.mktemp("citations_human")
  records = nq_oracle_records()
  (root / "runs").mkdir()
  path = write_human_eval(root / "runs" / "human_eval_citations_completed.json", records)
  with open(path, encoding="utf-8") as f:
    document = json.load(f)
  # The first system's judged items again, inline in an ALCE result file.
  first = human_system_file("asqa", HUMAN_DATASETS["asqa"][0])
  inline = [item for key, item in document["asqa"][first].items()
            if key != "overall_results"]
  write_alce(root / "runs" / f"{INLINE}.json", inline)
  write_alce(root / "runs" / f"{UNJUDGED}.json",
             [{key: value for key, value in item.items() if key not in _JUDGEMENT_FIELDS}
              for item in inline])
  assert run_job(citations, "--input", root / "runs" / "*.json", "--output_dir",
                 root / "out", "--bootstrap_samples", 20) == 0
  judged = {INLINE: inline}
  for dataset, systems in HUMAN_DATASETS.items():
    for system in systems:
      name = human_system_file(dataset, system)
      judged[name[:-len(".json")]] = [item for key, item in document[dataset][name].items()
                                      if key != "overall_results"]
  out = root / "out"
  with open(out / "citations_human.json", encoding="utf-8") as f:
    human = json.load(f)
  with open(out / "run.json", encoding="utf-8") as f:
    run = json.load(f)
  return {"judged": judged, "human": human, "run": run,
          "rows": pq.read_table(out / "citations_rows.parquet").to_pylist(),
          "items": pq.read_table(out / "citations_items.parquet").to_pylist(),
          "csv": (out / "citations_human.csv").read_text(encoding="utf-8"),
          "md": (out / "citations_human.md").read_text(encoding="utf-8")}


def _automatic_credits(row):
  used = len(row["used"].split(",")) if row["used"] else 0
  if not row["supported"]:
    return [0] * used
  return [1] if used == 1 else [int(flag == "Y") for flag in row["needed"].split(",")]


def _expected(human_run, systems):
  """Lists of (human, automatic) judgements and per item figures over the
  aligned items of `systems`, from the file and the rows."""
  rows = {}
  for row in human_run["rows"]:
    rows.setdefault((row["system_name"], row["item_index"]), []).append(row)
  items = {(item["system_name"], item["item_index"]): item for item in human_run["items"]}
  out = {"recall": ([], [], []), "precision": ([], []), "figures": ([], [], [], [])}
  for system in systems:
    indexes = sorted(index for name, index in rows if name == system)
    assert len(indexes) == HUMAN_ITEMS
    for position, (item, index) in enumerate(zip(human_run["judged"][system], indexes)):
      if position in MISALIGNED:
        continue
      sentences = sorted(rows[(system, index)], key=lambda row: row["sentence_index"])
      human_recall, human_precision, auto_precision = [], [], []
      for judged, row in zip(item["sentences"], sentences):
        recall = judged["sentence_recall_score"]
        human_recall.append(recall)
        out["recall"][0].append(recall)
        out["recall"][1].append(int(row["supported"]))
        out["recall"][2].append(row["nli_score"])
        scores = [0 if recall == 0 else min(c["citation_precision_score"], 1)
                  for c in judged["citations"]]
        credits = _automatic_credits(row)
        assert len(scores) == len(credits)
        human_precision += scores
        auto_precision += credits
      out["precision"][0].extend(human_precision)
      out["precision"][1].extend(auto_precision)
      row = items[(system, index)]
      out["figures"][0].append(np.mean(human_recall))
      out["figures"][1].append(row["citation_rec"])
      out["figures"][2].append(np.mean(human_precision) if human_precision else 0)
      out["figures"][3].append(row["citation_prec"])
  return out


def _statistics(human, auto, scores=None):
  tn, fp, fn, tp = confusion_matrix(human, auto, labels=[0, 1]).ravel()
  stats = {"accuracy": accuracy_score(human, auto),
           "balanced_accuracy": balanced_accuracy_score(human, auto),
           "cohen_kappa": cohen_kappa_score(human, auto),
           "tp": tp, "fp": fp, "tn": tn, "fn": fn}
  if scores is not None:
    kept = [k for k, score in enumerate(scores) if score is not None]
    stats["roc_auc"] = roc_auc_score([human[k] for k in kept], [scores[k] for k in kept])
  return stats


def _check_row(row, expected):
  human, auto, scores = expected["recall"]
  recall = _statistics(human, auto, scores)
  precision = _statistics(*expected["precision"])
  assert row["n_sentences"] == len(human) and row["n_citations"] == len(
      expected["precision"][0])
  for name, value in recall.items():
    assert row[f"recall_{name}"] == pytest.approx(value, abs=1e-12), name
  for name, value in precision.items():
    assert row[f"precision_{name}"] == pytest.approx(value, abs=1e-12), name
  for column, values in zip(("human_citation_rec", "citation_rec",
                             "human_citation_prec", "citation_prec"),
                            expected["figures"]):
    assert row[column] == pytest.approx(100 * np.mean(values), abs=1e-9), column


def test_each_system_agrees_with_its_judgements_as_sklearn_computes_it(human_run):
  systems = {row["system_name"]: row for row in human_run["human"]["systems"]}
  assert len(systems) == 1 + 1 + 1 + sum(len(s) for s in HUMAN_DATASETS.values())
  assert (systems[UNJUDGED]["n_items"], systems[UNJUDGED]["n_items_judged"],
          systems[UNJUDGED]["human_citation_rec"]) == (HUMAN_ITEMS, 0, None)
  n_judged = len(human_run["judged"])
  assert (systems[None]["n_items"], systems[None]["n_items_judged"],
          systems[None]["n_items_aligned"]) == (
              (n_judged + 1) * HUMAN_ITEMS, n_judged * HUMAN_ITEMS,
              n_judged * (HUMAN_ITEMS - len(MISALIGNED)))
  for name in human_run["judged"]:
    row = systems[name]
    assert (row["n_items"], row["n_items_judged"], row["n_items_aligned"]) == (
        HUMAN_ITEMS, HUMAN_ITEMS, HUMAN_ITEMS - len(MISALIGNED))
    _check_row(row, _expected(human_run, [name]))
  # Both classes occur on both sides: the statistics are not degenerate.
  pooled = _expected(human_run, list(human_run["judged"]))
  for kind in ("recall", "precision"):
    assert 0 < np.mean(pooled[kind][0]) < 1 and 0 < np.mean(pooled[kind][1]) < 1
  _check_row(systems[None], pooled)


def test_inline_judgements_read_as_the_human_eval_layout(human_run):
  systems = {row["system_name"]: row for row in human_run["human"]["systems"]}
  first = human_system_file("asqa", HUMAN_DATASETS["asqa"][0])[:-len(".json")]
  mine, theirs = dict(systems[INLINE]), dict(systems[first])
  mine.pop("system_name"), theirs.pop("system_name")
  assert mine == theirs


def test_items_whose_judgements_do_not_align_are_named_and_left_out(human_run):
  checks = {}
  for item in human_run["items"]:
    if item["system_name"] == UNJUDGED:
      assert item["human_check"] == "no_judgements"
      continue
    position = item["item_index"] % HUMAN_ITEMS
    checks.setdefault(MISALIGNED.get(position, "aligned"), []).append(item["human_check"])
  for check, found in checks.items():
    assert set(found) == {check}
  n_systems = len(human_run["judged"])
  assert human_run["run"]["human_check"] == {
      "items_judged": n_systems * HUMAN_ITEMS,
      "items_by_check": {"aligned": n_systems * (HUMAN_ITEMS - 2), "no_judgements": HUMAN_ITEMS,
                         "sentence_count_differs": n_systems,
                         "citation_count_differs": n_systems}}
  assert human_run["run"]["counts"]["reconciled"]
  for row in human_run["rows"]:
    aligned = (row["system_name"] != UNJUDGED
               and row["item_index"] % HUMAN_ITEMS not in MISALIGNED)
    assert (row["human_supported"] is not None) == aligned


def test_sentence_rows_carry_the_judgements_as_written(human_run):
  for row in human_run["rows"]:
    if row["human_supported"] is None:
      continue
    item = human_run["judged"][row["system_name"]][row["item_index"] % HUMAN_ITEMS]
    judged = item["sentences"][row["sentence_index"]]
    assert row["human_supported"] == bool(judged["sentence_recall_score"])
    assert row["human_citation_scores"] == ",".join(
        str(c["citation_precision_score"]) for c in judged["citations"])


def test_system_level_correlations_are_scipys(human_run):
  from scipy import stats  # pylint: disable=import-outside-toplevel
  rows = [row for row in human_run["human"]["systems"]
          if row["system_name"] not in (None, UNJUDGED)]
  level = human_run["human"]["system_level"]
  assert level["systems"] == len(rows)
  for figure in ("citation_rec", "citation_prec"):
    x = [row[f"human_{figure}"] for row in rows]
    y = [row[figure] for row in rows]
    assert level[figure]["pearson"]["statistic"] == pytest.approx(
        stats.pearsonr(x, y).statistic, abs=1e-12)
    assert level[figure]["kendall"]["statistic"] == pytest.approx(
        stats.kendalltau(x, y).statistic, abs=1e-12)


def test_csv_and_markdown_show_every_system(human_run):
  lines = human_run["csv"].splitlines()
  assert lines[0].startswith("system_name,n_items,n_items_judged")
  assert len(lines) == 1 + len(human_run["human"]["systems"])
  for name in human_run["judged"]:
    assert f"| {name} |" in human_run["md"]
  assert "| all systems |" in human_run["md"]
