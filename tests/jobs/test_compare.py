"""`autoais compare` on two real-data runs: the NQ-Open oracle leaderboard, then
the same leaderboard with one system's answers replaced on a known set of
questions. The flipped rows are exactly those; every change, interval and
McNemar p-value equals an independent computation (numpy's bootstrap with the
same seed and draws, the exact binomial from math.comb); refusals exit 2;
--fail_on_regression exits 3. Then two claims runs on ExpertQA's validation
files, the candidate's evidence of a known set of attributable claims replaced:
the same checks at the level of claims, with answers as the bootstrap unit.
Then two agreement runs of BEGIN's dev set by two scorers, per group of items;
and two citations runs of ALCE items over NQ-Open oracle passages, the
candidate citing a distractor in a known set of supported sentences:
citation recall and precision per answer from the job's own item table."""
import csv
import json
import math
import pathlib
import shutil

import numpy as np
import pytest

from autoais.beam_jobs import agreement, citations, claims, compare, evaluate
from autoais.transforms.compare.steps import QuestionPair, system_change
from tests.support.citations import SYSTEMS as CITING_SYSTEMS, alce_items, write_alce
from tests.support.nq import nq_oracle_records
from tests.support.paths import EXAMPLES, shared_file
from tests.support.scorers import HashScorer
from tests.support.jobs import run_job

CHANGED_SYSTEM = "right-answer-right-passage"
CHANGED = 40  # questions whose answer the candidate replaces
SEED, SAMPLES = 7, 400


def _read_csv(path):
  with open(path, newline="", encoding="utf-8") as f:
    return list(csv.DictReader(f))


def _ratings(directory):
  return {(row["system_name"], row["question"]): row
          for row in _read_csv(directory / "ratings.csv")}


@pytest.fixture(scope="module")
def runs(nq_leaderboard_inputs, tmp_path_factory):
  inputs = nq_leaderboard_inputs
  root = tmp_path_factory.mktemp("compare")
  common = ["--corpus", inputs["corpus"], "--gold", inputs["gold_path"],
            "--bootstrap_samples", 100]
  assert run_job(evaluate, "--predictions", inputs["predictions"], "--output_dir",
                 root / "baseline", *common) == 0
  baseline = _ratings(root / "baseline")
  # The candidate: one system's answer replaced by one no passage holds, on the
  # first CHANGED questions (in file order) that the baseline rated Y.
  source = inputs["root"] / "predictions"
  (root / "predictions").mkdir()
  changed = set()
  for path in sorted(source.glob("*.csv")):
    rows = _read_csv(path)
    if path.stem == CHANGED_SYSTEM:
      for row in rows:
        key = (CHANGED_SYSTEM, row["question"])
        if len(changed) < CHANGED and baseline.get(key, {}).get("auto_ais") == "Y":
          row["answer"] = "zqxj never stated"
          changed.add(row["question"])
    with open(root / "predictions" / path.name, "w", newline="",
              encoding="utf-8") as f:
      writer = csv.DictWriter(f, fieldnames=list(rows[0]))
      writer.writeheader()
      writer.writerows(rows)
  assert len(changed) == CHANGED
  assert run_job(evaluate, "--predictions", root / "predictions" / "*.csv",
                 "--output_dir", root / "candidate", *common) == 0
  assert run_job(compare, "--baseline", root / "baseline", "--candidate",
                 root / "candidate", "--output_dir", root / "compare", "--seed", SEED,
                 "--bootstrap_samples", SAMPLES) == 0
  return {"root": root, "changed": changed, "out": root / "compare"}


def _systems(out):
  return {row["system_name"]: row
          for row in json.loads((out / "compare.json").read_text(encoding="utf-8"))[
              "systems"]}


def _bootstrap_interval(differences, samples, seed):
  """Percentile interval of the mean, resampling questions with replacement:
  numpy's default_rng(seed), indexes drawn 50 resamples at a time."""
  rng = np.random.default_rng(seed)
  n = len(differences)
  means = []
  for start in range(0, samples, 50):
    draws = rng.integers(0, n, size=(min(50, samples - start), n), dtype=np.int64)
    means.extend(differences[draws].mean(axis=1))
  return np.percentile(np.array(means), [2.5, 97.5])


def _exact_mcnemar(up, down):
  n = up + down
  if n == 0:
    return 1.0
  tail = sum(math.comb(n, k) for k in range(min(up, down) + 1)) / 2 ** n
  return min(1.0, 2 * tail)


def test_the_flipped_rows_are_exactly_the_changed_answers(runs):
  flips = _read_csv(runs["out"] / "compare.csv")
  assert {(row["system_name"], row["question"]) for row in flips} == {
      (CHANGED_SYSTEM, question) for question in runs["changed"]}
  for row in flips:
    assert row["baseline_auto_ais"] == "Y" and row["candidate_auto_ais"] == "N"
    assert row["candidate_answer"] == "zqxj never stated" != row["baseline_answer"]
    assert row["baseline_passage"] and row["baseline_passage"] == row["candidate_passage"]
  changes = [float(row["score_change"]) for row in flips]
  assert changes == sorted(changes)  # most lowered score first


def test_gold_digest_is_the_gold_content_in_any_order(runs, tmp_path):
  """Both runs read the same gold: the same digest, which compare.json says it
  checked; the digest is the questions with their answers, not the file's
  bytes or order."""
  from autoais.schemas import GoldAnswer
  from autoais.transforms.stats.metrics import GoldIndex
  digests = {json.loads((runs["root"] / run / "run.json").read_text(
      encoding="utf-8"))["gold_digest"] for run in ("baseline", "candidate")}
  assert len(digests) == 1 and len(digests.pop()) == 32
  document = json.loads((runs["out"] / "compare.json").read_text(encoding="utf-8"))
  assert document["gold_compared_by"] == "content (gold_digest)"
  answers = [GoldAnswer("q one?", ["a"], 0), GoldAnswer("q two?", ["b", "c"], 1)]
  swapped = [GoldAnswer("q two?", ["b", "c"], 0), GoldAnswer("q one?", ["a"], 1)]
  changed = [GoldAnswer("q one?", ["a"], 0), GoldAnswer("q two?", ["b"], 1)]
  assert GoldIndex(answers).digest == GoldIndex(swapped).digest
  assert GoldIndex(answers).digest != GoldIndex(changed).digest


def test_changes_intervals_and_mcnemar_equal_an_independent_computation(runs):
  """EM and F1 over the questions both runs rated; AutoAIS over every gold
  question (those no run rated are N in both, after the rated ones), so that
  its change is the difference of the leaderboards' figures."""
  root = runs["root"]
  baseline, candidate = _ratings(root / "baseline"), _ratings(root / "candidate")
  n_gold = json.loads((root / "baseline" / "run.json").read_text(encoding="utf-8"))[
      "n_gold"]
  systems = _systems(runs["out"])
  assert set(systems) == {system for system, _ in baseline}
  for system, row in systems.items():
    questions = sorted(q for s, q in baseline if s == system and (s, q) in candidate)
    assert row["status"] == "both" and row["n_paired"] == len(questions) > 0
    assert n_gold > len(questions)
    for field, name in (("auto_ais", "string_match"), ("em", "em"), ("f1", "f1")):
      def value(ratings, question, field=field):
        cell = ratings[(system, question)][field]
        return float(cell == "Y") if field == "auto_ais" else float(cell)
      differences = 100.0 * np.array([value(candidate, q) - value(baseline, q)
                                      for q in questions])
      if field == "auto_ais":
        differences = np.concatenate([differences, np.zeros(n_gold - len(questions))])
        assert row[f"{name}_change"] == pytest.approx(
            row[f"leaderboard_{name}_candidate"] - row[f"leaderboard_{name}_baseline"],
            abs=1e-9)
      low, high = _bootstrap_interval(differences, SAMPLES, SEED)
      assert row[f"{name}_change"] == pytest.approx(differences.mean(), abs=1e-9)
      assert row[f"{name}_change_low"] == pytest.approx(low, abs=1e-9)
      assert row[f"{name}_change_high"] == pytest.approx(high, abs=1e-9)
    up = sum(baseline[(system, q)]["auto_ais"] == "N" and
             candidate[(system, q)]["auto_ais"] == "Y" for q in questions)
    down = sum(baseline[(system, q)]["auto_ais"] == "Y" and
               candidate[(system, q)]["auto_ais"] == "N" for q in questions)
    assert (row["flipped_to_y"], row["flipped_to_n"]) == (up, down)
    assert row["mcnemar_p_value"] == pytest.approx(_exact_mcnemar(up, down), rel=1e-9)
  changed = systems[CHANGED_SYSTEM]
  assert changed["flipped_to_n"] == CHANGED and changed["string_match_change_high"] < 0
  assert changed["string_match_change"] == pytest.approx(-100.0 * CHANGED / n_gold)
  assert changed["mcnemar_p_value"] < 1e-9
  assert all(row["string_match_change"] == 0 for name, row in systems.items()
             if name != CHANGED_SYSTEM)
  run = json.loads((runs["out"] / "run.json").read_text(encoding="utf-8"))
  assert run["status"] == "complete" and run["flipped_rows"] == CHANGED
  assert run["regressions"] == []  # no --fail_on_regression: none is flagged


def test_fail_on_regression_exits_3_past_the_bar_and_0_below_it(runs, tmp_path, capsys):
  root = runs["root"]
  drop = -_systems(runs["out"])[CHANGED_SYSTEM]["string_match_change"]
  args = ["--baseline", root / "baseline", "--candidate", root / "candidate"]
  capsys.readouterr()
  assert run_job(compare, *args, "--output_dir", tmp_path / "fail",
                 "--fail_on_regression", round(drop / 2, 3)) == 3
  run = json.loads((tmp_path / "fail" / "run.json").read_text(encoding="utf-8"))
  assert run["status"] == "regression" and run["regressions"] == [CHANGED_SYSTEM]
  # The console names the figure that fell: string-match, never AutoAIS (it
  # said "AutoAIS fell" for two string-match runs).
  assert run["regression_measure"] == "string-match"
  error = capsys.readouterr().err
  assert (f"the outputs are written, and string-match fell by more than "
          f"{round(drop / 2, 3)} points") in error and "AutoAIS" not in error
  assert (tmp_path / "fail" / "compare.csv").exists()
  assert run_job(compare, *args, "--output_dir", tmp_path / "pass",
                 "--fail_on_regression", round(drop * 2, 3)) == 0


def test_a_system_whose_rows_go_missing_falls_as_its_leaderboard_does(example_corpus,
                                                                      tmp_path, capsys):
  """Tonight retrieve-then-read drops four answers the baseline rated Y and
  points a fifth at a passage the corpus lacks (dead-lettered, not rated): its
  leaderboard falls by 5 of 16 questions, and so does compare's AutoAIS (it
  was unchanged over the questions both runs rated), with five Y-to-N flips
  whose tonight side is empty; --fail_on_regression 5 fails the night."""
  common = ["--corpus", example_corpus, "--gold", EXAMPLES / "gold.jsonl"]
  assert run_job(evaluate, "--predictions", EXAMPLES / "predictions" / "*.csv",
                 "--output_dir", tmp_path / "last", *common) == 0
  rated_y = [row["question"] for row in _read_csv(tmp_path / "last" / "ratings.csv")
             if row["system_name"] == "retrieve-then-read" and row["auto_ais"] == "Y"]
  assert len(rated_y) >= 5
  (tmp_path / "tonight").mkdir()
  for path in sorted((EXAMPLES / "predictions").glob("*.csv")):
    rows = _read_csv(path)
    if path.stem == "retrieve-then-read":
      rows = [row for row in rows if row["question"] not in rated_y[:4]]
      for row in rows:
        if row["question"] == rated_y[4]:
          row["attribution"] = "http://en.wikipedia.org/wiki/Nowhere#Nowhere#0"
    with open(tmp_path / "tonight" / path.name, "w", newline="", encoding="utf-8") as f:
      writer = csv.DictWriter(f, fieldnames=list(rows[0]))
      writer.writeheader()
      writer.writerows(rows)
  assert run_job(evaluate, "--predictions", tmp_path / "tonight" / "*.csv",
                 "--output_dir", tmp_path / "tonight-run", *common) == 0
  capsys.readouterr()
  assert run_job(compare, "--baseline", tmp_path / "last", "--candidate",
                 tmp_path / "tonight-run", "--output_dir", tmp_path / "out",
                 "--fail_on_regression", 5) == 3
  row = _systems(tmp_path / "out")["retrieve-then-read"]
  assert row["string_match_change"] == pytest.approx(-100.0 * 5 / 16)
  assert row["string_match_change"] == pytest.approx(
      row["leaderboard_string_match_candidate"] - row["leaderboard_string_match_baseline"])
  assert row["string_match_change_high"] < 0 and row["regression"]
  assert row["flipped_to_n"] == 5 and row["n_paired"] == 16 - 5
  assert row["em_change"] == 0.0  # over the questions both runs rated
  flips = [flip for flip in _read_csv(tmp_path / "out" / "compare.csv")
           if flip["system_name"] == "retrieve-then-read"]
  assert sorted(flip["question"] for flip in flips) == sorted(rated_y[:5])
  assert all(flip["candidate_answer"] == "" and flip["baseline_answer"]
             and (flip["baseline_auto_ais"], flip["candidate_auto_ais"]) == ("Y", "N")
             for flip in flips)
  assert "string-match over every gold question, as the leaderboards count it" in (
      tmp_path / "out" / "compare.md").read_text(encoding="utf-8")
  others = {name: system for name, system in _systems(tmp_path / "out").items()
            if name != "retrieve-then-read"}
  assert all(system["string_match_change"] == 0 and not system["regression"]
             for system in others.values())


def _altered_copy(source, target, change):
  shutil.copytree(source, target)
  (target / "_autoais_outputs.json").unlink()
  run = json.loads((target / "run.json").read_text(encoding="utf-8"))
  change(run)
  (target / "run.json").write_text(json.dumps(run), encoding="utf-8")
  return target


def test_runs_scored_or_graded_differently_are_refused(runs, tmp_path, capsys):
  root = runs["root"]

  def threshold(run):
    run["scorer"]["threshold"] = 0.7

  def gold(run):
    run["n_gold"] += 1

  other_scorer = _altered_copy(root / "candidate", tmp_path / "scorer", threshold)
  other_gold = _altered_copy(root / "candidate", tmp_path / "gold", gold)
  args = ["--baseline", root / "baseline", "--output_dir"]
  assert run_job(compare, *args, tmp_path / "a", "--candidate", other_scorer) == 2
  assert "threshold" in capsys.readouterr().err
  assert not (tmp_path / "a").exists()
  assert run_job(compare, *args, tmp_path / "b", "--candidate", other_gold) == 2
  assert "different gold answers" in capsys.readouterr().err

  def gold_content(run):
    run["gold_digest"] = "0" * 32
  other_content = _altered_copy(root / "candidate", tmp_path / "content", gold_content)
  assert run_job(compare, *args, tmp_path / "b2", "--candidate", other_content) == 2
  assert "gold content (gold_digest)" in capsys.readouterr().err
  assert run_job(compare, *args, tmp_path / "c", "--candidate", other_scorer,
                 "--allow_changed_scorer", "true") == 0
  document = json.loads((tmp_path / "c" / "compare.json").read_text(encoding="utf-8"))
  assert document["scorer_changed"] == ["threshold: 0.5 -> 0.7"]
  for name in ("compare.md", "report.html"):
    assert "the change of model is the subject" in (tmp_path / "c" / name).read_text(
        encoding="utf-8")
  # Not an evaluate run.
  assert run_job(compare, *args, tmp_path / "d", "--candidate", runs["out"]) == 2
  assert "compare reads runs of evaluate or claims" in capsys.readouterr().err


def test_runs_whose_score_identities_differ_are_refused(tiny_t5, example_corpus, tmp_path,
                                                        capsys):
  """Two runs of the tiny T5 that differ only in --max_input_tokens (other
  premise windows, other scores) differ in none of SCORER_FIELDS: they are
  told apart by their score identity (what names a run's scores, as the score
  cache names them), which run.json records with or without a cache. A run
  recorded before it was (no score_identity) is compared by the fields alone."""
  common = ["--predictions", EXAMPLES / "predictions" / "*.csv", "--corpus",
            example_corpus, "--gold", EXAMPLES / "gold.jsonl", "--scorer", "t5",
            "--model", tiny_t5, "--bootstrap_samples", 20]
  assert run_job(evaluate, *common, "--output_dir", tmp_path / "whole") == 0
  assert run_job(evaluate, *common, "--max_input_tokens", 32,
                 "--output_dir", tmp_path / "windowed") == 0
  windows = {name: {row["n_windows"] for row in _read_csv(tmp_path / name / "ratings.csv")}
             for name in ("whole", "windowed")}
  assert windows["whole"] == {"1"} and windows["windowed"] != {"1"}
  identity = json.loads((tmp_path / "whole" / "run.json").read_text())["scorer"][
      "score_identity"]
  assert identity["scorer"] == "t5" and len(identity["weights_sha256"]) == 64
  args = ["--baseline", tmp_path / "whole", "--candidate"]
  assert run_job(compare, *args, tmp_path / "windowed", "--output_dir",
                 tmp_path / "refused") == 2
  difference = f"score_identity.max_input_tokens: {identity['max_input_tokens']} -> 32"
  assert difference in capsys.readouterr().err
  assert not (tmp_path / "refused").exists()
  assert run_job(compare, *args, tmp_path / "windowed", "--output_dir",
                 tmp_path / "allowed", "--allow_changed_scorer", "true") == 0
  document = json.loads((tmp_path / "allowed" / "compare.json").read_text())
  assert document["scorer_changed"] == [difference]
  same = _altered_copy(tmp_path / "whole", tmp_path / "again", lambda run: None)
  assert run_job(compare, *args, same, "--output_dir", tmp_path / "same") == 0

  def recorded_before(run):
    del run["scorer"]["score_identity"]
  older = _altered_copy(tmp_path / "windowed", tmp_path / "older", recorded_before)
  assert run_job(compare, *args, older, "--output_dir", tmp_path / "older_compare") == 0


CLAIMS_CHANGED = 25  # attributable claims whose evidence the candidate removes


@pytest.fixture(scope="module")
def claims_runs(tmp_path_factory):
  """Both runs with tests/support/scorers.py's HashScorer, whose decisions
  are far from all N (string-match finds few claims in their evidence); a
  claim without evidence is N whatever the scorer."""
  with pytest.MonkeyPatch.context() as patch:
    patch.setattr(claims, "scorer_from_options", lambda *_: HashScorer())
    return _claims_runs(tmp_path_factory.mktemp("compare_claims"))


def _claims_runs(root):
  sources = [shared_file(f"expertqa/{name}_val.jsonl") for name in ("domain", "rand")]
  common = ["--bootstrap_samples", 100]
  assert run_job(claims, "--input", ",".join(map(str, sources)), "--output_dir",
                 root / "baseline", *common) == 0
  rows = _read_csv(root / "baseline" / "claims_rows.csv")
  # The first CLAIMS_CHANGED attributable claims of the system with the most of
  # them, in file order.
  yes = [row for row in rows if row["auto_ais"] == "Y"]
  system = max(sorted({row["system_name"] for row in yes}),
               key=lambda name: sum(row["system_name"] == name for row in yes))
  chosen = [row for row in yes if row["system_name"] == system][:CLAIMS_CHANGED]
  targets = {(pathlib.Path(row["source_file"]).name, int(row["source_line"]),
              int(row["claim_index"])) for row in chosen}
  assert len(targets) == CLAIMS_CHANGED
  (root / "inputs").mkdir()
  for source in sources:
    lines = source.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
      record = json.loads(line)
      answer = record["answers"].get(system)
      for index, claim in enumerate((answer or {}).get("claims") or []):
        if (source.name, number, index) in targets:
          claim["evidence"] = []
      lines[number - 1] = json.dumps(record, ensure_ascii=False)
    (root / "inputs" / source.name).write_text("\n".join(lines) + "\n",
                                                encoding="utf-8")
  assert run_job(claims, "--input", ",".join(
      str(root / "inputs" / source.name) for source in sources), "--output_dir",
                 root / "candidate", *common) == 0
  assert run_job(compare, "--baseline", root / "baseline", "--candidate",
                 root / "candidate", "--output_dir", root / "compare", "--seed", SEED,
                 "--bootstrap_samples", SAMPLES) == 0
  return {"root": root, "system": system,
          "changed": {(row["question"], row["claim"]) for row in chosen},
          "out": root / "compare"}


def _claims_by_answer(directory):
  answers = {}
  for row in _read_csv(directory / "claims_rows.csv"):
    answers.setdefault((row["system_name"], row["question"]), []).append(row)
  return answers


def test_claims_flipped_rows_are_exactly_the_claims_whose_evidence_changed(claims_runs):
  flips = _read_csv(claims_runs["out"] / "compare.csv")
  assert {(row["system_name"], row["question"], row["baseline_answer"])
          for row in flips} == {(claims_runs["system"], question, claim)
                                for question, claim in claims_runs["changed"]}
  for row in flips:
    assert (row["baseline_auto_ais"], row["candidate_auto_ais"]) == ("Y", "N")
    assert row["candidate_answer"] == row["baseline_answer"]
    assert row["baseline_passage"] and row["candidate_passage"] == ""
    assert row["baseline_attribution"] == row["candidate_attribution"] == ""


def test_claims_changes_equal_an_independent_computation(claims_runs):
  root = claims_runs["root"]
  baseline = _claims_by_answer(root / "baseline")
  candidate = _claims_by_answer(root / "candidate")
  summary = {row["system_name"]: row for row in json.loads(
      (root / "baseline" / "claims.json").read_text(encoding="utf-8"))["systems"]}
  systems = _systems(claims_runs["out"])
  assert set(systems) == set(summary)

  def share(rows):
    return np.mean([row["auto_ais"] == "Y" for row in rows])
  for system, row in systems.items():
    questions = sorted(q for s, q in baseline if s == system)
    assert row["status"] == "both" and row["n_paired"] == len(questions) > 0
    # Every answer is paired: the baseline's AutoAIS is claims' macro AutoAIS.
    assert row["autoais_baseline"] == pytest.approx(summary[system]["macro_autoais"],
                                                    abs=1e-9)
    differences = 100.0 * np.array([share(candidate[(system, q)])
                                    - share(baseline[(system, q)]) for q in questions])
    low, high = _bootstrap_interval(differences, SAMPLES, SEED)
    assert row["autoais_change"] == pytest.approx(differences.mean(), abs=1e-9)
    assert (row["autoais_change_low"], row["autoais_change_high"]) == pytest.approx(
        (low, high), abs=1e-9)
    assert row["em_change"] is None and row["f1_change"] is None
    down = sum(b["auto_ais"] == "Y" and c["auto_ais"] == "N"
               for q in questions
               for b, c in zip(baseline[(system, q)], candidate[(system, q)]))
    up = sum(b["auto_ais"] == "N" and c["auto_ais"] == "Y"
             for q in questions
             for b, c in zip(baseline[(system, q)], candidate[(system, q)]))
    assert (row["flipped_to_y"], row["flipped_to_n"]) == (up, down)
    assert row["mcnemar_p_value"] == pytest.approx(_exact_mcnemar(up, down), rel=1e-9)
  changed = systems[claims_runs["system"]]
  assert changed["flipped_to_n"] == CLAIMS_CHANGED and changed["autoais_change"] < 0
  assert changed["autoais_change_high"] < 0
  assert all(row["autoais_change"] == 0 and row["flipped_to_n"] == 0
             for name, row in systems.items() if name != claims_runs["system"])
  document = json.loads((claims_runs["out"] / "compare.json").read_text(encoding="utf-8"))
  assert document["job"] == "claims"
  assert "macro AutoAIS" in (claims_runs["out"] / "report.html").read_text(
      encoding="utf-8")


def test_runs_of_two_jobs_or_two_evidence_modes_are_refused(runs, claims_runs, tmp_path,
                                                            capsys):
  assert run_job(compare, "--baseline", runs["root"] / "baseline", "--candidate",
                 claims_runs["root"] / "candidate", "--output_dir", tmp_path / "a") == 2
  assert "two runs of the same job" in capsys.readouterr().err

  def max_mode(run):
    run["inputs"]["evidence_mode"] = "max"
  other_mode = _altered_copy(claims_runs["root"] / "candidate", tmp_path / "mode",
                             max_mode)
  assert run_job(compare, "--baseline", claims_runs["root"] / "baseline",
                 "--candidate", other_mode, "--output_dir", tmp_path / "b") == 2
  assert "--evidence_mode 'concat' -> 'max'" in capsys.readouterr().err
  assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


BEGIN_FILES = ("begin/begin_dev_wow.tsv", "begin/begin_dev_cmu.tsv",
               "begin/begin_dev_tc.tsv")


@pytest.fixture(scope="module")
def agreement_runs(tmp_path_factory):
  """BEGIN's dev set rated by string-match (baseline) and by HashScorer
  (candidate): a change of scorer, the subject of comparing two agreement runs."""
  root = tmp_path_factory.mktemp("compare_agreement")
  inputs = ",".join(str(shared_file(name)) for name in BEGIN_FILES)
  assert run_job(agreement, "--input", inputs, "--format", "begin", "--output_dir",
                 root / "baseline") == 0
  with pytest.MonkeyPatch.context() as patch:
    patch.setattr(agreement, "scorer_from_options", lambda *_: HashScorer())
    assert run_job(agreement, "--input", inputs, "--format", "begin", "--output_dir",
                   root / "candidate") == 0
  assert run_job(compare, "--baseline", root / "baseline", "--candidate",
                 root / "candidate", "--output_dir", root / "compare", "--seed", SEED,
                 "--bootstrap_samples", SAMPLES, "--allow_changed_scorer", "true",
                 "--fail_on_regression", 1) in (0, 3)
  return root


def _agreement_rows(directory):
  return {row["item_id"]: row for row in _read_csv(directory / "agreement_rows.csv")}


def test_agreement_changes_per_group_equal_an_independent_computation(agreement_runs):
  root = agreement_runs
  baseline = _agreement_rows(root / "baseline")
  candidate = _agreement_rows(root / "candidate")
  assert set(baseline) == set(candidate)
  document = json.loads((root / "compare" / "compare.json").read_text(encoding="utf-8"))
  assert document["job"] == "agreement"
  assert document["regression_on"] == "balanced_accuracy"
  systems = {row["system_name"]: row for row in document["systems"]}
  groups = {"all items": sorted(baseline)}
  for item, row in baseline.items():
    groups.setdefault(f"data_source={row['group']}", []).append(item)
    groups.setdefault(f"model_name={row['secondary_group']}", []).append(item)
  assert set(systems) == set(groups) and len(groups) == 1 + 3 + 4
  summary = json.loads((root / "baseline" / "agreement.json").read_text(encoding="utf-8"))
  assert systems["all items"]["leaderboard_attribution_baseline"] == pytest.approx(
      100 * summary["overall"]["predicted_ais"], abs=1e-9)
  regressions = []
  for name, items in groups.items():
    row = systems[name]
    items = sorted(items)
    assert row["n_paired"] == len(items)
    labels = np.array([baseline[i]["human_attributable"] == "true" for i in items])
    base_y = np.array([baseline[i]["decision"] == "Y" for i in items])
    cand_y = np.array([candidate[i]["decision"] == "Y" for i in items])
    base_right, cand_right = base_y == labels, cand_y == labels
    difference = 100.0 * (cand_right.astype(float) - base_right.astype(float))
    low, high = _bootstrap_interval(difference, SAMPLES, SEED)
    assert row["accuracy_baseline"] == pytest.approx(100 * base_right.mean(), abs=1e-9)
    assert row["accuracy_candidate"] == pytest.approx(100 * cand_right.mean(), abs=1e-9)
    assert row["accuracy_change"] == pytest.approx(difference.mean(), abs=1e-9)
    assert (row["accuracy_change_low"], row["accuracy_change_high"]) == pytest.approx(
        (low, high), abs=1e-9)
    assert row["attribution_baseline"] == pytest.approx(100 * base_y.mean(), abs=1e-9)
    balanced = [50 * (right[labels].mean() + right[~labels].mean())
                for right in (base_right, cand_right)]
    assert row["balanced_accuracy_baseline"] == pytest.approx(balanced[0], abs=1e-9)
    assert row["balanced_accuracy_change"] == pytest.approx(balanced[1] - balanced[0],
                                                            abs=1e-9)
    # The balanced accuracy change of each resample, the same draws.
    rng = np.random.default_rng(SEED)
    resampled = []
    for start in range(0, SAMPLES, 50):
      draws = rng.integers(0, len(items), size=(min(50, SAMPLES - start), len(items)))
      for drawn in draws:
        positive, negative = labels[drawn], ~labels[drawn]
        if positive.any() and negative.any():
          resampled.append(50 * (cand_right[drawn][positive].mean()
                                 - base_right[drawn][positive].mean()
                                 + cand_right[drawn][negative].mean()
                                 - base_right[drawn][negative].mean()))
    b_low, b_high = np.percentile(resampled, [2.5, 97.5])
    assert (row["balanced_accuracy_change_low"],
            row["balanced_accuracy_change_high"]) == pytest.approx((b_low, b_high),
                                                                   abs=1e-9)
    up, down = int(np.sum(~base_y & cand_y)), int(np.sum(base_y & ~cand_y))
    assert (row["flipped_to_y"], row["flipped_to_n"]) == (up, down)
    right_up = int(np.sum(cand_right & ~base_right))
    right_down = int(np.sum(base_right & ~cand_right))
    assert row["mcnemar_p_value"] == pytest.approx(
        _exact_mcnemar(right_up, right_down), rel=1e-9)
    assert row["em_change"] is None
    assert row["regression"] == (balanced[1] - balanced[0] < -1 and b_high < 0)
    if row["regression"]:
      regressions.append(name)
  # Each flipped item once, under its groups.
  flips = _read_csv(root / "compare" / "compare.csv")
  assert {(row["system_name"], row["question"]) for row in flips} == {
      (f"data_source={baseline[i]['group']}; model_name="
       f"{baseline[i]['secondary_group']}", i)
      for i in baseline if baseline[i]["decision"] != candidate[i]["decision"]}
  assert len(flips) == (systems["all items"]["flipped_to_y"]
                        + systems["all items"]["flipped_to_n"]) > 100
  run = json.loads((root / "compare" / "run.json").read_text(encoding="utf-8"))
  assert run["flipped_rows"] == len(flips)
  assert run["paired_questions"] == len(baseline)
  assert run["regressions"] == sorted(regressions)
  assert run["status"] == ("regression" if regressions else "complete")


def test_a_group_of_one_label_regresses_in_accuracy():
  """A group whose items all hold one human label has no balanced accuracy;
  its fall is judged on the accuracy (that label's recall), so that
  --fail_on_regression is not left unused for it. A group of both labels is
  judged on balanced accuracy, as before."""
  def pairs(labels, baseline_right, candidate_right):
    """An item a pair, each run's decision the label where it is right."""
    return [QuestionPair(f"item{i}", 0.0, 0.0, None, (label == baseline_right[i],),
                         (label == candidate_right[i],), (label,))
            for i, label in enumerate(labels)]
  n = 40
  one_label = pairs([True] * n, [True] * n, [False] * 10 + [True] * (n - 10))
  empty = {"baseline": {}, "candidate": {}}
  row = system_change("dataset=one", one_label, {"baseline": n, "candidate": n}, 200, 0,
                      5.0, empty)
  assert row.balanced_accuracy_change is None and row.accuracy_change == -25.0
  assert row.regression
  assert not system_change("dataset=one", one_label, {"baseline": n, "candidate": n}, 200,
                           0, None, empty).regression
  assert not system_change("dataset=one", one_label, {"baseline": n, "candidate": n}, 200,
                           0, 30.0, empty).regression
  # Both labels: the candidate wrong on half the positives, balanced accuracy
  # -25 points.
  both = pairs([True, False] * (n // 2), [True] * n,
               [i % 2 == 1 or i >= n // 2 for i in range(n)])
  row = system_change("dataset=both", both, {"baseline": n, "candidate": n}, 200, 0, 5.0,
                      empty)
  assert row.balanced_accuracy_change == -25.0 and row.regression


def test_an_unchanged_balanced_accuracy_changes_by_exactly_zero():
  """Two positives, six negatives: the baseline right on 0 and 5 of them, the
  candidate on 1 and 2. Both balanced accuracies are 41.666...%, summed in
  another order: their raw difference is -7.1e-15, not 0."""
  labels = np.array([True] * 2 + [False] * 6)
  base_right = np.array([False, False] + [True] * 5 + [False])
  cand_right = np.array([True, False] + [True] * 2 + [False] * 4)
  questions = [QuestionPair(f"item{i}", 0.0, 0.0, None, (bool(b == label),),
                            (bool(c == label),), (bool(label),))
               for i, (label, b, c) in enumerate(zip(labels, base_right, cand_right))]
  row = system_change("all items", questions, {"baseline": 8, "candidate": 8}, 50, 0, None,
                      {"baseline": {}, "candidate": {}})
  assert row.balanced_accuracy_baseline == row.balanced_accuracy_candidate
  assert row.balanced_accuracy_change == 0.0


def test_agreement_runs_of_other_sets_are_refused(agreement_runs, tmp_path, capsys):
  def other_files(run):
    run["inputs"]["input"] = run["inputs"]["input"][:2]
  other = _altered_copy(agreement_runs / "candidate", tmp_path / "other", other_files)
  assert run_job(compare, "--baseline", agreement_runs / "baseline", "--candidate",
                 other, "--output_dir", tmp_path / "a", "--allow_changed_scorer",
                 "true") == 2
  assert "different labelled sets" in capsys.readouterr().err
  assert not (tmp_path / "a").exists()


def test_an_edited_labelled_set_is_refused_and_unchanged_figures_change_by_zero(
    tmp_path, capsys):
  """aggrefact items are named by their line: the same file with a row put
  first pairs each item with its neighbour, and is refused; the file against
  itself changes by exactly 0 (no float noise), leaderboard figures written
  at 12 significant digits."""
  source = EXAMPLES / "agreement" / "aggrefact.csv"
  header, *rows = source.read_text(encoding="utf-8").splitlines(keepends=True)
  for name, lines in (("same", rows), ("again", rows), ("edited", rows[-1:] + rows)):
    (tmp_path / name).mkdir()
    (tmp_path / name / "aggrefact.csv").write_text(header + "".join(lines),
                                                   encoding="utf-8")
    assert run_job(agreement, "--input", tmp_path / name / "aggrefact.csv", "--format",
                   "aggrefact", "--output_dir", tmp_path / f"{name}-run") == 0
  capsys.readouterr()
  assert run_job(compare, "--baseline", tmp_path / "same-run", "--candidate",
                 tmp_path / "edited-run", "--output_dir", tmp_path / "refused") == 2
  error = capsys.readouterr().err
  assert "another item in --candidate" in error and "item 'aggrefact:" in error
  assert not (tmp_path / "refused" / "run.json").exists()
  assert run_job(compare, "--baseline", tmp_path / "same-run", "--candidate",
                 tmp_path / "again-run", "--output_dir", tmp_path / "unchanged") == 0
  for row in _systems(tmp_path / "unchanged").values():
    for name in ("accuracy_change", "balanced_accuracy_change", "string_match_change"):
      assert row[name] in (None, 0.0), (name, row[name])
    for name in ("leaderboard_string_match_baseline", "leaderboard_string_match_candidate"):
      assert row[name] is None or float(f"{row[name]:.12g}") == row[name]
  record = json.loads((tmp_path / "unchanged" / "run.json").read_text(encoding="utf-8"))
  assert record["scorers"] == {"baseline": "string-match", "candidate": "string-match"}


CITING_CHANGED = 20  # supported first sentences whose citation the candidate moves
CITING_SYSTEM = "single"  # one citation a sentence: [gold], [gold + 1], [gold]


@pytest.fixture(scope="module")
def citations_runs(tmp_path_factory):
  """ALCE items of three systems (string-match); the candidate's CITING_SYSTEM
  cites a distractor document instead of the gold one in its first sentence, on
  the first CITING_CHANGED items where the baseline found that sentence
  supported. The sentence's text is the same: only its citation changed."""
  root = tmp_path_factory.mktemp("compare_citations")
  records = nq_oracle_records()
  items = {system: alce_items(records, system, range(60)) for system in CITING_SYSTEMS}
  for run in ("baseline", "candidate"):
    (root / f"{run}-inputs").mkdir()
  for system, system_items in items.items():
    write_alce(root / "baseline-inputs" / f"{system}.json", system_items)
  assert run_job(citations, "--input", root / "baseline-inputs" / "*.json",
                 "--output_dir", root / "baseline", "--bootstrap_samples", 100) == 0
  supported_first = [row["question"] for row in _read_csv(
      root / "baseline" / "citations_rows.csv")
                     if row["system_name"] == CITING_SYSTEM
                     and row["sentence_index"] == "0" and row["supported"] == "true"]
  changed = set(supported_first[:CITING_CHANGED])
  assert len(changed) == CITING_CHANGED
  hypotheses = {}
  for index, item in enumerate(items[CITING_SYSTEM]):
    if item["question"] in changed:
      gold = index % 4
      first, rest = item["output"].split(".", 1)
      assert first.endswith(f" [{gold + 1}]")
      distractor = (gold + 2) % 4 + 1
      item["output"] = f"{first[:first.rindex('[')]}[{distractor}].{rest}"
      hypotheses[item["question"]] = first[:first.rindex("[")].strip()
  for system, system_items in items.items():
    write_alce(root / "candidate-inputs" / f"{system}.json", system_items)
  assert run_job(citations, "--input", root / "candidate-inputs" / "*.json",
                 "--output_dir", root / "candidate", "--bootstrap_samples", 100) == 0
  code = run_job(compare, "--baseline", root / "baseline", "--candidate",
                 root / "candidate", "--output_dir", root / "compare", "--seed", SEED,
                 "--bootstrap_samples", SAMPLES, "--fail_on_regression", 2)
  return {"root": root, "changed": hypotheses, "code": code, "out": root / "compare"}


def _citation_items(directory):
  """Each answer's figures as the citations job wrote them (with sentences)."""
  return {(row["system_name"], row["question"]): row
          for row in _read_csv(directory / "citations_items.csv")
          if row["n_sentences"] != "0"}


def test_citations_flipped_rows_are_exactly_the_sentences_cited_elsewhere(citations_runs):
  flips = _read_csv(citations_runs["out"] / "compare.csv")
  assert {(row["system_name"], row["question"]) for row in flips} == {
      (CITING_SYSTEM, question) for question in citations_runs["changed"]}
  for row in flips:
    hypothesis = citations_runs["changed"][row["question"]]
    assert (row["baseline_auto_ais"], row["candidate_auto_ais"]) == ("Y", "N")
    assert row["baseline_answer"].startswith(hypothesis)
    assert row["candidate_answer"].startswith(hypothesis)
    assert row["baseline_answer"] != row["candidate_answer"]  # the citation moved
    assert row["baseline_attribution"] != row["candidate_attribution"]
    assert row["baseline_passage"] == row["candidate_passage"] == ""


def test_citations_changes_equal_an_independent_computation(citations_runs):
  """Recall and precision per answer from citations_items.csv (the job's own
  per-answer figures, not the sentence rows compare reads); the headline
  figures from citations.json; McNemar from the sentence rows paired by text."""
  root = citations_runs["root"]
  baseline, candidate = (_citation_items(root / run) for run in ("baseline", "candidate"))
  summary = {row["system_name"]: row for row in json.loads(
      (root / "baseline" / "citations.json").read_text(encoding="utf-8"))["systems"]}
  sentences = {}
  for run in ("baseline", "candidate"):
    for row in _read_csv(root / run / "citations_rows.csv"):
      sentences.setdefault((run, row["system_name"], row["question"]), []).append(row)
  document = json.loads((citations_runs["out"] / "compare.json").read_text(
      encoding="utf-8"))
  assert document["job"] == "citations"
  assert document["regression_on"] == "string_match (citation recall)"
  systems = {row["system_name"]: row for row in document["systems"]}
  assert set(systems) == set(CITING_SYSTEMS) == set(summary)
  regressions = []
  for system, row in systems.items():
    questions = sorted(q for s, q in baseline if s == system)
    assert row["status"] == "both" and row["n_paired"] == len(questions) > 0
    for name, field in (("string_match", "citation_rec"), ("citation_prec", "citation_prec")):
      base = np.array([float(baseline[(system, q)][field]) for q in questions])
      cand = np.array([float(candidate[(system, q)][field]) for q in questions])
      # Every answer is paired: the baseline's figures are citations.json's.
      assert row[f"{name}_baseline"] == pytest.approx(summary[system][field], abs=1e-9)
      assert row[f"{name}_baseline"] == pytest.approx(100 * base.mean(), abs=1e-9)
      assert row[f"{name}_candidate"] == pytest.approx(100 * cand.mean(), abs=1e-9)
      differences = 100.0 * (cand - base)
      low, high = _bootstrap_interval(differences, SAMPLES, SEED)
      assert row[f"{name}_change"] == pytest.approx(differences.mean(), abs=1e-9)
      assert (row[f"{name}_change_low"], row[f"{name}_change_high"]) == pytest.approx(
          (low, high), abs=1e-9)
      if name == "string_match":
        recall = (differences.mean(), high)
    assert row["em_change"] is None and row["accuracy_change"] is None
    up = down = 0
    for q in questions:
      for b, c in zip(sentences[("baseline", system, q)],
                      sentences[("candidate", system, q)]):
        assert b["hypothesis"] == c["hypothesis"]
        up += b["supported"] == "false" and c["supported"] == "true"
        down += b["supported"] == "true" and c["supported"] == "false"
    assert (row["flipped_to_y"], row["flipped_to_n"]) == (up, down)
    assert row["mcnemar_p_value"] == pytest.approx(_exact_mcnemar(up, down), rel=1e-9)
    assert row["regression"] == (recall[0] < -2 and recall[1] < 0)
    if row["regression"]:
      regressions.append(system)
  changed = systems[CITING_SYSTEM]
  assert changed["flipped_to_n"] == CITING_CHANGED and changed["flipped_to_y"] == 0
  assert changed["citation_prec_change"] < 0 and changed["string_match_change_high"] < 0
  assert all(row["string_match_change"] == 0 and row["citation_prec_change"] == 0
             for name, row in systems.items() if name != CITING_SYSTEM)
  assert regressions == [CITING_SYSTEM] and citations_runs["code"] == 3
  run = json.loads((citations_runs["out"] / "run.json").read_text(encoding="utf-8"))
  assert run["status"] == "regression" and run["regressions"] == [CITING_SYSTEM]
  assert "citation precision" in (citations_runs["out"] / "report.html").read_text(
      encoding="utf-8")
  assert "| citation_prec change |" in (citations_runs["out"] / "compare.md").read_text(
      encoding="utf-8")


def test_citations_runs_cut_differently_are_refused(citations_runs, tmp_path, capsys):
  root = citations_runs["root"]

  def fewer_citations(run):
    run["inputs"]["at_most_citations"] = 2

  def splitter(run):
    run["inputs"]["sentence_splitter"]["version"] = "0.0"
  for name, change, said in (("cut", fewer_citations, "--at_most_citations: 3 -> 2"),
                             ("split", splitter, "the sentence splitter")):
    other = _altered_copy(root / "candidate", tmp_path / name, change)
    assert run_job(compare, "--baseline", root / "baseline", "--candidate", other,
                   "--output_dir", tmp_path / f"{name}-out") == 2
    assert said in capsys.readouterr().err
    assert not (tmp_path / f"{name}-out").exists()
