"""The job skeleton (transforms/rows): spill, merge, the duplicate rule, tables,
per-system outcomes, the summary writer and the run record, on a toy job whose
expected outputs are computed here directly from its rows."""
import json
import random
from typing import NamedTuple

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from autoais import schemas
from autoais.schemas import REJECTED, DeadLetter
from autoais.transforms.rows.merge import (RowFold, RowTable, WriteMergedRows, fold_rows,
                                           row_table_files, table_file_stem)
from autoais.transforms.rows.run_record import RunRecord, WriteRunRecord, versions_and_timings
from autoais.transforms.rows.summary import WriteSummary, percent
from autoais.transforms.io.sorted_runs import RowRef


class _Row(NamedTuple):
  system_name: str
  question: str
  source_file: str
  answer_line: int
  part: int
  value: float


_SCHEMA = pa.schema([("system_name", pa.string()), ("question", pa.string()),
                     ("source_file", pa.string()), ("answer_line", pa.int64()),
                     ("part", pa.int64()), ("value", pa.float64())])
_KEY = ("system_name", "question", "source_file", "answer_line", "part")


class _Merged(NamedTuple):
  system_name: str
  question: str
  source_file: str
  answer_line: int
  value: float


class _Outcome(NamedTuple):
  system_name: str
  rows: int
  total: float


class _ToyFold(RowFold):
  """First answer (the parts of one source line) per (system, question); a
  negative value is dead-lettered as unmatched after counting."""
  row_type = _Row
  merged_type = _Merged
  sort_key = _KEY
  run_name = "toy"
  tables = (RowTable("toy_rows", _SCHEMA), RowTable("toy_parquet_only", _SCHEMA,
                                                    write_csv=False))
  unique = ("system_name", "question")
  unit = ("source_file", "answer_line")

  def __init__(self):
    self._written = 0
    self._system = None
    self._rows, self._total = 0, 0.0

  def start_system(self, system_name):
    self._system, self._rows, self._total = system_name, 0, 0.0

  def add(self, row, ref, tables):
    self._rows += 1
    self._total += row.value
    if row.value < 0:
      yield DeadLetter(row.source_file, row.answer_line, "unmatched", "negative",
                       "value", "negative", "{}")
      return
    tables["toy_rows"].add(ref)
    tables["toy_parquet_only"].add(ref)
    self._written += 1

  def end_system(self, tables):
    yield _Outcome(self._system, self._rows, self._total)

  def duplicate(self, ref, kept):
    row = ref.row(_Row)
    return DeadLetter(row.source_file, row.answer_line, REJECTED, "duplicate",
                      "question", f"kept {kept.source_file}:{kept.answer_line}",
                      json.dumps(row._asdict()))

  def stats(self):
    return {"written": self._written}


def _toy_rows(seed=0):
  rng = random.Random(seed)
  rows = []
  for system in ("a", "b", "c"):
    for question in range(40):
      # One to three answers to the question (in different files), each of one
      # to three parts: all answers after the first in sort order are repeats.
      for answer in range(rng.randint(1, 3)):
        line = rng.randint(1, 10 ** 6)
        for part in range(rng.randint(1, 3)):
          rows.append(_Row(system, f"q{question:02d}", f"file{answer}.jsonl", line,
                           part, rng.choice([-1.0, 0.5, 1.0, 2.0])))
  rng.shuffle(rows)
  return rows


def _expected(rows):
  ordered = sorted(rows, key=lambda r: tuple(getattr(r, f) for f in _KEY))
  first_answer = {}
  kept, dead = [], []
  for row in ordered:
    answer = (row.source_file, row.answer_line)
    owner = first_answer.setdefault((row.system_name, row.question), answer)
    if owner != answer:
      dead.append(("duplicate", row.source_file, row.answer_line,
                   f"kept {owner[0]}:{owner[1]}"))
      continue
    kept.append(row)
    if row.value < 0:
      dead.append(("negative", row.source_file, row.answer_line, "negative"))
  outcomes = {}
  for row in kept:
    count, total = outcomes.get(row.system_name, (0, 0.0))
    outcomes[row.system_name] = (count + 1, total + row.value)
  written = [r for r in kept if r.value >= 0]
  return written, dead, [_Outcome(s, n, t) for s, (n, t) in sorted(outcomes.items())]


def _assert_fold_outputs(result, written, dead, outcomes):
  """WriteMergedRows' outputs hold the expected outcomes, dead letters and stats."""
  assert_that(result["outcomes"], equal_to(outcomes), label="CheckOutcomes")
  assert_that(result["dead_letter"]
              | beam.Map(lambda d: (d.reason, d.source_file, d.source_line, d.message)),
              equal_to(dead), label="CheckDeadLetters")
  assert_that(result["stats"], equal_to([{"written": len(written)}]), label="CheckStats")


@pytest.fixture(autouse=True)
def _toy_schema(monkeypatch):
  """The runs are Arrow files of the row type's registered schema."""
  monkeypatch.setitem(schemas.SCHEMAS, _Row, _SCHEMA)


def test_write_merged_rows_equals_a_direct_fold(tmp_path):
  rows = _toy_rows()
  written, dead, outcomes = _expected(rows)
  assert dead and any(d[0] == "duplicate" for d in dead) and len(outcomes) == 3
  out = tmp_path / "out"
  out.mkdir()
  with TestPipeline() as pipeline:
    result = (pipeline | beam.Create(rows, reshuffle=False)
              | WriteMergedRows(_ToyFold, str(out), str(tmp_path / "work")))
    _assert_fold_outputs(result, written, dead, outcomes)
  table = pq.read_table(out / "toy_rows.parquet")
  assert table.schema == _SCHEMA
  assert [_Row(**r) for r in table.to_pylist()] == written
  assert (out / "toy_rows.csv").read_text().splitlines()[0] == ",".join(_SCHEMA.names)
  assert len((out / "toy_rows.csv").read_text().splitlines()) == len(written) + 1
  assert pq.read_table(out / "toy_parquet_only.parquet") == table
  assert not (out / "toy_parquet_only.csv").exists()
  # Nothing half-written is left beside the outputs.
  assert sorted(p.name for p in out.iterdir()) == [
      "toy_parquet_only.parquet", "toy_rows.csv", "toy_rows.parquet"]


@pytest.mark.parametrize("num_shards", [2, 5])
def test_sharded_tables_hold_each_systems_rows_whole_and_the_same_figures(
    tmp_path, num_shards):
  """--num_shards: each system's rows, in key order, in one shard; outcomes,
  dead letters and the summed stats as written whole; every shard's files
  exist (empty where no system hashed there)."""
  rows = _toy_rows()
  written, dead, outcomes = _expected(rows)
  out = tmp_path / "out"
  out.mkdir()
  with TestPipeline() as pipeline:
    result = (pipeline | beam.Create(rows)
              | WriteMergedRows(_ToyFold, str(out), str(tmp_path / "work"), num_shards))
    _assert_fold_outputs(result, written, dead, outcomes)
  expected_files = row_table_files(("run.json", "toy_rows.parquet", "toy_rows.csv",
                                    "toy_parquet_only.parquet"), (_ToyFold,),
                                   num_shards)[1:]
  assert sorted(p.name for p in out.iterdir()) == sorted(expected_files)
  assert len(expected_files) == 3 * num_shards
  shards = [[_Row(**r) for r in pq.read_table(
      out / f"{table_file_stem('toy_rows', shard, num_shards)}.parquet").to_pylist()]
            for shard in range(num_shards)]
  assert sum(shards, []) != [] and sorted(sum(shards, [])) == sorted(written)
  for shard_rows in shards:
    assert shard_rows == [row for row in written if row in shard_rows]  # key order
  systems = [{row.system_name for row in shard_rows} for shard_rows in shards]
  assert sum(len(names) for names in systems) == 3  # no system in two shards
  assert table_file_stem("toy_rows", 0, 1) == "toy_rows"


def test_rows_given_in_parts_are_written_as_one_collection(tmp_path):
  """A tuple of PCollections (spilled part by part) writes the tables and
  outcomes that the same rows as one PCollection write."""
  rows = _toy_rows()
  written, dead, outcomes = _expected(rows)
  out = tmp_path / "out"
  out.mkdir()
  with TestPipeline() as pipeline:
    first = pipeline | "CreateFirst" >> beam.Create(rows[::2], reshuffle=False)
    second = pipeline | "CreateSecond" >> beam.Create(rows[1::2], reshuffle=False)
    result = (first, second) | WriteMergedRows(_ToyFold, str(out),
                                               str(tmp_path / "work"))
    _assert_fold_outputs(result, written, dead, outcomes)
  assert [_Row(**r) for r in pq.read_table(out / "toy_rows.parquet").to_pylist()] == (
      written)


def test_fold_without_systems_or_duplicates_sees_every_row_in_order():
  class Plain(RowFold):
    merged_type = _Merged
    by_system = False

    def __init__(self):
      self.seen = []

    def add(self, row, ref, tables):
      self.seen.append(row)
      return ()

  fold = Plain()
  merged = [_Merged("a", "q", "f", line, 1.0) for line in (1, 1, 2)]
  outputs = list(fold_rows(fold, [RowRef(tuple(m), None, 0) for m in merged], {}))
  assert outputs == [] and fold.seen == merged


def test_a_failed_fold_leaves_no_table_under_its_name(tmp_path):
  class Failing(_ToyFold):
    def add(self, row, ref, tables):
      raise ValueError("boom")

  rows = _toy_rows()[:20]
  out = tmp_path / "out"
  out.mkdir()
  try:
    with TestPipeline() as pipeline:
      _ = (pipeline | beam.Create(rows)
           | WriteMergedRows(Failing, str(out), str(tmp_path / "work")))
  except Exception as error:  # pylint: disable=broad-except
    assert "boom" in str(error)
  else:
    raise AssertionError("the pipeline should have failed")
  assert not list(out.iterdir())


class _Summary(NamedTuple):
  system_name: str
  share: float


def test_write_summary_sorts_rows_and_writes_three_files(tmp_path):
  schema = pa.schema([("system_name", pa.string()), ("share", pa.float64())])
  rows = [_Summary("b", 0.25), _Summary("a", 0.5), _Summary("c", 0.125)]

  def markdown(ordered):
    return "".join(f"{r.system_name} {percent(r.share)}\n" for r in ordered)

  with TestPipeline() as pipeline:
    described = (pipeline | beam.Create(rows)
                 | WriteSummary(str(tmp_path), "toy", schema, {"note": "n"}, markdown))
    assert_that(described, equal_to([{"systems": 3}]))
  assert json.loads((tmp_path / "toy.json").read_text()) == {
      "note": "n", "systems": [{"system_name": s, "share": v}
                               for s, v in (("a", 0.5), ("b", 0.25), ("c", 0.125))]}
  assert (tmp_path / "toy.md").read_text() == "a 50.0\nb 25.0\nc 12.5\n"
  assert (tmp_path / "toy.csv").read_text().splitlines() == [
      "system_name,share", '"a",0.5', '"b",0.25', '"c",0.125']


def test_percent_formats_fractions_and_intervals():
  assert percent(None) == ""
  assert percent(0.1234) == "12.3"
  assert percent(0.5, 0.25, 0.75) == "50.0 [25.0, 75.0]"


def test_run_record_frames_the_jobs_fields():
  class Toy(RunRecord):
    job = "toy"

    def fields(self, counts, model_info, scorer_stats):
      return {"counts": counts, "scorer": self.scorer_fields(model_info, scorer_stats)}

  record = Toy({"name": "string-match"})(counts={"read": 1}, model_info={"id": "m"},
                                        scorer_stats={"rows": 2})
  assert list(record)[:4] == ["job", "status", "counts", "scorer"]
  assert record["job"] == "toy" and record["status"] == "complete"
  assert record["scorer"] == {"name": "string-match", "id": "m", "rows": 2}
  assert list(record)[4:] == list(versions_and_timings(0.0, ""))


def test_write_run_record_writes_dead_letters_then_the_record(tmp_path):
  """Counts are summed (a tuple flattened first, an empty one is {}), values
  pass as they are, None reaches the record as None, dead letters are written
  and counted per role, and the scratch directory goes with run.json."""

  class Toy(RunRecord):
    job = "toy"
    summed = ("reads", "steps", "nothing", "optional")
    values = ("total",)

    def fields(self, reads, steps, nothing, optional, total, dead):
      return {"reads": reads, "steps": steps, "nothing": nothing,
              "optional": optional, "total": total, "dead": dead}

  def dead_letter(line, reason):
    return DeadLetter("in.csv", line, REJECTED, reason, "field", f"in.csv:{line}", "{}")

  work_dir = tmp_path / "_work"
  work_dir.mkdir()
  with TestPipeline() as pipeline:
    reads = pipeline | "Reads" >> beam.Create([{"read": 2}, {"read": 3, "bad": 1}])
    steps = (pipeline | "StepA" >> beam.Create([{"a": 1}]),
             pipeline | "StepB" >> beam.Create([{"a": 2, "b": 1}]))
    dead = (pipeline | "DeadA" >> beam.Create([dead_letter(3, "late"),
                                                dead_letter(1, "early")]),
            pipeline | "DeadB" >> beam.Create([dead_letter(2, "early")]))
    total = pipeline | "Total" >> beam.Create([7])
    _ = {"dead": {"rows": dead}, "reads": reads, "steps": steps, "nothing": (),
         "optional": None, "total": total} | "WriteRunRecord" >> WriteRunRecord(
             str(tmp_path), str(work_dir), Toy())
  seen = json.loads((tmp_path / "run.json").read_text())
  assert seen["job"] == "toy"
  assert seen["reads"] == {"read": 5, "bad": 1}
  assert seen["steps"] == {"a": 3, "b": 1}
  assert seen["nothing"] == {} and seen["optional"] is None and seen["total"] == 7
  assert seen["dead"]["rows"][REJECTED] == 3
  assert seen["dead"]["rows"]["by_reason"] == {f"{REJECTED}:early": 2,
                                               f"{REJECTED}:late": 1}
  lines = [json.loads(line) for line in
           (tmp_path / "dead_letter.jsonl").read_text().splitlines()]
  assert [line["source_line"] for line in lines] == [1, 2, 3]
  assert not work_dir.exists()


def test_write_run_record_checks_its_inputs_when_the_pipeline_is_built(tmp_path):
  """A name the record's type does not declare, one it declares but is not
  given, a `fields` that does not take what it declares, or counts named by
  `rows_from` that it does not declare: each is a TypeError while the pipeline
  is built, before anything runs."""

  class Toy(RunRecord):
    job = "toy"
    summed = ("reads",)
    values = ("total",)

    def fields(self, reads, total, dead):
      return {"reads": reads, "total": total, "dead": dead}

  class Misspelt(Toy):

    def fields(self, read, total, dead):  # "read", where Toy declares "reads"
      return {}

  counted_elsewhere = Toy()
  counted_elsewhere.rows_from("rows", "read_counts", "--input", ["in.csv"])

  def inputs(pipeline, **names):
    return {"dead": {}, "reads": pipeline | "Reads" >> beam.Create([{"read": 1}]),
            **{name: pipeline | name.title() >> beam.Create([1]) for name in names}}

  cases = [(Toy(), {"total": 1, "extra": 1}, r"given \['extra'\]"),
           (Toy(), {}, r"not given \['total'\]"),
           (Misspelt(), {"total": 1}, r"Misspelt\.fields"),
           (counted_elsewhere, {"total": 1}, r"rows_from names counts \['read_counts'\]")]
  for record, names, message in cases:
    pipeline = beam.Pipeline()
    with pytest.raises(TypeError, match=message):
      _ = inputs(pipeline, **names) | "WriteRunRecord" >> WriteRunRecord(
          str(tmp_path), str(tmp_path / "_work"), record)
  assert not (tmp_path / "run.json").exists()
