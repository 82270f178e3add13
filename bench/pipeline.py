"""End-to-end pipeline benchmark (not a test): throughput, memory, join reads.

    .venv/bin/python bench/pipeline.py [--quick] [--workdir bench/out]
        [--memory_only] [--skip_large]

Generates synthetic workloads (S systems x Q questions of predictions, N passages
of corpus) and runs `autoais build-corpus` and `autoais evaluate` (string-match,
DirectRunner, in-process) as separate processes, measuring each side by side in
this one run. Prints one JSON line:

* throughput: 23 x 3,610 predictions against a 100k-passage corpus, rows/s of
  the whole evaluate command (process start to exit) and of the pipeline alone
  (run.json timings), medians of --repeat runs, in-process and 2 processes,
  each run preceded by a fixed pure-Python yardstick (seconds; lower is a
  faster machine at that moment);
* memory: peak RSS of evaluate at ~10k, ~100k and ~1M prediction rows (3,610
  questions, 3, 28 and 277 systems, same corpus) and their ratios to ~10k
  (--memory_only: these runs alone);
* join: bytes the lookup join read / corpus bytes, 1k predictions against a
  1M-passage corpus (and the same for 83k predictions).

--quick shrinks every size by 10x for a smoke run.
"""
import argparse
import csv
import json
import os
import random
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AUTOAIS = [sys.executable, "-m", "autoais.beam_jobs.cli"]


class Words:
  """A deterministic pseudo-vocabulary; passage i's text depends on i alone."""

  def __init__(self, seed: int, size: int = 20000):
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    self.words = ["".join(rng.choice(letters) for _ in range(rng.randint(3, 10)))
                  for _ in range(size)]
    self.rng = rng

  def text(self, n: int) -> str:
    return " ".join(self.rng.choice(self.words) for _ in range(n))

  def passage(self, index: int, n: int = 80) -> str:
    rng = random.Random(index)
    return " ".join(rng.choices(self.words, k=n))


def passage_id(index: int) -> str:
  title = f"Synthetic_page_{index // 4}"
  return f"http://en.wikipedia.org/wiki/{title}#{title}#Section_{index % 4}#{index % 4}"


def home_passage(question: int, n_passages: int) -> int:
  """The passage that answers a question; systems also cite its 3 neighbours."""
  return (question * 7) % n_passages


def write_corpus(directory: str, n_passages: int, words: Words, n_files: int = 8):
  os.makedirs(directory, exist_ok=True)
  files = [open(os.path.join(directory, f"part-{i:03d}.jsonl"), "w", encoding="utf-8")
           for i in range(n_files)]
  for index in range(n_passages):
    title = f"Synthetic page {index // 4}"
    contents = f"« {title} » « {title}, Section {index % 4} » {words.passage(index)}"
    files[index % n_files].write(json.dumps({"id": passage_id(index),
                                             "contents": contents}) + "\n")
  for f in files:
    f.close()


def write_gold(path: str, n_questions: int, n_passages: int, words: Words):
  """Gold answers are spans of each question's home passage."""
  with open(path, "w", encoding="utf-8") as f:
    for q in range(n_questions):
      home = words.passage(home_passage(q, n_passages)).split()
      f.write(json.dumps({"question": f"question {q} {words.text(8)}",
                          "answer": [" ".join(home[10:12]), home[30]]}) + "\n")


def write_predictions(directory: str, gold_path: str, n_systems: int,
                      n_passages: int, words: Words, n_questions: int = None):
  """Each system answers right 40% of the time and cites the home passage or one
  of its neighbours, so systems share answers and passages."""
  os.makedirs(directory, exist_ok=True)
  with open(gold_path, encoding="utf-8") as f:
    gold = [json.loads(line) for line in f]
  if n_questions is not None:
    gold = gold[:n_questions]
  rng = random.Random(7)
  rows = 0
  for s in range(n_systems):
    with open(os.path.join(directory, f"system-{s:03d}.csv"), "w", newline="",
              encoding="utf-8") as f:
      writer = csv.writer(f)
      writer.writerow(["question", "answer", "attribution"])
      for g in gold:
        answer = g["answer"][0] if rng.random() < 0.4 else words.text(2)
        q = int(g["question"].split()[1])
        cited = home_passage(q, n_passages) + (0 if rng.random() < 0.5 else
                                               rng.randint(1, 3))
        writer.writerow([g["question"], answer, passage_id(cited % n_passages)])
        rows += 1
  return rows


def peak_rss_mib(args):
  """Runs args in a child and returns (wall seconds, its peak RSS in MiB)."""
  wrapper = [sys.executable, "-c",
             "import resource, subprocess, sys, time\n"
             "t = time.time()\n"
             "code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL, "
             "stderr=subprocess.DEVNULL)\n"
             "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
             "print(code, time.time() - t, peak)\n"] + args
  output = subprocess.run(wrapper, cwd=ROOT, capture_output=True, text=True, check=True)
  code, wall, peak = output.stdout.split()
  if code != "0":
    raise SystemExit(f"command failed ({code}): {' '.join(args)}")
  return float(wall), float(peak)


def python_speed_seconds(repeat: int = 3) -> float:
  """Best time of a fixed pure-Python workload (string and dict work like the
  job's): this machine's speed drifts, so each throughput figure is printed
  with this yardstick, measured just before it."""
  text = " ".join(f"Word{i % 97}, the {i}" for i in range(2000))
  best = float("inf")
  for _ in range(repeat):
    start = time.perf_counter()
    counts = {}
    for _ in range(40):
      for token in text.lower().replace(",", " ").split():
        counts[token] = counts.get(token, 0) + 1
    best = min(best, time.perf_counter() - start)
  return round(best, 3)


def build_corpus(source_dir, corpus_dir, num_shards):
  return peak_rss_mib(AUTOAIS + ["build-corpus", "--input", f"{source_dir}/*.jsonl",
                                 "--output", corpus_dir, "--num_shards", str(num_shards)])


def evaluate(predictions_dir, corpus_dir, gold_path, output_dir, *extra):
  wall, peak = peak_rss_mib(AUTOAIS + [
      "evaluate", "--predictions", f"{predictions_dir}/*.csv", "--corpus", corpus_dir,
      "--gold", gold_path, "--output_dir", output_dir, *extra])
  with open(os.path.join(output_dir, "run.json"), encoding="utf-8") as f:
    return wall, peak, json.load(f)


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--workdir", default=os.path.join(ROOT, "bench", "out"))
  parser.add_argument("--quick", action="store_true")
  parser.add_argument("--repeat", type=int, default=3,
                      help="runs of each throughput configuration (median reported)")
  parser.add_argument("--skip_large", action="store_true",
                      help="skip the 1M-passage corpus and the 1M-row run")
  parser.add_argument("--memory_only", action="store_true",
                      help="only the memory runs (no throughput, no join reads)")
  args = parser.parse_args()
  scale = 10 if args.quick else 1
  work = args.workdir
  os.makedirs(work, exist_ok=True)
  words = Words(seed=1)
  result = {"quick": args.quick}

  n_questions = 3610
  n_passages = 100000 // scale
  gold = os.path.join(work, "gold.jsonl")
  write_gold(gold, n_questions, n_passages, words)
  write_corpus(os.path.join(work, "src100k"), n_passages, words)
  wall, peak = build_corpus(os.path.join(work, "src100k"), os.path.join(work, "corpus100k"),
                            64)
  result["build_corpus_100k"] = {"passages": n_passages, "seconds": round(wall, 2),
                                 "passages_per_s": round(n_passages / wall),
                                 "peak_rss_mib": round(peak)}

  # Throughput: 23 systems x 3,610 questions, in-process and on 2 worker processes.
  rows = (0 if args.memory_only else write_predictions(
      os.path.join(work, "pred23"), gold, 23, n_passages, words, n_questions // scale))
  result["throughput"] = {"rows": rows}
  modes = {} if args.memory_only else {"in_process": [],
           "multi_process_2": ["--direct_running_mode=multi_processing",
                               "--direct_num_workers=2"]}
  for mode, flags in modes.items():
    # This machine's speed drifts by 20% from minute to minute: repeat, take medians.
    walls, pipelines, peaks, yardsticks = [], [], [], []
    for _ in range(args.repeat):
      yardsticks.append(python_speed_seconds())
      wall, peak, manifest = evaluate(os.path.join(work, "pred23"),
                                      os.path.join(work, "corpus100k"), gold,
                                      os.path.join(work, f"eval23_{mode}"), *flags)
      assert manifest["counts"]["read"] == rows
      walls.append(wall)
      pipelines.append(manifest["timings"]["wall_seconds"])
      peaks.append(peak)
    wall = statistics.median(walls)
    result["throughput"][mode] = {
        "command_seconds": round(wall, 2), "rows_per_s": round(rows / wall),
        "command_seconds_all": [round(w, 2) for w in walls],
        "pipeline_seconds": statistics.median(pipelines),
        "pipeline_rows_per_s": round(rows / statistics.median(pipelines)),
        "peak_rss_mib": round(max(peaks)),
        "python_yardstick_seconds": yardsticks,
        "join_bytes_read_fraction": round(manifest["join"]["bytes_read_fraction"], 4),
        "string_match_mean": None}
    with open(os.path.join(work, f"eval23_{mode}", "leaderboard.json")) as f:
      systems = json.load(f)["systems"]
    # A string-match run: its figure's key is string_match (docs/scorers.md).
    result["throughput"][mode]["string_match_mean"] = round(
        sum(system["string_match"] for system in systems) / len(systems), 4)

  # Memory: ~10k, ~100k and ~1M prediction rows, same gold and corpus.
  memory = {}
  sizes = {"small": 3, "medium": 28 // scale}
  if not args.skip_large:
    sizes["large"] = 277 // scale
  for label, n_systems in sizes.items():
    directory = os.path.join(work, f"pred_{label}")
    rows = write_predictions(directory, gold, n_systems, n_passages, words)
    wall, peak, manifest = evaluate(directory, os.path.join(work, "corpus100k"), gold,
                                    os.path.join(work, f"eval_{label}"))
    memory[label] = {"rows": rows, "seconds": round(wall, 2),
                     "rows_per_s": round(rows / wall), "peak_rss_mib": round(peak)}
  memory["rss_ratio_medium_over_small"] = round(
      memory["medium"]["peak_rss_mib"] / memory["small"]["peak_rss_mib"], 3)
  if "large" in memory:
    memory["rss_ratio_large_over_small"] = round(
        memory["large"]["peak_rss_mib"] / memory["small"]["peak_rss_mib"], 3)
  result["memory"] = memory

  # Join reads: 1k predictions against a 1M-passage corpus.
  if not (args.skip_large or args.memory_only):
    n_big = 1000000 // scale
    write_corpus(os.path.join(work, "src1m"), n_big, words)
    wall, peak = build_corpus(os.path.join(work, "src1m"), os.path.join(work, "corpus1m"),
                              4096 // scale)
    result["build_corpus_1m"] = {"passages": n_big, "seconds": round(wall, 2),
                                 "passages_per_s": round(n_big / wall),
                                 "peak_rss_mib": round(peak)}
    directory = os.path.join(work, "pred1k")
    rows = write_predictions(directory, gold, 1, n_big, words, 1000)
    _, _, manifest = evaluate(directory, os.path.join(work, "corpus1m"), gold,
                              os.path.join(work, "eval1k"))
    join = manifest["join"]
    result["join_1k_vs_1m"] = {"predictions": rows, "bytes_read": join["bytes_read"],
                               "corpus_bytes": join["corpus_bytes"],
                               "fraction": round(join["bytes_read_fraction"], 4),
                               "row_groups_read": join["row_groups_read"]}
  print(json.dumps(result))


if __name__ == "__main__":
  main()
