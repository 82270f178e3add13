"""The Parquet corpus layout and the two joins against it."""
import json
import random

import apache_beam as beam
import pyarrow.parquet as pq
import pytest
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to

from autoais.beam_jobs import build_corpus
from tests.support.files import write_jsonl
from tests.support.jobs import run_job
from autoais.transforms.corpus import store
from autoais.transforms.corpus.store import LookupPassages, ShardReader, ShuffleJoinPassages
from autoais.schemas.errors import CorpusError

N_PASSAGES = 3000
N_SHARDS = 16


def _passage(index):
  rng = random.Random(index)
  words = " ".join(rng.choice(["alpha", "beta", "gamma", "delta", "epsilon", "zeta",
                                 str(index)]) for _ in range(60))
  return {"id": f"http://en.wikipedia.org/wiki/Page_{index}#Page_{index}#{index % 3}",
          "contents": f"« Page {index} » « Page {index}, Part {index % 3} » {words}"}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
  root = tmp_path_factory.mktemp("corpus")
  passages = [_passage(i) for i in range(N_PASSAGES)]
  random.Random(0).shuffle(passages)
  write_jsonl(root / "src" / "part-0.jsonl", passages[:1000])
  write_jsonl(root / "src" / "part-1.jsonl", passages[1000:])
  assert run_job(build_corpus, "--input", root / "src" / "*.jsonl", "--output",
                 root / "corpus", "--num_shards", N_SHARDS, "--row_group_size", 32) == 0
  return root / "corpus", {p["id"]: p["contents"] for p in passages}


def test_layout(built):
  directory, passages = built
  manifest = json.loads((directory / "corpus.json").read_text())
  assert manifest["num_passages"] == N_PASSAGES
  assert manifest["counts"]["reconciled"] is True
  seen = {}
  for shard in manifest["shards"]:
    path = directory / shard["path"]
    assert path.name == store.shard_file_name(shard["shard"], N_SHARDS)
    parquet = pq.ParquetFile(path)
    table = parquet.read()
    ids = table.column("id").to_pylist()
    assert ids == sorted(ids), "each shard is sorted by id"
    assert all(store.shard_of(i, N_SHARDS) == shard["shard"] for i in ids)
    assert shard["num_rows"] == len(ids) == parquet.metadata.num_rows
    assert shard["bytes"] == path.stat().st_size
    for group in range(parquet.metadata.num_row_groups):
      row_group = parquet.metadata.row_group(group)
      assert row_group.num_rows <= 32
      statistics = row_group.column(0).statistics
      assert statistics.has_min_max
    seen.update(zip(ids, table.column("contents").to_pylist()))
  assert seen == passages
  assert manifest["total_bytes"] == sum(s["bytes"] for s in manifest["shards"])


def test_point_lookup_reads_one_footer_and_one_row_group(built):
  directory, passages = built
  manifest = json.loads((directory / "corpus.json").read_text())
  shard = max(manifest["shards"], key=lambda s: s["num_rows"])
  reader = ShardReader(str(directory / shard["path"]))
  after_footer = reader.bytes_read
  ids = pq.read_table(directory / shard["path"]).column("id").to_pylist()
  group = reader.row_group_of(ids[len(ids) // 2])
  (found_ids, contents), = reader.read_row_groups([group])
  assert ids[len(ids) // 2] in found_ids
  row_group_bytes = reader.bytes_read - after_footer
  metadata = pq.ParquetFile(directory / shard["path"]).metadata.row_group(group)
  assert row_group_bytes <= metadata.total_byte_size * 1.2 + 512
  assert reader.bytes_read < shard["bytes"] / 3
  assert reader.row_group_of("~~~ after every id") is None
  reader.close()


@pytest.mark.parametrize("transform_class", [LookupPassages, ShuffleJoinPassages])
def test_joins_find_known_ids_and_miss_unknown_ones(built, transform_class):
  directory, passages = built
  ids = sorted(passages)
  values = [(f"row-{i}", ids[(i * 37) % len(ids)]) for i in range(200)]
  values += [("unknown", "http://en.wikipedia.org/wiki/Nowhere#0"),
             ("no-id", None), ("repeat", ids[0])]
  expected = [(name, passages.get(passage_id) if passage_id else None)
              for name, passage_id in values]
  assert sum(found is None for _, found in expected) == 2
  with BeamTestPipeline(runner=FnApiRunner()) as pipeline:
    joined = (pipeline
              | beam.Create(values)
              | transform_class(str(directory), key_of=lambda value: value[1]))
    assert_that(joined["joined"] | beam.MapTuple(lambda value, found: (value[0], found)),
                equal_to(expected))


def test_lookup_stats_show_a_small_read(built, tmp_path):
  directory, passages = built
  ids = sorted(passages)[:5]
  with BeamTestPipeline(runner=FnApiRunner()) as pipeline:
    joined = (pipeline | beam.Create(ids)
              | LookupPassages(str(directory), key_of=lambda value: value))
    stats = joined["stats"] | beam.CombineGlobally(
        lambda dicts: {k: sum(d[k] for d in dicts) for k in store.JOIN_STATS_KEYS})
    stats | beam.Map(lambda s: (tmp_path / "stats.json").write_text(json.dumps(s)))
  stats = json.loads((tmp_path / "stats.json").read_text())
  total = json.loads((directory / "corpus.json").read_text())["total_bytes"]
  assert stats["lookups"] == stats["found"] == 5
  assert 0 < stats["bytes_read"] < 0.25 * total


def test_evaluate_gives_the_same_outputs_with_either_join(tmp_path):
  from autoais.beam_jobs import evaluate  # pylint: disable=import-outside-toplevel
  from tests.support.paths import PROJECT_ROOT  # pylint: disable=import-outside-toplevel
  examples = PROJECT_ROOT / "examples"
  assert run_job(build_corpus, "--input", examples / "corpus" / "*.jsonl", "--output",
                 tmp_path / "corpus", "--num_shards", 3) == 0
  manifests = {}
  for join in ("lookup", "shuffle"):
    assert run_job(evaluate, "--predictions", examples / "predictions" / "*.csv",
                   "--corpus", tmp_path / "corpus", "--gold", examples / "gold.jsonl",
                   "--output_dir", tmp_path / join, "--join", join,
                   "--bootstrap_samples", 50) == 0
    manifests[join] = json.loads((tmp_path / join / "run.json").read_text())
  for name in ("ratings.parquet", "leaderboard.csv", "dead_letter.jsonl"):
    assert (tmp_path / "lookup" / name).read_bytes() == (
        tmp_path / "shuffle" / name).read_bytes(), name
  assert manifests["lookup"]["join"]["strategy"] == "lookup"
  assert manifests["shuffle"]["join"]["strategy"] == "shuffle"
  assert manifests["shuffle"]["join"]["bytes_read"] == manifests["shuffle"]["join"][
      "corpus_bytes"]


def _article_passages():
  """One article of 600 passages (it spans several index row groups), 200 of
  three, one of a single passage without '#'."""
  passages = [{"id": f"http://en.wikipedia.org/wiki/Big#Big#Part_{i:03d}#{i}",
               "contents": f"« Big » « Big, Part {i} » text {i}"} for i in range(600)]
  for article in range(200):
    passages += [{"id": f"http://en.wikipedia.org/wiki/A_{article}#A_{article}#{part}",
                  "contents": f"« A {article} » « A {article} » part {part}"}
                 for part in range(3)]
  passages.append({"id": "plain-id-without-hash", "contents": "« P » « P » plain"})
  random.Random(1).shuffle(passages)
  return passages


@pytest.fixture(scope="module")
def articles_built(tmp_path_factory):
  root = tmp_path_factory.mktemp("articles")
  passages = _article_passages()
  write_jsonl(root / "src" / "a.jsonl", passages + passages[:5])  # 5 repeated ids
  assert run_job(build_corpus, "--input", root / "src" / "*.jsonl", "--output",
                 root / "corpus", "--num_shards", 4) == 0
  by_article = {}
  for passage in passages:
    by_article.setdefault(store.article_of(passage["id"]), []).append(passage["id"])
  return root / "corpus", by_article


def test_article_index_layout(articles_built):
  directory, by_article = articles_built
  manifest = json.loads((directory / "corpus.json").read_text())
  index = manifest["articles"]
  assert index["num_entries"] == manifest["num_passages"] == 1201
  entries = []
  for shard in index["shards"]:
    table = pq.read_table(directory / shard["path"])
    rows = list(zip(table.column("article").to_pylist(),
                    table.column("passage_id").to_pylist()))
    assert rows == sorted(rows) and len(rows) == shard["num_rows"]
    assert all(store.shard_of(article, 4) == shard["shard"] for article, _ in rows)
    entries += rows
  assert sorted(entries) == sorted((a, i) for a, ids in by_article.items() for i in ids)


def test_lookup_articles_reads_only_the_articles_row_groups(articles_built, tmp_path):
  directory, by_article = articles_built
  wanted = ["http://en.wikipedia.org/wiki/Big", "http://en.wikipedia.org/wiki/A_7",
            "plain-id-without-hash", "http://en.wikipedia.org/wiki/Nowhere", None]
  with BeamTestPipeline(runner=FnApiRunner()) as pipeline:
    joined = (pipeline | beam.Create(wanted)
              | store.LookupArticles(str(directory), key_of=lambda value: value))
    assert_that(joined["joined"], equal_to(
        [(key, sorted(by_article[key]) if key in by_article else None)
         for key in wanted]))
    stats = joined["stats"] | beam.CombineGlobally(
        lambda dicts: {k: sum(d[k] for d in dicts) for k in store.ARTICLE_STATS_KEYS})
    stats | beam.Map(lambda s: (tmp_path / "stats.json").write_text(json.dumps(s)))
  stats = json.loads((tmp_path / "stats.json").read_text())
  assert stats["article_passages"] == 600 + 3 + 1
  # The big article spans 3 to 4 groups of 256 entries; the others one each.
  assert 3 + 2 <= stats["article_row_groups_read"] <= 4 + 2


def test_lookup_articles_refuses_a_corpus_without_an_index(articles_built, tmp_path):
  directory, _ = articles_built
  manifest = json.loads((directory / "corpus.json").read_text())
  del manifest["articles"]
  (tmp_path / "corpus.json").write_text(json.dumps(manifest))
  with pytest.raises(CorpusError, match="no article index"):
    store.LookupArticles(str(tmp_path), key_of=lambda value: value)


def test_sorted_join_reads_each_row_group_once(built, tmp_path):
  """Values spread over the whole corpus, each cited several times and in
  random order: the sorted merge join finds them all, reading every row group
  it needs once."""
  from autoais.schemas import CorpusRecord  # pylint: disable=import-outside-toplevel
  directory, passages = built
  ids = sorted(passages)
  rng = random.Random(5)
  cited = [rng.choice(ids) for _ in range(3000)]
  values = [CorpusRecord(passage_id, f"value-{i}", "f", i)
            for i, passage_id in enumerate(cited)]
  values += [CorpusRecord("http://en.wikipedia.org/wiki/Nowhere#0", "unknown", "f", -1),
             CorpusRecord("", "not looked up", "f", -2)]
  expected = [(value.contents, passages.get(value.id)) for value in values]
  with BeamTestPipeline(runner=FnApiRunner()) as pipeline:
    joined = (pipeline
              | beam.Create(values)
              | store.SortedJoinPassages(str(directory), str(tmp_path / "runs"),
                                         CorpusRecord, ("id", "source_line"),
                                         lambda value: value.id or None))
    assert_that(joined["joined"] | beam.MapTuple(lambda value, found: (value.contents,
                                                                       found)),
                equal_to(expected))
    stats = joined["stats"] | beam.CombineGlobally(
        lambda dicts: {k: sum(d[k] for d in dicts) for k in store.JOIN_STATS_KEYS})
    stats | beam.Map(lambda s: (tmp_path / "stats.json").write_text(json.dumps(s)))
  stats = json.loads((tmp_path / "stats.json").read_text())
  readers = {shard: ShardReader(str(directory / store.shard_file_name(shard, N_SHARDS)))
             for shard in range(N_SHARDS)}
  groups = set()
  for passage_id in set(cited):
    shard = store.shard_of(passage_id, N_SHARDS)
    groups.add((shard, readers[shard].row_group_of(passage_id)))
  for reader in readers.values():
    reader.close()
  assert stats["lookups"] == 3001 and stats["found"] == 3000
  assert stats["row_groups_read"] == len(groups) < 3000
