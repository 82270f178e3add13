"""build-corpus and evaluate read and write gs:// paths as they do local ones.

A real GCS emulator (`gcp-storage-emulator`, in memory, on 127.0.0.1) stands in
for Cloud Storage; Beam's GCS filesystem reaches it through STORAGE_EMULATOR_HOST.
Nothing is mocked: the jobs run in-process exactly as on local paths.

The tests show that
  * a run entirely on gs:// (corpus in, corpus out, predictions, gold, outputs)
    succeeds and writes the same leaderboard.csv bytes and the same
    ratings.parquet contents as the same run on local paths (ratings carry each
    row's `source_file`, which is the input's own URI, so that column is compared
    by file name);
  * its run.json reconciles (read = scored + rejected + unmatched), and no
    `_work-` scratch object or temporary file is left under the output prefix;
  * gs:// inputs with a local --output_dir work too.
"""
import gzip
import io
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from autoais.beam_jobs import build_corpus, evaluate
from autoais.beam_jobs.output_dir import LEDGER
from tests.support.jobs import run_job
from tests.support.paths import PROJECT_ROOT

EXAMPLES = PROJECT_ROOT / "examples"
BUCKET = "autoais-test"
GS = f"gs://{BUCKET}"
CORPUS_SHARDS = 4
# A bound, not a speed: the emulator starts in seconds, slower on a loaded machine.
EMULATOR_START_TIMEOUT_S = 120

# report.html is written only when rows carry human ratings (the examples do not).
_WRITTEN_WITHOUT_HUMAN_RATINGS = tuple(name for name in evaluate.OUTPUT_FILES
                                       if name != "report.html")


def _emulator_binary():
  beside_python = pathlib.Path(sys.executable).parent / "gcp-storage-emulator"
  if beside_python.exists():
    return str(beside_python)
  return shutil.which("gcp-storage-emulator")


def _free_port() -> int:
  with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def _wait_until_answering(process, port: int, log: pathlib.Path) -> None:
  deadline = time.monotonic() + EMULATOR_START_TIMEOUT_S
  while time.monotonic() < deadline:
    if process.poll() is not None:
      raise RuntimeError(f"gcp-storage-emulator exited with {process.returncode}: "
                         f"{log.read_text(errors='replace')[-2000:]}")
    try:
      with socket.create_connection(("127.0.0.1", port), timeout=0.5):
        return
    except OSError:
      time.sleep(0.1)
  raise RuntimeError(f"gcp-storage-emulator did not answer on port {port} within "
                     f"{EMULATOR_START_TIMEOUT_S} s")


def _read_bytes(path: str) -> bytes:
  with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
    return f.read()


def _object_paths(prefix: str):
  return sorted(metadata.path for metadata in
                FileSystems.match([prefix.rstrip("/") + "/**"])[0].metadata_list)


def _ratings_by_file_name(data: bytes):
  """ratings.parquet as a list of dicts, `source_file` reduced to its file name."""
  rows = pq.read_table(io.BytesIO(data)).to_pylist()
  for row in rows:
    row["source_file"] = row["source_file"].rsplit("/", 1)[-1]
  return rows


@pytest.fixture(scope="module")
def gcs(tmp_path_factory):
  """An in-memory GCS emulator holding the examples under gs://BUCKET/."""
  binary = _emulator_binary()
  if binary is None:
    pytest.skip("gcp-storage-emulator is not installed")
  from google.auth.credentials import AnonymousCredentials
  from google.cloud import storage

  port = _free_port()
  # The emulator logs every request: to a file, so that no pipe fills up.
  log = tmp_path_factory.mktemp("gcs-emulator") / "emulator.log"
  with open(log, "wb") as log_file:
    process = subprocess.Popen(
        [binary, "start", "--host=127.0.0.1", f"--port={port}", "--in-memory"],
        stdout=log_file, stderr=subprocess.STDOUT)
  previous = os.environ.get("STORAGE_EMULATOR_HOST")
  os.environ["STORAGE_EMULATOR_HOST"] = f"http://127.0.0.1:{port}"
  try:
    _wait_until_answering(process, port, log)
    client = storage.Client(project="test", credentials=AnonymousCredentials())
    bucket = client.create_bucket(BUCKET)
    uploads = {"corpus/wiki_sample.jsonl": EXAMPLES / "corpus" / "wiki_sample.jsonl",
               "gold.jsonl": EXAMPLES / "gold.jsonl"}
    for csv_path in sorted((EXAMPLES / "predictions").glob("*.csv")):
      uploads[f"predictions/{csv_path.name}"] = csv_path
    for name, path in uploads.items():
      bucket.blob(name).upload_from_filename(str(path))
      # The same files gzipped, under packed/ (gold.jsonl.gz, ...).
      bucket.blob(f"packed/{name}.gz").upload_from_string(
          gzip.compress(path.read_bytes()))
    yield GS
  finally:
    if previous is None:
      os.environ.pop("STORAGE_EMULATOR_HOST", None)
    else:
      os.environ["STORAGE_EMULATOR_HOST"] = previous
    process.kill()
    process.wait(timeout=10)


@pytest.fixture(scope="module")
def local_reference(tmp_path_factory):
  """The same two jobs on local paths: the reference for the gs:// run."""
  root = tmp_path_factory.mktemp("local")
  assert run_job(build_corpus, "--input", EXAMPLES / "corpus" / "*.jsonl",
                 "--output", root / "corpus", "--num_shards", CORPUS_SHARDS) == 0
  output = root / "eval"
  assert run_job(evaluate, "--predictions", EXAMPLES / "predictions" / "*.csv",
                 "--corpus", root / "corpus", "--gold", EXAMPLES / "gold.jsonl",
                 "--output_dir", output) == 0
  return {"corpus": root / "corpus", "eval": output}


@pytest.fixture(scope="module")
def gcs_corpus(gcs):
  """build-corpus from gs:// JSONL to a gs:// corpus directory."""
  corpus_dir = f"{gcs}/corpus_out"
  assert run_job(build_corpus, "--input", f"{gcs}/corpus/*.jsonl",
                 "--output", corpus_dir, "--num_shards", CORPUS_SHARDS) == 0
  return corpus_dir


def test_all_gcs_run_matches_local_run(gcs, gcs_corpus, local_reference, capsys):
  manifest = json.loads(_read_bytes(f"{gcs_corpus}/corpus.json"))
  local_manifest = json.loads((local_reference["corpus"] / "corpus.json").read_bytes())
  assert manifest["num_passages"] == local_manifest["num_passages"] > 0
  corpus_objects = _object_paths(gcs_corpus)
  assert (sorted(path.rsplit("/", 1)[-1] for path in corpus_objects) ==
          sorted(path.name for path in local_reference["corpus"].iterdir()))

  output_dir = f"{gcs}/eval"
  capsys.readouterr()
  assert run_job(evaluate, "--predictions", f"{gcs}/predictions/*.csv",
                 "--corpus", gcs_corpus, "--gold", f"{gcs}/gold.jsonl",
                 "--output_dir", output_dir) == 0
  # The run ends with its leaderboard, read back from gs://, then where it is.
  printed = capsys.readouterr().out.rstrip("\n").split("\n")
  assert printed[-1].startswith(f"autoais evaluate: outputs in {output_dir}: run.json, ")
  table = _read_bytes(f"{output_dir}/leaderboard.md").decode("utf-8").rstrip("\n")
  assert printed[-2 - len(table.split("\n")):-2] == table.split("\n")

  local = local_reference["eval"]
  assert (_read_bytes(f"{output_dir}/leaderboard.csv") ==
          (local / "leaderboard.csv").read_bytes())
  gcs_ratings = _ratings_by_file_name(_read_bytes(f"{output_dir}/ratings.parquet"))
  local_ratings = _ratings_by_file_name((local / "ratings.parquet").read_bytes())
  assert gcs_ratings and gcs_ratings == local_ratings
  # ratings.csv differs from the local one only in the source_file URIs.
  local_csv = (local / "ratings.csv").read_text(encoding="utf-8").replace(
      str(EXAMPLES / "predictions"), f"{gcs}/predictions")
  assert _read_bytes(f"{output_dir}/ratings.csv").decode("utf-8") == local_csv

  run = json.loads(_read_bytes(f"{output_dir}/run.json"))
  assert run["status"] == "complete"
  counts = run["counts"]
  assert counts["read"] == counts["scored"] + counts["rejected"] + counts["unmatched"]
  assert counts["read"] > counts["scored"] > 0
  local_run = json.loads((local / "run.json").read_bytes())
  assert counts == local_run["counts"]
  assert run["inputs"]["predictions"] == [
      f"{gcs}/predictions/{path.name}"
      for path in sorted((EXAMPLES / "predictions").glob("*.csv"))]

  objects = _object_paths(output_dir)
  assert sorted(path.rsplit("/", 1)[-1] for path in objects) == sorted(
      _WRITTEN_WITHOUT_HUMAN_RATINGS + (LEDGER,))
  assert not [path for path in objects if "_work-" in path or ".tmp-" in path]


def test_gcs_inputs_with_local_output_dir(gcs, gcs_corpus, local_reference, tmp_path):
  output = tmp_path / "eval"
  assert run_job(evaluate, "--predictions", f"{gcs}/predictions/*.csv",
                 "--corpus", gcs_corpus, "--gold", f"{gcs}/gold.jsonl",
                 "--output_dir", output) == 0

  local = local_reference["eval"]
  assert (output / "leaderboard.csv").read_bytes() == (local / "leaderboard.csv").read_bytes()
  assert (_ratings_by_file_name((output / "ratings.parquet").read_bytes()) ==
          _ratings_by_file_name((local / "ratings.parquet").read_bytes()))
  run = json.loads((output / "run.json").read_text(encoding="utf-8"))
  counts = run["counts"]
  assert counts["read"] == counts["scored"] + counts["rejected"] + counts["unmatched"]
  assert sorted(path.name for path in output.iterdir()) == sorted(
      _WRITTEN_WITHOUT_HUMAN_RATINGS + (LEDGER,))


def test_compressed_gcs_inputs_match_the_local_run(gcs, local_reference):
  """Pyserini .jsonl.gz, predictions .csv.gz and gold .jsonl.gz on gs://."""
  corpus_dir = f"{gcs}/packed_corpus_out"
  assert run_job(build_corpus, "--input", f"{gcs}/packed/corpus/*.jsonl.gz",
                 "--output", corpus_dir, "--num_shards", CORPUS_SHARDS) == 0
  local_corpus = local_reference["corpus"]
  for path in sorted(local_corpus.glob("passages-*.parquet")):
    assert _read_bytes(f"{corpus_dir}/{path.name}") == path.read_bytes()
  output_dir = f"{gcs}/packed_eval"
  assert run_job(evaluate, "--predictions", f"{gcs}/packed/predictions/*.csv.gz",
                 "--corpus", corpus_dir, "--gold", f"{gcs}/packed/gold.jsonl.gz",
                 "--output_dir", output_dir) == 0
  local = local_reference["eval"]
  assert (_read_bytes(f"{output_dir}/leaderboard.csv") ==
          (local / "leaderboard.csv").read_bytes())
  ratings = _ratings_by_file_name(_read_bytes(f"{output_dir}/ratings.parquet"))
  for row in ratings:
    row["source_file"] = row["source_file"].removesuffix(".gz")
  assert ratings == _ratings_by_file_name((local / "ratings.parquet").read_bytes())


_TOKENIZER_FILES = ("spiece.model", "tokenizer_config.json", "special_tokens_map.json")


def test_sharded_model_and_its_tokenizer_on_gcs(gcs, local_reference, tiny_t5, tmp_path,
                                                monkeypatch, capsys):
  """A checkpoint in the published layout (safetensors shards with their index)
  on gs://, its tokenizer in another gs:// directory (--tokenizer), scores as
  the same model read from a local directory; a gs:// checkpoint missing a
  shard that its index names is refused at launch."""
  from google.auth.credentials import AnonymousCredentials
  from google.cloud import storage
  monkeypatch.setenv("AUTOAIS_MODEL_CACHE", str(tmp_path / "model-cache"))
  bucket = storage.Client(project="test", credentials=AnonymousCredentials()).bucket(BUCKET)
  model_files = sorted(pathlib.Path(tiny_t5).iterdir())
  shards = [path.name for path in model_files if path.name.startswith("model-")]
  assert len(shards) > 1
  for path in model_files:
    prefix = "t5/tokenizer" if path.name in _TOKENIZER_FILES else "t5/weights"
    bucket.blob(f"{prefix}/{path.name}").upload_from_filename(str(path))
    if path.name != shards[-1] and path.name not in _TOKENIZER_FILES:
      bucket.blob(f"t5/partial/{path.name}").upload_from_filename(str(path))

  def score(output, model, *extra):
    return run_job(evaluate, "--predictions", EXAMPLES / "predictions" / "*.csv",
                   "--corpus", local_reference["corpus"], "--gold",
                   EXAMPLES / "gold.jsonl", "--output_dir", output, "--scorer", "t5",
                   "--model", model, "--bootstrap_samples", 50, *extra)

  assert score(tmp_path / "gcs", f"{gcs}/t5/weights", "--tokenizer",
               f"{gcs}/t5/tokenizer") == 0
  assert score(tmp_path / "local", tiny_t5) == 0
  # Exact: the same weights on the same inputs make the same batches.
  for name in ("ratings.parquet", "leaderboard.csv", "scores.txt"):
    # The summaries name the scorer by where its model was read from.
    from_gcs, from_disk = ((tmp_path / run / name).read_bytes().replace(
        str(model).encode(), b"MODEL") for run, model in (("gcs", f"{gcs}/t5/weights"),
                                                           ("local", tiny_t5)))
    assert from_gcs == from_disk, name
  scorer = json.loads((tmp_path / "gcs" / "run.json").read_text())["scorer"]
  local_scorer = json.loads((tmp_path / "local" / "run.json").read_text())["scorer"]
  for key in ("weights_sha256", "tokenizer_sha256", "weight_files", "one_token_id",
              "zero_token_id", "one_token", "zero_token"):
    assert scorer[key] == local_scorer[key], key
  assert scorer["weight_files"] == len(shards)

  assert score(tmp_path / "partial", f"{gcs}/t5/partial", "--tokenizer",
               f"{gcs}/t5/tokenizer") == 2
  err = capsys.readouterr().err
  assert f"1 of the {len(shards)} shards that model.safetensors.index.json names are " \
         f"missing: {shards[-1]}" in err, err
  assert not (tmp_path / "partial").exists()


def test_a_file_written_again_on_gcs_holds_the_new_text_and_nothing_beside_it(gcs):
  """gs:// has no rename that replaces: the second write copies over the first."""
  from autoais.transforms.io.atomic import write_text_atomically
  path = f"{gcs}/rewritten/_autoais_outputs.json"
  write_text_atomically(path, "first\n")
  write_text_atomically(path, "second\n")
  with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
    assert f.read() == b"second\n"
  listed = FileSystems.match([f"{gcs}/rewritten/*"])[0].metadata_list
  assert [metadata.path for metadata in listed] == [path]
