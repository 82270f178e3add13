"""Does the pipeline keep an accelerator busy? (issue 49; not a test)

    .venv/bin/python bench/device_busy.py [--code BEFORE_CHECKOUT] [--scale 0.25]
        [--cases t5:h200-flan-t5-large,nli-classifier-roberta:h100-roberta-large]
        [--jobs evaluate,citations] [--modes in_process,two_processes] [--rounds 1]

A case is a family of bench/pipeline_cost.py (its tiny model, tokenizer and
inputs) with its model directory copied with the simulated accelerator's
marker at a measured card's rate (models/simulated_device.py): checks,
tokenisation, windows, token-budget batches and padding are the real
family's; each padded batch waits, the GIL released, for that card's time.
Each job runs in a fresh child process, in one of two modes:

  * in_process: the FnApiRunner in memory (a local run's default), one thread;
  * two_threads: `--direct_running_mode multi_threading --direct_num_workers
    2`: bundles on two threads of one process, sharing its model;
  * two_processes: `--direct_running_mode multi_processing
    --direct_num_workers 2 --large_model`: two SDK worker processes sharing
    one model, so one device, through Beam's multi-process shared model, as
    the SDK processes of a Dataflow GPU worker share its card.

Per run: the device's busy share of the scoring window (its first batch's
start to its last batch's end, every process's batches; the window spans a
job's rounds of scoring and what the pipeline does between them), distinct
pairs per wall second of the whole run, the host's CPU milliseconds per pair
(every process: the launcher and its worker processes, the model's server
among them), and that times the pairs the card scores per second of its
busy time (cores_to_keep_device_busy). Both are of the whole run, so they
carry each process's start-up (imports, the model's load, building the
pipeline) and overstate the cores a worker needs, most in small runs and
with worker processes: bench/gpu_keepup.py --device_busy_small takes the
marginal between two scales. `--code` runs another checkout beside this one ("before"),
alternating run by run; medians over `--rounds`. The last line is a
markdown table of every figure, before -> after.
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pipeline_cost  # pylint: disable=wrong-import-position
from pipeline import ROOT, Words  # pylint: disable=wrong-import-position

# (family of pipeline_cost.FAMILIES, rate of simulated_device.RATES): every
# local family at the cards it is published for.
CASES = ("t5:h100-true-11b", "t5:h200-flan-t5-large",
         "nli-classifier-roberta:h100-roberta-large",
         "nli-classifier-deberta:h100-deberta-v3-large",
         "minicheck-roberta:h100-roberta-large", "minicheck-flan-t5:h200-flan-t5-large")
MODES = {"in_process": [],
         "two_threads": ["--direct_running_mode", "multi_threading",
                         "--direct_num_workers", "2"],
         "two_processes": ["--direct_running_mode", "multi_processing",
                           "--direct_num_workers", "2", "--large_model", "true"]}
JOBS = ("evaluate", "citations")
GPU_TOKEN_BUDGET = 16384  # models/token_budget.py DEFAULT_TOKEN_BUDGET["cuda"]


def figures(result: dict) -> dict:
  pairs = pipeline_cost.distinct_pairs(result["run_json"])
  cpu = result["cpu_s"] + result["children_cpu_s"]
  per_pair = cpu / pairs
  device_pairs_per_s = pairs / result["device_busy_s"]
  return {"distinct_pairs": pairs, "device_busy_share": result["device_busy_share"],
          "pairs_per_wall_s": pairs / result["wall_s"], "wall_s": result["wall_s"],
          "host_cpu_ms_per_pair": 1000 * per_pair,
          "device_pairs_per_busy_s": device_pairs_per_s,
          "cores_to_keep_device_busy": per_pair * device_pairs_per_s,
          "device_processes": result["device_processes"]}


def checkout_site(work: str, name: str, code: str) -> str:
  """A folder whose sitecustomize.py makes every Python process started with
  it on PYTHONPATH import `autoais` from `code`: the worker processes of
  multi_processing too, which the child's own import hook does not reach."""
  folder = os.path.join(work, f"site-{name}")
  os.makedirs(folder, exist_ok=True)
  with open(os.path.join(folder, "sitecustomize.py"), "w", encoding="utf-8") as f:
    f.write(f"import sys\nsys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n"
            f"import pipeline_cost\npipeline_cost.use_checkout({code!r})\n")
  return folder


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--code", help="another checkout, measured beside this one (before)")
  parser.add_argument("--cases", default=",".join(CASES))
  parser.add_argument("--jobs", default=",".join(JOBS))
  parser.add_argument("--modes", default="in_process,two_processes")
  parser.add_argument("--scale", type=float, default=0.25)
  parser.add_argument("--rounds", type=int, default=1)
  parser.add_argument("--workdir", default=os.path.join(ROOT, "bench", "out", "device_busy"))
  parser.add_argument("--child", help=argparse.SUPPRESS)
  args = parser.parse_args()
  if args.child:
    pipeline_cost.child(json.loads(args.child))
    return
  work = args.workdir
  os.makedirs(work, exist_ok=True)
  words = Words(seed=1)
  checkouts = {"after": ROOT, **({"before": os.path.abspath(args.code)} if args.code else {})}
  argvs = {}
  for job in args.jobs.split(","):
    os.makedirs(os.path.join(work, job), exist_ok=True)
    argvs[job] = pipeline_cost.WRITERS[job](os.path.join(work, job), args.scale, words)["argv"]
  sites = {name: checkout_site(work, name, code) for name, code in checkouts.items()}
  rows = []
  for case in args.cases.split(","):
    family, rate = case.split(":")
    # The token budget of a GPU run (the simulated card stands in for one;
    # on a CPU device the default budget would be the CPU's, 2,048).
    flags = pipeline_cost.build_family_model(family, work, words) + [
        "--torch_threads", "1", "--token_budget", str(GPU_TOKEN_BUDGET)]
    flags, record = pipeline_cost.simulated_model(flags, rate, work)
    for job, argv in argvs.items():
      for mode in args.modes.split(","):
        runs = {name: [] for name in checkouts}
        for _ in range(args.rounds):
          for name, code in checkouts.items():
            os.environ["PYTHONPATH"] = sites[name]
            result = pipeline_cost.run_child(
                code, job, flags + MODES[mode], argv,
                os.path.join(work, f"out-{job}-{family}-{rate}-{mode}-{name}"), False, rate,
                record, script=__file__)
            runs[name].append(figures(result))
        row = {"family": family, "rate": rate, "job": job, "mode": mode}
        for name, measured in runs.items():
          row[name] = {key: round(statistics.median(m[key] for m in measured), 3)
                       for key in measured[0]}
        rows.append(row)
        print(json.dumps(row), flush=True)
  print(table(rows, list(checkouts)))


def table(rows, names) -> str:
  def both(row, key, digits):
    values = [f"{row[name][key]:.{digits}f}" for name in reversed(names)]
    return " -> ".join(values)
  lines = ["| family | rate | job | mode | busy share | pairs / wall s | host CPU ms / pair "
           "| cores to keep the card busy |", "|---|---|---|---|---:|---:|---:|---:|"]
  for row in rows:
    lines.append(f"| {row['family']} | {row['rate']} | {row['job']} | {row['mode']} | "
                 f"{both(row, 'device_busy_share', 3)} | {both(row, 'pairs_per_wall_s', 1)} | "
                 f"{both(row, 'host_cpu_ms_per_pair', 2)} | "
                 f"{both(row, 'cores_to_keep_device_busy', 2)} |")
  return "\n".join(lines)


if __name__ == "__main__":
  main()
