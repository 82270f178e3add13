"""--num_shards: row tables written as deterministic shards. The same bytes in
process and on 2 worker processes; together the rows of the table written
whole; every other output as the unsharded run's; the flag refused where it
would be ignored, and build-corpus's own --num_shards keeps its default beside
it."""
import hashlib
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from autoais.beam_jobs import ais_annotations, build_corpus, evaluate
from autoais.transforms.evaluate.ratings import RATING_KEY
from tests.support.jobs import run_job
from tests.support.paths import EXAMPLES

SHARDS = 3
SAME_AS_WHOLE = ("leaderboard.csv", "leaderboard.json", "leaderboard.md", "scores.txt",
                 "dead_letter.jsonl", "agreement.json")


def _shard_names():
  return [f"ratings-{shard:05d}-of-{SHARDS:05d}.{suffix}"
          for shard in range(SHARDS) for suffix in ("parquet", "csv")]


def _digest(path):
  return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def runs(nq_leaderboard_inputs, tmp_path_factory):
  inputs = nq_leaderboard_inputs
  root = tmp_path_factory.mktemp("row_table_shards")
  modes = {"whole": [], "sharded": ["--num_shards", SHARDS],
           "sharded_multi_process": ["--num_shards", SHARDS,
                                     "--direct_running_mode=multi_processing",
                                     "--direct_num_workers=2"]}
  for name, flags in modes.items():
    assert run_job(evaluate, "--predictions", inputs["predictions"], "--corpus",
                   inputs["corpus"], "--gold", inputs["gold_path"], "--output_dir",
                   root / name, "--bootstrap_samples", 100, *flags) == 0
  return {name: root / name for name in modes}


def test_shards_are_byte_identical_in_process_and_on_two_workers(runs):
  for name in _shard_names():
    assert _digest(runs["sharded"] / name) == _digest(
        runs["sharded_multi_process"] / name), name
  assert not (runs["sharded"] / "ratings.parquet").exists()
  assert not (runs["sharded"] / "ratings.csv").exists()


def test_shards_together_are_the_whole_table_each_system_in_one_shard(runs):
  whole = pq.read_table(runs["whole"] / "ratings.parquet")
  shards = [pq.read_table(runs["sharded"] / name) for name in _shard_names()
            if name.endswith(".parquet")]
  order = [(field, "ascending") for field in RATING_KEY]
  assert whole.num_rows > 10000
  assert pa.concat_tables(shards).sort_by(order).equals(whole.sort_by(order))
  systems = [set(shard.column("system_name").to_pylist()) for shard in shards]
  assert sum(len(names) for names in systems) == len(
      set(whole.column("system_name").to_pylist()))
  for shard in shards:  # each shard in the table's own order
    assert shard.equals(shard.sort_by(order))
  csv_lines = sum(len((runs["sharded"] / name).read_bytes().splitlines()) - 1
                  for name in _shard_names() if name.endswith(".csv"))
  assert csv_lines == len((runs["whole"] / "ratings.csv").read_bytes().splitlines()) - 1


def test_every_other_output_is_the_unsharded_runs(runs):
  for name in SAME_AS_WHOLE:
    assert _digest(runs["sharded"] / name) == _digest(runs["whole"] / name), name
  whole = json.loads((runs["whole"] / "run.json").read_text(encoding="utf-8"))
  sharded = json.loads((runs["sharded"] / "run.json").read_text(encoding="utf-8"))
  assert sharded["counts"] == whole["counts"] and whole["counts"]["reconciled"]


def test_num_shards_below_one_is_refused(nq_leaderboard_inputs, tmp_path, capsys):
  inputs = nq_leaderboard_inputs
  assert run_job(evaluate, "--predictions", inputs["predictions"], "--corpus",
                 inputs["corpus"], "--gold", inputs["gold_path"], "--output_dir",
                 tmp_path / "out", "--num_shards", 0) == 2
  assert "--num_shards must be positive" in capsys.readouterr().err


def test_a_job_without_row_tables_refuses_num_shards(tmp_path, capsys):
  assert run_job(ais_annotations, "--input", tmp_path / "x.csv", "--output_dir",
                 tmp_path / "out", "--num_shards", 2) == 2
  assert "--num_shards" in capsys.readouterr().err


def test_build_corpus_keeps_its_default_shards_beside_the_row_table_flag(tmp_path):
  # evaluate's options (the row tables' --num_shards, no default) are registered
  # in this process: build-corpus must still make its 64 shards.
  assert run_job(build_corpus, "--input", EXAMPLES / "corpus" / "*.jsonl",
                 "--output", tmp_path / "corpus") == 0
  manifest = json.loads((tmp_path / "corpus" / "corpus.json").read_text(encoding="utf-8"))
  assert manifest["num_shards"] == 64


def test_the_python_apis_table_reads_the_shards_in_order(runs):
  from autoais.api import JobResult  # pylint: disable=import-outside-toplevel
  sharded = JobResult("evaluate", str(runs["sharded"]), 0).table("ratings.csv")
  whole = JobResult("evaluate", str(runs["whole"]), 0).table("ratings.csv")
  key = lambda row: tuple(str(row[field]) for field in RATING_KEY)
  assert len(sharded) == len(whole) > 10000
  assert sorted(sharded, key=key) == sorted(whole, key=key)
