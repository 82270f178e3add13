"""Readers of ALCE result files and their JSON Lines variant: items, their
lines, and a dead letter naming file, line and field for each bad item."""
import gzip
import json

from autoais.schemas import CitationItem, DeadLetter
from autoais.transforms.citations.readers import (read_alce_document, read_alce_human_eval,
                                          read_alce_lines)

GOOD = {"question": "q", "output": "o [1].", "docs": [{"title": "T", "text": "x"}]}


def _write(path, text):
  path.write_text(text, encoding="utf-8")
  return str(path)


def test_items_carry_their_line_system_and_formatted_documents(tmp_path):
  data = {"args": {"a": [1, 2]}, "data": [
      GOOD, dict(GOOD, docs=[{"title": "T", "sent": "s", "text": "t"}],
                 qa_pairs=[{"short_answers": ["a", "b"]}], claims=["c"])]}
  path = _write(tmp_path / "my-system.json", json.dumps(data, indent=2))
  first, second = read_alce_document(path)
  assert first.system_name == "my-system" and first.docs == ["Title: T\nx"]
  assert (first.source_line, second.source_line) == (9, 19)
  text = (tmp_path / "my-system.json").read_text().splitlines()
  assert text[8].strip() == "{" and text[18].strip() == "{"
  assert second.docs == ["Title: T\ns"] and second.qa_pairs == [["a", "b"]]
  assert second.claims == ["c"] and not second.qampari


def test_qampari_by_file_name_or_flag(tmp_path):
  item = dict(GOOD, answers=[["a"], ["b", "c"]])
  path = _write(tmp_path / "qampari_run.json", json.dumps({"data": [item]}))
  (parsed,) = read_alce_document(path)
  assert parsed.qampari and parsed.answers == [["a"], ["b", "c"]]
  (parsed,) = read_alce_document(path, qampari=False)
  assert not parsed.qampari and parsed.answers is None


def test_bad_items_are_dead_letters_naming_line_and_field(tmp_path):
  items = [GOOD, {"question": "q", "output": 3, "docs": []},
           {"question": "q", "output": "o", "docs": [{"title": "T"}]},
           {"question": "q", "output": "o", "docs": [], "qa_pairs": []}, [1],
           {"question": "q", "output": "o", "docs": "x"}]
  path = _write(tmp_path / "s.json", "{\"data\": [\n" + ",\n".join(
      json.dumps(item) for item in items) + "\n]}")
  parsed = list(read_alce_document(path))
  assert isinstance(parsed[0], CitationItem)
  dead = parsed[1:]
  assert all(isinstance(d, DeadLetter) for d in dead)
  assert [(d.source_line, d.field, d.reason) for d in dead] == [
      (3, "output", "wrong_type"), (4, "docs[0].text", "missing_field"),
      (5, "qa_pairs", "empty_field"), (6, None, "malformed_item"),
      (7, "docs", "wrong_type")]
  assert dead[0].message.startswith(f"{path}:3: field 'output': item 1")


def test_a_broken_document_keeps_the_items_before_the_break(tmp_path):
  text = "{\"data\": [\n" + json.dumps(GOOD) + ",\n" + json.dumps(GOOD) + ",\n{\"question\": "
  path = _write(tmp_path / "s.json", text)
  parsed = list(read_alce_document(path))
  assert [type(p).__name__ for p in parsed] == ["CitationItem", "CitationItem",
                                                "DeadLetter"]
  assert parsed[2].reason == "malformed_json" and parsed[2].source_line == 4
  (missing,) = read_alce_document(_write(tmp_path / "t.json", "{\"items\": []}"))
  assert missing.field == "data" and missing.reason == "missing_field"
  (not_object,) = read_alce_document(_write(tmp_path / "u.json", "[]"))
  assert not_object.reason == "malformed_json"


def test_json_lines_variant_with_system_names_and_gzip(tmp_path):
  path = tmp_path / "runs.jsonl.gz"
  with gzip.open(path, "wt", encoding="utf-8") as f:
    f.write(json.dumps(dict(GOOD, system_name="a")) + "\n\n")
    f.write(json.dumps(GOOD) + "\n")
    f.write(json.dumps(dict(GOOD, system_name="")) + "\n")
    f.write("{not json\n")
  parsed = list(read_alce_lines(str(path)))
  assert [(p.system_name, p.item_index, p.source_line) for p in parsed[:2]] == [
      ("a", 0, 1), ("runs", 1, 3)]
  assert (parsed[2].field, parsed[2].source_line) == ("system_name", 4)
  assert (parsed[3].reason, parsed[3].source_line) == ("malformed_json", 5)


def test_format_by_suffix_unless_chosen():
  from autoais.beam_jobs.citations import file_format  # pylint: disable=import-outside-toplevel
  assert [file_format(p, None) for p in ("a.json", "a.jsonl.gz", "b.ndjson.zst",
                                         "c.JSON.bz2")] == ["alce", "jsonl", "jsonl",
                                                            "alce"]
  assert file_format("a.json", "jsonl") == "jsonl"
  # ALCE publishes its human evaluation as human_eval_citations_completed.json.
  assert [file_format(p, None) for p in (
      "r/human_eval_citations_completed.json", "gs://b/HUMAN_EVAL.json.gz",
      "human_eval/run.json", "human_eval.jsonl")] == [
          "human_eval", "human_eval", "alce", "jsonl"]


JUDGED = dict(GOOD, id="-7013890438520559398", sentences=[
    {"sentence": "o [1].", "sentence_recall_score": 1, "sentence_precision_score": 1,
     "citations": [{"citation_precision_score": 2}]}],
    automatic_recall_scores=[1], automatic_precision_scores=[1],
    automatic_citation_precision_scores=[[1]])


def test_judgements_are_read_from_an_items_sentences(tmp_path):
  second = dict(GOOD, sentences=[{"sentence_recall_score": 0},
                                 {"sentence_recall_score": True, "citations": [
                                     {"citation_precision_score": 1.0},
                                     {"citation_precision_score": 0}]}])
  path = _write(tmp_path / "s.jsonl", json.dumps(JUDGED) + "\n" + json.dumps(second)
                + "\n" + json.dumps(GOOD) + "\n")
  first, second, plain = read_alce_lines(path)
  assert (first.human_recall, first.human_citations) == ([1], [[2]])
  assert (second.human_recall, second.human_citations) == ([0, 1], [[], [1, 0]])
  assert (plain.human_recall, plain.human_citations) == (None, None)


def test_bad_judgements_are_dead_letters_naming_the_field(tmp_path):
  bad = [
      dict(GOOD, sentences={"sentence_recall_score": 1}),
      dict(GOOD, sentences=[{"citations": []}]),
      dict(GOOD, sentences=[{"sentence_recall_score": 2}]),
      dict(GOOD, sentences=[{"sentence_recall_score": 1},
                            {"sentence_recall_score": 1,
                             "citations": [{"citation_precision_score": 3}]}]),
      dict(GOOD, sentences=[{"sentence_recall_score": "1"}]),
      dict(GOOD, sentences=[{"sentence_recall_score": 1, "citations": [2]}]),
      dict(GOOD, sentences=[{"sentence_recall_score": 0.5}]),
  ]
  path = _write(tmp_path / "s.jsonl", "".join(json.dumps(item) + "\n" for item in bad))
  dead = list(read_alce_lines(path))
  assert all(isinstance(d, DeadLetter) for d in dead)
  assert [(d.source_line, d.field, d.reason) for d in dead] == [
      (1, "sentences", "wrong_type"),
      (2, "sentences[0].sentence_recall_score", "missing_field"),
      (3, "sentences[0].sentence_recall_score", "invalid_value"),
      (4, "sentences[1].citations[0].citation_precision_score", "invalid_value"),
      (5, "sentences[0].sentence_recall_score", "wrong_type"),
      (6, "sentences[0].citations[0]", "wrong_type"),
      (7, "sentences[0].sentence_recall_score", "wrong_type")]
  assert "expected one of 0, 1, 2, found 3" in dead[3].message


def _human_eval(document):
  return json.dumps(document, indent=4)


def test_human_eval_layout_systems_lines_and_summaries_skipped(tmp_path):
  document = {
      "asqa": {"asqa-turbo-ndoc5.json": {"1": JUDGED, "overall_results": {"x": [1, 2]},
                                         "2": dict(JUDGED, question="q2")}},
      "qampari": {"qampari-run.json": {"3": dict(JUDGED, answers=[["a"]])}},
  }
  path = _write(tmp_path / "human_eval_citations_completed.json", _human_eval(document))
  first, second, third = read_alce_human_eval(path)
  assert [i.system_name for i in (first, second, third)] == [
      "asqa-turbo-ndoc5", "asqa-turbo-ndoc5", "qampari-run"]
  assert [i.item_index for i in (first, second, third)] == [0, 1, 2]
  assert second.question == "q2" and first.human_citations == [[2]]
  assert not first.qampari and third.qampari and third.answers == [["a"]]
  lines = (tmp_path / "human_eval_citations_completed.json").read_text().splitlines()
  for item in (first, second, third):
    assert lines[item.source_line - 1].rstrip().endswith("{")
    assert lines[item.source_line].strip().startswith('"question"')
  assert (first.source_line, second.source_line) == (4, 44)


def test_human_eval_layout_breaks_and_bad_items(tmp_path):
  text = _human_eval({"asqa": {"s.json": {"1": JUDGED, "2": dict(JUDGED, docs=7)}}})
  path = _write(tmp_path / "h.json", text[:-2])
  parsed = list(read_alce_human_eval(path))
  assert isinstance(parsed[0], CitationItem)
  assert (parsed[1].field, parsed[1].reason) == ("docs", "wrong_type")
  assert parsed[2].reason == "malformed_json" and "after item 1" in parsed[2].message
  path = _write(tmp_path / "g.json", json.dumps({"asqa": [JUDGED]}))
  (dead,) = read_alce_human_eval(path)
  assert dead.reason == "malformed_json" and "dataset 'asqa'" in dead.message
  path = _write(tmp_path / "e.json", json.dumps({"asqa": {"": {"1": JUDGED}}}))
  (dead,) = read_alce_human_eval(path)
  assert dead.reason == "empty_system_name"


def test_keys_given_twice_are_refused(tmp_path):
  """json keeps the last value of a key given twice unseen (ALCE's eval.py,
  json.load, would score the last "data" list; this walker read both). An item
  giving a field twice is dead-lettered as repeated_key, naming it, and the
  items after it are read; a second "data" list, or a question id given twice
  in the human_eval layout, stops the document there (the items before are kept)."""
  repeated = json.dumps(GOOD).replace('"output": ', '"output": "other", "output": ')
  text = ('{"data": [\n' + json.dumps(GOOD) + ",\n" + repeated + ",\n" + json.dumps(GOOD)
          + '\n],\n"data": [\n' + json.dumps(GOOD) + "\n]}")
  parsed = list(read_alce_document(_write(tmp_path / "s.json", text)))
  assert [(type(p).__name__, p.source_line) for p in parsed] == [
      ("CitationItem", 2), ("DeadLetter", 3), ("CitationItem", 4), ("DeadLetter", 6)]
  assert (parsed[1].reason, parsed[1].field) == ("repeated_key", "output")
  assert parsed[1].message.endswith("field 'output': item 1: the key 'output' is given "
                                    "twice in one object (a JSON reader keeps one of the "
                                    "two unseen)")
  assert parsed[3].reason == "repeated_key" and (
      "the key 'data' is given twice in one object" in parsed[3].message)
  assert [p.item_index for p in parsed if isinstance(p, CitationItem)] == [0, 2]
  text = _human_eval({"asqa": {"s.json": {"1": JUDGED, "2": JUDGED}}}).replace(
      '"2": {', '"1": {')
  parsed = list(read_alce_human_eval(_write(tmp_path / "h.json", text)))
  assert isinstance(parsed[0], CitationItem) and len(parsed) == 2
  assert parsed[1].reason == "repeated_key" and "the key '1' is given twice" in (
      parsed[1].message)
  inner = _human_eval({"asqa": {"s.json": {"1": dict(JUDGED, question="q1"),
                                           "2": JUDGED}}}).replace(
      '"question": "q1",', '"question": "q1", "question": "q0",')
  parsed = list(read_alce_human_eval(_write(tmp_path / "i.json", inner)))
  assert [(type(p).__name__, getattr(p, "field", None)) for p in parsed] == [
      ("DeadLetter", "question"), ("CitationItem", None)]
  assert parsed[0].reason == "repeated_key" and parsed[1].item_index == 1
