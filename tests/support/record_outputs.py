"""Records every job's outputs on fixed inputs, and compares two recordings.

    .venv/bin/python -m tests.support.record_outputs record DIR [--inputs INPUTS_DIR]
    .venv/bin/python -m tests.support.record_outputs compare RECORDED_DIR OTHER_DIR

Made for moves of code that must not change behaviour (issue 16): record on the
commit before the move, record again after it on the same machine with the same
INPUTS_DIR, and compare. `record` runs each job as a user does (`python -m
beam_jobs.cli JOB ...`, a process of its own, DirectRunner):

* example: build-corpus and evaluate (string-match) on the bundled example;
* t5 / t5-decode: evaluate with a tiny random T5 (published layout, T5-like
  vocabulary), threshold and decode decisions;
* nq: evaluate on the NQ-Open leaderboard of tests/support/nq.py (2,655 oracle
  passages, five systems, gold answers);
* agreement-*: agreement, string-match, on the whole AttributionBench, BEGIN,
  WiCE and ExpertQA sets, and the tiny T5 on BEGIN's CMU file;
* claims: ExpertQA's validation files; claims-t5-max: the tiny T5, max mode;
* audit: the audit inputs of tests/support/audit_inputs.py (gold answers, 100
  bootstrap samples);
* compare: the string-match example run against the tiny T5's (their scorers
  differ: --allow_changed_scorer);
* sck: the seed examples' knowledge graph of tests/support/sck_kg.py with
  string-match and the packaged embedding model;
* ais-annotations: the AIS release's consensus files;
* citations: ALCE result files of five systems (sentences, a QAMPARI list, ELI5
  claims) and ALCE's human evaluation file over NQ-Open oracle questions
  (tests/support/citations.py); citations-t5: two of them with the tiny T5.

Inputs are built once into INPUTS_DIR (default /tmp/autoais-recording-inputs)
and reused, so two recordings read the very same files, model included.
`compare` lists every output file of both; each must exist in both and be byte
identical, except JSON files, which are compared as data without the keys that
hold times, versions, hosts and processes (VOLATILE_KEYS), and with each
recording's own directory written as "<OUT>" and scratch directory names as
"_work-*"; Markdown and HTML pages are compared with the recording's own
directory written as "<OUT>" too. Exit 1 on any difference. The bundled
example is read where it lies: record both from checkouts at the same path (the
row tables name their input files).
Shared data (AUTOAIS_SHARED_DATA or ../shared/data) is needed for all but the
example and t5 runs; where it is absent those runs are skipped and say so.
"""
import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import time

# tests/support/record_outputs.py: the repository root is three levels up.
PROJECT_ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = PROJECT_ROOT / "examples"
DEFAULT_INPUTS = pathlib.Path("/tmp/autoais-recording-inputs")
# Keys whose values differ from run to run of the same code: when and where a run
# happened and with which package versions.
VOLATILE_KEYS = frozenset({"timings", "versions", "started", "started_at", "last_seen",
                           "finished",
                           "host", "pid", "process_start", "seconds", "elapsed",
                           "wall_seconds"})
# A run's scratch directory is named at random (the output ledger lists it).
_SCRATCH_NAME = re.compile(r"_work-[0-9a-f]+")


def _shared_available() -> bool:
  from tests.support.paths import shared_data_dir  # pylint: disable=import-outside-toplevel
  return (shared_data_dir() / "nq_open" / "NQ-open.dev.jsonl").exists()


def build_inputs(inputs: pathlib.Path) -> dict:
  """Builds (once) every input the runs read; returns their paths."""
  # pylint: disable=import-outside-toplevel
  from tests.support import sck_kg
  from tests.support.nq import build_nq_leaderboard
  from tests.support.vocab import example_texts
  paths = {"corpus_input": EXAMPLES / "corpus" / "*.jsonl",
           "predictions": EXAMPLES / "predictions" / "*.csv",
           "gold": EXAMPLES / "gold.jsonl",
           "model": inputs / "tiny_t5",
           "kg": inputs / "sck" / "kg.parquet",
           "sck_answers": inputs / "sck" / "answers.csv"}
  done = inputs / "BUILT"
  if not done.exists():
    inputs.mkdir(parents=True, exist_ok=True)
    from tests.support.t5_models import build_random_t5
    build_random_t5(str(paths["model"]), example_texts(), vocab_size=2000,
                    seed=3)
    paths["kg"].parent.mkdir(parents=True, exist_ok=True)
    sck_kg.write_kg(paths["kg"], sck_kg.ALL_KG)
    import csv
    with open(paths["sck_answers"], "w", newline="", encoding="utf-8") as f:
      writer = csv.writer(f)
      writer.writerow(("question", "answer", "reference_answer"))
      writer.writerow((sck_kg.OBAMA_QUESTION, sck_kg.OBAMA_ANSWER, ""))
      writer.writerow((sck_kg.PHONES_QUESTION, sck_kg.PHONES_ANSWER, ""))
      writer.writerow((sck_kg.CONFLICT_QUESTION, sck_kg.CONFLICT_ANSWER,
                       "Barack Obama was born in Hawaii."))
    if _shared_available():
      from tests.support.audit_inputs import build_audit_inputs
      nq = build_nq_leaderboard(inputs / "nq")
      (inputs / "audit").mkdir(exist_ok=True)
      build_audit_inputs(inputs / "audit", nq)
      _write_citations_inputs(inputs / "citations")
    done.write_text("built\n", encoding="utf-8")
  paths.update({"nq_corpus": inputs / "nq" / "corpus",
                "nq_predictions": inputs / "nq" / "predictions" / "*.csv",
                "audit": inputs / "audit", "citations": inputs / "citations"})
  return paths


def _write_citations_inputs(directory: pathlib.Path) -> None:
  """ALCE result files over NQ-Open oracle questions: the three sentence
  systems, a QAMPARI list system, an ELI5 system with claims, and ALCE's human
  evaluation file (tests/support/citations.py)."""
  # pylint: disable=import-outside-toplevel
  from tests.support import citations
  from tests.support.nq import nq_oracle_records
  records = nq_oracle_records()
  directory.mkdir(parents=True, exist_ok=True)
  for system in (*citations.SYSTEMS, citations.QAMPARI_SYSTEM, citations.ELI5_SYSTEM):
    citations.write_alce(directory / f"{system}.json",
                         citations.alce_items(records, system, range(120)))
  citations.write_human_eval(directory / "human_eval.json", records, first=300)


def runs(paths: dict, out: pathlib.Path) -> dict:
  """{name: (needs shared data, [job argv...])}, in the order they run."""
  # pylint: disable=import-outside-toplevel
  from tests.support.paths import shared_file
  t5 = ["--scorer", "t5", "--model", paths["model"], "--torch_threads", "1"]
  corpus = out / "example-corpus"

  def shared(*relative):
    return ",".join(str(shared_file(r)) for r in relative)

  table = {
      "example-corpus": (False, ["build-corpus", "--input", paths["corpus_input"],
                                 "--output", corpus, "--num_shards", "4"]),
      "example": (False, ["evaluate", "--predictions", paths["predictions"],
                          "--corpus", corpus, "--gold", paths["gold"]]),
      "t5": (False, ["evaluate", "--predictions", paths["predictions"], "--corpus",
                     corpus, "--gold", paths["gold"], *t5]),
      "t5-decode": (False, ["evaluate", "--predictions", paths["predictions"],
                            "--corpus", corpus, "--gold", paths["gold"], *t5,
                            "--decision", "decode"]),
      "sck": (False, ["sck", "--input", paths["sck_answers"], "--kg", paths["kg"]]),
      "compare": (False, ["compare", "--baseline", out / "example", "--candidate",
                          out / "t5", "--allow_changed_scorer", "true",
                          "--bootstrap_samples", "200"]),
  }
  if not _shared_available():
    return table
  audit = paths["audit"]
  table.update({
      "nq": (True, ["evaluate", "--predictions", paths["nq_predictions"], "--corpus",
                    paths["nq_corpus"], "--gold",
                    shared_file("nq_open/NQ-open.dev.jsonl")]),
      "agreement-attributionbench": (True, [
          "agreement", "--format", "attributionbench", "--input",
          shared("attributionbench/dev_all_subset_balanced.jsonl")]),
      "agreement-begin": (True, [
          "agreement", "--format", "begin", "--input",
          shared("begin/begin_dev_wow.tsv", "begin/begin_dev_cmu.tsv",
                 "begin/begin_dev_tc.tsv")]),
      "agreement-begin-t5": (True, [
          "agreement", "--format", "begin", "--input", shared("begin/begin_dev_cmu.tsv"),
          *t5]),
      "agreement-wice": (True, ["agreement", "--format", "wice", "--input",
                                shared("wice/oracle_chunks_claim_dev.jsonl")]),
      "agreement-expertqa": (True, [
          "agreement", "--format", "expertqa", "--input",
          shared("expertqa/rand_val.jsonl", "expertqa/domain_val.jsonl")]),
      "claims": (True, ["claims", "--input",
                        shared("expertqa/rand_val.jsonl", "expertqa/domain_val.jsonl"),
                        "--bootstrap_samples", "100"]),
      "claims-t5-max": (True, ["claims", "--input", shared("expertqa/rand_val.jsonl"),
                               "--evidence_mode", "max", "--bootstrap_samples", "100",
                               *t5]),
      "audit": (True, ["audit", "--answers", audit / "answers.jsonl", "--candidates",
                       audit / "run.trec", "--topics", audit / "topics.tsv", "--corpus",
                       paths["nq_corpus"], "--gold",
                       shared_file("nq_open/NQ-open.dev.jsonl"),
                       "--bootstrap_samples", "100"]),
      "citations": (True, ["citations", "--input", paths["citations"] / "*.json",
                           "--bootstrap_samples", "100"]),
      "citations-t5": (True, ["citations", "--input", ",".join(
          str(paths["citations"] / name) for name in ("single.json", "multiple.json")),
                              "--bootstrap_samples", "100", *t5]),
      "ais-annotations": (True, [
          "ais-annotations", "--input",
          str(shared_file("ais_annotations/ann_qrecc.csv").parent / "ann_*.csv")]),
  })
  return table


def record(out: pathlib.Path, inputs: pathlib.Path) -> int:
  if out.exists() and any(out.iterdir()):
    print(f"{out} exists and is not empty: record into a new directory", file=sys.stderr)
    return 2
  out.mkdir(parents=True, exist_ok=True)
  paths = build_inputs(inputs)
  table = runs(paths, out)
  if not _shared_available():
    print("shared data absent: only the example, t5 and sck runs", file=sys.stderr)
  failed = 0
  for name, (_, argv) in table.items():
    argv = [str(a) for a in argv]
    if argv[0] != "build-corpus":
      argv += ["--output_dir", str(out / name)]
    started = time.time()
    done = subprocess.run([sys.executable, "-m", "autoais.beam_jobs.cli", *argv],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, check=False)
    print(f"{name}: exit {done.returncode} in {time.time() - started:.1f} s",
          flush=True)
    if done.returncode != 0:
      failed += 1
      print(done.stderr[-3000:], file=sys.stderr)
  (out / "RECORDED").write_text(json.dumps(sorted(table)) + "\n", encoding="utf-8")
  return 1 if failed else 0


def _without_volatile(value, root: str):
  if isinstance(value, dict):
    return {k: _without_volatile(v, root) for k, v in value.items()
            if k not in VOLATILE_KEYS}
  if isinstance(value, list):
    return [_without_volatile(v, root) for v in value]
  if isinstance(value, str):
    return _SCRATCH_NAME.sub("_work-*", value.replace(root, "<OUT>"))
  return value


def _json_values(path: pathlib.Path, root: pathlib.Path):
  text = path.read_text(encoding="utf-8")
  try:
    return _without_volatile(json.loads(text), str(root))
  except json.JSONDecodeError:  # JSON lines
    return [_without_volatile(json.loads(line), str(root))
            for line in text.splitlines() if line.strip()]


def _files(root: pathlib.Path) -> set:
  return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def compare(first: pathlib.Path, second: pathlib.Path) -> int:
  first_files, second_files = _files(first), _files(second)
  differences = [f"only in {first}: {name}" for name in sorted(first_files - second_files)]
  differences += [f"only in {second}: {name}"
                  for name in sorted(second_files - first_files)]
  same = sorted(first_files & second_files)
  for name in same:
    a, b = first / name, second / name
    if name.endswith((".json", ".jsonl")):
      if _json_values(a, first) != _json_values(b, second):
        differences.append(f"differs (as data, volatile keys left out): {name}")
    elif name.endswith((".md", ".html")):
      # Pages may name the runs they read (compare's): each as "<OUT>".
      if (a.read_bytes().replace(bytes(first), b"<OUT>")
          != b.read_bytes().replace(bytes(second), b"<OUT>")):
        differences.append(f"differs (bytes, own directory as <OUT>): {name}")
    elif a.read_bytes() != b.read_bytes():
      differences.append(f"differs (bytes): {name}")
  for line in differences:
    print(line)
  print(f"{len(same)} files in both, {len(differences)} differences")
  return 1 if differences or not same else 0


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  commands = parser.add_subparsers(dest="command", required=True)
  record_parser = commands.add_parser("record")
  record_parser.add_argument("output", type=pathlib.Path)
  record_parser.add_argument("--inputs", type=pathlib.Path, default=DEFAULT_INPUTS)
  compare_parser = commands.add_parser("compare")
  compare_parser.add_argument("recorded", type=pathlib.Path)
  compare_parser.add_argument("other", type=pathlib.Path)
  args = parser.parse_args(argv)
  os.environ.setdefault("PYTHONHASHSEED", "0")
  if args.command == "record":
    return record(args.output.resolve(), args.inputs.resolve())
  return compare(args.recorded.resolve(), args.other.resolve())


if __name__ == "__main__":
  sys.exit(main())
