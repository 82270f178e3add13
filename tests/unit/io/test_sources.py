"""Record readers: every record becomes an element or a dead letter naming file,
line and field; a file without its required columns is refused as a whole."""
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from autoais.schemas import CorpusRecord, DeadLetter, GoldAnswer, Prediction
from autoais.transforms.corpus.sources import check_corpus_file, read_corpus_source
from autoais.transforms.io.gold import read_gold
from autoais.transforms.io.predictions import check_prediction_file, read_predictions
from autoais.schemas.errors import InputError


def _write(path, data: bytes):
  path.write_bytes(data)
  return str(path)


def _by_line(items):
  return {item.source_line: item for item in items}


def test_csv_records_keep_physical_start_lines(tmp_path):
  path = _write(tmp_path / "sys-a.csv", (
      'question,answer,attribution,passage\n'
      'q one,a1,id1,"first line\nsecond line"\n'
      'q two,a2,id2,\n'
      '\n'
      'q three,a3,id3,"x"\n').encode())
  items = list(read_predictions(path))
  assert [type(i) for i in items] == [Prediction] * 3
  assert [i.source_line for i in items] == [2, 4, 6]
  assert items[0].passage == "first line\nsecond line"
  assert items[1].passage is None
  assert {i.system_name for i in items} == {"sys-a"}


def test_csv_bad_rows_are_dead_lettered_and_reading_goes_on(tmp_path):
  path = _write(tmp_path / "s.csv", (
      b'question,answer,attribution\n'
      b'good q,good a,id1\n'
      b'"bad"q,x,id2\n'
      b'too,many,fields,here\n'
      b'non utf8 \xff\xfe q,x,id3\n'
      b'empty answer q,  ,id4\n'
      b',a,id5\n'
      b'last q,last a,id6\n'))
  items = _by_line(read_predictions(path))
  assert isinstance(items[2], Prediction) and isinstance(items[8], Prediction)
  expected = {3: ("malformed_csv", None), 4: ("malformed_csv", None),
              5: ("non_utf8", "question"), 6: ("empty_answer", "answer"),
              7: ("empty_question", "question")}
  for line, (reason, field) in expected.items():
    item = items[line]
    assert isinstance(item, DeadLetter), line
    assert (item.reason, item.field, item.kind) == (reason, field, "rejected")
    assert item.message.startswith(f"{path}:{line}")
  assert "\\xff" in items[5].record  # the raw bytes stay visible


def test_jsonl_records(tmp_path):
  lines = [
      json.dumps({"system_name": "s", "question": "q1", "answer": "a",
                  "attribution": "id", "human_rating": "yes"}).encode(),
      b"{not json",
      json.dumps({"question": "q2", "attribution": "id"}).encode(),
      json.dumps({"question": "q3", "answer": 1972, "attribution": "id"}).encode(),
      b'{"question": "q4", "answer": "\xc3\x28", "attribution": "id"}',
      json.dumps(["a", "list"]).encode(),
      json.dumps({"question": "q5", "answer": "a", "attribution": "id",
                  "human_rating": "maybe"}).encode(),
  ]
  path = _write(tmp_path / "preds.jsonl", b"\n".join(lines) + b"\n")
  items = _by_line(read_predictions(path))
  assert items[1].human_rating == "Y" and items[1].system_name == "s"
  reasons = {line: (item.reason, item.field) for line, item in items.items()
             if isinstance(item, DeadLetter)}
  assert reasons == {2: ("malformed_json", None), 3: ("missing_field", "answer"),
                     4: ("wrong_type", "answer"), 5: ("non_utf8", "answer"),
                     6: ("malformed_json", None), 7: ("invalid_value", "human_rating")}


def test_parquet_rows_are_numbered(tmp_path):
  path = str(tmp_path / "preds.parquet")
  pq.write_table(pa.table({"question": ["q1", None, "q3"], "answer": ["a", "b", "c"],
                           "attribution": ["i1", "i2", "i3"]}), path)
  items = _by_line(read_predictions(path))
  assert isinstance(items[1], Prediction) and isinstance(items[3], Prediction)
  assert (items[2].reason, items[2].field) == ("missing_field", "question")


@pytest.mark.parametrize("name, content", [
    ("missing.csv", b"question,answer\nq,a\n"),
    ("missing.parquet", None),
])
def test_missing_required_column_is_refused(tmp_path, name, content):
  path = tmp_path / name
  if content is None:
    pq.write_table(pa.table({"question": ["q"], "answer": ["a"]}), str(path))
  else:
    path.write_bytes(content)
  with pytest.raises(InputError, match=r"missing required column\(s\) \(attribution, or passage\)"):
    check_prediction_file(str(path))


def test_unknown_format_is_refused(tmp_path):
  with pytest.raises(InputError, match="unknown file format"):
    check_prediction_file(_write(tmp_path / "preds.txt", b"x"))


def test_corpus_sources(tmp_path):
  lines = [
      json.dumps({"id": "p1", "contents": "« T » « T, S » text"}),
      "not json at all",
      json.dumps({"contents": "« T » « T » no id"}),
      json.dumps({"id": "p2"}),
      json.dumps({"id": "p3", "title": "Mars", "text": "Mars is red."}),
      json.dumps({"id": "p4", "title": "Mars"}),
  ]
  path = _write(tmp_path / "corpus.jsonl", "\n".join(lines).encode())
  items = _by_line(read_corpus_source(path))
  assert items[1] == CorpusRecord("p1", "« T » « T, S » text", path, 1)
  assert items[5].contents == "« Mars » « Mars » Mars is red."
  assert {line: (i.reason, i.field) for line, i in items.items()
          if isinstance(i, DeadLetter)} == {
              2: ("malformed_json", None), 3: ("missing_field", "id"),
              4: ("missing_field", "contents"), 6: ("missing_field", "text")}


def test_corpus_parquet_with_title_and_text(tmp_path):
  path = str(tmp_path / "c.parquet")
  pq.write_table(pa.table({"id": ["a", "b"], "title": ["A", "B"],
                           "text": ["x", "y"]}), path)
  check_corpus_file(path)
  assert [r.contents for r in read_corpus_source(path)] == ["« A » « A » x",
                                                            "« B » « B » y"]
  bad = str(tmp_path / "bad.parquet")
  pq.write_table(pa.table({"id": ["a"], "body": ["x"]}), bad)
  with pytest.raises(InputError, match=r"missing required column\(s\) \(contents, or title "
                                       r"and text\)"):
    check_corpus_file(bad)


def test_bad_gold_lines_are_dead_lettered(tmp_path):
  path = _write(tmp_path / "gold.jsonl", (
      b'{"question": "q", "answer": ["a"]}\n'
      b'{"question": "q2", "answer": []}\n'
      b'{"question": 7, "answer": ["a"]}\n'
      b'{"question": "q", "answer": ["b"]}\n'
      b'{"question": "q3", "answers": "c"}\n'))
  items = dict(enumerate(read_gold(path), start=1))  # one item per line here
  assert items[1] == GoldAnswer("q", ["a"], 0)
  assert items[5] == GoldAnswer("q3", ["c"], 1)  # gold indexes stay dense
  assert {item.source_line: (item.reason, item.field) for item in items.values()
          if isinstance(item, DeadLetter)} == {
              2: ("wrong_type", "answer"), 3: ("wrong_type", "question"),
              4: ("duplicate_gold_question", "question")}
  assert items[2].message.startswith(f"{path}:2: field 'answer'")
  assert "line 1" in items[4].message
