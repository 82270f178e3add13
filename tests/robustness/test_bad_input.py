"""Bad input, end to end: each bad row lands where SPEC 6 says, counts reconcile,
and a bad configuration stops the job before it writes anything."""
import gzip
import json
import shutil

import pytest

from autoais.beam_jobs import build_corpus, evaluate
from tests.support.files import read_jsonl
from tests.support.jobs import run_job
from tests.support.paths import PROJECT_ROOT

EXAMPLES = PROJECT_ROOT / "examples"
W = "http://en.wikipedia.org/wiki"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
  root = tmp_path_factory.mktemp("corpus")
  source = root / "source"
  source.mkdir()
  shutil.copy(EXAMPLES / "corpus" / "wiki_sample.jsonl", source / "a.jsonl")
  (source / "b.jsonl").write_text("\n".join([
      '{"id": "extra-1", "contents": "« Extra » « Extra » An extra passage."}',
      "this line is not JSON",
      '{"contents": "« No id » « No id » text"}',
      '{"id": "extra-2"}',
      # The same id as a.jsonl line 1: the first definition wins.
      json.dumps({"id": f"{W}/Mount_Everest#Mount_Everest#0",
                  "contents": "« Dup » « Dup » duplicate"}),
  ]) + "\n", encoding="utf-8")
  output = root / "corpus"
  assert run_job(build_corpus, "--input", source / "*.jsonl", "--output", output,
                 "--num_shards", 3) == 0
  return output


def test_corpus_bad_lines_are_dead_lettered(corpus):
  manifest = json.loads((corpus / "corpus.json").read_text())
  counts = manifest["counts"]
  assert counts == {"read": 35, "written": 31, "rejected": 4, "reconciled": True,
                    "by_reason": {"rejected:duplicate_id": 1,
                                  "rejected:malformed_json": 1,
                                  "rejected:missing_field": 2}}
  dead = read_jsonl(corpus / "dead_letter.jsonl")
  assert [(d["source_file"].rsplit("/", 1)[1], d["source_line"], d["reason"], d["field"])
          for d in dead] == [
              ("b.jsonl", 2, "malformed_json", None),
              ("b.jsonl", 3, "missing_field", "id"),
              ("b.jsonl", 4, "missing_field", "contents"),
              ("b.jsonl", 5, "duplicate_id", "id")]
  assert "a.jsonl:1" in dead[3]["message"]
  assert sum(s["num_rows"] for s in manifest["shards"]) == 31


@pytest.fixture(scope="module")
def bad_run(corpus, tmp_path_factory):
  root = tmp_path_factory.mktemp("bad")
  predictions = root / "predictions"
  predictions.mkdir()
  (predictions / "sys-a.csv").write_bytes((
      "question,answer,attribution\n"
      f"who painted the mona lisa,Leonardo da Vinci,{W}/Mona_Lisa#Mona_Lisa#0\n"
      f'"malformed"row,x,{W}/Gold#Gold#0\n'
      f"what is the chemical symbol for gold,,{W}/Gold#Gold#0\n"
      f"which planet is closest to the sun,Mercury,{W}/No_such_page#0\n"
      f"who painted the mona lisa,Raphael,{W}/Louvre#Louvre#Collection#2\n"
      f"what is the meaning of life,42,{W}/Gold#Gold#0\n"
      f"how many moons does mars have,two,{W}/Mars#Mars#Moons#5\n"
  ).encode("utf-8") + b"what is the largest ocean on earth,Pacific \xff,x\n")
  (predictions / "sys-b.jsonl").write_text("\n".join([
      json.dumps({"question": "who wrote pride and prejudice", "answer": "Jane Austen",
                  "attribution": f"{W}/Pride_and_Prejudice#Pride_and_Prejudice#0"}),
      json.dumps({"question": "is the sun a star", "attribution": f"{W}/Sun#Sun#0"}),
      # The answer given twice: json keeps the last unseen; which is meant?
      '{"question": "who wrote hamlet", "answer": "Shakespeare", "answer": "Marlowe", '
      f'"attribution": "{W}/Hamlet#Hamlet#0"}}',
  ]) + "\n", encoding="utf-8")
  output = root / "out"
  assert run_job(evaluate, "--predictions", f"{predictions}/*", "--corpus", corpus,
                 "--gold", EXAMPLES / "gold.jsonl", "--output_dir", output,
                 "--bootstrap_samples", 50) == 0
  return output


def _dead(output):
  return {(d["source_file"].rsplit("/", 1)[1], d["source_line"]): d
          for d in read_jsonl(output / "dead_letter.jsonl")}


@pytest.mark.parametrize("where, kind, reason, field", [
    (("sys-a.csv", 3), "rejected", "malformed_csv", None),
    (("sys-a.csv", 4), "rejected", "empty_answer", "answer"),
    (("sys-a.csv", 5), "unmatched", "attribution_not_in_corpus", "attribution"),
    (("sys-a.csv", 6), "rejected", "duplicate_prediction", "question"),
    (("sys-a.csv", 7), "unmatched", "question_not_in_gold", "question"),
    (("sys-a.csv", 9), "rejected", "non_utf8", "answer"),
    (("sys-b.jsonl", 2), "rejected", "missing_field", "answer"),
    (("sys-b.jsonl", 3), "rejected", "repeated_key", "answer"),
])
def test_each_bad_row_lands_in_dead_letter(bad_run, where, kind, reason, field):
  dead = _dead(bad_run)[where]
  assert (dead["kind"], dead["reason"], dead["field"]) == (kind, reason, field)
  assert dead["message"].startswith(f"{dead['source_file']}:{where[1]}")


def test_duplicate_keeps_the_first_row(bad_run):
  assert "sys-a.csv:2" in _dead(bad_run)[("sys-a.csv", 6)]["message"]
  ratings = (bad_run / "ratings.csv").read_text(encoding="utf-8")
  assert "Leonardo da Vinci" in ratings and "Raphael" not in ratings


def test_counts_reconcile(bad_run):
  manifest = json.loads((bad_run / "run.json").read_text())
  counts = manifest["counts"]
  assert counts["read"] == 11  # every data record of both files
  assert (counts["scored"], counts["rejected"], counts["unmatched"]) == (3, 6, 2)
  assert counts["reconciled"] is True
  assert len(read_jsonl(bad_run / "dead_letter.jsonl")) == 8
  leaderboard = json.loads((bad_run / "leaderboard.json").read_text())["systems"]
  sys_a = next(s for s in leaderboard if s["system_name"] == "sys-a")
  # Kept: mona lisa, mercury (unknown passage: N but graded), mars.
  assert (sys_a["n_predicted"], sys_a["n_scored"], sys_a["n_unmatched_attribution"]) == (
      3, 2, 1)


def test_missing_required_column_is_fatal_with_no_outputs(corpus, tmp_path, capsys):
  predictions = tmp_path / "no-attribution.csv"
  predictions.write_text("question,answer\nwho painted the mona lisa,Leonardo\n")
  output = tmp_path / "out"
  code = run_job(evaluate, "--predictions", predictions, "--corpus", corpus,
                 "--gold", EXAMPLES / "gold.jsonl", "--output_dir", output)
  assert code == 2
  error = capsys.readouterr().err
  assert f"{predictions}:1: missing required column(s) (attribution, or passage)" in error
  assert not output.exists()


@pytest.mark.parametrize("rows, found_at_launch", [(2000, True), (200000, False)])
def test_truncated_gzip_stops_the_job_with_exit_2(corpus, bad_run, tmp_path, capsys,
                                                  rows, found_at_launch):
  # A gzip cut off at three quarters. Small, the launch check reads to the cut
  # and refuses the file: the earlier run's outputs stay as they were. Large,
  # its start decompresses and the cut is found while the job reads it: the
  # job stops with exit 2 and leaves no run.json.
  lines = "".join(f"question {i},answer {i},{W}/Page_{i}#0\n" for i in range(rows))
  data = gzip.compress(("question,answer,attribution\n" + lines).encode())
  predictions = tmp_path / "cut.csv.gz"
  predictions.write_bytes(data[:len(data) * 3 // 4])
  output = tmp_path / "out"
  shutil.copytree(bad_run, output)  # a complete earlier run in the same directory
  before = {p.name: p.read_bytes() for p in output.iterdir() if p.is_file()}
  code = run_job(evaluate, "--predictions", predictions, "--corpus", corpus,
                 "--gold", EXAMPLES / "gold.jsonl", "--output_dir", output)
  assert code == 2
  assert f"{predictions}: unreadable data (EOFError" in capsys.readouterr().err
  after = {p.name: p.read_bytes() for p in output.iterdir() if p.is_file()}
  assert not list(output.glob("_work-*"))  # the failed run took its scratch away
  if found_at_launch:
    assert after == before
  else:
    assert "run.json" not in after and "leaderboard.csv" not in after


@pytest.mark.parametrize("args, message", [
    (["--threshhold", "0.3"], "unknown argument(s): --threshhold"),
    (["--threshold", "1.5"], "--threshold must be in [0, 1]"),
    (["--corpus", "/nonexistent/corpus"], "corpus.json is missing"),
])
def test_bad_configuration_exits_2(tmp_path, capsys, args, message):
  base = ["--predictions", EXAMPLES / "predictions" / "*.csv", "--gold",
          EXAMPLES / "gold.jsonl", "--output_dir", tmp_path / "out"]
  code = run_job(evaluate, *(base + args))
  assert code == 2
  assert message in capsys.readouterr().err
  assert not (tmp_path / "out").exists()
