"""Memory of every job at scale (not a test): peak RSS per process at 10k, 100k, 1M rows.

    AUTOAIS_SHARED_DATA=SHARED/data nice -n 5 .venv/bin/python bench/memory.py \
        [--jobs claims,claims-max,claims-cache,sck,ais-annotations,audit,agreement,
                evaluate-t5,claims-t5,claims-t5-rerank]
        [--sizes 10000,100000,1000000]
        [--modes in_process,two_workers] [--limit_mib 6144] [--workdir bench/out/memory]
        [--checkout DIR]

For each job, synthetic inputs of about 10k, 100k and 1M rows (the unit each job
counts in run.json) in the published formats, scaled from real structure:

* claims: ExpertQA records of $AUTOAIS_SHARED_DATA/expertqa/*.jsonl, repeated
  with the question numbered per copy (rows: claims; string-match);
* claims-max: the same claims, `--evidence_mode max` (each evidence item scored
  on its own, the best kept);
* claims-cache: the same claims scored by a tiny random T5 (bench/scale.py's)
  with `--score_cache`, twice: the run measured is the second, every distinct
  example a hit of the cache the first filled (whose peak is reported as
  fill_peak_mib_by_role);
* sck: the seed's worked answers (tests/support/sck_kg.py: Figure 3, Figure 5,
  the contradicted birthplace) under numbered questions and 4 systems, against
  their knowledge graph (rows: answers; string-match; the packaged MiniLM);
* ais-annotations: the release's ann_*.csv of $AUTOAIS_SHARED_DATA/ais_annotations,
  whole files repeated, ex-idx numbered per copy (rows: annotations, the next
  multiple of the release's 4,563);
* audit: bench/audit.py's answers, topics and TREC run, 10,000 answers with
  k = 1, 10, 100 candidates against a 100k-passage corpus (rows: candidates;
  string-match);
* agreement: bench/agreement.py's ratings CSV (rows: rated rows; string-match);
* evaluate-t5: a leaderboard scored by the tiny random T5 (rows: ratings): 1,000
  questions against a 4,000-passage corpus, as many systems as the rows need,
  each answering with one of 3 answers of its question and citing one of 3
  passages, so the distinct examples (at most 9 a question) stay about the same
  while the rows grow, as when systems share answers and passages; its rows go
  through the model fan-out (transforms/scoring/fanout.py), which string-match
  does not;
* claims-t5: the claims case scored by the tiny random T5 (the copies repeat
  their claims and evidence, so the distinct examples stay those of one copy);
* claims-t5-rerank: the same, `--evidence_mode rerank` (evidence longer than
  the model's input is split into sentences, each scored, the chosen ones
  scored again).

Each run is `autoais JOB` as a child process, in-process (FnApiRunner) and with
`--direct_running_mode=multi_processing --direct_num_workers=2`; bench/scale.py's
run_measured samples the peak RSS (VmHWM) of every process of its tree every
0.2 s (launcher, which runs the FnApiRunner, and SDK workers) and kills the tree
once its RSS passes --limit_mib (reported as killed at that size). 1M rows run
only where the 100k run of that job and mode stayed within 1.25x of 10k (where
--sizes holds 100k).

Prints one JSON line per run to stderr as it ends, and one JSON line on stdout:
per job and mode, each size's rows, seconds, peak MiB by role and total, and the
ratios 100k / 10k and 1M / 10k of the largest process of each role.
`--checkout DIR` runs the jobs of another checkout (its .venv, from its root)
on the same inputs, for figures before a change (give it its own --workdir).
"""
import argparse
import csv
import glob
import json
import os
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

from agreement import write_ratings  # pylint: disable=wrong-import-position
from audit import write_inputs as write_audit_inputs  # pylint: disable=wrong-import-position
from pipeline import AUTOAIS, Words, build_corpus, write_corpus  # pylint: disable=wrong-import-position
from pipeline import passage_id, write_gold  # pylint: disable=wrong-import-position
from scale import TWO_WORKERS, by_role, run_measured, tiny_model  # pylint: disable=wrong-import-position
from tests.support import sck_kg  # pylint: disable=wrong-import-position

JOBS = ("claims", "claims-max", "claims-cache", "sck", "ais-annotations", "audit",
        "agreement", "evaluate-t5", "claims-t5", "claims-t5-rerank")
# Cases of a job: (the autoais job, whose inputs they read; its options).
# claims-cache's options name a fresh cache directory: command() makes them.
CASES = {"claims-max": ("claims", ["--evidence_mode", "max"]),
         "claims-cache": ("claims", []),
         "evaluate-t5": ("evaluate", []),
         "claims-t5": ("claims", []),
         "claims-t5-rerank": ("claims", ["--evidence_mode", "rerank"])}
MODES = {"in_process": [], "two_workers": TWO_WORKERS}
FLAT = 1.25
AUDIT_ANSWERS, AUDIT_PASSAGES = 10000, 100000
EVALUATE_QUESTIONS, EVALUATE_PASSAGES = 1000, 4000


def shared_data(*parts) -> str:
  root = os.environ.get("AUTOAIS_SHARED_DATA")
  if not root:
    raise SystemExit("set AUTOAIS_SHARED_DATA to the shared data sets")
  return os.path.join(root, *parts)


def write_claims(directory: str, rows: int):
  """ExpertQA records repeated until they hold `rows` claims; copy n of a record
  asks its question with ' (n)' appended, so no answer repeats."""
  records = []
  for path in sorted(glob.glob(shared_data("expertqa", "*.jsonl"))):
    with open(path, encoding="utf-8") as source:
      records += [json.loads(line) for line in source if line.strip()]
  path = os.path.join(directory, "claims.jsonl")
  written, copy = 0, 0
  with open(path, "w", encoding="utf-8") as sink:
    while written < rows:
      for record in records:
        if written >= rows:
          break
        claims = sum(len(answer.get("claims") or [])
                     for answer in record["answers"].values())
        if not claims:
          continue
        sink.write(json.dumps(dict(record, question=f"{record['question']} ({copy})"))
                   + "\n")
        written += claims
      copy += 1
  return ["--input", path], written


def write_sck(directory: str, rows: int):
  """The seed's three worked answers, question i asked of 4 systems."""
  kg = sck_kg.write_kg(os.path.join(directory, "kg.parquet"), sck_kg.ALL_KG)
  seeds = ((sck_kg.OBAMA_QUESTION, sck_kg.OBAMA_ANSWER),
           (sck_kg.PHONES_QUESTION, sck_kg.PHONES_ANSWER),
           (sck_kg.CONFLICT_QUESTION, sck_kg.CONFLICT_ANSWER))
  path = os.path.join(directory, "answers.csv")
  with open(path, "w", newline="", encoding="utf-8") as sink:
    writer = csv.writer(sink)
    writer.writerow(["system_name", "question", "answer"])
    for index in range(rows):
      question, answer = seeds[index // 4 % len(seeds)]
      writer.writerow([f"system-{index % 4}", f"{question} ({index // 4})", answer])
  return ["--input", path, "--kg", kg], rows


def write_ais_annotations(directory: str, rows: int):
  """The release's files, each repeated whole (every row, ex-idx numbered per
  copy) as often as `rows` needs: copies of whole files keep every model's and
  category's share as released (a cut file can leave a model without outputs in
  a column, which the job does not explain: see bench/README.md)."""
  sources = sorted(glob.glob(shared_data("ais_annotations", "ann_*.csv")))
  tables = []
  for path in sources:
    with open(path, newline="", encoding="utf-8") as source:
      reader = csv.reader(source)
      tables.append((os.path.basename(path), next(reader), list(reader)))
  total = sum(len(table) for _, _, table in tables)
  copies = -(-rows // total)
  for name, header, table in tables:
    column = [title.strip() for title in header].index("ex-idx")  # ann_wow.csv: "ex-idx "
    with open(os.path.join(directory, name), "w", newline="", encoding="utf-8") as sink:
      writer = csv.writer(sink)
      writer.writerow(header)
      for copy in range(copies):
        for row in table:
          writer.writerow(row[:column] + [f"{row[column]}-{copy}"] + row[column + 1:])
  return ["--input", os.path.join(directory, "ann_*.csv")], copies * total


def audit_corpus(work: str) -> str:
  corpus = os.path.join(work, f"audit_corpus{AUDIT_PASSAGES}")
  if not os.path.exists(os.path.join(corpus, "corpus.json")):
    source = os.path.join(work, f"audit_src{AUDIT_PASSAGES}")
    write_corpus(source, AUDIT_PASSAGES, Words(seed=1))
    build_corpus(source, corpus, 64)
  return corpus


def write_audit(directory: str, rows: int, work: str):
  k = max(1, rows // AUDIT_ANSWERS)
  written = write_audit_inputs(directory, AUDIT_ANSWERS, k, AUDIT_PASSAGES,
                               Words(seed=1))
  return ["--answers", os.path.join(directory, "answers.csv"), "--candidates",
          os.path.join(directory, "run.trec"), "--topics",
          os.path.join(directory, "topics.tsv"), "--corpus", audit_corpus(work)], written


def write_evaluate(directory: str, rows: int, work: str):
  """EVALUATE_QUESTIONS questions, each answered by every system with one of 3
  answers (a gold span or one of two wrong ones) citing its home passage or one
  of the next two: rows grow with the systems, distinct examples do not."""
  corpus = os.path.join(work, f"evaluate_corpus{EVALUATE_PASSAGES}")
  words = Words(seed=1)
  if not os.path.exists(os.path.join(corpus, "corpus.json")):
    source = os.path.join(work, f"evaluate_src{EVALUATE_PASSAGES}")
    write_corpus(source, EVALUATE_PASSAGES, words)
    build_corpus(source, corpus, 16)
  gold = os.path.join(directory, "gold.jsonl")
  write_gold(gold, EVALUATE_QUESTIONS, EVALUATE_PASSAGES, words)
  with open(gold, encoding="utf-8") as f:
    questions = [json.loads(line) for line in f]
  wrong = [(words.text(2), words.text(3)) for _ in questions]
  predictions = os.path.join(directory, "predictions")
  os.makedirs(predictions, exist_ok=True)
  systems = -(-rows // EVALUATE_QUESTIONS)
  for system in range(systems):
    with open(os.path.join(predictions, f"system-{system:03d}.csv"), "w", newline="",
              encoding="utf-8") as sink:
      writer = csv.writer(sink)
      writer.writerow(["question", "answer", "attribution"])
      for index, question in enumerate(questions):
        pick = (index * 7 + system * 5) % 9
        answer = (question["answer"][0], *wrong[index])[pick % 3]
        home = (index * 7) % EVALUATE_PASSAGES
        writer.writerow([question["question"], answer,
                         passage_id((home + pick // 3) % EVALUATE_PASSAGES)])
  return ["--predictions", os.path.join(predictions, "*.csv"), "--corpus", corpus,
          "--gold", gold, "--bootstrap_samples", "100"], systems * len(questions)


def write_agreement(directory: str, rows: int):
  path = os.path.join(directory, "ratings.csv")
  write_ratings(path, rows)
  return ["--input", path, "--format", "ratings"], rows


def read_count(job: str, manifest: dict) -> int:
  """The rows the job read, from its run.json."""
  counts = manifest["counts"]
  if job == "audit":
    return counts["candidates"]["read"]
  if job == "agreement":
    return counts["items"]
  return counts["read"]


def inputs(job: str, directory: str, rows: int, work: str):
  os.makedirs(directory, exist_ok=True)
  stamp = os.path.join(directory, "inputs.json")
  if os.path.exists(stamp):
    with open(stamp, encoding="utf-8") as f:
      return json.load(f)
  if job == "claims":
    made = write_claims(directory, rows)
  elif job == "sck":
    made = write_sck(directory, rows)
  elif job == "ais-annotations":
    made = write_ais_annotations(directory, rows)
  elif job == "audit":
    made = write_audit(directory, rows, work)
  elif job == "evaluate":
    made = write_evaluate(directory, rows, work)
  else:
    made = write_agreement(directory, rows)
  with open(stamp, "w", encoding="utf-8") as f:
    json.dump(made, f)
  return made


def base_job(job: str) -> str:
  """The autoais job that a job or case of JOBS runs (whose inputs it reads)."""
  return CASES.get(job, (job,))[0]


def command(job: str, work: str, rows: int, mode: str):
  """(the autoais job, its options) of a job or a case of one; claims-cache's
  cache directory is emptied here (measure() fills it, then measures a run of
  hits)."""
  name, options = base_job(job), CASES.get(job, (job, []))[1]
  if job == "claims-cache":
    cache = os.path.join(work, f"{job}_{rows}_{mode}_cache")
    shutil.rmtree(cache, ignore_errors=True)
    options = ["--scorer", "t5", "--model", tiny_model(work), "--torch_threads", "1",
               "--score_cache", cache]
  elif job in ("evaluate-t5", "claims-t5", "claims-t5-rerank"):
    options = options + ["--scorer", "t5", "--model", tiny_model(work),
                         "--torch_threads", "1"]
  return name, options


def run_job(name: str, arguments, label: str, mode: str, work: str, limit_mib: int,
            checkout: str):
  output = os.path.join(work, f"{label}_out")
  python = (os.path.join(checkout, ".venv", "bin", "python") if checkout != ROOT
            else AUTOAIS[0])
  code, seconds, peaks, _, killed = run_measured(
      [python, *AUTOAIS[1:], name, *arguments, "--output_dir", output, *MODES[mode]],
      os.path.join(work, f"{label}.log"), limit_mib=limit_mib, cwd=checkout)
  return output, code, seconds, by_role(peaks), killed


def measure(job: str, arguments, rows: int, mode: str, work: str, limit_mib: int,
            checkout: str):
  name, options = command(job, work, rows, mode)
  label = f"{job}_{rows}_{mode}"
  fill = None
  if job == "claims-cache":
    fill = run_job(name, arguments + options, f"{label}_fill", mode, work, limit_mib,
                   checkout)
  output, code, seconds, roles, killed = run_job(name, arguments + options, label,
                                                 mode, work, limit_mib, checkout)
  result = {"job": job, "mode": mode, "rows": rows, "seconds": round(seconds, 1),
            "peak_mib_by_role": roles,
            "peak_mib_total": sum(sum(values) for values in roles.values()),
            "killed": killed, "exit": code}
  if fill is not None:
    result.update(fill_peak_mib_by_role=fill[3], fill_seconds=round(fill[2], 1),
                  fill_exit=fill[1], fill_killed=fill[4])
    killed = result["killed"] = killed or fill[4]
  if killed:
    result["note"] = f"killed above {limit_mib} MiB at {rows} rows"
  elif code in (0, 3):
    with open(os.path.join(output, "run.json"), encoding="utf-8") as f:
      manifest = json.load(f)
    result["rows_read"] = read_count(name, manifest)
    if job == "claims-cache":
      result["cache_hits"] = manifest["scorer"].get("cache_hits")
      result["model_calls"] = manifest["scorer"].get("model_calls")
  print(json.dumps(result), file=sys.stderr, flush=True)
  return result


def ratio(large, small):
  if large is None or large["killed"] or large["exit"] not in (0, 3):
    return None
  return {role: round(max(large["peak_mib_by_role"][role]) /
                      max(small["peak_mib_by_role"][role]), 3)
          for role in small["peak_mib_by_role"] if role in large["peak_mib_by_role"]}


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--workdir", default=os.path.join(ROOT, "bench", "out", "memory"))
  parser.add_argument("--jobs", default=",".join(JOBS))
  parser.add_argument("--sizes", default="10000,100000,1000000")
  parser.add_argument("--modes", default=",".join(MODES))
  parser.add_argument("--limit_mib", type=int, default=6144)
  parser.add_argument("--checkout", default=ROOT,
                      help="the checkout whose jobs run (default: this one)")
  args = parser.parse_args()
  checkout = os.path.abspath(args.checkout)
  work = os.path.abspath(args.workdir)
  os.makedirs(work, exist_ok=True)
  sizes = [int(size) for size in args.sizes.split(",")]
  result = {"cpus": os.cpu_count(), "limit_mib": args.limit_mib, "checkout": checkout,
            "jobs": {}}
  for job in args.jobs.split(","):
    runs = {mode: {} for mode in args.modes.split(",")}
    for rows in sizes:
      directory = os.path.join(work, f"{base_job(job)}_{rows}")
      for mode, done in runs.items():
        if rows >= 1000000 and 100000 in sizes:
          # 1M only where the 100k run stayed flat (given without 100k, 1M runs).
          small, medium = done.get(sizes[0]), done.get(100000)
          flat = ratio(medium, small) if small and medium else None
          if not flat or max(flat.values()) > FLAT:
            done[rows] = {"skipped": "100k not flat or not run"}
            continue
        if any(run.get("killed") for run in done.values()):
          done[rows] = {"skipped": "a smaller run was killed"}
          continue
        arguments, written = inputs(base_job(job), directory, rows, work)
        done[rows] = measure(job, arguments, written, mode, work, args.limit_mib,
                             checkout)
    for mode, done in runs.items():
      small = done.get(sizes[0])
      for rows in sizes[1:]:
        large = done.get(rows)
        if small and large and "skipped" not in large and "skipped" not in small:
          done[f"ratio_{rows}_over_{sizes[0]}"] = ratio(large, small)
    result["jobs"][job] = runs
  print(json.dumps(result))


if __name__ == "__main__":
  main()
