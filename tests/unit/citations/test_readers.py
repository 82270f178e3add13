"""Readers of ALCE result files and their JSON Lines variant: items, their
lines, and a dead letter naming file, line and field for each bad item."""
import gzip
import json

from schemas import CitationItem, DeadLetter
from transforms.citations.readers import read_alce_document, read_alce_lines

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
  from beam_jobs.citations import file_format  # pylint: disable=import-outside-toplevel
  assert [file_format(p, None) for p in ("a.json", "a.jsonl.gz", "b.ndjson.zst",
                                         "c.JSON.bz2")] == ["alce", "jsonl", "jsonl",
                                                            "alce"]
  assert file_format("a.json", "jsonl") == "jsonl"
