"""`autoais evaluate` on a real leaderboard: NQ-Open dev gold, a corpus of the 2,655
real Wikipedia oracle passages, and systems derived from them.

EM/F1 must equal `t5.evaluation.metrics.squad` exactly; string-match AutoAIS must
equal a straightforward computation written here independently of the project.
"""
import csv
import json

import pyarrow.parquet as pq
import pytest

from autoais.beam_jobs import evaluate
from tests.support.files import read_jsonl
from tests.support.jobs import run_job
from tests.support.nq import NQ_SYSTEMS as SYSTEMS

@pytest.fixture(scope="module")
def leaderboard(nq_leaderboard_inputs, tmp_path_factory):
  inputs = nq_leaderboard_inputs
  output = tmp_path_factory.mktemp("leaderboard") / "out"
  code = run_job(evaluate, "--predictions", inputs["predictions"], "--corpus",
                 inputs["corpus"], "--gold", inputs["gold_path"], "--output_dir", output,
                 "--bootstrap_samples", 200)
  assert code == 0
  return dict(inputs, output=output)


def _leaderboard_rows(output):
  with open(output / "leaderboard.csv", newline="", encoding="utf-8") as f:
    return {row["system_name"]: row for row in csv.DictReader(f)}


def test_em_f1_equal_t5_squad_exactly(leaderboard):
  squad = pytest.importorskip("t5.evaluation.metrics").squad
  rows = _leaderboard_rows(leaderboard["output"])
  gold = leaderboard["gold"]
  targets = [g["answer"] for g in gold]
  assert set(rows) == set(SYSTEMS)
  for name, predictions in leaderboard["systems"].items():
    predicted = [predictions.get(g["question"], ("", ""))[0] for g in gold]
    reference = squad(targets, predicted)
    # leaderboard.csv writes 12 significant digits, not the float noise of
    # np.mean(...) * 100 (scores.txt keeps the reference's value bit for bit:
    # test_scores_file_matches_reference_format).
    assert float(rows[name]["em"]) == pytest.approx(float(reference["em"]),
                                                    rel=1e-11, abs=0), name
    assert float(rows[name]["f1"]) == pytest.approx(float(reference["f1"]),
                                                    rel=1e-11, abs=0), name
  # The systems differ (two answer correctly with different passages), so the
  # equalities are not vacuous.
  assert len({rows[name]["f1"] for name in SYSTEMS}) == len(SYSTEMS) - 1


def test_scores_file_matches_reference_format(leaderboard):
  squad = pytest.importorskip("t5.evaluation.metrics").squad
  text = (leaderboard["output"] / "scores.txt").read_text(encoding="utf-8")
  gold = leaderboard["gold"]
  predictions = leaderboard["systems"]["reformatted-answers"]
  reference = squad([g["answer"] for g in gold],
                    [predictions.get(g["question"], ("", ""))[0] for g in gold])
  block = text.split("system_name: reformatted-answers\n")[1].split("\n\n")[0]
  assert f"SQuAD (em): {reference['em']}" in block
  assert f"SQuAD (f1): {reference['f1']}" in block


def _normalize(text):
  """SQuAD normalisation, written out here rather than imported from the project."""
  import re
  import string
  text = "".join(c for c in text.lower() if c not in set(string.punctuation))
  text = re.sub(r"\b(a|an|the)\b", " ", text)
  return text.split()


def _contains_tokens(haystack, needle):
  return any(haystack[i:i + len(needle)] == needle
             for i in range(len(haystack) - len(needle) + 1))


def test_string_match_autoais_equals_independent_computation(leaderboard):
  rows = _leaderboard_rows(leaderboard["output"])
  contents = leaderboard["contents"]
  gold = leaderboard["gold"]
  for name, predictions in leaderboard["systems"].items():
    attributable = 0
    for g in gold:
      if g["question"] not in predictions:
        continue
      answer, attribution = predictions[g["question"]]
      if attribution not in contents:
        continue
      title, text = contents[attribution]
      tokens = _normalize(answer)
      if not tokens or tokens in (["yes"], ["no"]):
        continue
      # The passage's title doubles as its headings in this corpus.
      if _contains_tokens(_normalize(" ".join([title, title, text])), tokens):
        attributable += 1
    # A percent, 100 * count / n with one rounding.
    assert float(rows[name]["string_match"]) == 100 * attributable / len(gold), name
  assert float(rows["right-answer-right-passage"]["string_match"]) > 50
  assert float(rows["right-answer-wrong-passage"]["string_match"]) < 20


def test_counts_reconcile_and_unmatched_are_reported(leaderboard):
  output = leaderboard["output"]
  manifest = json.loads((output / "run.json").read_text())
  counts = manifest["counts"]
  total_rows = sum(len(p) for p in leaderboard["systems"].values())
  assert counts["read"] == total_rows
  assert counts["read"] == counts["scored"] + counts["rejected"] + counts["unmatched"]
  dead = read_jsonl(output / "dead_letter.jsonl")
  assert len(dead) == counts["rejected"] + counts["unmatched"]
  unknown = [d for d in dead if d["reason"] == "attribution_not_in_corpus"]
  assert unknown and all("Nowhere" in d["record"]["attribution"] for d in unknown)
  assert all(d["source_file"].endswith(".csv") and d["source_line"] >= 2 for d in dead)
  ratings = pq.read_table(output / "ratings.parquet")
  assert ratings.num_rows == counts["scored"]
  assert ratings.column_names[:8] == ["system_name", "question", "answer",
                                      "attribution", "passage", "human_rating",
                                      "auto_ais", "nli_score"]
  assert manifest["join"]["strategy"] == "lookup"
  assert manifest["n_gold"] == 3610
