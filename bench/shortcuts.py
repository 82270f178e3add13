"""What each tokenisation shortcut of models/ saves on whole runs (issue 47,
item 1; not a test): every job run with the shortcuts as they are and with
one switched off, side by side in one bench run, alternating.

    .venv/bin/python bench/shortcuts.py --family t5 --model_cost cpu \\
        [--jobs evaluate,claims,citations] [--rounds 2] [--scale 0.5] \\
        [--variants all,t5-whole-inputs,...]

The jobs, inputs, families and model costs are bench/pipeline_cost.py's
(`--model_cost cpu`: the tiny model's own forward pass on this CPU; a rate
of models/simulated_device.py: a simulated card). A variant switches one
shortcut off in the measuring process (SWITCHES); `all` keeps every one.
Each run prints its whole run's CPU and wall seconds; the last line gives,
per job and variant, the median wall and CPU seconds and their ratio to
`all` (above 1: the shortcut saved that much of a whole run).

The switches reach into the models' internals as they were when this
script was written (a cache of size 0, a strategy fixed, a tokenizer
property forced off); a switch whose attribute is gone fails the run.
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pipeline_cost  # pylint: disable=wrong-import-position
from pipeline import ROOT, Words  # pylint: disable=wrong-import-position


def _after_init(cls, change):
  real = cls.__init__

  def init(self, *args, **kwargs):
    real(self, *args, **kwargs)
    change(self)

  cls.__init__ = init


def _set(**values):
  def change(model):
    for name, value in values.items():
      if not hasattr(model, name):
        raise AttributeError(f"{type(model).__name__} has no {name}: the switch is stale")
      setattr(model, name, value() if callable(value) else value)
  return change


def switch(name: str) -> None:
  from autoais.models import minicheck, nli_classifier, t5_nli  # pylint: disable=import-outside-toplevel
  from autoais.models.token_budget import PieceCache  # pylint: disable=import-outside-toplevel
  empty = lambda: PieceCache(0)  # keeps nothing
  t5, classifier = t5_nli.T5NliModel, nli_classifier.NliClassifierModel
  switches = {
      # The four PieceCaches of T5NliModel, one at a time.
      "t5-premise-cache": (t5, _set(_premise_pieces=empty)),
      "t5-encoding-cache": (t5, _set(_premises=empty)),
      "t5-line-caches": (t5, _set(_line_pieces=empty, _line_ids=empty)),
      # The words' pieces (_WordPieces): texts tokenised whole instead.
      "t5-word-pieces": (t5, _set(_word_pieces=False)),
      # The switch of strategy, fixed one way or the other.
      "t5-ids-first": (t5, lambda m: setattr(m, "_offsets_first", lambda: False)),
      "t5-offsets-first": (t5, lambda m: setattr(m, "_offsets_first", lambda: True)),
      # Every T5 shortcut at once: the whole inputs in one tokenizer call and
      # each window's text tokenised whole (the tokenizer's own path).
      "t5-whole-inputs": (t5, _set(_words_apart=False)),
      "classifier-premise-cache": (classifier, _set(_premises=empty)),
      # The pair template: the tokenizer's own pair encoding, pair by pair.
      "classifier-template": (classifier, _set(_template=None)),
      "minicheck-block-cache": (minicheck.MiniCheckModel, _set(_blocks=lambda: PieceCache(
          0, size=minicheck._characters))),  # pylint: disable=protected-access
  }
  cls, change = switches[name]
  _after_init(cls, change)


VARIANTS = ("all", "t5-premise-cache", "t5-encoding-cache", "t5-line-caches",
            "t5-word-pieces", "t5-ids-first", "t5-offsets-first", "t5-whole-inputs",
            "classifier-premise-cache", "classifier-template", "minicheck-block-cache")


def run(variant: str, job: str, flags: list, argv: list, output: str, model_cost: str,
        record: str) -> dict:
  result = pipeline_cost.run_child(ROOT, job, flags, argv, output, False, model_cost,
                                   record, script=__file__, variant=variant)
  result["pairs"] = pipeline_cost.distinct_pairs(result.pop("run_json"))
  return result


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--family", default="t5", choices=sorted(pipeline_cost.FAMILIES))
  parser.add_argument("--model_cost", default="cpu")
  parser.add_argument("--jobs", default="evaluate,claims,citations")
  parser.add_argument("--variants", default="all,t5-whole-inputs")
  parser.add_argument("--rounds", type=int, default=2)
  parser.add_argument("--scale", type=float, default=0.5)
  parser.add_argument("--workdir", default=os.path.join(ROOT, "bench", "out",
                                                        "pipeline_cost"))
  parser.add_argument("--child", help=argparse.SUPPRESS)
  args = parser.parse_args()
  if args.child:
    spec = json.loads(args.child)
    if spec["variant"] != "all":
      # The models of the measured checkout, switched before the job imports them.
      pipeline_cost.use_checkout(spec["code"])
      switch(spec["variant"])
    pipeline_cost.child(spec)
    return
  variants = args.variants.split(",")
  unknown = set(variants) - set(VARIANTS)
  if unknown:
    raise SystemExit(f"--variants: unknown {sorted(unknown)}; choose from {VARIANTS}")
  work = args.workdir
  os.makedirs(work, exist_ok=True)
  words = Words(seed=1)
  flags = pipeline_cost.build_family_model(args.family, work, words) + ["--torch_threads", "1"]
  record = ""
  if args.model_cost not in ("instant", "cpu"):
    flags, record = pipeline_cost.simulated_model(flags, args.model_cost, work)
  summary = {}
  for job in args.jobs.split(","):
    inputs = os.path.join(work, f"{job}-scale{args.scale}")
    os.makedirs(inputs, exist_ok=True)
    argv = pipeline_cost.WRITERS[job](inputs, args.scale, words)["argv"]
    runs = {variant: [] for variant in variants}
    for round_ in range(args.rounds):
      # Alternating, the order turned each round.
      for variant in (variants if round_ % 2 == 0 else variants[::-1]):
        result = run(variant, job, flags, argv,
                     os.path.join(work, f"out-shortcuts-{job}-{variant}"),
                     args.model_cost, record)
        runs[variant].append(result)
        print(json.dumps({"job": job, "variant": variant, "round": round_,
                          **{k: round(v, 3) if isinstance(v, float) else v
                             for k, v in result.items()}}), flush=True)
    base_wall = statistics.median(r["wall_s"] for r in runs["all"]) if "all" in runs else None
    base_cpu = statistics.median(r["cpu_s"] for r in runs["all"]) if "all" in runs else None
    summary[job] = {}
    for variant, results in runs.items():
      wall = statistics.median(r["wall_s"] for r in results)
      cpu = statistics.median(r["cpu_s"] for r in results)
      summary[job][variant] = {
          "pairs": results[0]["pairs"], "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
          "walls": [round(r["wall_s"], 2) for r in results],
          **({"wall_over_all": round(wall / base_wall, 3),
              "cpu_over_all": round(cpu / base_cpu, 3)} if base_wall else {}),
          **({"device_busy_share": round(statistics.median(
              r["device_busy_share"] for r in results), 3)} if record else {})}
  print(json.dumps({"family": args.family, "model_cost": args.model_cost,
                    "scale": args.scale, "summary": summary}))


if __name__ == "__main__":
  main()
