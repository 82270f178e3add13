"""Shared test helpers: where the real data sets live, and running jobs in-process."""
import gzip
import json
import os
import pathlib

import pytest

PROJECT_ROOT = pathlib.Path(__file__).resolve().parent.parent


def shared_data_dir() -> pathlib.Path:
  """The real data sets: $AUTOAIS_SHARED_DATA, else ../shared/data beside the project."""
  return pathlib.Path(os.environ.get("AUTOAIS_SHARED_DATA",
                                     PROJECT_ROOT.parent / "shared" / "data"))


def shared_file(relative: str) -> pathlib.Path:
  """A file of the shared data; skips the test (with the reason) where it is absent."""
  path = shared_data_dir() / relative
  if not path.exists():
    pytest.skip(f"shared data {relative} not found under {shared_data_dir()} "
                "(set AUTOAIS_SHARED_DATA)")
  return path


def nq_oracle_records():
  with gzip.open(shared_file("nq_oracle_passages/nq-open-oracle.jsonl.gz"), "rt",
                 encoding="utf-8") as f:
    return [json.loads(line) for line in f]


def oracle_passage_id(index: int, title: str) -> str:
  """A Pyserini-style id for the oracle passage of NQ-Open question `index`."""
  page = title.replace(" ", "_")
  return f"http://en.wikipedia.org/wiki/{page}#{page}#{index}"


def write_jsonl(path, records):
  path = pathlib.Path(path)
  path.parent.mkdir(parents=True, exist_ok=True)
  with open(path, "w", encoding="utf-8") as f:
    for record in records:
      f.write(json.dumps(record, ensure_ascii=False) + "\n")
  return path


def read_jsonl(path):
  with open(path, encoding="utf-8") as f:
    return [json.loads(line) for line in f if line.strip()]


def run_job(module, *args) -> int:
  """Runs a job's run(argv) in this process (FnApiRunner); returns its exit code."""
  return module.run([str(arg) for arg in args])
