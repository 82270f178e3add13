"""Every input format in its compressed form gives the outputs of the uncompressed
run: predictions (.csv.gz, .csv.bz2, .jsonl.gz, .parquet.gz), gold (.jsonl.gz),
corpus sources (Pyserini .jsonl.gz, id,title,text .jsonl.xz). Outputs name their
source files, so `source_file` is compared by file name with the compression
suffix removed; every other byte must be equal. (gs:// inputs:
tests/deploy/test_gcs.py.)
"""
import bz2
import csv
import gzip
import json
import lzma

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from autoais.beam_jobs import build_corpus, evaluate
from tests.support.files import read_jsonl
from tests.support.jobs import run_job
from tests.support.paths import PROJECT_ROOT
from autoais.transforms.corpus.passages import parse_passage

EXAMPLES = PROJECT_ROOT / "examples"
COMPRESSORS = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}


def _compressed(path, suffix):
  target = path.with_name(path.name + suffix)
  target.write_bytes(COMPRESSORS[suffix](path.read_bytes()))
  return target


def _plain_name(uri: str) -> str:
  name = uri.rsplit("/", 1)[-1]
  for suffix in COMPRESSORS:
    name = name.removesuffix(suffix)
  return name


def _ratings(output):
  rows = pq.read_table(output / "ratings.parquet").to_pylist()
  for row in rows:
    row["source_file"] = _plain_name(row["source_file"])
  return rows


def _dead_letters(output):
  rows = read_jsonl(output / "dead_letter.jsonl")
  for row in rows:
    row["message"] = row["message"].replace(row["source_file"],
                                            _plain_name(row["source_file"]))
    row["source_file"] = _plain_name(row["source_file"])
  return rows


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
  """The examples in every form: plain files in plain/, compressed in packed/."""
  root = tmp_path_factory.mktemp("compressed")
  plain, packed = root / "plain", root / "packed"
  for directory in (plain, packed):
    for sub in ("pyserini", "titled", "predictions"):
      (directory / sub).mkdir(parents=True)
  records = read_jsonl(EXAMPLES / "corpus" / "wiki_sample.jsonl")
  # A bad line and a duplicate id, so that dead letters are compared too.
  pyserini = plain / "pyserini" / "wiki.jsonl"
  pyserini.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
                      + "not json\n" + json.dumps(records[0]) + "\n", encoding="utf-8")
  titled = plain / "titled" / "wiki.jsonl"
  with open(titled, "w", encoding="utf-8") as f:
    for record in records:
      parsed = parse_passage(record["contents"])
      f.write(json.dumps({"id": record["id"], "title": parsed.title,
                          "headings": parsed.headings, "text": parsed.text},
                         ensure_ascii=False) + "\n")
  gold = plain / "gold.jsonl"
  gold.write_bytes((EXAMPLES / "gold.jsonl").read_bytes() + b'{"question": 7}\n')

  def predictions(name):
    return list(csv.DictReader(open(EXAMPLES / "predictions" / name, encoding="utf-8")))
  (plain / "predictions" / "closed-book-lm.csv").write_bytes(
      (EXAMPLES / "predictions" / "closed-book-lm.csv").read_bytes() + b"bad,\"row\n")
  (plain / "predictions" / "keyword-baseline.csv").write_bytes(
      (EXAMPLES / "predictions" / "keyword-baseline.csv").read_bytes())
  (plain / "predictions" / "retrieve-then-read.jsonl").write_text("".join(
      json.dumps(row) + "\n" for row in predictions("retrieve-then-read.csv")))
  table = pa.Table.from_pylist(predictions("keyword-baseline.csv"))
  table = table.append_column("system_name", pa.array(["parquet-copy"] * len(table)))
  pq.write_table(table, str(plain / "predictions" / "copy.parquet"))

  _compressed(pyserini, ".gz").rename(packed / "pyserini" / "wiki.jsonl.gz")
  _compressed(titled, ".xz").rename(packed / "titled" / "wiki.jsonl.xz")
  _compressed(gold, ".gz").rename(packed / "gold.jsonl.gz")
  for path, suffix in (("closed-book-lm.csv", ".gz"), ("keyword-baseline.csv", ".bz2"),
                       ("retrieve-then-read.jsonl", ".gz"), ("copy.parquet", ".gz")):
    source = plain / "predictions" / path
    _compressed(source, suffix).rename(packed / "predictions" / (path + suffix))
  return {"plain": plain, "packed": packed, "root": root}


@pytest.fixture(scope="module")
def runs(inputs):
  outputs = {}
  for form in ("plain", "packed"):
    directory = inputs[form]
    out = inputs["root"] / f"out-{form}"
    for source in ("pyserini", "titled"):
      assert run_job(build_corpus, "--input", directory / source / "*",
                     "--output", out / f"corpus-{source}", "--num_shards", 3) == 0
    gold = directory / ("gold.jsonl" if form == "plain" else "gold.jsonl.gz")
    assert run_job(evaluate, "--predictions", directory / "predictions" / "*",
                   "--corpus", out / "corpus-pyserini", "--gold", gold,
                   "--output_dir", out / "eval", "--bootstrap_samples", 50) == 0
    outputs[form] = out
  return outputs


@pytest.mark.parametrize("source", ["pyserini", "titled"])
def test_corpus_from_compressed_sources_is_identical(runs, source):
  plain, packed = runs["plain"] / f"corpus-{source}", runs["packed"] / f"corpus-{source}"
  shards = sorted(p.name for p in plain.glob("passages-*.parquet"))
  assert len(shards) == 3
  for name in shards:
    assert (plain / name).read_bytes() == (packed / name).read_bytes(), name
  assert _dead_letters(plain) == _dead_letters(packed)
  manifests = [json.loads((d / "corpus.json").read_text()) for d in (plain, packed)]
  assert manifests[0]["counts"] == manifests[1]["counts"]
  assert manifests[0]["num_passages"] == 30


def test_pyserini_and_titled_corpora_hold_the_same_passages(runs):
  plain = runs["plain"]
  for name in ("passages-00000-of-00003.parquet", "passages-00002-of-00003.parquet"):
    assert (pq.read_table(plain / "corpus-pyserini" / name) ==
            pq.read_table(plain / "corpus-titled" / name))


def test_evaluate_on_compressed_inputs_is_identical(runs):
  plain, packed = runs["plain"] / "eval", runs["packed"] / "eval"
  for name in ("leaderboard.csv", "leaderboard.json", "leaderboard.md", "scores.txt"):
    assert (plain / name).read_bytes() == (packed / name).read_bytes(), name
  assert _ratings(plain) == _ratings(packed)
  assert len(_ratings(plain)) > 30
  assert _dead_letters(plain) == _dead_letters(packed)
  reasons = {(row["source_file"], row["reason"]) for row in _dead_letters(plain)}
  assert ("closed-book-lm.csv", "malformed_csv") in reasons
  assert ("gold.jsonl", "wrong_type") in reasons
  manifests = [json.loads((d / "run.json").read_text()) for d in (plain, packed)]
  assert manifests[0]["counts"] == manifests[1]["counts"]
  assert manifests[0]["gold_counts"] == manifests[1]["gold_counts"] == {
      "read": 17, "rejected": 1, "unmatched": 0, "reconciled": True,
      "by_reason": {"rejected:wrong_type": 1}, "questions": 16}
  systems = json.loads((packed / "leaderboard.json").read_text())["systems"]
  assert sorted(s["system_name"] for s in systems) == [
      "closed-book-lm", "keyword-baseline", "parquet-copy", "retrieve-then-read"]
