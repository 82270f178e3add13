"""--score_cache: a rerun pays the model only for new triples.

Real runs of `autoais evaluate --scorer t5` on the example leaderboard with a
tiny random T5: two systems first, then the same two plus a third, then the
same again; a run without the cache is the reference; a second checkpoint
shares the cache directory and must not read the first one's entries.
"""
import csv
import json

import pyarrow.parquet as pq
import pytest

pytest.importorskip("torch")

from autoais.beam_jobs import evaluate  # pylint: disable=wrong-import-position
from tests.support.float_compare import BATCH_TOLERANCE, assert_clear_of_threshold  # pylint: disable=wrong-import-position
from tests.support.jobs import run_job  # pylint: disable=wrong-import-position
from tests.support.paths import EXAMPLES  # pylint: disable=wrong-import-position
from autoais.transforms.scoring import cache as score_cache  # pylint: disable=wrong-import-position

FIRST = ("retrieve-then-read", "keyword-baseline")
ALL = FIRST + ("closed-book-lm",)


@pytest.fixture(scope="module")
def setup(tmp_path_factory, tiny_t5_dirs, example_corpus):
  return tmp_path_factory.mktemp("score_cache"), tiny_t5_dirs, example_corpus


def _evaluate(setup, output, systems, *extra, seed=3):
  root, models, corpus = setup
  predictions = ",".join(str(EXAMPLES / "predictions" / f"{name}.csv")
                         for name in systems)
  assert run_job(evaluate, "--predictions", predictions, "--corpus", corpus,
                 "--gold", EXAMPLES / "gold.jsonl", "--output_dir", root / output,
                 "--scorer", "t5", "--model", models[seed],
                 "--bootstrap_samples", 20, *extra) == 0
  return json.loads((root / output / "run.json").read_text())


def _ratings(path):
  with open(path, newline="", encoding="utf-8") as f:
    return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def runs(setup):
  root = setup[0]
  cache = ["--score_cache", root / "cache"]
  return {
      "first": _evaluate(setup, "first", FIRST, *cache),
      "second": _evaluate(setup, "second", ALL, *cache),
      "again": _evaluate(setup, "again", ALL, *cache),
      "uncached": _evaluate(setup, "uncached", ALL),
      "other_model": _evaluate(setup, "other_model", ALL, *cache, seed=4),
  }


def test_first_run_scores_every_triple_and_fills_the_cache(runs, setup):
  root = setup[0]
  scorer = runs["first"]["scorer"]
  assert scorer["unique_triples"] > 0
  assert scorer["model_calls"] == scorer["unique_triples"]
  assert scorer["cache_hits"] == 0
  assert scorer["cache_entries_written"] == scorer["unique_triples"]
  # After the later runs, the directory holds each distinct triple once: the
  # first run's, then the second run's new ones; the third wrote nothing.
  files = list((root / "cache" / scorer["score_cache_key"]).glob("*.parquet"))
  entries = [digest for f in files
             for digest in pq.read_table(f).column("digest").to_pylist()]
  assert len(entries) == len(set(entries)) == runs["uncached"]["scorer"]["unique_triples"]
  assert runs["second"]["scorer"]["cache_entries_written"] == (
      len(entries) - scorer["unique_triples"])
  assert runs["again"]["scorer"]["cache_entries_written"] == 0


def test_added_system_sends_only_its_new_triples_to_the_model(runs):
  first, second = runs["first"]["scorer"], runs["second"]["scorer"]
  uncached = runs["uncached"]["scorer"]
  new_triples = uncached["unique_triples"] - first["unique_triples"]
  assert 0 < new_triples < uncached["unique_triples"]
  assert second["model_calls"] == new_triples
  assert second["cache_hits"] == first["unique_triples"]
  assert second["unique_triples"] == uncached["unique_triples"]
  assert runs["again"]["scorer"]["model_calls"] == 0
  assert runs["again"]["scorer"]["cache_hits"] == uncached["unique_triples"]


def test_cached_outputs_equal_a_run_without_cache(runs, setup):
  root = setup[0]
  cached, uncached = (_ratings(root / name / "ratings.csv")
                      for name in ("second", "uncached"))
  assert len(cached) == len(uncached) == runs["uncached"]["counts"]["scored"]
  # The cached scores were computed in other batches (the first run's): a
  # model's float result differs in its last bits between batches, so scores
  # agree within a tolerance, and the decisions (auto_ais, and leaderboard.csv
  # and scores.txt, counted from them) exactly, as no score is near 0.5.
  assert_clear_of_threshold((row["nli_score"] for row in uncached), 0.5)
  for row, reference in zip(cached, uncached):
    assert float(row.pop("nli_score")) == pytest.approx(
        float(reference.pop("nli_score")), abs=BATCH_TOLERANCE)
    assert row == reference
  for name in ("leaderboard.csv", "scores.txt", "dead_letter.jsonl"):
    assert (root / "second" / name).read_bytes() == (root / "uncached" / name).read_bytes()
  # All from the cache: the rerun is byte-identical to the run that filled it.
  for name in ("ratings.csv", "ratings.parquet", "leaderboard.csv"):
    assert (root / "again" / name).read_bytes() == (root / "second" / name).read_bytes()


def test_another_checkpoint_gets_no_hits(runs, setup):
  root = setup[0]
  other, first = runs["other_model"]["scorer"], runs["first"]["scorer"]
  assert other["weights_sha256"] != first["weights_sha256"]
  assert other["score_cache_key"] != first["score_cache_key"]
  assert other["cache_hits"] == 0 and other["cache_files_read"] == 0
  assert other["model_calls"] == runs["uncached"]["scorer"]["unique_triples"]
  identity = json.loads((root / "cache" / first["score_cache_key"] /
                         score_cache.IDENTITY_FILE).read_text())
  assert identity["weights_sha256"] == first["weights_sha256"]
  assert score_cache.identity_key(identity) == first["score_cache_key"]


def test_score_cache_needs_a_model_scorer(setup, tmp_path, capsys):
  code = run_job(evaluate, "--predictions", EXAMPLES / "predictions" / "*.csv",
                 "--corpus", setup[2], "--gold", EXAMPLES / "gold.jsonl",
                 "--output_dir", tmp_path / "out", "--score_cache", tmp_path / "c")
  assert code == 2
  assert ("--score_cache is for --scorer t5 / nli-classifier / minicheck / hhem / factcg / "
          "lettucedetect / remote") in (
      capsys.readouterr().err)
  assert not (tmp_path / "out").exists()


def test_a_cache_file_written_before_spans_reads_with_none(tmp_path):
  """Cache files of runs before entries had spans (no `spans` column) read
  on: their entries' spans are None, as the scores of every family but
  lettucedetect's."""
  import pyarrow as pa  # pylint: disable=import-outside-toplevel
  from autoais.schemas import SCORE_CACHE_ENTRY_SCHEMA, ScoreCacheEntry, UnsupportedSpan  # pylint: disable=import-outside-toplevel
  old = pa.schema([field for field in SCORE_CACHE_ENTRY_SCHEMA if field.name != "spans"])
  pq.write_table(pa.table({"digest": [b"\x01" * 16], "nli_score": [0.25],
                           "attributable": [False], "n_windows": [1],
                           "truncated": [False]}, schema=old), tmp_path / "old.parquet")
  assert list(score_cache.read_cache_file(str(tmp_path / "old.parquet"))) == [
      ScoreCacheEntry(b"\x01" * 16, 0.25, False, 1, False, None)]
  spans = [UnsupportedSpan(0, 5, 0.75)]
  pq.write_table(pa.Table.from_pylist(
      [dict(ScoreCacheEntry(b"\x02" * 16, 0.25, False, 1, False, spans)._asdict(),
            spans=[span._asdict() for span in spans])], schema=SCORE_CACHE_ENTRY_SCHEMA),
      tmp_path / "new.parquet")
  assert list(score_cache.read_cache_file(str(tmp_path / "new.parquet")))[0].spans == spans
