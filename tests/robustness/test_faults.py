"""Transient faults and killed runs leave outputs as a clean run writes them.

* Transient faults: each DoFn with side effects (and the others on the way) fails
  its first two bundle attempts, at the start, part-way through or at the very
  end of a bundle, under a runner that retries failed bundles as Dataflow does
  (tests/support/faults.py). The job finishes, and every output is byte-identical to a
  clean run's (run.json apart from its timings); no scratch or temporary file
  is left.
* Killed runs: a job paused at a chosen point is killed with SIGKILL. No file
  under an output name is partial (each is the clean run's, or absent) and
  run.json is absent; the same command run again ends with the clean run's
  outputs and nothing else.
"""
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import pytest

from autoais.beam_jobs import build_corpus, evaluate
from autoais.beam_jobs.output_dir import LEDGER
from tests.support import faults
from tests.support.faults import ELEMENT, FINISH, START, Fault
from tests.support.jobs import run_job
from tests.support.paths import PROJECT_ROOT

EXAMPLES = PROJECT_ROOT / "examples"
W = "http://en.wikipedia.org/wiki"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
  """The examples, one more system with bad rows (rejected, unmatched,
  duplicate), and a corpus built from the example passages."""
  root = tmp_path_factory.mktemp("fault-inputs")
  predictions = root / "predictions"
  shutil.copytree(EXAMPLES / "predictions", predictions)
  (predictions / "messy.csv").write_bytes((
      "question,answer,attribution\n"
      f"who painted the mona lisa,Leonardo da Vinci,{W}/Mona_Lisa#Mona_Lisa#0\n"
      f'"broken"row,x,{W}/Gold#Gold#0\n'
      f"which planet is closest to the sun,Mercury,{W}/No_such_page#0\n"
      f"who painted the mona lisa,Raphael,{W}/Louvre#Louvre#Collection#2\n"
      f"what is the meaning of life,42,{W}/Gold#Gold#0\n").encode("utf-8"))
  corpus = root / "corpus"
  assert run_job(build_corpus, "--input", EXAMPLES / "corpus" / "*.jsonl",
                 "--output", corpus, "--num_shards", 3) == 0
  return {"root": root, "predictions": predictions / "*.csv", "corpus": corpus,
          "gold": EXAMPLES / "gold.jsonl"}


def evaluate_args(inputs, output):
  return ["--predictions", inputs["predictions"], "--corpus", inputs["corpus"],
          "--gold", inputs["gold"], "--output_dir", output, "--bootstrap_samples", 30]


def corpus_args(output):
  return ["--input", EXAMPLES / "corpus" / "*.jsonl", "--output", output,
          "--num_shards", 3]


# What run.json counts of the corpus reads depends on how the work was split
# (each worker process opens the shards it needs).
_READ_STATISTICS = ("bytes_read", "bytes_read_fraction", "shards_opened",
                    "row_groups_read")


def outputs_of(directory: pathlib.Path, work_split_alike: bool = True) -> dict:
  """{name: bytes} of a run's files; run.json without its timings (and, for runs
  whose work was split differently, without its read statistics), the ledger
  without the name of the run's scratch directory."""
  files = {}
  for path in sorted(directory.iterdir()):
    data = path.read_bytes() if path.is_file() else b"<dir>"
    if path.name in ("run.json", "corpus.json", LEDGER):
      manifest = json.loads(data)
      manifest.pop("timings", None)
      manifest.pop("scratch", None)
      if not work_split_alike and "join" in manifest:
        for name in _READ_STATISTICS:
          manifest["join"].pop(name, None)
      data = json.dumps(manifest, sort_keys=True, indent=1).encode()
    files[path.name] = data
  return files


@pytest.fixture(scope="module")
def clean(inputs):
  output = inputs["root"] / "clean"
  assert run_job(evaluate, *evaluate_args(inputs, output)) == 0
  corpus = inputs["root"] / "clean-corpus"
  assert run_job(build_corpus, *corpus_args(corpus)) == 0
  files = outputs_of(output)
  assert json.loads(files["run.json"])["counts"]["rejected"] > 0
  return {"evaluate": files, "build-corpus": outputs_of(corpus), "directory": output}


EVALUATE_FAULTS = [
    ("ParseRecords", Fault(ELEMENT, after=3)),
    ("MatchGoldQuestions", Fault(START)),
    ("LookUpShardRowGroups", Fault(FINISH)),
    ("MatchAnswerStrings", Fault(ELEMENT, after=5)),
    # The ratings table's skeleton (transforms/rows): its spill, then its merge.
    ("WriteRatings/SpillRuns", Fault(FINISH)),
    ("WriteRatings/MergeRuns", Fault(ELEMENT, after=2)),
    ("WriteRatings/MergeRuns", Fault(FINISH)),
    ("ComputeLeaderboardRows", Fault(ELEMENT, after=1)),
    ("WriteLeaderboard", Fault(FINISH)),
    ("SpillDeadLetterRuns", Fault(FINISH)),
    ("MergeDeadLetterRuns", Fault(FINISH)),
    ("WriteManifestFile", Fault(FINISH)),
]


@pytest.mark.parametrize("label, fault", EVALUATE_FAULTS,
                         ids=[f"{label}-{fault.when}" for label, fault in EVALUATE_FAULTS])
def test_evaluate_survives_transient_faults(inputs, clean, tmp_path, label, fault):
  output = tmp_path / "out"
  retries_before = faults.RetryingFnApiRunner.retries
  wrapped = faults.run_job("evaluate", evaluate_args(inputs, output), {label: fault},
                           str(tmp_path))
  assert wrapped
  assert faults.RetryingFnApiRunner.retries - retries_before >= fault.attempts
  assert outputs_of(output) == clean["evaluate"]


def test_evaluate_survives_faults_everywhere_at_once_in_multi_process_mode(
    inputs, clean, tmp_path):
  output = tmp_path / "out"
  plan = {label: fault for label, fault in EVALUATE_FAULTS}
  retries_before = faults.RetryingFnApiRunner.retries
  faults.run_job("evaluate", evaluate_args(inputs, output) + [
      "--direct_running_mode=multi_processing", "--direct_num_workers=2"],
                 plan, str(tmp_path))
  # DoFns fused into one stage fail and retry together: fewer retries than faults.
  assert faults.RetryingFnApiRunner.retries - retries_before >= 2
  assert (outputs_of(output, work_split_alike=False) ==
          outputs_of(clean["directory"], work_split_alike=False))


@pytest.mark.parametrize("label, fault", [("WriteShards", Fault(ELEMENT, after=1)),
                                          ("WriteShards", Fault(FINISH)),
                                          ("SpillShardRuns", Fault(FINISH))])
def test_build_corpus_survives_transient_faults(clean, tmp_path, label, fault):
  output = tmp_path / "corpus"
  faults.run_job("build-corpus", corpus_args(output), {label: fault}, str(tmp_path))
  assert outputs_of(output) == clean["build-corpus"]


def test_a_fault_that_never_clears_fails_the_job_without_manifest(inputs, tmp_path):
  output = tmp_path / "out"
  with pytest.raises(Exception, match="injected fault"):
    faults.run_job("evaluate", evaluate_args(inputs, output),
                   {"WriteLeaderboard": Fault(FINISH, attempts=faults.MAX_ATTEMPTS)},
                   str(tmp_path))
  assert not (output / "run.json").exists()


# ----------------------------------------------------------------------------
# Killed half-way, then run again.

KILL_POINTS = [
    ("evaluate", "ParseRecords:element:2"),
    ("evaluate", "WriteRatings/MergeRuns:element:2"),
    ("evaluate", "MergeDeadLetterRuns:start:0"),
    ("evaluate", "WriteManifestFile:start:0"),
    ("build-corpus", "WriteShards:element:1"),
]


def _start_paused(job, args, pause, tmp_path) -> subprocess.Popen:
  """`autoais JOB args` in a child process, returned once it sleeps at `pause`."""
  marker = tmp_path / "paused"
  command = [sys.executable, "-m", "tests.support.faults", "--pause", pause,
             "--pause_file", str(marker), "--state_dir", str(tmp_path), job,
             *map(str, args)]
  process = subprocess.Popen(command, cwd=PROJECT_ROOT, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE,
                             env=dict(os.environ, PYTHONPATH=str(PROJECT_ROOT)))
  deadline = time.monotonic() + 240
  while not marker.exists():
    if process.poll() is not None:
      raise AssertionError(f"the job ended before its pause: "
                           f"{process.stderr.read().decode()[-3000:]}")
    if time.monotonic() > deadline:
      process.kill()
      raise AssertionError("the job did not reach its pause")
    time.sleep(0.05)
  return process


def _kill(process: subprocess.Popen) -> None:
  os.kill(process.pid, signal.SIGKILL)
  process.wait(timeout=30)
  process.stderr.close()
  assert process.returncode == -signal.SIGKILL


def _pause_and_kill(job, args, pause, tmp_path):
  _kill(_start_paused(job, args, pause, tmp_path))


@pytest.mark.parametrize("job, pause", KILL_POINTS, ids=[p for _, p in KILL_POINTS])
def test_a_killed_run_leaves_nothing_that_looks_complete_and_a_rerun_finishes(
    inputs, clean, tmp_path, job, pause):
  output = tmp_path / "out"
  args = (evaluate_args(inputs, output) if job == "evaluate" else corpus_args(output))
  expected = clean[job]
  manifest = "run.json" if job == "evaluate" else "corpus.json"
  _pause_and_kill(job, args, pause, tmp_path)

  left = {path.name: path for path in output.iterdir()}
  assert manifest not in left and LEDGER in left
  for name, path in left.items():
    if name in expected and name != LEDGER:
      assert path.read_bytes() == expected[name], f"{name} is partial"
    else:
      # Scratch directories and temporary files: named so that nobody takes
      # them for outputs, and recorded in the ledger for the rerun to remove.
      assert name == LEDGER or name.startswith("_work-") or ".tmp-" in name, name

  # The rerun in this process: what it must do (remove what the ledger
  # records, write every output) does not depend on a fresh interpreter, and a
  # second child process cost each case its imports again.
  assert run_job(evaluate if job == "evaluate" else build_corpus, *args) == 0
  assert outputs_of(output) == expected


def test_a_second_run_into_the_directory_of_a_running_one_is_refused(
    inputs, clean, tmp_path, capsys):
  """The first run is writing its ratings; the second, same arguments, exits 2
  without touching a file; once the first is killed, a run cleans up after it."""
  output = tmp_path / "out"
  args = evaluate_args(inputs, output)
  first = _start_paused("evaluate", args, "WriteRatings/MergeRuns:element:2", tmp_path)
  try:
    before = {path: path.read_bytes() for path in output.rglob("*") if path.is_file()}
    capsys.readouterr()
    assert run_job(evaluate, *args) == 2
    error = capsys.readouterr().err
    assert "another `autoais evaluate` run is writing here" in error, error
    assert f"pid {first.pid}" in error
    assert {path: path.read_bytes() for path in output.rglob("*")
            if path.is_file()} == before
  finally:
    _kill(first)
  assert run_job(evaluate, *args) == 0
  assert outputs_of(output) == clean["evaluate"]
