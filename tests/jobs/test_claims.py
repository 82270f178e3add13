"""`autoais claims` on the real ExpertQA validation records: per-system counts and
macro / micro AutoAIS equal a straightforward computation written here, apart
from the project's code; agreement with the human `support` labels equals
scikit-learn's; readers name file, line and field; outputs are deterministic."""
import csv
import hashlib
import json
import re

import numpy as np
import pyarrow.parquet as pq
import pytest

from autoais.beam_jobs import claims
from autoais.transforms.scoring.string_match import string_match_attributable
from autoais.transforms.scoring.label import measure_name, named_figures
from tests.support.files import read_jsonl, write_jsonl
from tests.support.jobs import run_job
from tests.support.paths import shared_file
from tests.support.scorers import HashScorer, hash_score
from autoais.transforms.claims import steps as claim_steps
from autoais.transforms.claims.readers import read_claims_jsonl
from autoais.transforms.io.dead_letters import dead_letter_json
from autoais.transforms.labelled.expertqa import clean_text, did_abstain, read_expertqa
from autoais.schemas import ClaimInput, DeadLetter

ABSTAIN = ("The context does not", "I don't know", "The context provided does not",
           "The context provided doesn't", "The context doesn't",
           "not sure if I understand", "I'm sorry, but I can't",
           "The given context does not", "I couldn't find any relevant information")


def _expertqa_paths():
  return sorted(str(shared_file(f"expertqa/{name}_val.jsonl"))
                for name in ("domain", "rand"))


def _clean(text):
  """ExpertQA's cleanup, written out again: one-digit [n] markers (and one
  space after them) go, a leading URL part (before a blank line) goes."""
  text = re.sub(r"\[\d\]\s?", "", text)
  parts = text.split("\n\n")
  return " ".join(parts[1:] if parts[0].startswith("http") else parts)


def _expected(paths, attributable_of):
  """{system: figures} computed directly from the records; the first answer of
  a (system, question) in (file, line) order is kept."""
  answers = {}
  for path in paths:
    for record in read_jsonl(path):
      for system, answer in record["answers"].items():
        answers.setdefault((system, record["question"]), answer)
  systems = {}
  for (system, _), answer in sorted(answers.items()):
    figures = systems.setdefault(system, {"answers": [], "claims": 0, "no_evidence": 0,
                                          "abstaining": 0, "labels": [], "predicted": [],
                                          "scores": []})
    abstains = any(phrase in answer["answer_string"] for phrase in ABSTAIN)
    decisions = []
    for claim in answer["claims"]:
      figures["claims"] += 1
      if claim["evidence"]:
        premise = " ".join(_clean(item) for item in claim["evidence"])
        decision, score = attributable_of(premise, _clean(claim["claim_string"]))
      else:
        figures["no_evidence"] += 1
        decision, score = False, 0.0
      decisions.append(decision)
      support = claim["support"]
      if support in ("Complete", "Partial", "Incomplete", "Missing"):
        figures["labels"].append(support == "Complete")
        figures["predicted"].append(decision)
        figures["scores"].append(score)
    figures["answers"].append((decisions, abstains))
    figures["abstaining"] += abstains
  return systems


def _check_summary(output, expected):
  from sklearn import metrics  # pylint: disable=import-outside-toplevel
  with open(output / "claims.csv", newline="", encoding="utf-8") as f:
    rows = {row["system_name"]: row for row in csv.DictReader(f)}
  assert set(rows) == set(expected)
  # The figure's columns are named after the run's scorer (macro_string_match
  # for the baseline, macro_autoais for a model: label.named_figures).
  scorer = json.loads((output / "run.json").read_text())["scorer"]
  figure = named_figures("autoais", measure_name(scorer))
  for system, figures in expected.items():
    row = rows[system]
    assert int(row["n_answers"]) == len(figures["answers"]), system
    assert int(row["n_claims"]) == figures["claims"], system
    assert int(row["n_claims_without_evidence"]) == figures["no_evidence"], system
    assert int(row["n_abstaining_answers"]) == figures["abstaining"], system
    per_answer = [sum(d) / len(d) for d, _ in figures["answers"]]
    flat = [x for d, _ in figures["answers"] for x in d]
    # claims.csv holds percents, 12 significant digits (docs/claims.md).
    assert float(row[f"macro_{figure}"]) == pytest.approx(
        100 * np.mean(per_answer), rel=1e-11, abs=1e-10)
    assert float(row[f"micro_{figure}"]) == pytest.approx(100 * np.mean(flat), rel=1e-11,
                                                        abs=1e-10)
    assert float(row["macro_ci_low"]) <= float(row[f"macro_{figure}"]) <= float(
        row["macro_ci_high"])
    kept = [(d, a) for d, a in figures["answers"] if not a]
    assert float(row[f"macro_{figure}_non_abstaining"]) == pytest.approx(
        100 * np.mean([sum(d) / len(d) for d, _ in kept]), rel=1e-11, abs=1e-10)
    assert float(row[f"micro_{figure}_non_abstaining"]) == pytest.approx(
        100 * np.mean([x for d, _ in kept for x in d]), rel=1e-11, abs=1e-10)
    labels, predicted = figures["labels"], figures["predicted"]
    assert int(row["n_human_labelled"]) == len(labels)
    assert float(row["human_accuracy"]) == pytest.approx(
        100 * metrics.accuracy_score(labels, predicted), rel=1e-11, abs=1e-10)
    assert float(row["human_balanced_accuracy"]) == pytest.approx(
        100 * metrics.balanced_accuracy_score(labels, predicted), rel=1e-11, abs=1e-10)
    kappa = metrics.cohen_kappa_score(labels, predicted)
    assert float(row["human_kappa"]) == pytest.approx(kappa, abs=1e-12)
    assert float(row["human_roc_auc"]) == pytest.approx(
        metrics.roc_auc_score(labels, figures["scores"]), abs=1e-12)


def _run_claims(output, *extra, paths=None):
  return run_job(claims, "--input", ",".join(paths or _expertqa_paths()),
                 "--output_dir", output, "--bootstrap_samples", 100, *extra)


@pytest.fixture(scope="module")
def string_match_run(tmp_path_factory):
  output = tmp_path_factory.mktemp("claims") / "string_match"
  assert _run_claims(output) == 0
  return output


def test_expertqa_string_match_figures_equal_a_direct_computation(string_match_run):
  def string_match(premise, claim):
    decision = string_match_attributable(claim, premise)
    return decision, float(decision)
  expected = _expected(_expertqa_paths(), string_match)
  _check_summary(string_match_run, expected)
  # Not vacuous: some claims are attributable, some systems abstain, many claims
  # have no evidence.
  assert any(any(d) for f in expected.values() for d, _ in f["answers"])
  assert sum(f["abstaining"] for f in expected.values()) > 0
  assert sum(f["no_evidence"] for f in expected.values()) > 100


def test_expertqa_hash_scorer_figures_equal_a_direct_computation(tmp_path, monkeypatch):
  """A test scorer whose decisions depend on the exact premise and hypothesis:
  the figures are far from 0 and 1, and any difference in cleaning shows."""
  monkeypatch.setattr(claims, "scorer_from_options", lambda *_: HashScorer())
  assert _run_claims(tmp_path / "out") == 0

  def hashed(premise, claim):
    score = hash_score(premise, claim)
    return score > 0.5, score
  expected = _expected(_expertqa_paths(), hashed)
  _check_summary(tmp_path / "out", expected)
  summary = json.loads((tmp_path / "out" / "claims.json").read_text())
  assert all(20 < s["micro_autoais"] < 60 for s in summary["systems"])


def test_rerank_on_expertqa_follows_the_reference_choice(tmp_path, monkeypatch):
  """Rerank with a test scorer that flags inputs over 700 characters as too
  long: those claims get the 2 most and 2 least entailed sentences of their
  evidence, each sentence scored with the reference's (doubly wrapped) input."""
  monkeypatch.setattr(claims, "scorer_from_options", lambda *_: HashScorer(700))
  assert _run_claims(tmp_path / "out", "--evidence_mode", "rerank") == 0
  rows = {(r["source_file"], r["source_line"], r["system_name"], r["claim_index"]): r
          for r in pq.read_table(tmp_path / "out" / "claims_rows.parquet").to_pylist()}
  checked = reranked = 0
  for path in _expertqa_paths():
    for line, record in enumerate(read_jsonl(path), start=1):
      for system, answer in record["answers"].items():
        for index, claim in enumerate(answer["claims"]):
          row = rows.get((path, line, system, index))
          if row is None or not claim["evidence"]:
            continue
          text = _clean(claim["claim_string"])
          premise = " ".join(_clean(item) for item in claim["evidence"])
          too_long = len(premise) + len(text) > 700
          if too_long:
            sentences = [s for s in re.split(r"(?<=[.!?])\s+", premise.strip()) if s]
            neutral = [1 - hash_score(f"premise: {s} hypothesis: {text}", text)
                       for s in sentences]
            order = np.argsort(neutral, kind="stable")
            premise = " ".join(sentences[i] for i in np.concatenate((order[:2],
                                                                      order[-2:])))
            reranked += 1
          assert (row["reranked"], row["evidence"]) == (too_long, premise)
          assert row["nli_score"] == hash_score(premise, text)
          checked += 1
  assert checked == len(rows) - sum(r["n_evidence"] == 0 for r in rows.values())
  assert 100 < reranked < checked


def test_max_mode_keeps_the_best_evidence_item(tmp_path, monkeypatch):
  monkeypatch.setattr(claims, "scorer_from_options", lambda *_: HashScorer())
  assert _run_claims(tmp_path / "out", "--evidence_mode", "max") == 0
  rows = pq.read_table(tmp_path / "out" / "claims_rows.parquet").to_pylist()
  by_key = {(r["source_file"], r["source_line"], r["system_name"], r["claim_index"]): r
            for r in rows}
  several = 0
  for path in _expertqa_paths():
    for line, record in enumerate(read_jsonl(path), start=1):
      for system, answer in record["answers"].items():
        for index, claim in enumerate(answer["claims"]):
          row = by_key.get((path, line, system, index))
          if row is None or not claim["evidence"]:
            continue
          text = _clean(claim["claim_string"])
          items = [_clean(item) for item in claim["evidence"]]
          scores = [hash_score(item, text) for item in items]
          best = int(np.argmax(scores))
          assert (row["evidence"], row["nli_score"]) == (items[best], scores[best])
          several += len(items) > 1
  assert several > 100


def test_rows_and_run_manifest_reconcile(string_match_run):
  manifest = json.loads((string_match_run / "run.json").read_text())
  counts = manifest["counts"]
  rows = pq.read_table(string_match_run / "claims_rows.parquet")
  total = sum(len(a["claims"]) for path in _expertqa_paths() for r in read_jsonl(path)
              for a in r["answers"].values())
  assert counts["read"] == total and counts["reconciled"]
  assert counts["scored"] == rows.num_rows
  # rand_val and domain_val share 160 answers: the later copy is dead-lettered.
  assert counts["rejected"] == counts["by_reason"]["rejected:duplicate_answer"] > 0
  dead = read_jsonl(string_match_run / "dead_letter.jsonl")
  assert len(dead) == counts["rejected"]
  assert all("rand_val" in d["source_file"] for d in dead)
  keys = rows.select(["system_name", "question", "claim_index"]).to_pylist()
  assert len({tuple(k.values()) for k in keys}) == rows.num_rows
  with open(string_match_run / "claims_rows.csv", newline="", encoding="utf-8") as f:
    assert sum(1 for _ in csv.DictReader(f)) == rows.num_rows
  no_evidence = [r for r in rows.to_pylist() if r["n_evidence"] == 0]
  assert no_evidence and all(r["auto_ais"] == "N" and r["nli_score"] is None
                             and r["evidence"] is None for r in no_evidence)


def _digests(directory):
  names = ("claims_rows.parquet", "claims_rows.csv", "claims.csv", "claims.json",
           "claims.md", "dead_letter.jsonl")
  return {name: hashlib.sha256((directory / name).read_bytes()).hexdigest()
          for name in names}


def test_outputs_are_byte_identical_across_runs_and_runners(string_match_run,
                                                            tmp_path):
  assert _run_claims(tmp_path / "again") == 0
  assert _run_claims(tmp_path / "multi", "--direct_running_mode=multi_processing",
                     "--direct_num_workers=2") == 0
  assert _digests(string_match_run) == _digests(tmp_path / "again")
  assert _digests(string_match_run) == _digests(tmp_path / "multi")


# ----------------------------------------------------------------------------
# Cleaning, abstention, the rerank choice.


def test_cleaning_follows_the_reference():
  clean = clean_text
  assert clean("[3] https://a.org/x\n\nSome text [4] here.\n\nMore.") == (
      "Some text here. More.")
  assert clean("[1] https://only.a/url") == ""
  assert clean("No marker\n\ntwo parts") == "No marker two parts"
  # The reference's pattern takes one digit: [12] and the URL after it stay.
  assert clean("[12] https://a.org\n\ntext") == "[12] https://a.org text"
  assert clean("Claim [3].") == "Claim ."
  assert did_abstain("Sorry. I don't know the answer.")
  assert not did_abstain("I do know.")


def test_rerank_choice_is_the_references_argsort():
  rng = np.random.default_rng(0)
  for n in (1, 2, 3, 4, 9):
    scores = rng.random(n).round(1).tolist()  # ties included
    neutral = 1 - np.asarray(scores)
    order = np.argsort(neutral, kind="stable")
    expected = np.concatenate((order[:2], order[-2:])).tolist()
    assert claim_steps.rerank_choice(scores) == expected


# ----------------------------------------------------------------------------
# Readers.


def test_expertqa_reader_names_file_line_and_field(tmp_path):
  good_claim = {"claim_string": "c", "evidence": ["e"], "support": "Complete"}
  lines = [
      json.dumps({"question": "q1", "answers": {"s": {
          "answer_string": "I don't know.",
          "claims": [good_claim, {"claim_string": "d", "evidence": "not a list"},
                     {"claim_string": "", "evidence": []}, "not an object"]}}}),
      "{not json",
      json.dumps({"question": "", "answers": {}}),
      json.dumps({"question": "q2", "answers": ["s"]}),
      json.dumps({"question": "q3", "answers": {"s": {"claims": []},
                                                "t": {"claims": [good_claim]}}}),
  ]
  path = tmp_path / "records.jsonl"
  path.write_text("\n".join(lines) + "\n", encoding="utf-8")
  items = list(read_expertqa(str(path)))
  claims_read = [i for i in items if isinstance(i, ClaimInput)]
  dead = [(i.source_line, i.kind, i.reason, i.field) for i in items
          if isinstance(i, DeadLetter)]
  assert [(c.source_line, c.system_name, c.claim_index, c.abstained)
          for c in claims_read] == [(1, "s", 0, True), (5, "t", 0, False)]
  assert dead == [
      (1, "rejected", "wrong_type", "answers.s.claims[1].evidence"),
      (1, "rejected", "empty_claim", "answers.s.claims[2].claim_string"),
      (1, "rejected", "wrong_type", "answers.s.claims[3]"),
      (2, "rejected", "malformed_json", None),
      (3, "rejected", "wrong_type", "question"),
      (4, "rejected", "wrong_type", "answers"),
      (5, "unmatched", "answer_without_claims", "answers.s.claims"),
  ]
  assert all(i.message.startswith(f"{path}:{i.source_line}")
             for i in items if isinstance(i, DeadLetter))


def test_flat_reader_groups_claims_into_answers(tmp_path):
  path = write_jsonl(tmp_path / "sys-x.jsonl", [
      {"question": "q1", "claim": "a", "evidence": ["e1"], "support": "Complete"},
      {"question": "q2", "claim": "b", "evidence": []},
      {"question": "q1", "claim": "c", "evidence": None, "answer": "I don't know"},
      {"system_name": "other", "question": "q1", "claim": "d", "evidence": ["e"]},
      {"question": "q1", "claim": 3, "evidence": []},
  ])
  items = list(read_claims_jsonl(str(path)))
  rows = [(i.system_name, i.question, i.claim_index, i.answer_line, i.evidence,
           i.abstained) for i in items if isinstance(i, ClaimInput)]
  assert rows == [("sys-x", "q1", 0, 1, ["e1"], False), ("sys-x", "q2", 0, 2, [], False),
                  ("sys-x", "q1", 1, 1, [], True), ("other", "q1", 0, 4, ["e"], False)]
  (bad,) = [i for i in items if isinstance(i, DeadLetter)]
  assert (bad.source_line, bad.reason, bad.field) == (5, "wrong_type", "claim")



def test_a_support_label_that_is_not_utf8_is_rejected(tmp_path):
  """The support label is written to the claims table, which cannot hold bytes
  that are not UTF-8: the claim is dead-lettered naming the field (found by
  tests/robustness/test_reader_properties.py: it was read, for the writer to
  fail), as non_utf8 (it was wrong_type: "expected a string of UTF-8 text")."""
  for read, line in ((read_claims_jsonl, b'{"question": "q", "claim": "c", '
                      b'"support": "Compl\xffete"}\n'),
                     (read_expertqa, b'{"question": "q", "answers": {"s": {"claims": '
                      b'[{"claim_string": "c", "support": "Compl\xffete"}]}}}\n')):
    path = tmp_path / "claims.jsonl"
    path.write_bytes(line)
    (item,) = read(str(path))
    assert isinstance(item, DeadLetter) and item.reason == "non_utf8"
    assert item.field.endswith("support") and item.source_line == 1
    assert item.message.endswith("field 'support': bytes that are not UTF-8") or (
        item.message.endswith(".support': bytes that are not UTF-8"))


def test_bytes_that_are_not_utf8_in_a_claims_field_are_named_non_utf8(tmp_path):
  """Each text field of a claim (its system, question, answer, claim, an
  evidence item) holding bytes that are not UTF-8 is rejected as non_utf8,
  naming the field (an evidence item by its index). Before, they were
  wrong_type, "expected the claim, a string", of a field that is one."""
  bad = b"x\xffy"
  flat = {"system_name": b'"s"', "question": b'"q"', "answer": b'"a"', "claim": b'"c"',
          "evidence": b'["e0", "e1"]'}
  for field, value, named in (("system_name", b'"' + bad + b'"', "system_name"),
                              ("question", b'"' + bad + b'"', "question"),
                              ("answer", b'"' + bad + b'"', "answer"),
                              ("claim", b'"' + bad + b'"', "claim"),
                              ("evidence", b'["e0", "' + bad + b'"]', "evidence[1]")):
    record = dict(flat, **{field: value})
    path = tmp_path / "claims.jsonl"
    path.write_bytes(b"{" + b", ".join(b'"%s": %s' % (k.encode(), v)
                                       for k, v in record.items()) + b"}\n")
    (item,) = read_claims_jsonl(str(path))
    assert isinstance(item, DeadLetter), field
    assert (item.reason, item.field, item.source_line) == ("non_utf8", named, 1)
    assert item.message == f"{path}:1: field '{named}': bytes that are not UTF-8"
  expertqa = (b'{"question": "q", "answers": {"s": {"answer_string": "a", "claims": '
              b'[{"claim_string": "c", "evidence": ["e0", "e1"]}]}}}\n')
  for old, new, named in ((b'"q"', b'"' + bad + b'"', "question"),
                          (b'"a"', b'"' + bad + b'"', "answers.s.answer_string"),
                          (b'"c"', b'"' + bad + b'"', "answers.s.claims[0].claim_string"),
                          (b'"e1"', b'"' + bad + b'"', "answers.s.claims[0].evidence[1]"),
                          (b'"s"', b'"' + bad + b'"', "answers.x\\xffy")):
    path = tmp_path / "expertqa.jsonl"
    path.write_bytes(expertqa.replace(old, new, 1))
    (item,) = read_expertqa(str(path))
    assert isinstance(item, DeadLetter), named
    assert (item.reason, item.field) == ("non_utf8", named), named
    # Written whole: the field escaped (a system's key; it stopped the job with
    # UnicodeEncodeError), the record still JSON with its nested text escaped.
    written = json.loads(dead_letter_json(item))
    assert written["field"] == named and isinstance(written["record"], dict), named


def test_a_support_label_that_is_none_of_expertqas_is_rejected(tmp_path):
  """A misspelt label ("Kinda") used to give the claim no human label, so it
  left the agreement figures unseen; ExpertQA's labels are taken in any case,
  N/A and an absent one give no label. Both readers, and agreement's."""
  from autoais.transforms.labelled.readers import labelled_reader
  labels = ["Complete", "kinda", "partial", "N/A", None, "MISSING"]
  path = tmp_path / "claims.jsonl"
  path.write_text("".join(json.dumps({"question": "q", "claim": f"c{i}", "evidence": ["e"],
                                      **({"support": label} if label else {})}) + "\n"
                          for i, label in enumerate(labels)), encoding="utf-8")
  items = list(read_claims_jsonl(str(path)))
  assert [item.reason if isinstance(item, DeadLetter) else item.support
          for item in items] == ["Complete", "invalid_value", "partial", "N/A", None,
                                 "MISSING"]
  assert items[1].message == (f"{path}:2: field 'support': support must be Complete, "
                              "Partial, Incomplete, Missing, N/A (any case) or absent, "
                              "found 'kinda'")
  expertqa = tmp_path / "expertqa.jsonl"
  expertqa.write_text(json.dumps({"question": "q", "answers": {"s": {"claims": [
      {"claim_string": f"c{i}", "evidence": ["e"], "support": label}
      for i, label in enumerate(labels)]}}}) + "\n", encoding="utf-8")
  assert [item.field if isinstance(item, DeadLetter) else item.support
          for item in read_expertqa(str(expertqa))] == [
              "Complete", "answers.s.claims[1].support", "partial", "N/A", None, "MISSING"]
  found = list(labelled_reader("expertqa")(str(expertqa)))
  assert [(item.reason, item.kind) if isinstance(item, DeadLetter)
          else (item.human_label, item.human_attributable) for item in found] == [
              ("Complete", True), ("invalid_value", "rejected"), ("partial", False),
              ("no_human_label", "unmatched"), ("no_human_label", "unmatched"),
              ("MISSING", False)]

def test_flat_input_end_to_end_with_an_abstaining_answer(tmp_path, capsys):
  path = write_jsonl(tmp_path / "flat.jsonl", [
      {"system_name": "s", "question": "q1", "claim": "Paris is in France",
       "evidence": ["[1] https://x.org\n\nParis is in France."], "support": "Complete"},
      {"system_name": "s", "question": "q1", "claim": "Rome is in Spain",
       "evidence": ["Rome is in Italy."], "support": "Incomplete"},
      {"system_name": "s", "question": "q2", "claim": "Nothing", "evidence": [],
       "answer": "I don't know"},
  ])
  assert run_job(claims, "--input", path, "--format", "jsonl", "--output_dir",
                 tmp_path / "out", "--bootstrap_samples", 50) == 0
  (row,) = json.loads((tmp_path / "out" / "claims.json").read_text())["systems"]
  assert (row["n_answers"], row["n_claims"], row["n_abstaining_answers"]) == (2, 3, 1)
  # Percents; micro a ratio of counts, 100 * 1 / 3 with one rounding.
  assert row["micro_string_match"] == 100 / 3
  assert row["macro_string_match"] == 25.0  # (1/2 + 0) / 2
  assert row["macro_string_match_non_abstaining"] == row["micro_string_match_non_abstaining"] == 50
  assert row["human_accuracy"] == 100.0 and row["n_human_labelled"] == 2
  # The run ended with claims.md's table, then where its outputs are.
  printed = capsys.readouterr().out.rstrip("\n").split("\n")
  assert printed[-1].startswith(
      f"autoais claims: outputs in {tmp_path / 'out'}: run.json, claims_rows.parquet, ")
  table = (tmp_path / "out" / "claims.md").read_text().rstrip("\n").split("\n")
  assert printed[-2 - len(table):-2] == table


def test_an_answers_abstention_is_one_for_all_its_rows_whatever_their_order(tmp_path):
  """An answer of the flat format whose first line has no `answer` and whose
  second abstains: both its claim rows say abstained, in either order."""
  lines = [{"system_name": "s", "question": "q1", "claim": "Gamma", "evidence": ["Gamma"]},
           {"system_name": "s", "question": "q1", "claim": "Delta", "evidence": ["x"],
            "answer": "Well. I don't know."},
           {"system_name": "s", "question": "q2", "claim": "Eta", "evidence": ["Eta"],
            "answer": "Sure."}]
  found = []
  for name, order in (("forward", lines), ("backward", lines[1::-1] + lines[2:])):
    path = write_jsonl(tmp_path / f"{name}.jsonl", order)
    assert run_job(claims, "--input", path, "--format", "jsonl", "--output_dir",
                   tmp_path / name, "--bootstrap_samples", 20) == 0
    rows = pq.read_table(tmp_path / name / "claims_rows.parquet").to_pylist()
    found.append(sorted((row["question"], row["claim"], row["abstained"]) for row in rows))
    (system,) = json.loads((tmp_path / name / "claims.json").read_text())["systems"]
    assert system["n_abstaining_answers"] == 1
  assert found[0] == found[1] == [("q1", "Delta", True), ("q1", "Gamma", True),
                                  ("q2", "Eta", False)]


def test_expertqa_keys_of_one_system_in_one_record_are_one_answer(tmp_path):
  """"sysA" and "sysA " name one system: the second is a duplicate answer, not
  claims merged into the first."""
  claim = {"claim_string": "Paris is in France.", "evidence": ["Paris is in France."],
           "support": "Complete"}
  path = write_jsonl(tmp_path / "eqa.jsonl", [{"question": "Where is Paris?", "answers": {
      "sysA": {"answer_string": "France.", "claims": [claim]},
      "sysA ": {"answer_string": "I don't know", "claims": [claim, claim]}}}])
  items = list(read_expertqa(str(path)))
  assert [type(item).__name__ for item in items] == ["ClaimInput", "DeadLetter"]
  assert (items[1].reason, items[1].field) == ("duplicate_answer", "answers.sysA ")


def test_bad_configuration_exits_2_before_writing(tmp_path):
  assert run_job(claims, "--input", tmp_path / "none.jsonl", "--output_dir",
                 tmp_path / "out") == 2
  path = write_jsonl(tmp_path / "in.jsonl", [{"question": "q", "answers": {}}])
  assert run_job(claims, "--input", path, "--output_dir", tmp_path / "out",
                 "--evidence_mode", "best") == 2
  assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------------------
# With the (tiny, random) T5 model.

_LONG_EVIDENCE = [
    "[1] https://example.org/a\n\nThe Eiffel Tower is in Paris. It was built in 1889. "
    "Gustave Eiffel's company designed it. It is made of wrought iron.",
    "[2] https://example.org/b\n\nParis is the capital of France. The tower is 330 "
    "metres tall. Millions visit it every year! Is it the most visited monument?",
]


def _claim_lines(systems):
  lines = []
  for system in systems:
    lines += [
        {"system_name": system, "question": "q1", "claim": "The tower is in Paris [1].",
         "evidence": _LONG_EVIDENCE, "support": "Complete"},
        {"system_name": system, "question": "q1", "claim": "It was built in 1889.",
         "evidence": ["[1] https://example.org/a\n\nIt was built in 1889."],
         "support": "Complete"},
        {"system_name": system, "question": "q2", "claim": "It is made of steel.",
         "evidence": _LONG_EVIDENCE[:1], "support": "Incomplete"},
    ]
  return lines


def test_identical_claims_across_systems_are_scored_once(model_scorer, tmp_path):
  family, model = model_scorer
  path = write_jsonl(tmp_path / "flat.jsonl", _claim_lines(["a", "b"]) + [
      {"system_name": "c", "question": "q3", "claim": "Other.", "evidence": ["x."]}])
  assert run_job(claims, "--input", path, "--format", "jsonl", "--output_dir",
                 tmp_path / "out", "--bootstrap_samples", 20, "--scorer", family,
                 "--model", model) == 0
  scorer = json.loads((tmp_path / "out" / "run.json").read_text())["scorer"]
  assert scorer["family"] == family
  assert (scorer["rows_scored_by_model"], scorer["unique_triples"]) == (7, 4)
  rows = pq.read_table(tmp_path / "out" / "claims_rows.parquet").to_pylist()
  assert len(rows) == 7 and all(0 < row["nli_score"] < 1 for row in rows)


def test_rerank_chooses_the_references_sentences(tiny_t5, tmp_path):
  """Inputs longer than --max_input_tokens are reranked: every sentence scored
  with the reference's input, the 2 most and 2 least entailed kept and scored."""
  from autoais.models import t5_nli  # pylint: disable=import-outside-toplevel
  from autoais.schemas import AttributionExample  # pylint: disable=import-outside-toplevel
  path = write_jsonl(tmp_path / "flat.jsonl", _claim_lines(["a"]))
  assert run_job(claims, "--input", path, "--format", "jsonl", "--output_dir",
                 tmp_path / "out", "--bootstrap_samples", 20, "--scorer", "t5",
                 "--model", tiny_t5, "--evidence_mode", "rerank",
                 "--max_input_tokens", 64) == 0
  rows = pq.read_table(tmp_path / "out" / "claims_rows.parquet").to_pylist()
  assert [r["reranked"] for r in rows] == [True, False, True]
  model = t5_nli.load_t5_nli(tiny_t5, max_input_tokens=64)

  def score(premise, claim):
    (result,) = model.score([AttributionExample(premise, claim, claim, premise)],
                            "threshold", 0.5)
    return result.nli_score

  evidence = {_clean(line["claim"]): line["evidence"] for line in _claim_lines(["a"])}
  for row in rows:
    claim = row["claim"]
    premise = " ".join(_clean(item) for item in evidence[claim])
    if not row["reranked"]:
      assert row["evidence"] == premise
      continue
    sentences = claim_steps.split_sentences(premise)
    assert len(sentences) >= 4
    neutral = [1 - score(f"premise: {s} hypothesis: {claim}", claim) for s in sentences]
    order = np.argsort(neutral, kind="stable")
    chosen = " ".join(sentences[i] for i in np.concatenate((order[:2], order[-2:])))
    assert row["evidence"] == chosen
    assert row["nli_score"] == pytest.approx(score(chosen, claim), abs=1e-6)
