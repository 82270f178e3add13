"""Rows that carry their own passage (issue 46, item 2): `autoais evaluate` on a
JSON Lines file whose rows hold the passage text, with no corpus, rates every
row as the same rows joined to a corpus by attribution id; a row with both an
attribution and a passage is scored on its passage, and run.json counts it; a
row listing passages is rated on the passage audit's reranking chooses, equal
to the best of the same passages scored as rows of their own.

The inline file is made from the bundled example: each prediction's passage
is the corpus record its attribution names (the Pyserini `contents`, title and
headings included, so it goes through the same formatting, SPEC 5.1/5.2); a
prediction whose attribution is not in the corpus carries neither.
"""
import csv
import json

import pytest

from autoais.beam_jobs import evaluate
from tests.support.files import read_jsonl, write_jsonl
from tests.support.float_compare import BATCH_TOLERANCE, assert_clear_of_threshold
from tests.support.jobs import run_job
from tests.support.paths import PROJECT_ROOT

EXAMPLES = PROJECT_ROOT / "examples"
# What differs between a row read inline and the same row joined to the corpus:
# where it was read, and the attribution id the inline row does not carry.
_WHERE = ("source_file", "source_line")


def _predictions():
  corpus = {record["id"]: record["contents"]
            for record in read_jsonl(EXAMPLES / "corpus" / "wiki_sample.jsonl")}
  rows = []
  for path in sorted((EXAMPLES / "predictions").glob("*.csv")):
    with open(path, encoding="utf-8", newline="") as handle:
      for row in csv.DictReader(handle):
        rows.append(dict(row, system_name=path.stem,
                         contents=corpus.get(row["attribution"])))
  assert sum(row["contents"] is None for row in rows) >= 1  # some cite no passage
  return rows


def _ratings(output):
  with open(output / "ratings.csv", encoding="utf-8", newline="") as handle:
    return {(row["system_name"], row["question"]): row for row in csv.DictReader(handle)}


def _evaluate(output, predictions, *flags):
  code = run_job(evaluate, "--predictions", predictions, "--gold", EXAMPLES / "gold.jsonl",
                 "--output_dir", output, "--bootstrap_samples", 50, *flags)
  assert code == 0
  return json.loads((output / "run.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory, example_corpus, tiny_t5):
  root = tmp_path_factory.mktemp("inline")
  rows = _predictions()
  # Inline: the passage and no attribution (none at all where the corpus has none).
  write_jsonl(root / "inline.jsonl", [
      {"system_name": row["system_name"], "question": row["question"],
       "answer": row["answer"], **({"passage": row["contents"]} if row["contents"] else {})}
      for row in rows])
  # Both: the attribution and its passage.
  write_jsonl(root / "both.jsonl", [
      {"system_name": row["system_name"], "question": row["question"],
       "answer": row["answer"], "attribution": row["attribution"],
       **({"passage": row["contents"]} if row["contents"] else {})} for row in rows])
  model = ("--scorer", "t5", "--model", tiny_t5, "--torch_threads", 1)
  predictions = EXAMPLES / "predictions" / "*.csv"
  return {
      "rows": rows,
      "root": root,
      "corpus": _evaluate(root / "corpus", predictions, "--corpus", example_corpus,
                          *model),
      "inline": _evaluate(root / "inline", root / "inline.jsonl", *model),
      "both": _evaluate(root / "both", root / "both.jsonl", "--corpus",
                        example_corpus, *model),
  }


def _same_ratings(first, second, ignore):
  assert first.keys() == second.keys() and first
  # The runs group their examples differently (another batch shape): scores
  # agree within a tolerance, and the decisions (auto_ais, and the summaries
  # counted from them) exactly, as no score is near the threshold (0.5).
  assert_clear_of_threshold((row["nli_score"] for row in first.values()
                             if row["nli_score"]), 0.5)
  for key, row in first.items():
    other = second[key]
    for column, value in row.items():
      if column in ignore:
        continue
      if column == "nli_score" and value:
        assert float(other[column]) == pytest.approx(float(value),
                                                     abs=BATCH_TOLERANCE), key
      else:
        assert other[column] == value, (key, column)


def test_inline_passages_without_a_corpus_rate_every_row_as_the_corpus_does(runs):
  root = runs["root"]
  corpus, inline = _ratings(root / "corpus"), _ratings(root / "inline")
  _same_ratings(corpus, inline, ignore=_WHERE + ("attribution",))
  assert all(row["attribution"] == "" for row in inline.values())
  # Some rows are Y and some N: the comparison is not vacuous.
  assert {row["auto_ais"] for row in inline.values()} == {"Y", "N"}
  # The summaries are the same figures.
  for name in ("leaderboard.csv", "scores.txt"):
    assert (root / "inline" / name).read_text() == (root / "corpus" / name).read_text()
  record = runs["inline"]
  assert record["inputs"]["corpus"] is None
  n_inline = sum(row["contents"] is not None for row in runs["rows"])
  assert record["passages"]["from_rows"] == n_inline
  assert record["passages"]["from_rows_over_attribution"] == 0
  # The rows without a passage are counted as not attributable, as the corpus
  # run counts the ones whose attribution it does not hold.
  assert record["counts"]["by_reason"].get("unmatched:missing_attribution") == (
      runs["corpus"]["counts"]["by_reason"]["unmatched:attribution_not_in_corpus"])


def test_a_row_with_an_attribution_and_a_passage_is_scored_on_its_passage(runs):
  root = runs["root"]
  _same_ratings(_ratings(root / "corpus"), _ratings(root / "both"), ignore=_WHERE)
  record = runs["both"]
  n_inline = sum(row["contents"] is not None for row in runs["rows"])
  assert record["passages"]["from_rows"] == n_inline
  assert record["passages"]["from_rows_over_attribution"] == n_inline
  # Only the rows without a passage were looked up in the corpus.
  assert runs["corpus"]["passages"] == dict(record["passages"], from_rows=0,
                                            from_rows_over_attribution=0)


def test_a_row_passage_wins_over_its_attribution(tmp_path, example_corpus):
  """The passage given is the one scored, even where the corpus holds another
  passage under the row's attribution."""
  row = next(row for row in _predictions() if row["contents"])
  write_jsonl(tmp_path / "one.jsonl", [{
      "question": row["question"], "answer": row["answer"],
      "attribution": row["attribution"], "passage": f"{row['answer']} is the answer."}])
  _evaluate(tmp_path / "out", tmp_path / "one.jsonl", "--corpus", example_corpus)
  (rated,) = _ratings(tmp_path / "out").values()
  assert rated["passage"] == f"{row['answer']} is the answer."
  assert rated["attribution"] == row["attribution"] and rated["auto_ais"] == "Y"


def test_a_passage_of_white_space_is_no_passage(tmp_path, example_corpus):
  """A cell of spaces beside an attribution is no passage: the row is rated on
  its attribution's passage, as with an empty cell, not on the spaces."""
  row = next(row for row in _predictions() if row["contents"])
  for name, passage in (("empty", ""), ("spaces", "   ")):
    write_jsonl(tmp_path / f"{name}.jsonl", [{
        "question": row["question"], "answer": row["answer"],
        "attribution": row["attribution"], "passage": passage}])
    _evaluate(tmp_path / name, tmp_path / f"{name}.jsonl", "--corpus", example_corpus)
  (empty,), (spaces,) = (_ratings(tmp_path / name).values() for name in ("empty", "spaces"))
  assert spaces["passage"] == empty["passage"] and spaces["passage"].strip()
  assert spaces["auto_ais"] == empty["auto_ais"]


@pytest.fixture(scope="module")
def lists(tmp_path_factory, tiny_t5):
  """A row per question listing three passages (the one its attribution names
  in the middle), and the same passages as single-passage rows scored apart
  (one system per place in the list, another run); beside the lists, a row
  with an empty list, one with a number in its list, and a repeated row."""
  root = tmp_path_factory.mktemp("lists")
  rows = [row for row in _predictions() if row["contents"]]
  questions = {}
  for row in rows:
    questions.setdefault(row["question"], row)
  picked = list(questions.values())[:6]
  others = [row["contents"] for row in rows]
  listed = []
  for number, row in enumerate(picked):
    wrong = [text for text in others if text != row["contents"]]
    listed.append(dict(question=row["question"], answer=row["answer"], passage=[
        wrong[number % len(wrong)], row["contents"], wrong[(number * 7 + 3) % len(wrong)]]))
  records = [dict(row, system_name="listed") for row in listed]
  asked = {row["question"] for row in picked}
  free = next(question for question in _gold_questions() if question not in asked)
  records += [
      {"system_name": "listed", "question": free, "answer": "x", "passage": []},
      {"system_name": "other", "question": free, "answer": "x",
       "passage": ["a passage", 7]},
      dict(records[0], passage=records[0]["passage"][::-1])]  # a second answer: rejected
  write_jsonl(root / "lists.jsonl", records)
  write_jsonl(root / "single.jsonl", [
      {"system_name": f"place-{place}", "question": row["question"],
       "answer": row["answer"], "passage": passage}
      for row in listed for place, passage in enumerate(row["passage"])])
  model = ("--scorer", "t5", "--model", tiny_t5, "--torch_threads", 1)
  return {"root": root, "listed": listed,
          "lists": _evaluate(root / "lists", root / "lists.jsonl", *model),
          "single": _evaluate(root / "single", root / "single.jsonl", *model)}


def _gold_questions():
  return [record["question"] for record in read_jsonl(EXAMPLES / "gold.jsonl")]


def test_a_list_of_passages_is_rated_on_its_best_passage_scored_apart(lists):
  """The row's nli_score is the highest of its passages' scored as rows of their
  own, its decision and shown passage that passage's (audit's reranked choice),
  and with a threshold it is Y exactly where one of its passages is."""
  listed = _ratings(lists["root"] / "lists")
  single = _ratings(lists["root"] / "single")
  places = set()
  for row in lists["listed"]:
    rated = listed[("listed", row["question"])]
    apart = [single[(f"place-{place}", row["question"])] for place in range(3)]
    scores = [float(one["nli_score"]) for one in apart]
    best = apart[scores.index(max(scores))]
    assert float(rated["nli_score"]) == pytest.approx(max(scores), abs=1e-5)
    assert (rated["auto_ais"], rated["passage"]) == (best["auto_ais"], best["passage"])
    assert (rated["auto_ais"] == "Y") == any(one["auto_ais"] == "Y" for one in apart)
    assert (rated["em"], rated["f1"]) == (best["em"], best["f1"])
    places.add(scores.index(max(scores)))
  # The passages chosen are not all at one place: the choice is made.
  assert len(places) > 1
  record = lists["lists"]
  n = len(lists["listed"])
  assert record["passages"]["from_row_lists"] == n + 1  # the repeated row too
  assert record["passages"]["listed_passages"] == 3 * (n + 1)
  assert "reranking" in record["passages"]["list_rule"]


def test_a_row_with_an_empty_list_has_no_passage(lists):
  record = lists["lists"]
  dead = read_jsonl(lists["root"] / "lists" / "dead_letter.jsonl")
  (empty,) = [letter for letter in dead if letter["reason"] == "missing_attribution"]
  assert empty["source_line"] == len(lists["listed"]) + 1
  counts = record["counts"]
  assert counts["read"] == counts["scored"] + counts["rejected"] + counts["unmatched"]
  assert counts["scored"] == len(lists["listed"])


def test_a_list_with_a_number_is_refused_naming_the_item(lists):
  dead = read_jsonl(lists["root"] / "lists" / "dead_letter.jsonl")
  (bad,) = [letter for letter in dead if letter["reason"] == "wrong_type"]
  assert (bad["source_line"], bad["field"]) == (len(lists["listed"]) + 2, "passage")
  assert "item 2 of the list of passages: expected a string, found int" in bad["message"]
  (repeated,) = [letter for letter in dead if letter["reason"] == "duplicate_prediction"]
  assert repeated["source_line"] == len(lists["listed"]) + 3


def test_a_file_without_attribution_or_passage_is_refused(tmp_path):
  write_jsonl(tmp_path / "bare.jsonl", [{"question": "q", "answer": "a"}])
  code = run_job(evaluate, "--predictions", tmp_path / "bare.jsonl", "--output_dir",
                 tmp_path / "out")
  assert code == 2 and not (tmp_path / "out").exists()


def test_audit_with_every_candidate_inline_needs_no_corpus(tmp_path, example_corpus):
  """audit's candidate lists (JSON Lines) carry their passages inline: with no
  corpus, each answer's figures equal those of the same candidates named by id
  and joined to the corpus (the bundled TREC runs, less the ids the corpus
  does not hold)."""
  from autoais.beam_jobs import audit  # pylint: disable=import-outside-toplevel
  corpus = {record["id"]: record["contents"]
            for record in read_jsonl(EXAMPLES / "corpus" / "wiki_sample.jsonl")}
  lists = {}
  for path in sorted((EXAMPLES / "audit" / "runs").glob("*.trec")):
    for line in path.read_text(encoding="utf-8").splitlines():
      qid, _, doc, rank, _, tag = line.split()
      if doc in corpus:
        lists.setdefault((tag, qid), []).append((int(rank), doc))
  for name, candidate in (("ids", lambda doc: {"id": doc}),
                          ("inline", lambda doc: {"passage": corpus[doc]})):
    write_jsonl(tmp_path / f"{name}.jsonl", [
        {"system_name": tag, "query_id": qid,
         "candidates": [dict(candidate(doc), rank=rank) for rank, doc in ranked]}
        for (tag, qid), ranked in sorted(lists.items())])
  outputs = {}
  for name, flags in (("ids", ("--corpus", example_corpus)), ("inline", ())):
    assert run_job(audit, "--answers", EXAMPLES / "audit" / "answers.csv",
                   "--candidates", tmp_path / f"{name}.jsonl", "--topics",
                   EXAMPLES / "audit" / "topics.tsv", "--output_dir", tmp_path / name,
                   "--bootstrap_samples", 50, *flags) == 0
    with open(tmp_path / name / "audit_answers.csv", encoding="utf-8", newline="") as f:
      outputs[name] = list(csv.DictReader(f))
  assert json.loads((tmp_path / "inline" / "run.json").read_text())["inputs"][
      "corpus"] is None
  decisions = ("top1_attributable", "any_attributable", "reranked_attributable",
               "reranked_nli_score", "n_attributable")
  assert len(outputs["ids"]) == len(outputs["inline"]) > 0
  for by_id, inline in zip(outputs["ids"], outputs["inline"]):
    assert {c: by_id[c] for c in decisions} == {c: inline[c] for c in decisions}
    assert inline["top1_id"].startswith("inline:")
  assert {row["top1_attributable"] for row in outputs["inline"]} == {"Y", "N"}
  assert (tmp_path / "ids" / "audit.csv").read_text() == (
      tmp_path / "inline" / "audit.csv").read_text()
