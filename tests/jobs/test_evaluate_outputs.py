"""`autoais evaluate` on the bundled example, for what a person reads of a run:
the leaderboard's units (rates in percent, no float noise), the lines a run
ends with (its summary table, then where its outputs are), and a run without
--gold (AutoAIS over each system's own questions, EM/F1 not computed, and said
so). Expected figures are counted here from the example's own files.
"""
import contextlib
import csv
import io
import json
import re

import pytest

from autoais.beam_jobs import evaluate
from tests.support.files import read_jsonl
from tests.support.jobs import run_job
from tests.support.paths import EXAMPLES

SYSTEMS = sorted(path.stem for path in (EXAMPLES / "predictions").glob("*.csv"))
# The rate columns of leaderboard.csv, in percent (docs/evaluate.md#units).
PERCENT_COLUMNS = ("coverage", "string_match", "string_match_ci_low", "string_match_ci_high",
                   "string_match_scored", "em", "em_ci_low", "em_ci_high", "f1", "f1_ci_low",
                   "f1_ci_high")
# Float noise: a long run of 9s or 0s then more digits (93.90624999999986).
NOISE = re.compile(r"\.\d*(9{6,}|0{6,})\d+$")
NO_GOLD = "no gold: EM/F1 not computed; string-match over predicted questions"


def _table(path):
  with open(path, newline="", encoding="utf-8") as f:
    return {row["system_name"]: row for row in csv.DictReader(f)}


@pytest.fixture(scope="module")
def runs(example_corpus, tmp_path_factory):
  """The example evaluated with and without --gold: each run's exit code and
  what it printed on stdout (each test checks the code of the run it reads)."""
  root = tmp_path_factory.mktemp("evaluate_outputs")
  common = ("--predictions", EXAMPLES / "predictions" / "*.csv", "--corpus",
            example_corpus)
  printed, codes = {}, {}
  for name, extra in (("gold", ("--gold", EXAMPLES / "gold.jsonl")), ("no_gold", ())):
    with contextlib.redirect_stdout(io.StringIO()) as stdout:
      codes[name] = run_job(evaluate, *common, *extra, "--output_dir", root / name)
    printed[name] = stdout.getvalue()
  return {"root": root, "printed": printed, "codes": codes}


def _answers(system):
  """A system's first answer to each question, as the job keeps them."""
  kept = {}
  with open(EXAMPLES / "predictions" / f"{system}.csv", newline="", encoding="utf-8") as f:
    for row in csv.DictReader(f):
      kept.setdefault(row["question"], row)
  return kept


def _attributable(output):
  """Rows scored Y per system, from ratings.csv."""
  counts = dict.fromkeys(SYSTEMS, 0)
  for row in _table_rows(output / "ratings.csv"):
    counts[row["system_name"]] += row["auto_ais"] == "Y"
  return counts


def _table_rows(path):
  with open(path, newline="", encoding="utf-8") as f:
    return list(csv.DictReader(f))


def test_leaderboard_rates_are_percents_without_float_noise(runs):
  assert runs["codes"]["gold"] == 0
  output = runs["root"] / "gold"
  board = _table(output / "leaderboard.csv")
  n_gold = len(read_jsonl(EXAMPLES / "gold.jsonl"))
  for system, yes in _attributable(output).items():
    assert float(board[system]["string_match"]) == 100 * yes / n_gold, system
    scored = int(board[system]["n_scored"])
    assert float(board[system]["coverage"]) == 100 * scored / n_gold
    assert float(board[system]["string_match_scored"]) == 100 * yes / scored
  # The closed-book system's EM bootstrap bound (1000 resamples, seed 0) was
  # written 93.90624999999986.
  assert board["closed-book-lm"]["em_ci_high"] == "93.90625"
  for system, row in board.items():
    for column in PERCENT_COLUMNS:
      assert 0 <= float(row[column]) <= 100, (system, column)
      assert not NOISE.search(row[column]), (system, column, row[column])
  units = json.loads((output / "leaderboard.json").read_text())["units"]
  assert {column: units[column] for column in PERCENT_COLUMNS} == dict.fromkeys(
      PERCENT_COLUMNS, "percent (0-100)")
  # scores.txt keeps the reference script's units: the figure a fraction,
  # named by the scorer that made it (string-match here, never AutoAIS).
  scores = (output / "scores.txt").read_text()
  yes = _attributable(output)["retrieve-then-read"]
  assert scores.startswith("units: string-match a fraction (0 to 1); SQuAD (em) and "
                           "SQuAD (f1) in percent (0 to 100)")
  assert (f"system_name: retrieve-then-read\nscorer: string-match\n"
          f"string-match: {yes / n_gold}\n") in scores


def test_a_run_ends_with_its_leaderboard_then_its_output_directory(runs):
  assert runs["codes"]["gold"] == 0
  output = runs["root"] / "gold"
  lines = runs["printed"]["gold"].rstrip("\n").split("\n")
  assert lines[-1].startswith(f"autoais evaluate: outputs in {output}: run.json, ")
  for name in ("leaderboard.md", "leaderboard.csv", "ratings.csv", "scores.txt",
               "dead_letter.jsonl"):
    assert name in lines[-1]
  assert "report.html" not in lines[-1]  # not written: no human ratings
  # No spans: string-match finds none (--scorer lettucedetect: test_lettucedetect.py).
  assert "spans.jsonl" not in lines[-1] and not (output / "spans.jsonl").exists()
  table = (output / "leaderboard.md").read_text().rstrip("\n").split("\n")
  assert lines[-2 - len(table):-2] == table and lines[-2] == ""


def test_without_gold_autoais_is_over_each_systems_own_questions(runs):
  assert runs["codes"]["no_gold"] == 0
  output = runs["root"] / "no_gold"
  board = _table(output / "leaderboard.csv")
  yes = _attributable(output)
  assert sorted(board) == SYSTEMS
  for system in SYSTEMS:
    questions = len(_answers(system))
    row = board[system]
    assert int(row["n_predicted"]) == questions
    assert float(row["string_match"]) == 100 * yes[system] / questions, system
    assert float(row["string_match_ci_low"]) <= float(row["string_match"]) <= float(
        row["string_match_ci_high"])
    for column in ("n_gold", "em", "em_ci_low", "em_ci_high", "f1", "f1_ci_low",
                   "f1_ci_high"):
      assert row[column] == "", (system, column)
  # The keyword baseline asks one question that is not in gold: scored here,
  # discarded with gold.
  with_gold = _table(runs["root"] / "gold" / "leaderboard.csv")
  assert int(board["keyword-baseline"]["n_predicted"]) == int(
      with_gold["keyword-baseline"]["n_predicted"]) + 1

  run = json.loads((output / "run.json").read_text())
  assert run["no_gold"].startswith(NO_GOLD) and run["n_gold"] is None
  assert "gold_counts" not in run and run["inputs"]["gold"] is None
  counts = run["counts"]
  assert counts["read"] == counts["scored"] + counts["rejected"] + counts["unmatched"]
  assert "unmatched:question_not_in_gold" not in counts["by_reason"]
  leaderboard = json.loads((output / "leaderboard.json").read_text())
  assert leaderboard["note"].startswith(NO_GOLD) and leaderboard["n_gold"] is None
  markdown = (output / "leaderboard.md").read_text()
  assert markdown.split("\n\n")[1].startswith(
      "No gold: EM/F1 not computed; string-match over predicted questions")
  assert "| not computed | not computed |" in markdown
  ratings = _table_rows(output / "ratings.csv")
  assert ratings and all(row["em"] == row["f1"] == "" for row in ratings)
  scores = (output / "scores.txt").read_text()
  assert "SQuAD" not in scores and scores.count("string-match: ") == len(SYSTEMS)
  assert runs["printed"]["no_gold"].rstrip("\n").split("\n")[-1].startswith(
      f"autoais evaluate: outputs in {output}: ")


def test_a_run_whose_outputs_cannot_be_read_back_still_succeeds(example_corpus, tmp_path,
                                                                monkeypatch, caplog):
  """The closing lines are read back from the output directory; where that
  fails (a store that cannot list it now), the run, complete, still exits 0."""
  from autoais.beam_jobs import running  # pylint: disable=import-outside-toplevel

  def unreadable(job_name, output_dir):
    raise OSError(f"cannot list {output_dir.path}")
  monkeypatch.setattr(running, "print_outputs", unreadable)
  assert run_job(evaluate, "--predictions", EXAMPLES / "predictions" / "*.csv",
                 "--corpus", example_corpus, "--gold", EXAMPLES / "gold.jsonl",
                 "--output_dir", tmp_path / "out", "--bootstrap_samples", 20) == 0
  assert json.loads((tmp_path / "out" / "run.json").read_text())["status"] == "complete"
  assert "could not read back" in caplog.text
