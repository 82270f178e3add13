"""Refusals at launch, for every job (issue 28, item 4): exit 2, a message naming
the flag and the path, nothing written.

  * An output directory that is, or holds, an input file or a directory the job
    reads (beam_jobs/output_dir.py): the first run is refused, not only the
    second one, which would read the first run's outputs over the same glob.
  * A JSON Lines input whose first record lacks a required field, as a CSV or
    Parquet header without that column is (transforms/io/input_records.py
    `require_columns`), for every reader of JSON Lines.

Each case copies a job's example inputs (examples/<job>/) and runs the job in
process on them.
"""
import gc
import json
import os
import shutil
import socket
import subprocess
import sys
import weakref

import pytest
from google.cloud.storage.fileio import BlobWriter

from autoais.beam_jobs import (agreement, ais_annotations, audit, build_corpus, citations,
                               claims, evaluate, sck)
from autoais.transforms.io.atomic import write_text_atomically
from autoais.transforms.io.cloud_storage import write_refused
from tests.support.jobs import run_job
from tests.robustness.test_output_safety import snapshot
from tests.support.paths import PROJECT_ROOT
from tests.support.refusing_gcs import RefusingGcs

EXAMPLES = PROJECT_ROOT / "examples"
GOLD = EXAMPLES / "gold.jsonl"


def _copy_examples(name, destination):
  shutil.copytree(EXAMPLES / name, destination)
  return destination


# job, the example folder copied, and its arguments given that folder (d) and
# the example corpus (c); every input lies in d.
_JOBS_READING_A_FOLDER = {
    "evaluate": (evaluate, "predictions", lambda d, c: [
        "--predictions", d / "*.csv", "--gold", GOLD, "--corpus", c]),
    "build-corpus": (build_corpus, "corpus", lambda d, c: ["--input", d / "*.jsonl"]),
    "agreement": (agreement, "agreement", lambda d, c: [
        "--input", d / "ratings.csv", "--format", "ratings"]),
    "ais-annotations": (ais_annotations, "ais-annotations", lambda d, c: [
        "--input", d / "ann_*.csv"]),
    "audit": (audit, "audit", lambda d, c: [
        "--answers", d / "answers.csv", "--candidates", d / "runs" / "*.trec",
        "--topics", d / "topics.tsv", "--corpus", c]),
    "citations": (citations, "citations", lambda d, c: ["--input", d / "*.json"]),
    "claims": (claims, "claims", lambda d, c: [
        "--input", d / "expertqa.jsonl", "--format", "expertqa"]),
    "sck": (sck, "sck", lambda d, c: ["--input", d / "answers.csv", "--kg", d / "kg.csv"]),
}


@pytest.mark.parametrize("job", sorted(_JOBS_READING_A_FOLDER))
def test_an_output_directory_holding_the_inputs_is_refused(job, tmp_path, example_corpus,
                                                           capsys):
  """The reported case (`--output_dir` the predictions' folder), for every job:
  refused on the first run."""
  module, examples, arguments = _JOBS_READING_A_FOLDER[job]
  folder = _copy_examples(examples, tmp_path / "inputs")
  output_flag = "--output" if job == "build-corpus" else "--output_dir"
  before = snapshot(tmp_path)
  assert run_job(module, *arguments(folder, example_corpus), output_flag, folder) == 2
  error = capsys.readouterr().err
  assert f"lies inside {output_flag} {folder}" in error, error
  assert "nothing was written" in error
  assert snapshot(tmp_path) == before


def test_an_output_directory_holding_an_input_deeper_down_is_refused(
    tmp_path, example_corpus, capsys):
  folder = _copy_examples("predictions", tmp_path / "runs" / "2024" / "predictions")
  before = snapshot(tmp_path)
  assert run_job(evaluate, "--predictions", folder / "keyword-baseline.csv", "--gold",
                 GOLD, "--corpus", example_corpus, "--output_dir", tmp_path / "runs") == 2
  error = capsys.readouterr().err
  assert (f"--predictions {folder / 'keyword-baseline.csv'} lies inside --output_dir "
          f"{tmp_path / 'runs'}") in error, error
  assert snapshot(tmp_path) == before


def test_an_output_directory_holding_a_directory_the_job_reads_is_refused(
    tmp_path, example_corpus, capsys):
  corpus = tmp_path / "work" / "corpus"
  shutil.copytree(example_corpus, corpus)
  before = snapshot(tmp_path)
  assert run_job(evaluate, "--predictions", EXAMPLES / "predictions" / "*.csv",
                 "--gold", GOLD, "--corpus", corpus, "--output_dir",
                 tmp_path / "work") == 2
  error = capsys.readouterr().err
  assert f"--output_dir {tmp_path / 'work'} holds --corpus {corpus}" in error, error
  assert snapshot(tmp_path) == before


# ----------------------------------------------------------------------------
# A JSON Lines input whose first record lacks a required field.

_PREDICTIONS = EXAMPLES / "predictions" / "keyword-baseline.csv"
_AUDIT = EXAMPLES / "audit"
_SCK = EXAMPLES / "sck"

# name: (job, its arguments given the bad file, what the message names as missing)
_JSONL_INPUTS = {
    "evaluate --predictions": (evaluate, lambda bad, c: [
        "--predictions", bad, "--gold", GOLD, "--corpus", c],
        "question, answer, (attribution, or passage)"),
    "evaluate --gold": (evaluate, lambda bad, c: [
        "--predictions", _PREDICTIONS, "--gold", bad, "--corpus", c],
        "question, (answer, or answers)"),
    "evaluate --human_ratings": (evaluate, lambda bad, c: [
        "--predictions", _PREDICTIONS, "--gold", GOLD, "--corpus", c,
        "--human_ratings", bad], "system_name, question, human_rating"),
    "build-corpus --input": (build_corpus, lambda bad, c: ["--input", bad],
                             "id, (contents, or title and text)"),
    "agreement --format ratings": (agreement, lambda bad, c: [
        "--input", bad, "--format", "ratings"],
        "question, answer, attribution, passage, human_rating"),
    "agreement --format attributionbench": (agreement, lambda bad, c: [
        "--input", bad, "--format", "attributionbench"],
        "claim, references, attribution_label"),
    "agreement --format wice": (agreement, lambda bad, c: [
        "--input", bad, "--format", "wice"], "label, claim, evidence"),
    "agreement --format xor-attriqa": (agreement, lambda bad, c: [
        "--input", bad, "--format", "xor-attriqa"],
        "ais, passage_in_language, prediction"),
    "ais-annotations --input": (ais_annotations, lambda bad, c: ["--input", bad],
                                "model-name, Flagged, INT, INT & AIS, # agree (INT), "
                                "# agree (AIS)"),
    "audit --answers": (audit, lambda bad, c: [
        "--answers", bad, "--candidates", _AUDIT / "runs" / "*.trec",
        "--topics", _AUDIT / "topics.tsv", "--corpus", c], "question, answer"),
    "audit --candidates": (audit, lambda bad, c: [
        "--answers", _AUDIT / "answers.csv", "--candidates", bad, "--corpus", c],
        "system_name, candidates, (question, or query_id)"),
    "citations --input": (citations, lambda bad, c: ["--input", bad],
                          "question, docs"),
    "claims --format expertqa": (claims, lambda bad, c: [
        "--input", bad, "--format", "expertqa"], "question, answers"),
    "claims --format jsonl": (claims, lambda bad, c: [
        "--input", bad, "--format", "jsonl"], "question, claim"),
    "sck --input": (sck, lambda bad, c: ["--input", bad, "--kg", _SCK / "kg.csv"],
                    "question, answer"),
    "sck --kg": (sck, lambda bad, c: [
        "--input", _SCK / "answers.csv", "--kg", bad], "subject, predicate, object"),
}


@pytest.mark.parametrize("case", sorted(_JSONL_INPUTS))
def test_a_json_lines_file_whose_first_record_lacks_a_field_is_refused(
    case, tmp_path, example_corpus, capsys):
  """The reported case (predictions with `query` and `output` ran to an empty
  leaderboard and exit 0), for every reader of JSON Lines: refused at launch as
  a CSV header without the column is. A blank line and a later good record do
  not change it: the first record stands for the file."""
  module, arguments, missing = _JSONL_INPUTS[case]
  bad = tmp_path / ("ann_bad.jsonl" if module is ais_annotations else "bad.jsonl")
  bad.write_text('\n{"query": "who wrote hamlet", "output": "Shakespeare"}\n'
                 '{"question": "q", "answer": "a", "attribution": "x"}\n',
                 encoding="utf-8")
  output_flag = "--output" if module is build_corpus else "--output_dir"
  assert run_job(module, *arguments(bad, example_corpus),
                 output_flag, tmp_path / "out") == 2
  error = capsys.readouterr().err
  assert (f"{bad}:2: missing required field(s) {missing} in the first record "
          "(found: query, output)") in error, error
  assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------------------
# gs:// paths that cannot be reached or refuse access
# (transforms/io/cloud_storage.py). Cloud Storage is a local server here
# (STORAGE_EMULATOR_HOST): tests/support/refusing_gcs.py answers as GCS's JSON
# API does when it refuses; a closed port stands for a network that does not
# answer.


@pytest.fixture
def gcs_env(monkeypatch, tmp_path):
  """Sets STORAGE_EMULATOR_HOST to a server (given its url) and the credentials
  (a credentials file, or None for none: the variable names a missing file);
  Beam's credentials, kept for the process, are this test's alone."""
  from apache_beam.internal.gcp import auth  # pylint: disable=import-outside-toplevel
  monkeypatch.setattr(auth._Credentials, "_credentials_init", False)  # pylint: disable=protected-access
  monkeypatch.setattr(auth._Credentials, "_credentials", None)  # pylint: disable=protected-access

  def use(url, credentials=None):
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", url)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS",
                       str(credentials or tmp_path / "no-credentials.json"))
    monkeypatch.setenv("NO_GCE_CHECK", "True")  # no metadata server here
  return use


@pytest.fixture
def refusing_gcs():
  servers = []

  def start(status, **kwargs):
    servers.append(RefusingGcs(status, **kwargs))
    return servers[-1]
  yield start
  for server in servers:
    server.close()


# (job, its arguments given one gs:// path where the flag goes), one per flag
# that names a file or directory.
_GCS_FLAGS = {
    "evaluate --predictions": (evaluate, lambda gs: [
        "--predictions", f"{gs}/runs/*.csv", "--gold", GOLD, "--output_dir", "out"]),
    "evaluate --gold": (evaluate, lambda gs: [
        "--predictions", _PREDICTIONS, "--gold", f"{gs}/gold.jsonl",
        "--output_dir", "out"]),
    "evaluate --corpus": (evaluate, lambda gs: [
        "--predictions", _PREDICTIONS, "--gold", GOLD, "--corpus", f"{gs}/corpus",
        "--output_dir", "out"]),
    "evaluate --human_ratings": (evaluate, lambda gs: [
        "--predictions", _PREDICTIONS, "--gold", GOLD, "--human_ratings",
        f"{gs}/ratings.csv", "--output_dir", "out"]),
    "evaluate --output_dir": (evaluate, lambda gs: [
        "--predictions", _PREDICTIONS, "--gold", GOLD, "--output_dir", f"{gs}/out"]),
    "evaluate --model": (evaluate, lambda gs: [
        "--predictions", _PREDICTIONS, "--gold", GOLD, "--output_dir", "out",
        "--scorer", "t5", "--model", f"{gs}/t5"]),
    "evaluate --score_cache": (evaluate, lambda gs: [
        "--predictions", _PREDICTIONS, "--gold", GOLD, "--output_dir", "out",
        "--scorer", "t5", "--model", "model", "--score_cache", f"{gs}/cache"]),
    "build-corpus --input": (build_corpus, lambda gs: [
        "--input", f"{gs}/wiki/*.jsonl", "--output", "out"]),
    "agreement --input": (agreement, lambda gs: [
        "--input", f"{gs}/ratings.csv", "--format", "ratings", "--output_dir", "out"]),
    "ais-annotations --input": (ais_annotations, lambda gs: [
        "--input", f"{gs}/ann_*.csv", "--output_dir", "out"]),
    "audit --candidates": (audit, lambda gs: [
        "--answers", _AUDIT / "answers.csv", "--candidates", f"{gs}/runs/*.trec",
        "--output_dir", "out"]),
    "citations --input": (citations, lambda gs: [
        "--input", f"{gs}/alce/*.json", "--output_dir", "out"]),
    "claims --input": (claims, lambda gs: [
        "--input", f"{gs}/expertqa.jsonl", "--output_dir", "out"]),
    "sck --kg": (sck, lambda gs: [
        "--input", _SCK / "answers.csv", "--kg", f"{gs}/kg/*.parquet",
        "--output_dir", "out"]),
}


@pytest.mark.parametrize("case", sorted(_GCS_FLAGS))
def test_a_bucket_refusing_anonymous_access_is_refused_at_launch(
    case, gcs_env, refusing_gcs, tmp_path, monkeypatch, capsys):
  """Without credentials, a bucket that is not public answers 401: every flag
  that names a path is refused at once, naming the flag, the path and what to
  do (Beam retried credential discovery for about 20 s, then failed with a
  traceback, exit 1)."""
  monkeypatch.chdir(tmp_path)
  gcs_env(refusing_gcs(401).url)
  module, arguments = _GCS_FLAGS[case]
  argv = arguments("gs://private")
  flag = case.split()[1]
  path = argv[argv.index(flag) + 1]
  assert run_job(module, *argv) == 2
  error = capsys.readouterr().err
  assert (f"{flag} {path}: access refused (HTTP 401: the bucket takes no anonymous "
          "requests); no Application Default Credentials were found") in error, error
  assert not list(tmp_path.iterdir())


def test_a_bucket_refusing_the_credentials_is_refused_at_launch(
    gcs_env, refusing_gcs, tmp_path, capsys):
  server = refusing_gcs(403)
  gcs_env(server.url, server.credentials_file(tmp_path / "adc.json"))
  assert run_job(evaluate, "--predictions", _PREDICTIONS, "--gold", GOLD, "--corpus",
                 "gs://theirs/corpus", "--output_dir", tmp_path / "out") == 2
  error = capsys.readouterr().err
  assert ("--corpus gs://theirs/corpus: access refused (HTTP 403: tester@example.com "
          "does not have storage.objects.list access") in error, error
  assert "no Application Default Credentials" not in error
  assert ("POST", "/token") in server.requests  # the credentials were used
  assert not (tmp_path / "out").exists()


def test_credentials_that_are_refused_are_refused_at_launch(
    gcs_env, refusing_gcs, tmp_path, capsys):
  """A service account whose key was revoked: its token request gets 400."""
  server = refusing_gcs(403, token_status=400)
  gcs_env(server.url, server.credentials_file(tmp_path / "adc.json"))
  assert run_job(evaluate, "--predictions", "gs://theirs/runs/*.csv", "--gold", GOLD,
                 "--output_dir", tmp_path / "out") == 2
  error = capsys.readouterr().err
  assert ("--predictions gs://theirs/runs/*.csv: the credentials were refused "
          "(invalid_grant: Invalid JWT Signature.") in error, error


def test_a_missing_bucket_is_refused_at_launch(gcs_env, refusing_gcs, tmp_path, capsys):
  gcs_env(refusing_gcs(404).url)
  assert run_job(evaluate, "--predictions", "gs://no-such-bucket/runs/*.csv", "--gold",
                 GOLD, "--output_dir", tmp_path / "out") == 2
  assert ("--predictions gs://no-such-bucket/runs/*.csv: the bucket gs://no-such-bucket "
          "does not exist") in capsys.readouterr().err


@pytest.mark.parametrize("path, cause", [
    ("gs:///runs/*.csv", "names no bucket"),
    ("gs://Bad_Name/runs/*.csv", "refused (HTTP 400: Invalid bucket name: 'Bad_Name')"),
])
def test_a_path_without_a_usable_bucket_name_is_refused_at_launch(
    path, cause, gcs_env, refusing_gcs, tmp_path, capsys):
  gcs_env(refusing_gcs(400).url)
  assert run_job(evaluate, "--predictions", path, "--gold", GOLD,
                 "--output_dir", tmp_path / "out") == 2
  assert f"--predictions {path}: {cause}. Nothing was written." in (
      capsys.readouterr().err)


def test_a_scratch_codec_that_names_no_codec_is_refused_before_anything_is_written(
    tmp_path, example_corpus, monkeypatch, capsys):
  monkeypatch.setenv("AUTOAIS_SCRATCH_CODEC", "gzip")
  assert run_job(evaluate, "--predictions", _PREDICTIONS, "--gold", GOLD, "--corpus",
                 example_corpus, "--output_dir", tmp_path / "out") == 2
  assert ("AUTOAIS_SCRATCH_CODEC='gzip': expected one of none, lz4, zstd"
          in capsys.readouterr().err)
  assert not (tmp_path / "out").exists()


def test_an_output_directory_that_takes_no_writes_is_refused(
    gcs_env, refusing_gcs, tmp_path, example_corpus, capsys):
  """The bucket lists (the launch check passes) but refuses the first write, the
  output directory's ledger: exit 2 naming --output_dir (was a traceback)."""
  server = refusing_gcs(403, reads=True)
  gcs_env(server.url, server.credentials_file(tmp_path / "adc.json"))
  assert run_job(evaluate, "--predictions", _PREDICTIONS, "--gold", GOLD, "--corpus",
                 example_corpus, "--output_dir", "gs://read-only/out") == 2
  error = capsys.readouterr().err
  assert ("--output_dir gs://read-only/out: the write of _autoais_outputs.json was "
          "refused (HTTP 403: tester@example.com does not have storage.objects.create "
          "access") in error, error


def _blob_writers():
  """Every google-cloud-storage writer (Beam's gs:// files) in memory."""
  return [o for o in gc.get_objects() if isinstance(o, BlobWriter)]


def test_a_refused_write_leaves_nothing_for_the_garbage_collector_to_upload(
    gcs_env, refusing_gcs, tmp_path):
  """A gs:// write that the bucket refuses raises the refusal and leaves its
  writer closed, so that freeing it later uploads nothing. It was left open
  (kept alive by the failure's traceback), and io's finaliser uploaded it
  again whenever a full collection came: in CI, during a later test, against
  this server gone by then, retried for 110 s."""
  server = refusing_gcs(403, reads=True)
  gcs_env(server.url, server.credentials_file(tmp_path / "adc.json"))
  earlier = weakref.WeakSet(_blob_writers())
  with pytest.raises(Exception) as refused:
    write_text_atomically("gs://read-only/out/_autoais_outputs.json", "{}\n")
  assert write_refused(refused.value) == (
      "HTTP 403: tester@example.com does not have storage.objects.create access to "
      "the Google Cloud Storage bucket.")
  writers = [writer for writer in _blob_writers() if writer not in earlier]
  assert len(writers) == 1 and writers[0].closed
  freed = weakref.ref(writers[0])
  sent = len(server.requests)
  del writers, refused
  gc.collect()
  assert freed() is None  # so its finaliser has run ...
  assert server.requests[sent:] == []  # ... and sent nothing


def test_an_unreachable_bucket_is_refused_within_seconds(tmp_path):
  """No credentials and no network (nothing listens where Cloud Storage should
  be): exit 2 naming the flag and the path. Before, Beam retried for about 2
  minutes and ended in a traceback (exit 1); the timeout is a hang guard, not a
  measure (bench/README.md has the figures)."""
  with socket.socket() as closed:
    closed.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{closed.getsockname()[1]}"
  env = dict(os.environ, STORAGE_EMULATOR_HOST=url, NO_GCE_CHECK="True",
             GOOGLE_APPLICATION_CREDENTIALS=str(tmp_path / "no-credentials.json"),
             PYTHONPATH=str(PROJECT_ROOT))
  result = subprocess.run(
      [sys.executable, "-m", "autoais", "evaluate", "--predictions", "gs://bucket/*.csv",
       "--gold", str(GOLD), "--output_dir", str(tmp_path / "out")],
      env=env, capture_output=True, text=True, timeout=90)
  assert result.returncode == 2, result.stderr[-3000:]
  assert ("--predictions gs://bucket/*.csv: Cloud Storage cannot be reached (still "
          "failing after 5 s") in result.stderr, result.stderr[-3000:]
  assert "Traceback" not in result.stderr
  assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------------------
# A run in which an input file yields no row: outputs written, run.json's
# status "empty_inputs" naming the file, exit code 3 (was "complete", exit 0).

# job: (module, arguments given the folder of its files (d) and the example
# corpus (c), written there: [(flag, the file that yields nothing)])
_EMPTY_INPUTS = {
    "evaluate": (evaluate, lambda d, c: (
        ["--predictions", f"{EXAMPLES / 'predictions' / '*.csv'},{d / 'off.csv'}",
         "--gold", GOLD, "--corpus", c, "--human_ratings",
         f"{d / 'ratings.csv'},{d / 'strangers.csv'}", "--bootstrap_samples", 10],
        [("--predictions", d / "off.csv", 1, "unmatched:question_not_in_gold"),
         ("--human_ratings", d / "strangers.csv", 1, "unmatched:no_prediction")])),
    "agreement": (agreement, lambda d, c: (
        ["--input", f"{EXAMPLES / 'agreement' / 'ratings.csv'},{d / 'none.csv'}",
         "--calibrate_on",
         f"{EXAMPLES / 'agreement' / 'calibration.csv'},{d / 'nothing.csv'}",
         "--format", "ratings"],
        [("--input", d / "none.csv", 0, "no_records"),
         ("--calibrate_on", d / "nothing.csv", 0, "no_records")])),
    "ais-annotations": (ais_annotations, lambda d, c: (
        ["--input", f"{EXAMPLES / 'ais-annotations' / 'ann_example.csv'},"
         f"{d / 'ann_blank.csv'}"],
        [("--input", d / "ann_blank.csv", 0, "no_records")])),
    "audit": (audit, lambda d, c: (
        ["--answers", f"{_AUDIT / 'answers.csv'},{d / 'answers.csv'}",
         "--candidates", f"{_AUDIT / 'runs' / '*.trec'},{d / 'lists.jsonl'}",
         "--topics", _AUDIT / "topics.tsv", "--corpus", c, "--bootstrap_samples", 10],
        [("--answers", d / "answers.csv", 0, "no_records"),
         ("--candidates", d / "lists.jsonl", 1, "unmatched:no_candidates")])),
    "citations": (citations, lambda d, c: (
        ["--input", f"{EXAMPLES / 'citations' / '*.json'},{d / 'none.json'}",
         "--bootstrap_samples", 10],
        [("--input", d / "none.json", 0, "no_records")])),
    "claims": (claims, lambda d, c: (
        ["--input", f"{EXAMPLES / 'claims' / 'expertqa.jsonl'},{d / 'unclaimed.jsonl'}",
         "--bootstrap_samples", 10],
        [("--input", d / "unclaimed.jsonl", 1, "unmatched:answer_without_claims")])),
    "sck": (sck, lambda d, c: (
        ["--input", f"{_SCK / 'answers.csv'},{d / 'no_answers.csv'}", "--kg",
         _SCK / "kg.csv"],
        [("--input", d / "no_answers.csv", 0, "no_records")])),
}


def _write_files_that_yield_nothing(d):
  """The files of _EMPTY_INPUTS (and ratings.csv, whose rating joins)."""
  d.mkdir()
  files = {
      "off.csv": "question,answer,attribution\nwho painted the ceiling,Michelangelo,x",
      "ratings.csv": "system_name,question,human_rating\nkeyword-baseline,"
                     "what is the highest mountain on earth above sea level,Y",
      "strangers.csv": "system_name,question,human_rating\nnobody,who painted it,Y",
      "none.csv": "system_name,question,answer,attribution,passage,human_rating",
      "nothing.csv": "system_name,question,answer,attribution,passage,human_rating",
      "ann_blank.csv": (EXAMPLES / "ais-annotations" / "ann_example.csv").read_text(
          encoding="utf-8").split("\n", 1)[0],
      "answers.csv": "question,answer",
      "lists.jsonl": '{"system_name": "dense-search", "query_id": "q1", '
                     '"candidates": []}',
      "none.json": '{"data": []}',
      "unclaimed.jsonl": '{"question": "q", "answers": {"s": {"answer_string": "a", '
                         '"claims": []}}}',
      "no_answers.csv": "question,answer",
  }
  for name, text in files.items():
    (d / name).write_text(text + "\n", encoding="utf-8")


@pytest.mark.parametrize("job", sorted(_EMPTY_INPUTS))
def test_an_input_file_that_yields_no_row_ends_with_exit_3(job, tmp_path, example_corpus,
                                                           capsys):
  module, arguments = _EMPTY_INPUTS[job]
  argv, expected = arguments(tmp_path / "in", example_corpus)
  _write_files_that_yield_nothing(tmp_path / "in")
  output = tmp_path / "out"
  assert run_job(module, *argv, "--output_dir", output) == 3
  record = json.loads((output / "run.json").read_text(encoding="utf-8"))
  assert record["status"] == "empty_inputs"
  assert [(e["flag"], e["file"], e["read"], e["main_reason"])
          for e in record["empty_inputs"]] == [
              (flag, str(path), read, reason) for flag, path, read, reason in expected]
  for entry in record["empty_inputs"]:
    assert entry["read"] == entry["rejected"] + entry["unmatched"]
  error = capsys.readouterr().err.rstrip("\n").split("\n")
  assert error[-len(expected) - 1].startswith(
      f"autoais {job}: the outputs are written, but {len(expected)} input file(s) "
      "yielded no row"), error[-4:]
  for line, (flag, path, _, reason) in zip(error[-len(expected):], expected):
    assert line.startswith(f"  {flag} {path}: ") and f"main reason {reason}" in line
