"""`autoais training-data` on the real dev sets (AttributionBench, BEGIN, WiCE,
ExpertQA), on ratings rows citing a corpus written here (hard negatives), and
its seqio Task read back with seqio.

The split must be by question (no question in two splits), the counts in
run.json must equal the rows of the tables, the examples and labels must be
what an independent reading of the source finds, and the hard negatives must
be other passages of the positive's own article that do not contain the
answer, in the positive's split.
"""
import collections
import csv
import hashlib
import importlib.util
import json
import re
import unicodedata

import pyarrow.parquet as pq
import pytest

from autoais.beam_jobs import build_corpus, training_data
from tests.support.files import read_jsonl, write_jsonl
from tests.support.jobs import run_job
from tests.support.paths import shared_file

SPLITS = ("train", "validation", "test")


def _dev_inputs():
  return ",".join([
      f"attributionbench:{shared_file('attributionbench/dev_all_subset_balanced.jsonl')}",
      f"begin:{shared_file('begin/begin_dev_wow.tsv')}",
      f"wice:{shared_file('wice/oracle_chunks_claim_dev.jsonl')}",
      f"expertqa:{shared_file('expertqa/rand_val.jsonl')}"])


def _rows(directory):
  return {split: pq.read_table(directory / f"{split}.parquet").to_pylist()
          for split in SPLITS}


@pytest.fixture(scope="module")
def dev_data(tmp_path_factory):
  output = tmp_path_factory.mktemp("training-data") / "out"
  assert run_job(training_data, "--input", _dev_inputs(), "--family", "t5",
                 "--output_dir", output) == 0
  return output


def _key(text):
  return " ".join(text.split()).casefold()


def test_splits_are_by_question_and_counts_reconcile(dev_data):
  rows = _rows(dev_data)
  record = json.loads((dev_data / "run.json").read_text())
  assert record["status"] == "complete" and record["counts"]["reconciled"]
  splits_of = collections.defaultdict(set)
  digests = []
  for split, table in rows.items():
    entry = record["splits"][split]
    assert entry["examples"] == len(table)
    assert entry["positive"] == sum(row["label"] for row in table)
    for source, counts in entry["by_source"].items():
      mine = [row for row in table if row["source"] == source]
      assert counts["examples"] == len(mine)
      assert counts["positive"] == sum(row["label"] for row in mine)
    for row in table:
      assert row["split"] == split
      splits_of[_key(row["question"])].add(split)
      digests.append(row["digest"])
      # TRUE's form, and the targets of the label.
      assert row["inputs"] == f"premise: {row['premise']} hypothesis: {row['hypothesis']}"
      assert row["targets"] == str(row["label"])
    # Rows in digest order: a shuffle fixed by the data.
    assert [row["digest"] for row in table] == sorted(row["digest"] for row in table)
  assert all(len(found) == 1 for found in splits_of.values())
  assert len(digests) == len(set(digests))
  assert sum(len(table) for table in rows.values()) == record["counts"]["examples"]
  # Every split holds some of each data set and both labels.
  for split in SPLITS:
    assert set(record["splits"][split]["by_source"]) == {
        "attributionbench", "begin", "expertqa", "wice"}
    assert 0 < record["splits"][split]["positive"] < record["splits"][split]["examples"]


def test_examples_equal_an_independent_reading(dev_data):
  """AttributionBench and BEGIN: each line with a label and evidence is one
  example, with its label, split by its question (BEGIN: the message), once."""
  rows = [row for table in _rows(dev_data).values() for row in table]
  path = shared_file("attributionbench/dev_all_subset_balanced.jsonl")
  expected = {}
  for line, record in enumerate(read_jsonl(path), start=1):
    premise = "\n".join(r for r in record["references"] if r.strip())
    if premise:
      expected[line] = (premise, record["claim"],
                        int(record["attribution_label"] == "attributable"),
                        record["question"].strip())
  found = {row["source_line"]: (row["premise"], row["hypothesis"], row["label"],
                                row["question"])
           for row in rows if row["source"] == "attributionbench"}
  dead = [json.loads(line) for line in
          (dev_data / "dead_letter.jsonl").read_text().splitlines()]
  duplicates = {entry["source_line"] for entry in dead
                if entry["reason"] == "duplicate_example"
                and entry["source_file"].endswith(path.name)}
  assert set(found) | duplicates == set(expected)
  assert all(found[line] == expected[line] for line in found)
  begin = shared_file("begin/begin_dev_wow.tsv")
  lines = begin.read_text(encoding="utf-8").split("\n")
  columns = lines[0].split("\t")
  begin_rows = {row["source_line"]: row for row in rows if row["source"] == "begin"}
  for number, text in enumerate(lines[1:], start=2):
    if not text.strip() or number not in begin_rows:
      continue
    values = dict(zip(columns, text.split("\t")))
    row = begin_rows[number]
    assert row["label"] == int(values["begin_label"] == "Fully attributable")
    assert row["question"] == values["message"].strip()
    assert row["premise"] == values["knowledge"]


def _digests(directory):
  return {path.name: hashlib.sha256(path.read_bytes()).hexdigest()
          for path in sorted(directory.iterdir())
          if path.name not in ("run.json", "_autoais_outputs.json")}


def test_outputs_are_byte_identical_across_runs_and_runners(dev_data, tmp_path):
  assert run_job(training_data, "--input", _dev_inputs(), "--family", "t5",
                 "--output_dir", tmp_path / "multi",
                 "--direct_running_mode=multi_processing",
                 "--direct_num_workers=2") == 0
  assert _digests(dev_data) == _digests(tmp_path / "multi")


def test_another_seed_draws_another_split_of_the_same_examples(dev_data, tmp_path):
  assert run_job(training_data, "--input", _dev_inputs(), "--family",
                 "nli-classifier", "--seed", "7", "--output_dir", tmp_path / "out") == 0
  first = {row["item_id"]: row for table in _rows(dev_data).values() for row in table}
  second = {row["item_id"]: row for table in _rows(tmp_path / "out").values()
            for row in table}
  assert set(first) == set(second)
  assert any(first[key]["split"] != second[key]["split"] for key in first)
  # nli-classifier: the pair and the label only.
  assert all(row["inputs"] is None and row["targets"] is None for row in second.values())
  assert not (tmp_path / "out" / "seqio_task.py").exists()


# Ways one question is spelt across sources: each turns the question into
# text the eye (or a reader) takes for the same question.
_SPELLINGS = {
    "decomposed accents": lambda q: unicodedata.normalize("NFD", q),
    "full-width question mark": lambda q: q[:-1] + "\uff1f",
    "zero-width space": lambda q: q.replace("designed", "desi\u200bgned"),
    "space before the mark": lambda q: q[:-1] + " ?",
    "no mark": lambda q: q[:-1],
    "upper case, spaces": lambda q: "  " + q.upper().replace(" ", "   "),
}


def test_every_spelling_of_a_question_falls_in_one_split(tmp_path):
  """Twenty questions, each with its usual spelling and one variant per
  kind: a question's items stay in one split whichever way each is spelt."""
  records = []
  for number in range(20):
    question = f"Who designed the café at station {number}?"
    for kind, spell in (("usual", lambda q: q), *_SPELLINGS.items()):
      records.append({
          "id": f"{number}-{kind}", "question": spell(question),
          "claim": f"Station {number}'s café was designed by an architect ({kind}).",
          "references": [f"Title: Station {number}\n\nIts café was designed by "
                         "an architect."],
          "attribution_label": "attributable"})
  write_jsonl(tmp_path / "ab.jsonl", records)
  output = tmp_path / "out"
  assert run_job(training_data, "--input", f"attributionbench:{tmp_path / 'ab.jsonl'}",
                 "--family", "nli-classifier", "--validation_fraction", "0.3",
                 "--test_fraction", "0.3", "--output_dir", output) == 0
  splits_of = collections.defaultdict(set)
  for split, table in _rows(output).items():
    for row in table:
      splits_of[row["item_id"].split("-")[0]].add(split)
  assert len(splits_of) == 20
  assert all(len(found) == 1 for found in splits_of.values()), splits_of
  # And the questions do not all fall in one split: the hash still draws.
  assert len({split for found in splits_of.values() for split in found}) == 3


# ----------------------------------------------------------------------------
# Hard negatives.

ANSWER = "Zorbex"
_ARTICLES = {
    # article: [passage texts]; passages 0 and 2 hold the answer.
    "Alpha": [f"The founder of Alpha was {ANSWER}.", "Alpha lies on a river.",
              f"Later {ANSWER} sold the company.", "Alpha has a harbour.",
              "Alpha hosts a festival.", "Alpha's climate is mild."],
    "Beta": [f"Beta was built by {ANSWER} Ltd.", "Beta has a tower.",
             "Beta is old.", "Beta has a bridge."],
}


def _passage_id(article, index):
  return f"http://en.wikipedia.org/wiki/{article}#{article}#{index}"


@pytest.fixture(scope="module")
def negatives_run(tmp_path_factory):
  root = tmp_path_factory.mktemp("negatives")
  write_jsonl(root / "wiki.jsonl", [
      {"id": _passage_id(article, index), "contents": f"« {article} » « {article} » {text}"}
      for article, texts in _ARTICLES.items() for index, text in enumerate(texts)])
  assert run_job(build_corpus, "--input", root / "wiki.jsonl", "--output",
                 root / "corpus", "--num_shards", "2") == 0
  ratings = root / "ratings.csv"
  with open(ratings, "w", newline="", encoding="utf-8") as f:
    writer = csv.writer(f)
    writer.writerow(["system_name", "question", "answer", "attribution", "passage",
                     "human_rating"])
    for number, (article, rating) in enumerate(
        [("Alpha", "Y"), ("Beta", "Y"), ("Alpha", "N"), ("Gamma", "Y")]):
      passage = (f"Title: {article}\n\n{_ARTICLES[article][0]}" if article in _ARTICLES
                 else f"Title: {article}\n\nGamma is far from {ANSWER}.")
      writer.writerow(["sys", f"who is question {number} about {article}", ANSWER,
                       _passage_id(article, 0), passage, rating])
  output = root / "out"
  assert run_job(training_data, "--input", ratings, "--format", "ratings",
                 "--family", "nli-classifier", "--output_dir", output,
                 "--negatives_per_positive", "2", "--corpus", root / "corpus",
                 "--validation_fraction", "0.3", "--test_fraction", "0.3") == 0
  return output


def test_hard_negatives_are_other_passages_of_the_article_without_the_answer(
    negatives_run):
  rows = [row for table in _rows(negatives_run).values() for row in table]
  record = json.loads((negatives_run / "run.json").read_text())
  negatives = [row for row in rows if row["hard_negative"]]
  inputs = {row["item_id"]: row for row in rows if not row["hard_negative"]}
  assert len(inputs) == 4 and record["counts"]["examples"] == 4
  by_positive = collections.defaultdict(list)
  for row in negatives:
    positive_id, passage_id = row["item_id"].split("#negative:")
    positive = inputs[positive_id]
    by_positive[positive_id].append(passage_id)
    assert positive["label"] == 1 and row["label"] == 0
    assert row["split"] == positive["split"]
    assert row["hypothesis"] == positive["hypothesis"]
    article = re.match(r".*/wiki/([^#]+)#", passage_id).group(1)
    assert article in positive["question"]
    index = int(passage_id.rsplit("#", 1)[1])
    assert index != 0 and ANSWER not in _ARTICLES[article][index]
    assert row["premise"] == f"{article}. {_ARTICLES[article][index]}"
  # Two per positive whose article has them (Alpha: 3 eligible, Beta: 3); the
  # negative rating and the positive of an article not in the corpus get none.
  assert sorted(len(found) for found in by_positive.values()) == [2, 2]
  stats = record["hard_negatives"]
  assert stats["positives_with_passage_id"] == 3
  assert stats["articles_not_found"] == 1
  assert stats["candidates"] == 5 + 3
  assert stats["candidates_with_answer"] == 1 + 0
  assert stats["negatives_mined"] == len(negatives) == 4
  assert sum(record["splits"][split]["hard_negatives"] for split in SPLITS) == 4


def test_no_negative_contradicts_a_rating_or_rests_on_an_answer_not_looked_for(
    tmp_path):
  """Zeta: two systems give the same answer to one question, citing passages
  0 and 1, both rated Y, and passage 1 does not hold the answer's text; Eta:
  an answer whose accents the passages decompose; Theta and Iota: yes/no and
  an answer that normalises to nothing, which string match never looks for."""
  articles = {
      "Zeta": ["Zeta's capital is Paris.", "Zeta's seat of government is the old city.",
               "Zeta has hills.", "Zeta has rivers."],
      "Eta": ["Eta was founded by Renée.",
              unicodedata.normalize("NFD", "Later Renée left Eta."), "Eta has a port."],
      "Theta": ["Theta's sky is blue.", "Yes, Theta's sky is blue at noon.",
                "Theta has clouds."],
      "Iota": ["Iota is small.", "Iota is old.", "Iota is green."],
  }
  write_jsonl(tmp_path / "wiki.jsonl", [
      {"id": _passage_id(article, index), "contents": f"« {article} » « {article} » {text}"}
      for article, texts in articles.items() for index, text in enumerate(texts)])
  assert run_job(build_corpus, "--input", tmp_path / "wiki.jsonl", "--output",
                 tmp_path / "corpus", "--num_shards", "1") == 0
  rated = [("a", "what is the capital of zeta", "Paris", "Zeta", 0),
           ("b", "what is the capital of zeta", "Paris", "Zeta", 1),
           ("a", "who founded eta", "Renée", "Eta", 0),
           ("a", "is theta's sky blue", "yes", "Theta", 0),
           ("a", "what is iota", "The", "Iota", 0)]
  with open(tmp_path / "ratings.csv", "w", newline="", encoding="utf-8") as f:
    writer = csv.writer(f)
    writer.writerow(["system_name", "question", "answer", "attribution", "passage",
                     "human_rating"])
    for system, question, answer, article, index in rated:
      writer.writerow([system, question, answer, _passage_id(article, index),
                       f"Title: {article}\n\n{articles[article][index]}", "Y"])
  output = tmp_path / "out"
  assert run_job(training_data, "--input", tmp_path / "ratings.csv", "--format", "ratings",
                 "--family", "t5", "--output_dir", output,
                 "--negatives_per_positive", "5", "--corpus", tmp_path / "corpus") == 0
  rows = [row for table in _rows(output).values() for row in table]
  labels = collections.defaultdict(set)
  for row in rows:
    labels[(row["premise"], row["hypothesis"])].add(row["label"])
  assert all(len(found) == 1 for found in labels.values()), labels
  mined = sorted(row["item_id"].rsplit("#negative:", 1)[1] for row in rows
                 if row["hard_negative"])
  # Zeta's two positives share their hypothesis: their negatives are the same
  # examples, written once.
  assert mined == sorted([_passage_id("Zeta", 2), _passage_id("Zeta", 3),
                          _passage_id("Eta", 2)])
  stats = json.loads((output / "run.json").read_text())["hard_negatives"]
  assert stats["positives_with_passage_id"] == 5
  assert stats["positives_without_searchable_answer"] == 2
  assert stats["candidates_rated_attributable"] == 2
  assert stats["candidates"] == 2 + 2 + 2
  assert stats["candidates_with_answer"] == 1
  assert stats["negatives_mined"] == 5 and stats["duplicates"] == 2


# ----------------------------------------------------------------------------
# seqio.


def test_seqio_task_reads_back_the_parquet(dev_data, tmp_path):
  seqio = pytest.importorskip("seqio")
  from tests.support.t5_models import build_random_t5  # pylint: disable=import-outside-toplevel
  texts = [row["inputs"] for row in _rows(dev_data)["validation"]][:200]
  build_random_t5(str(tmp_path / "t5"), texts + ["1", "0"], vocab_size=300)
  spec = importlib.util.spec_from_file_location("seqio_task", dev_data / "seqio_task.py")
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  vocabulary = seqio.SentencePieceVocabulary(str(tmp_path / "t5" / "spiece.model"))
  task = module.register(vocabulary)
  for split, table in _rows(dev_data).items():
    raw = [{name: value.numpy() for name, value in example.items()}
           for example in task.source.get_dataset(split, shuffle=False)]
    assert [(ex["inputs"].decode(), ex["targets"].decode(), int(ex["label"]),
             ex["digest"].decode()) for ex in raw] == [
                 (row["inputs"], row["targets"], row["label"], row["digest"])
                 for row in table]
    assert module.NUM_EXAMPLES[split] == len(table)
  # Tokenised as a T5X run would read it: cut to the length, then EOS (id 1).
  table = _rows(dev_data)["test"][:20]
  length = 512
  dataset = task.get_dataset({"inputs": length, "targets": 4}, split="test",
                             shuffle=False, use_cached=False)
  for example, row in zip(dataset.take(20), table):
    assert list(example["inputs"].numpy()) == vocabulary.encode(
        row["inputs"])[:length - 1] + [1]
    assert list(example["targets"].numpy()) == vocabulary.encode(row["targets"]) + [1]


# ----------------------------------------------------------------------------
# Refusals: exit 2 before anything is written.


@pytest.mark.parametrize("extra, message", [
    (("--family", "bert"), "--family"),
    (("--family", "t5", "--corpus", "x"), "--corpus is read for hard negatives"),
    (("--family", "t5", "--negatives_per_positive", "2"), "--corpus"),
    (("--family", "t5", "--validation_fraction", "0.6", "--test_fraction", "0.5"),
     "together below 1"),
])
def test_bad_configurations_are_refused_before_anything_is_written(
    tmp_path, capsys, extra, message):
  source = tmp_path / "ab.jsonl"
  write_jsonl(source, [{"claim": "c", "references": ["r"],
                        "attribution_label": "attributable"}])
  output = tmp_path / "out"
  assert run_job(training_data, "--input", f"attributionbench:{source}",
                 "--output_dir", output, *extra) == 2
  assert message in capsys.readouterr().err
  assert not output.exists()


def test_an_input_without_a_format_is_refused(tmp_path, capsys):
  source = tmp_path / "ab.jsonl"
  write_jsonl(source, [{"claim": "c", "references": ["r"],
                        "attribution_label": "attributable"}])
  assert run_job(training_data, "--input", source, "--family", "t5",
                 "--output_dir", tmp_path / "out") == 2
  assert "no format" in capsys.readouterr().err
