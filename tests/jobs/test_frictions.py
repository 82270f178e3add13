"""The rough edges a newcomer hit (issue 46, item 3), each held here: a mistyped
flag gets a suggestion, --threshold is refused with string-match, compare names
the flag of a directory that is not there, Beam's noise stays off the console,
a hub id that cannot be resolved says what to do, the leaderboard shows EM and
F1 over answered questions beside the reference script's, and report.html's
rates are percents, as its plots' are.
"""
import json
import os
import subprocess
import sys

import pytest

from autoais.beam_jobs import compare, evaluate
from tests.support.files import write_jsonl
from tests.support.jobs import run_job
from tests.support.paths import PROJECT_ROOT, shared_file

EXAMPLES = PROJECT_ROOT / "examples"


@pytest.mark.parametrize("flag, meant", [("--output-dir", "--output_dir"),
                                         ("--bootstrap", "--bootstrap_samples"),
                                         ("--predictionz", "--predictions")])
def test_a_mistyped_flag_gets_a_suggestion(tmp_path, capsys, flag, meant):
  code = run_job(evaluate, "--predictions", EXAMPLES / "predictions" / "*.csv",
                 "--gold", EXAMPLES / "gold.jsonl", flag, tmp_path / "x")
  assert code == 2
  error = capsys.readouterr().err
  assert f"unknown argument(s): {flag} " in error
  assert f"({flag}: did you mean {meant}?)" in error


def test_a_threshold_is_refused_with_string_match(tmp_path, capsys):
  code = run_job(evaluate, "--predictions", EXAMPLES / "predictions" / "*.csv",
                 "--gold", EXAMPLES / "gold.jsonl", "--threshold", "0.3",
                 "--output_dir", tmp_path / "out")
  assert code == 2 and not (tmp_path / "out").exists()
  assert "--threshold is for a model scorer: string-match's nli_score is 1" in (
      capsys.readouterr().err)


def test_two_prediction_files_of_one_stem_without_system_names_are_refused(
    tmp_path, capsys):
  """runs/a/sys.csv and runs/b/sys.csv would both be system "sys", the second's
  answers rejected as repeats: refused at launch, naming both; with a
  system_name column they are read."""
  for folder in ("a", "b"):
    (tmp_path / folder).mkdir()
    (tmp_path / folder / "sys.csv").write_text(
        "question,answer,passage\nwho painted the mona lisa,Leonardo da Vinci,"
        "Leonardo da Vinci painted it.\n", encoding="utf-8")
  output = tmp_path / "out"
  assert run_job(evaluate, "--predictions", tmp_path / "*" / "sys.csv", "--output_dir",
                 output) == 2
  error = capsys.readouterr().err
  assert "after the same file stem, 'sys'" in error and str(tmp_path / "b" / "sys.csv") in error
  assert not output.exists()
  for folder in ("a", "b"):
    (tmp_path / folder / "sys.csv").write_text(
        "system_name,question,answer,passage\n"
        f"{folder},who painted the mona lisa,Leonardo da Vinci,Leonardo da Vinci "
        "painted it.\n", encoding="utf-8")
  assert run_job(evaluate, "--predictions", tmp_path / "*" / "sys.csv", "--output_dir",
                 output) == 0


def test_compare_names_the_flag_of_a_missing_directory(tmp_path, capsys):
  (tmp_path / "empty").mkdir()
  for baseline, said in ((tmp_path / "gone", "no such directory"),
                         (tmp_path / "empty", "no run.json there")):
    code = run_job(compare, "--baseline", baseline, "--candidate", tmp_path / "empty",
                   "--output_dir", tmp_path / "out")
    assert code == 2
    error = capsys.readouterr().err
    assert f"--baseline {baseline}: {said}" in error and "Errno" not in error


def test_beam_noise_stays_off_the_console(tmp_path):
  """citations printed Beam's type-hint warning 16 times and the state cache's
  INFO line; neither is there now, and the job's own lines are."""
  result = subprocess.run(
      [sys.executable, "-m", "autoais.beam_jobs.cli", "citations", "--input",
       str(EXAMPLES / "citations" / "*.json"), "--output_dir", str(tmp_path / "out"),
       "--bootstrap_samples", "20"], cwd=PROJECT_ROOT, capture_output=True, text=True,
      timeout=300, check=False)
  assert result.returncode == 0, result.stderr[-2000:]
  assert "input type hint will be ignored" not in result.stderr
  assert "statecache" not in result.stderr
  assert "autoais citations finished in" in result.stderr
  assert result.stdout.startswith("Scored by: string-match")


def test_a_hub_id_the_hub_cannot_resolve_says_what_to_do(tmp_path):
  """Offline with an empty cache (the hub unreachable): the message names the
  next step, and the API's error is not buried under the network's
  traceback."""
  env = dict(os.environ, HF_HOME=str(tmp_path / "hf"), HF_ENDPOINT="http://127.0.0.1:9",
             HF_HUB_ETAG_TIMEOUT="5", HF_HUB_DOWNLOAD_TIMEOUT="5")
  env.pop("HF_HUB_OFFLINE", None)
  env.pop("HF_HUB_CACHE", None)
  result = subprocess.run(
      [sys.executable, "-c", "import autoais; autoais.load_scorer('t5', model='org/none')"],
      cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
  assert result.returncode == 1
  last = result.stderr.strip().splitlines()[-1]
  assert last.startswith("autoais.schemas.errors.ModelError: --model org/none: the Hugging "
                         "Face hub cannot be reached"), last
  assert "(`hf download org/none`)" in last and "or name a local directory" in last
  # One traceback: the user's call, then the API's frame.
  assert result.stderr.count("Traceback") == 1
  assert len(result.stderr.splitlines()) < 12, result.stderr


def test_em_over_answered_questions_beside_the_reference_rule(tmp_path):
  """NQ-Open dev: a system answering one question right, with its passage
  inline, gets EM 5/3,610 (4 gold aliases normalise to nothing, as the script
  counts them) and F1 1/3,610; over the question it answered, 100 and 100."""
  gold = shared_file("nq_open/NQ-open.dev.jsonl")
  first = json.loads(gold.read_text(encoding="utf-8").split("\n", 1)[0])
  write_jsonl(tmp_path / "one.jsonl", [{
      "question": first["question"], "answer": first["answer"][0],
      "passage": f"It is {first['answer'][0]}."}])
  assert run_job(evaluate, "--predictions", tmp_path / "one.jsonl", "--gold", gold,
                 "--output_dir", tmp_path / "out", "--bootstrap_samples", 20) == 0
  board = json.loads((tmp_path / "out" / "leaderboard.json").read_text())
  (row,) = board["systems"]
  assert row["em"] == 100 * 5 / 3610 and row["f1"] == pytest.approx(100 / 3610)
  assert row["em"] > row["f1"]  # the anomaly the columns beside it explain
  assert (row["em_answered"], row["f1_answered"]) == (100, 100)
  run = json.loads((tmp_path / "out" / "run.json").read_text())
  assert run["unanswered"]["gold_questions_the_empty_answer_matches"] == 4
  markdown = (tmp_path / "out" / "leaderboard.md").read_text()
  assert ("4 gold question(s) have an answer that normalises to nothing" in markdown
          and "| EM of answered | F1 of answered |" in markdown)
  assert board["unanswered"] == run["unanswered"]["rule"]


def test_report_rates_are_percents(tmp_path):
  assert run_job(evaluate, "--predictions", EXAMPLES / "agreement" / "ratings.csv",
                 "--output_dir", tmp_path / "out", "--bootstrap_samples", 20) == 0
  page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
  assert "<th>human AIS %</th>" in page and "<th>accuracy %</th>" in page
  agreement = json.loads((tmp_path / "out" / "agreement.json").read_text())
  accuracy = agreement["overall"]["accuracy"]
  assert f"<td>{accuracy * 100:.1f}</td>" in page


def test_the_example_outputs_are_ignored_by_git():
  assert "out/" in (PROJECT_ROOT / ".gitignore").read_text().split("\n")
