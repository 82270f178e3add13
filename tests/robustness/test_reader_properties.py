"""Property-based tests of every reader over generated damage
(tests/support/reader_damage.py says what is generated and the invariant checked).

    pytest tests/robustness/test_reader_properties.py  # ci profile
    pytest tests/robustness/test_reader_properties.py --hypothesis-profile=nightly  # 20x more

Readers: predictions CSV / JSON Lines / Parquet, corpus sources (Pyserini and
id,title,text JSON Lines), gold JSON Lines, and, each as CSV / JSON Lines /
Parquet: human ratings, `autoais sck` answers, knowledge-graph statements and
`autoais audit` answers; audit candidates (TREC run lines, candidate lists in
JSON Lines) and topics TSV; flat claims JSON Lines and ExpertQA records. A
second group of tests plants a bug
in a reader and checks that the property finds it: an invariant that cannot
fail is not trusted. The end-to-end property runs the evaluate job on generated
prediction files and checks run.json and dead_letter.jsonl.
"""
import collections
import json
import os
import tempfile

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from autoais.beam_jobs import evaluate
from autoais.schemas import DeadLetter
from tests.support import reader_damage
from tests.support.jobs import run_job
from tests.support.paths import PROJECT_ROOT
from tests.support.reader_damage import check_reader
from autoais.transforms.audit.readers import read_audit_answers, read_candidates, read_topics
from autoais.transforms.claims.readers import read_claims_jsonl
from autoais.transforms.corpus.sources import read_corpus_source
from autoais.transforms.io.gold import read_gold
from autoais.transforms.io.predictions import read_predictions
from autoais.transforms.labelled.expertqa import read_expertqa
from autoais.transforms.labelled.readers import read_human_ratings
from autoais.transforms.sck.knowledge_graph import read_kg_statements
from autoais.transforms.sck.readers import read_answers

READERS = {
    "csv_predictions": (reader_damage.csv_prediction_files(), read_predictions),
    "jsonl_predictions": (reader_damage.jsonl_prediction_files(),
                          read_predictions),
    "parquet_predictions": (reader_damage.parquet_prediction_files(),
                            read_predictions),
    "corpus_jsonl": (reader_damage.corpus_files(), read_corpus_source),
    "gold_jsonl": (reader_damage.gold_files(), read_gold),
    "human_ratings": (reader_damage.table_files(reader_damage.HUMAN_RATINGS),
                      read_human_ratings),
    "sck_answers": (reader_damage.table_files(reader_damage.SCK_ANSWERS),
                    read_answers),
    "kg_statements": (reader_damage.table_files(reader_damage.KG_STATEMENTS),
                      read_kg_statements),
    "audit_answers": (reader_damage.table_files(reader_damage.AUDIT_ANSWERS),
                      read_audit_answers),
    "trec_run": (reader_damage.trec_run_files(), read_candidates),
    "candidates_jsonl": (reader_damage.candidate_list_files(),
                         read_candidates),
    "topics_tsv": (reader_damage.topic_files(), read_topics),
    "claims_jsonl": (reader_damage.claim_files(), read_claims_jsonl),
    "expertqa": (reader_damage.expertqa_files(), read_expertqa),
}


def reader_property(files, reader, **overrides):
  """The property as a test function: reader_damage.check_reader on each file
  (settings: the loaded profile's, with `overrides`)."""

  @given(files)
  @settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
            deadline=None, **overrides)
  def check(generated):
    with tempfile.TemporaryDirectory() as directory:
      path = generated.write(directory)
      items = list(reader(path))
      check_reader(path, generated, items)

  return check


@pytest.mark.parametrize("name", sorted(READERS))
def test_reader_keeps_every_row_under_damage(name):
  files, reader = READERS[name]
  reader_property(files, reader)()


# ----------------------------------------------------------------------------
# Planted bugs: each invariant must catch one.


def _drops_last_good_row(reader):
  def read(path):
    items = list(reader(path))
    good = [i for i, item in enumerate(items) if not isinstance(item, DeadLetter)]
    if good:
      del items[good[-1]]
    return items
  return read


def _drops_dead_letters_of_one_reason(reader):
  def read(path):
    return [item for item in reader(path) if not (
        isinstance(item, DeadLetter) and item.reason in ("malformed_csv",
                                                         "malformed_json",
                                                         "missing_field"))]
  return read


def _reports_the_line_after(reader):
  def read(path):
    return [item._replace(source_line=item.source_line + 1)
            if isinstance(item, DeadLetter) and item.source_line % 2 else item
            for item in reader(path)]
  return read


def _crashes_on_nul(reader):
  def read(path):
    for item in reader(path):
      if any(isinstance(value, str) and "\x00" in value for value in item):
        raise ValueError("NUL")
      yield item
  return read


def _names_no_field(reader):
  def read(path):
    return [item._replace(field=None) if isinstance(item, DeadLetter) else item
            for item in reader(path)]
  return read


def _strips_answers(reader):
  def read(path):
    return [item._replace(answer=item.answer.strip()) if hasattr(item, "answer")
            else item for item in reader(path)]
  return read


PLANTED = [
    ("csv_predictions", _drops_last_good_row),
    ("jsonl_predictions", _drops_dead_letters_of_one_reason),
    ("csv_predictions", _reports_the_line_after),
    ("parquet_predictions", _crashes_on_nul),
    ("corpus_jsonl", _names_no_field),
    ("csv_predictions", _strips_answers),
    ("gold_jsonl", _drops_last_good_row),
    ("human_ratings", _reports_the_line_after),
    ("sck_answers", _drops_last_good_row),
    ("kg_statements", _names_no_field),
    ("audit_answers", _strips_answers),
    ("trec_run", _reports_the_line_after),
    ("candidates_jsonl", _drops_last_good_row),
    ("topics_tsv", _names_no_field),
    ("claims_jsonl", _reports_the_line_after),
    ("expertqa", _drops_last_good_row),
]


@pytest.mark.parametrize("name, bug", PLANTED,
                         ids=[f"{n}-{b.__name__}" for n, b in PLANTED])
def test_the_property_catches_a_planted_bug(name, bug):
  files, reader = READERS[name]
  # With the profile's own number of examples: the bug is caught within the
  # search that `make test` runs.
  check = reader_property(files, bug(reader), phases=[Phase.generate])
  with pytest.raises((AssertionError, ValueError)):
    check()


# ----------------------------------------------------------------------------
# End to end: the evaluate job on generated prediction files.


def _first_record_lacks_a_field(generated) -> bool:
  """Whether a generated JSON Lines file's first record is a JSON object
  without a required field (the job refuses it at launch)."""
  if ".jsonl" not in generated.name or not generated.records:
    return False
  try:
    fields = json.loads(generated.records[0].data.decode("utf-8", "surrogateescape"))
  except (ValueError, RecursionError):
    return False
  return isinstance(fields, dict) and not (
      set(reader_damage.REQUIRED) <= set(fields) and {"attribution", "passage"} & set(fields))


def test_evaluate_reconciles_generated_damage(example_corpus):
  """read = scored + rejected + unmatched, and every damaged record is in
  dead_letter.jsonl at its file and line, for generated prediction files (with
  the example gold and corpus, most questions are unmatched: the reconciliation
  covers all three outcomes). A file with no record at all, or whose first JSON
  record lacks a required field, is refused (exit 2); a file none of whose
  records is scored is named in run.json's empty_inputs (exit 3)."""
  gold = PROJECT_ROOT / "examples" / "gold.jsonl"
  files = st.lists(st.one_of(reader_damage.csv_prediction_files(),
                             reader_damage.jsonl_prediction_files()),
                   min_size=1, max_size=3)

  @given(files)
  @settings(max_examples=max(15, settings().max_examples // 20), deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
  def check(generated_files):
    with tempfile.TemporaryDirectory() as directory:
      paths = [generated.write(directory, prefix=f"{index}-")
               for index, generated in enumerate(generated_files)]
      output = os.path.join(directory, "out")
      code = run_job(evaluate, "--predictions", ",".join(paths), "--corpus",
                     example_corpus, "--gold", gold, "--output_dir", output,
                     "--bootstrap_samples", 10)
      if any(not g.records and ".jsonl" in g.name for g in generated_files):
        assert code == 2  # JSON Lines with no record: an empty file
        return
      if any(_first_record_lacks_a_field(g) for g in generated_files):
        assert code == 2
        return
      manifest = json.load(open(os.path.join(output, "run.json"), encoding="utf-8"))
      assert code == (3 if manifest["status"] == "empty_inputs" else 0)
      counts = manifest["counts"]
      assert counts["read"] == sum(len(g.records) for g in generated_files)
      assert counts["read"] == counts["scored"] + counts["rejected"] + counts["unmatched"]
      dead = [json.loads(line) for line in open(os.path.join(output, "dead_letter.jsonl"),
                                                encoding="utf-8")]
      assert len(dead) == counts["rejected"] + counts["unmatched"]
      located = {(row["source_file"], row["source_line"]): row for row in dead}
      dead_by_file = collections.Counter(row["source_file"] for row in dead)
      assert [entry["file"] for entry in manifest.get("empty_inputs", [])] == [
          path for path, generated in zip(paths, generated_files)
          if len(generated.records) == dead_by_file[path]]
      for path, generated in zip(paths, generated_files):
        for record in generated.records:
          if not record.good:
            row = located[(path, record.line)]
            assert row["kind"] == "rejected" and row["reason"] in record.reasons

  check()
