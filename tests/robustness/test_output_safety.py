"""No user file is ever lost, whatever --output_dir is (SPEC 6; beam_jobs/output_dir.py).

Every case snapshots the bytes of every file under the directories involved,
runs a job, and compares: a user's file (an input, a note, another job's
outputs) is never changed. The job either writes its outputs beside it or
refuses with exit 2 and a message saying why, having written nothing.
"""
import datetime
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from autoais.beam_jobs import build_corpus, evaluate, output_dir
from autoais.beam_jobs.output_dir import LEDGER
from tests.support.jobs import run_job
from tests.support.paths import PROJECT_ROOT

EXAMPLES = PROJECT_ROOT / "examples"
GOLD = EXAMPLES / "gold.jsonl"
PREDICTIONS = EXAMPLES / "predictions" / "keyword-baseline.csv"


def snapshot(*roots) -> dict:
  """{path: bytes} of every file under the roots (symlinks as their target path)."""
  files = {}
  for root in roots:
    for path in sorted(pathlib.Path(root).rglob("*")):
      if path.is_symlink():
        files[str(path)] = ("symlink", os.readlink(path))
      elif path.is_file():
        files[str(path)] = path.read_bytes()
  return files


@pytest.fixture
def corpus(example_corpus):
  return example_corpus


def evaluate_into(output, predictions, corpus, *extra):
  return run_job(evaluate, "--predictions", predictions, "--corpus", corpus,
                 "--gold", GOLD, "--output_dir", output, "--bootstrap_samples", 20,
                 *extra)


def test_the_reported_case_ratings_csv_in_the_output_directory(tmp_path, corpus):
  """`autoais evaluate --predictions ratings.csv --output_dir .`, as typed by a user
  in the directory that holds the Attributed QA release's ratings.csv."""
  shutil.copy(PREDICTIONS, tmp_path / "ratings.csv")
  before = snapshot(tmp_path, corpus)
  result = subprocess.run(
      [sys.executable, "-m", "autoais.beam_jobs.cli", "evaluate", "--predictions",
       "ratings.csv", "--corpus", str(corpus), "--gold", str(GOLD), "--output_dir",
       "."], cwd=tmp_path, capture_output=True, text=True, timeout=300,
      env=dict(os.environ, PYTHONPATH=str(PROJECT_ROOT)))
  assert result.returncode == 2, result.stderr[-2000:]
  assert ("--predictions ratings.csv is where `autoais evaluate` writes its output "
          "ratings.csv (--output_dir .)") in result.stderr
  assert "nothing was written" in result.stderr
  assert snapshot(tmp_path, corpus) == before


# Every output name a predictions file could carry (.txt and .md are no input format).
INPUT_SHAPED_OUTPUTS = [name for name in evaluate.OUTPUT_FILES
                        if name.endswith((".csv", ".json", ".jsonl", ".parquet"))]


def _write_predictions_as(path: pathlib.Path):
  rows = list(__import__("csv").DictReader(open(PREDICTIONS, encoding="utf-8")))
  if path.suffix == ".parquet":
    pq.write_table(pa.Table.from_pylist(rows), str(path))
  elif path.suffix in (".json", ".jsonl"):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
  else:
    shutil.copy(PREDICTIONS, path)


@pytest.mark.parametrize("name", INPUT_SHAPED_OUTPUTS)
def test_predictions_under_any_output_name_are_refused(tmp_path, corpus, name, capsys):
  output = tmp_path / "out"
  output.mkdir()
  _write_predictions_as(output / name)
  before = snapshot(tmp_path, corpus)
  assert evaluate_into(output, output / name, corpus) == 2
  assert f"writes its output {name}" in capsys.readouterr().err
  assert snapshot(tmp_path, corpus) == before


def test_predictions_read_by_glob_from_the_output_directory(tmp_path, corpus, capsys):
  # A run reading out/*.csv would write ratings.csv and leaderboard.csv there, and
  # the same command again would read them as predictions: the first run is
  # refused already.
  output = tmp_path / "out"
  output.mkdir()
  shutil.copy(PREDICTIONS, output / "mine.csv")
  before = snapshot(tmp_path, corpus)
  assert evaluate_into(output, output / "*.csv", corpus) == 2
  assert f"--predictions {output / 'mine.csv'} lies inside --output_dir" in (
      capsys.readouterr().err)
  assert snapshot(tmp_path, corpus) == before


def test_gold_under_an_output_name_is_refused(tmp_path, corpus, capsys):
  output = tmp_path / "out"
  output.mkdir()
  shutil.copy(GOLD, output / "dead_letter.jsonl")
  before = snapshot(tmp_path, corpus)
  assert run_job(evaluate, "--predictions", PREDICTIONS, "--corpus", corpus,
                 "--gold", output / "dead_letter.jsonl", "--output_dir", output) == 2
  assert "--gold" in capsys.readouterr().err
  assert snapshot(tmp_path, corpus) == before


def test_an_input_reached_through_a_symlink_is_refused(tmp_path, corpus, capsys):
  output = tmp_path / "out"
  output.mkdir()
  shutil.copy(PREDICTIONS, output / "ratings.csv")
  (tmp_path / "elsewhere").mkdir()
  (tmp_path / "elsewhere" / "preds.csv").symlink_to(output / "ratings.csv")
  before = snapshot(tmp_path, corpus)
  assert evaluate_into(output, tmp_path / "elsewhere" / "preds.csv", corpus) == 2
  assert "writes its output ratings.csv" in capsys.readouterr().err
  assert snapshot(tmp_path, corpus) == before


def test_output_directory_equal_to_the_corpus_is_refused(tmp_path, corpus, capsys):
  copy = tmp_path / "corpus"
  shutil.copytree(corpus, copy)
  before = snapshot(tmp_path)
  assert evaluate_into(copy, PREDICTIONS, copy) == 2
  assert f"--output_dir {copy} is inside --corpus {copy}" in capsys.readouterr().err
  assert snapshot(tmp_path) == before
  # Inside it, too.
  assert evaluate_into(copy / "eval", PREDICTIONS, copy) == 2
  assert snapshot(tmp_path) == before


def test_another_jobs_directory_is_refused(tmp_path, corpus, capsys):
  # A corpus directory (build-corpus's ledger) given as evaluate's output,
  # while the run reads another corpus.
  other = tmp_path / "other-corpus"
  shutil.copytree(corpus, other)
  before = snapshot(tmp_path, corpus)
  assert evaluate_into(other, PREDICTIONS, corpus) == 2
  assert "holds the outputs of `autoais build-corpus`" in capsys.readouterr().err
  assert snapshot(tmp_path, corpus) == before


def test_unrelated_user_files_stay_and_outputs_are_written(tmp_path, corpus):
  output = tmp_path / "out"
  (output / "_work-my-notes").mkdir(parents=True)
  (output / "_work-my-notes" / "draft.txt").write_text("mine")
  (output / "notes.txt").write_text("my notes on these systems\n")
  (output / "ratings.csv.bak").write_bytes(PREDICTIONS.read_bytes())
  users = snapshot(output)
  assert evaluate_into(output, PREDICTIONS, corpus) == 0
  assert evaluate_into(output, PREDICTIONS, corpus) == 0  # a rerun replaces its outputs
  after = snapshot(output)
  assert {path: after[path] for path in users} == users
  names = {p.name for p in output.iterdir()}
  written = set(evaluate.OUTPUT_FILES) - {"report.html"}  # no human ratings here
  assert names == {"_work-my-notes", "notes.txt", "ratings.csv.bak", LEDGER, *written}


def test_a_user_file_under_an_output_name_is_never_overwritten(tmp_path, corpus, capsys):
  output = tmp_path / "out"
  output.mkdir()
  (output / "leaderboard.md").write_text("# my own leaderboard, by hand\n")
  before = snapshot(tmp_path)
  assert evaluate_into(output, PREDICTIONS, corpus) == 2
  error = capsys.readouterr().err
  assert "leaderboard.md exists and no earlier `autoais evaluate` run recorded it" in error
  assert snapshot(tmp_path) == before


def test_a_rerun_replaces_only_what_the_earlier_run_recorded(tmp_path, corpus):
  output = tmp_path / "out"
  assert evaluate_into(output, PREDICTIONS, corpus) == 0
  first = snapshot(output)
  (output / "later-note.txt").write_text("written after the first run")
  assert evaluate_into(output, EXAMPLES / "predictions" / "*.csv", corpus) == 0
  second = snapshot(output)
  assert second[str(output / "later-note.txt")] == b"written after the first run"
  assert second[str(output / "leaderboard.csv")] != first[str(output / "leaderboard.csv")]
  ledger = json.loads((output / LEDGER).read_text())
  assert ledger["job"] == "evaluate" and sorted(ledger["outputs"]) == sorted(
      evaluate.OUTPUT_FILES)


def test_a_foreign_ledger_is_refused(tmp_path, corpus, capsys):
  output = tmp_path / "out"
  output.mkdir()
  (output / LEDGER).write_text('{"outputs": ["notes.txt"]}')
  (output / "notes.txt").write_text("mine")
  before = snapshot(tmp_path)
  assert evaluate_into(output, PREDICTIONS, corpus) == 2
  assert "was not written by autoais" in capsys.readouterr().err
  assert snapshot(tmp_path) == before


def test_an_output_path_that_is_a_file_is_refused(tmp_path, corpus, capsys):
  output = tmp_path / "results"
  output.write_text("a file, not a directory")
  before = snapshot(tmp_path)
  assert evaluate_into(output, PREDICTIONS, corpus) == 2
  assert "is a file, not a directory" in capsys.readouterr().err
  assert snapshot(tmp_path) == before


def test_build_corpus_never_overwrites_its_inputs(tmp_path, capsys):
  # Passages in a file named like build-corpus's own dead letters, and an output
  # directory that holds them.
  data = tmp_path / "data"
  data.mkdir()
  shutil.copy(EXAMPLES / "corpus" / "wiki_sample.jsonl", data / "dead_letter.jsonl")
  (data / "README.txt").write_text("my corpus notes")
  before = snapshot(tmp_path)
  assert run_job(build_corpus, "--input", data / "*.jsonl", "--output", data,
                 "--num_shards", 2) == 2
  assert "--input" in capsys.readouterr().err
  assert snapshot(tmp_path) == before
  # Under another name too: a directory that holds an input is no output directory.
  (data / "dead_letter.jsonl").rename(data / "passages.jsonl")
  before = snapshot(tmp_path)
  assert run_job(build_corpus, "--input", data / "passages.jsonl", "--output", data,
                 "--num_shards", 2) == 2
  assert f"--input {data / 'passages.jsonl'} lies inside --output {data}" in (
      capsys.readouterr().err)
  assert snapshot(tmp_path) == before


def test_build_corpus_rerun_with_fewer_shards_leaves_no_stale_shard(tmp_path):
  output = tmp_path / "corpus"
  source = EXAMPLES / "corpus" / "*.jsonl"
  assert run_job(build_corpus, "--input", source, "--output", output,
                 "--num_shards", 4) == 0
  assert run_job(build_corpus, "--input", source, "--output", output,
                 "--num_shards", 2) == 0
  shards = sorted(p.name for p in output.glob("passages-*"))
  assert shards == ["passages-00000-of-00002.parquet", "passages-00001-of-00002.parquet"]


def test_an_earlier_runs_outputs_read_as_inputs_are_not_removed(tmp_path, capsys):
  # A corpus of 4 shards, rebuilt into the same directory with 2 shards from its
  # own shards: the new run would remove the old shards (its earlier outputs)
  # before reading them.
  output = tmp_path / "corpus"
  assert run_job(build_corpus, "--input", EXAMPLES / "corpus" / "*.jsonl",
                 "--output", output, "--num_shards", 4) == 0
  before = snapshot(tmp_path)
  assert run_job(build_corpus, "--input", output / "passages-*.parquet",
                 "--output", output, "--num_shards", 2) == 2
  assert ("is passages-00000-of-00004.parquet, an earlier `autoais build-corpus` run's "
          "output that this run removes") in capsys.readouterr().err
  assert snapshot(tmp_path) == before


# ----------------------------------------------------------------------------
# A run that is writing holds the directory (the ledger's `running` entry).


def _set_running(output, **entry):
  ledger = json.loads((output / LEDGER).read_text())
  ledger["running"] = dict({"run_id": "someone-else", "started": "2026-01-01T00:00:00+00:00",
                            "process_start": None}, **entry)
  (output / LEDGER).write_text(json.dumps(ledger))


def _now(offset: float = 0.0) -> str:
  return datetime.datetime.fromtimestamp(
      time.time() + offset, datetime.timezone.utc).isoformat(timespec="seconds")


def test_a_finished_run_leaves_no_running_entry(tmp_path, corpus):
  output = tmp_path / "out"
  assert evaluate_into(output, PREDICTIONS, corpus) == 0
  assert "running" not in json.loads((output / LEDGER).read_text())


def test_a_run_from_another_host_holds_the_directory_until_it_expires(
    tmp_path, corpus, capsys):
  output = tmp_path / "out"
  assert evaluate_into(output, PREDICTIONS, corpus) == 0
  _set_running(output, host="elsewhere.example", pid=4242, last_seen=_now(-60))
  before = snapshot(tmp_path)
  capsys.readouterr()
  assert evaluate_into(output, PREDICTIONS, corpus) == 2
  error = capsys.readouterr().err
  assert "another `autoais evaluate` run is writing here" in error
  assert "host elsewhere.example, pid 4242" in error and "last seen" in error
  assert snapshot(tmp_path) == before
  # Not refreshed for longer than the expiry: a killed run's entry.
  _set_running(output, host="elsewhere.example", pid=4242,
               last_seen=_now(-output_dir.LEASE_EXPIRY_SECONDS - 60))
  assert evaluate_into(output, PREDICTIONS, corpus) == 0
  assert "running" not in json.loads((output / LEDGER).read_text())


def test_on_this_host_a_live_process_holds_the_directory_and_a_dead_one_does_not(
    tmp_path, corpus, capsys):
  output = tmp_path / "out"
  assert evaluate_into(output, PREDICTIONS, corpus) == 0
  host = socket.gethostname()
  # Alive until killed below (it waits for input that never comes), however long
  # the runs in between take.
  sleeper = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
  try:
    start = output_dir._process_start(sleeper.pid)
    # Long silent (no heartbeat): on this host the process decides, not the clock.
    _set_running(output, host=host, pid=sleeper.pid, process_start=start,
                 last_seen=_now(-10 * output_dir.LEASE_EXPIRY_SECONDS))
    before = snapshot(tmp_path)
    capsys.readouterr()
    assert evaluate_into(output, PREDICTIONS, corpus) == 2
    assert f"pid {sleeper.pid}" in capsys.readouterr().err
    assert snapshot(tmp_path) == before
    if start is not None:
      # The same pid, but a process started at another time: the pid was reused.
      _set_running(output, host=host, pid=sleeper.pid, process_start=start + "0",
                   last_seen=_now())
      assert evaluate_into(output, PREDICTIONS, corpus) == 0
  finally:
    sleeper.kill()
    sleeper.wait()
  _set_running(output, host=host, pid=sleeper.pid, process_start=start, last_seen=_now())
  assert evaluate_into(output, PREDICTIONS, corpus) == 0
  assert "running" not in json.loads((output / LEDGER).read_text())


def test_a_held_directory_is_seen_while_its_run_lasts(tmp_path, monkeypatch):
  monkeypatch.setattr(output_dir, "HEARTBEAT_SECONDS", 0.2)
  ledger = tmp_path / "out" / LEDGER
  claimed = output_dir.OutputDir("evaluate", str(tmp_path / "out"), ["ratings.csv"])
  claimed.claim()
  first = json.loads(ledger.read_text())["running"]
  assert first["pid"] == os.getpid() and first["host"] == socket.gethostname()
  with claimed.held():
    # last_seen is in whole seconds: a heartbeat (every 0.2 s) in a later second
    # shows, however late the heartbeat thread runs on a loaded machine.
    deadline = time.monotonic() + 60
    during = first
    while during["last_seen"] == first["last_seen"] and time.monotonic() < deadline:
      time.sleep(0.05)
      during = json.loads(ledger.read_text())["running"]
  assert during["run_id"] == first["run_id"] and during["last_seen"] > first["last_seen"]
  assert "running" not in json.loads(ledger.read_text())
