"""An input no reader can use ends the job with exit 2 and a message naming the
file: a directory, a file without read permission, an empty file (also once
decompressed), a truncated gzip, a truncated Parquet file, UTF-16 text. Each
input role is tried: predictions, gold answers, corpus sources. Where the damage
is found at launch, nothing is written; where it is found only while the job
reads (a gzip cut deep inside), run.json is never written.

The permission case drops root's power to read any file (setpriv without
CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH) when the tests run as root.
"""
import gzip
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from autoais.beam_jobs import build_corpus, evaluate
from tests.support.jobs import run_job
from tests.support.paths import PROJECT_ROOT

EXAMPLES = PROJECT_ROOT / "examples"
W = "http://en.wikipedia.org/wiki"


@pytest.fixture
def corpus(example_corpus):
  return example_corpus


def _parquet_bytes(rows):
  sink = pa.BufferOutputStream()
  pq.write_table(pa.Table.from_pylist(rows), sink)
  return sink.getvalue().to_pybytes()


_PREDICTION = {"question": "who painted the mona lisa", "answer": "Leonardo",
               "attribution": f"{W}/Mona_Lisa#Mona_Lisa#0"}
_GOLD_LINE = b'{"question": "who painted the mona lisa", "answer": ["Leonardo"]}\n'
_PASSAGE_LINE = b'{"id": "p1", "contents": "\xc2\xab T \xc2\xbb \xc2\xab T \xc2\xbb text"}\n'


def _damaged(kind: str, role: str, directory: pathlib.Path) -> pathlib.Path:
  """A damaged input file (or directory) for a role, named as the role expects."""
  csv_text = ("question,answer,attribution\n" + ",".join(_PREDICTION.values()) +
              "\n").encode()
  good = {"predictions": csv_text, "gold": _GOLD_LINE, "corpus": _PASSAGE_LINE}[role]
  suffix = {"predictions": ".csv", "gold": ".jsonl", "corpus": ".jsonl"}[role]
  if kind == "directory":
    path = directory / f"inputs{suffix}"
    path.mkdir()
    return path
  if kind == "empty":
    path = directory / f"empty{suffix}"
    path.write_bytes(b"")
  elif kind == "blank":
    path = directory / f"blank{suffix}"
    path.write_bytes(b"\n  \n\r\n")
  elif kind == "bom_only":
    path = directory / f"bom{suffix}"
    path.write_bytes(b"\xef\xbb\xbf\n")
  elif kind == "empty_gzip":
    path = directory / f"empty{suffix}.gz"
    path.write_bytes(gzip.compress(b""))
  elif kind == "truncated_gzip":
    path = directory / f"cut{suffix}.gz"
    data = gzip.compress(good * 2000)
    path.write_bytes(data[:len(data) // 2])
  elif kind == "not_gzip":
    path = directory / f"plain{suffix}.gz"
    path.write_bytes(good)
  elif kind == "utf16":
    path = directory / f"wide{suffix}"
    path.write_bytes(good.decode("utf-8").encode("utf-16"))
  elif kind == "truncated_parquet":
    rows = ([_PREDICTION] if role == "predictions" else
            [{"id": "p1", "contents": "« T » « T » text"}])
    data = _parquet_bytes(rows * 50)
    path = directory / "cut.parquet"
    path.write_bytes(data[:len(data) - 20])
  else:
    raise ValueError(kind)
  return path


def _command(role, damaged, corpus, output):
  if role == "corpus":
    return build_corpus, ["--input", damaged, "--output", output]
  predictions = damaged if role == "predictions" else (
      EXAMPLES / "predictions" / "keyword-baseline.csv")
  gold = damaged if role == "gold" else EXAMPLES / "gold.jsonl"
  return evaluate, ["--predictions", predictions, "--corpus", corpus, "--gold", gold,
                    "--output_dir", output]


CASES = [
    (role, kind, message)
    for role in ("predictions", "gold", "corpus")
    for kind, message in (
        ("directory", "is a directory"),
        ("empty", "is empty"),
        ("blank", "is empty"),
        ("bom_only", "is empty"),
        ("empty_gzip", "is empty (after decompression)"),
        ("truncated_gzip", "unreadable data (EOFError"),
        ("not_gzip", "unreadable data (BadGzipFile"),
        ("utf16", "is UTF-16 or UTF-32 text"),
    )
] + [("predictions", "truncated_parquet", "not a readable Parquet file"),
     ("corpus", "truncated_parquet", "not a readable Parquet file")]


@pytest.mark.parametrize("role, kind, message", CASES)
def test_unreadable_input_exits_2_naming_the_file(tmp_path, corpus, capsys, role,
                                                  kind, message):
  damaged = _damaged(kind, role, tmp_path)
  output = tmp_path / "out"
  job, args = _command(role, damaged, corpus, output)
  assert run_job(job, *args) == 2
  error = capsys.readouterr().err
  assert f"{damaged}: {message}" in error, error
  assert "Traceback" not in error
  assert not output.exists()


@pytest.mark.parametrize("role", ["predictions", "gold", "corpus"])
def test_damage_found_while_reading_stops_the_job_without_run_json(tmp_path, corpus,
                                                                   capsys, role):
  # Cut deep inside: the launch check decompresses the start and passes; the
  # job finds the cut while it reads and stops with exit 2.
  good = {"predictions": None, "gold": _GOLD_LINE, "corpus": _PASSAGE_LINE}[role]
  if role == "predictions":
    lines = "".join(f"question {i},answer {i},{W}/Page_{i}#0\n" for i in range(100000))
    data = ("question,answer,attribution\n" + lines).encode()
  elif role == "gold":
    data = _GOLD_LINE + b"".join(
        b'{"question": "q %d", "answer": ["a"]}\n' % i for i in range(100000))
  else:
    data = b"".join(good.replace(b'"p1"', b'"p%d"' % i) for i in range(100000))
  suffix = ".csv.gz" if role == "predictions" else ".jsonl.gz"
  damaged = tmp_path / f"deep{suffix}"
  packed = gzip.compress(data)
  damaged.write_bytes(packed[:len(packed) * 9 // 10])
  output = tmp_path / "out"
  job, args = _command(role, damaged, corpus, output)
  assert run_job(job, *args) == 2
  assert f"{damaged}: unreadable data (EOFError" in capsys.readouterr().err
  manifest = "corpus.json" if role == "corpus" else "run.json"
  assert not (output / manifest).exists()
  assert not list(output.glob("_work-*"))


def _without_root_file_access(command):
  """The command, run so that a file's mode binds even for root."""
  if os.geteuid() != 0:
    return command
  setpriv = shutil.which("setpriv")
  if setpriv is None:
    pytest.skip("running as root without setpriv (util-linux): a mode-000 file "
                "stays readable, so the permission case cannot be made")
  drop = "-dac_override,-dac_read_search"
  return [setpriv, f"--bounding-set={drop}", f"--inh-caps={drop}"] + command


def test_file_without_read_permission_exits_2(tmp_path, corpus):
  locked = tmp_path / "locked.csv"
  shutil.copy(EXAMPLES / "predictions" / "keyword-baseline.csv", locked)
  locked.chmod(0o000)
  command = [sys.executable, "-m", "autoais.beam_jobs.cli", "evaluate", "--predictions",
             str(locked), "--corpus", str(corpus), "--gold",
             str(EXAMPLES / "gold.jsonl"), "--output_dir", str(tmp_path / "out")]
  result = subprocess.run(_without_root_file_access(command), cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=str(PROJECT_ROOT)),
                          capture_output=True, text=True, timeout=300)
  locked.chmod(0o644)
  assert result.returncode == 2, result.stderr[-3000:]
  assert f"{locked}: cannot be read (permission denied)" in result.stderr
  assert not (tmp_path / "out").exists()


def test_a_missing_gold_file_exits_2(tmp_path, corpus, capsys):
  assert run_job(evaluate, "--predictions", EXAMPLES / "predictions" / "*.csv",
                 "--corpus", corpus, "--gold", tmp_path / "nope.jsonl",
                 "--output_dir", tmp_path / "out") == 2
  assert f"{tmp_path / 'nope.jsonl'}: no such file" in capsys.readouterr().err


def test_a_damaged_corpus_shard_exits_2(tmp_path, capsys):
  corpus_copy = tmp_path / "corpus"
  assert run_job(build_corpus, "--input", EXAMPLES / "corpus" / "*.jsonl",
                 "--output", corpus_copy, "--num_shards", 2) == 0
  manifest = json.loads((corpus_copy / "corpus.json").read_text())
  for shard in manifest["shards"]:
    path = corpus_copy / shard["path"]
    path.write_bytes(path.read_bytes()[:100])
  output = tmp_path / "out"
  assert run_job(evaluate, "--predictions", EXAMPLES / "predictions" / "*.csv",
                 "--corpus", corpus_copy, "--gold", EXAMPLES / "gold.jsonl",
                 "--output_dir", output) == 2
  assert "passages-0000" in capsys.readouterr().err
  assert not (output / "run.json").exists()
