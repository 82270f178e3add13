"""Start-up benchmark (not a test): how long `autoais` takes before it does work.

    .venv/bin/python bench/startup.py [--baseline OTHER/.venv/bin/python] [--rounds 5]

Times three commands, each a fresh process, wall seconds from start to exit:

* `python -c "import apache_beam"`: the floor, Beam alone;
* `autoais evaluate --help`;
* `autoais evaluate` on the bundled example (examples/predictions: 42 rows of
  three systems, string-match, against the example corpus built once here),
  a fresh output directory each time.

With --baseline, the same commands also run with another checkout's virtualenv
(its `python` and the `autoais` beside it; e.g. a worktree of the commit before a
change), alternated round by round with this one's, so both see the same machine.
Each figure is the best of --rounds. Also reports, for each interpreter, whether
the example run imports torch or transformers (one more run, in one process
through the entry point, reading sys.modules at its end). Prints one JSON line:
the figures, each command less the Beam import, and baseline / this ratios.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")
COMMANDS = ("import_apache_beam", "evaluate_help", "evaluate_example_run")
# Runs the entry point in this process, then names the model stack's modules it
# imported (a local run executes its pipeline in process).
_IMPORTS_PROBE = (
    "import json, sys\n"
    "from autoais.beam_jobs import cli\n"
    "code = cli.main(sys.argv[1:])\n"
    "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} &\n"
    "                        {'torch', 'transformers'})))\n"
    "sys.exit(code)\n")


def _evaluate_args(corpus: str, output_dir: str):
  return ["evaluate", "--predictions", os.path.join(EXAMPLES, "predictions", "*.csv"),
          "--corpus", corpus, "--gold", os.path.join(EXAMPLES, "gold.jsonl"),
          "--output_dir", output_dir]


def _command(python: str, name: str, corpus: str, output_dir: str):
  autoais = os.path.join(os.path.dirname(python), "autoais")
  if name == "import_apache_beam":
    return [python, "-c", "import apache_beam"]
  if name == "evaluate_help":
    return [autoais, "evaluate", "--help"]
  return [autoais, *_evaluate_args(corpus, output_dir)]


def _timed(argv) -> float:
  started = time.perf_counter()
  subprocess.run(argv, cwd=ROOT, check=True, stdout=subprocess.DEVNULL,
                 stderr=subprocess.DEVNULL)
  return time.perf_counter() - started


def _model_stack_imported(python: str, corpus: str, output_dir: str):
  done = subprocess.run([python, "-c", _IMPORTS_PROBE, *_evaluate_args(corpus, output_dir)],
                        cwd=ROOT, check=True, capture_output=True, text=True)
  return json.loads(done.stdout.strip().splitlines()[-1])


def _example_rows() -> int:
  rows = 0
  directory = os.path.join(EXAMPLES, "predictions")
  for name in os.listdir(directory):
    with open(os.path.join(directory, name), encoding="utf-8") as f:
      rows += sum(1 for line in f if line.strip()) - 1  # less the header
  return rows


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--baseline", default=None,
                      help="Another checkout's virtualenv python (the 'before').")
  parser.add_argument("--rounds", type=int, default=5)
  args = parser.parse_args()
  pythons = {"this": sys.executable}
  if args.baseline:
    pythons["baseline"] = args.baseline
  work = tempfile.mkdtemp(prefix="autoais-bench-startup-")
  corpus = os.path.join(work, "corpus")
  subprocess.run([os.path.join(os.path.dirname(sys.executable), "autoais"), "build-corpus",
                  "--input", os.path.join(EXAMPLES, "corpus", "*.jsonl"), "--output",
                  corpus, "--num_shards", "2"], check=True, stdout=subprocess.DEVNULL,
                 stderr=subprocess.DEVNULL)
  times = {label: {name: [] for name in COMMANDS} for label in pythons}
  runs = 0
  for _ in range(args.rounds):
    for label, python in pythons.items():
      for name in COMMANDS:
        runs += 1
        argv = _command(python, name, corpus, os.path.join(work, f"out{runs}"))
        times[label][name].append(_timed(argv))
  result = {"rounds": args.rounds, "example_rows": _example_rows()}
  for label, python in pythons.items():
    best = {name: round(min(values), 2) for name, values in times[label].items()}
    beam = best["import_apache_beam"]
    result[label] = {
        "python": python, "best_seconds": best,
        "over_beam_import_seconds": {name: round(best[name] - beam, 2)
                                     for name in COMMANDS[1:]},
        "example_run_imports": _model_stack_imported(
            python, corpus, os.path.join(work, f"probe-{label}"))}
  if "baseline" in result:
    result["baseline_over_this"] = {
        name: round(result["baseline"]["best_seconds"][name] /
                    result["this"]["best_seconds"][name], 2) for name in COMMANDS}
  print(json.dumps(result))


if __name__ == "__main__":
  main()
