"""What each tokenisation shortcut of models/ saves on whole runs (issue 47,
item 1; not a test): every job run with the shortcuts as they are and with
one switched off, side by side in one bench run, alternating.

    .venv/bin/python bench/shortcuts.py --family t5 --model_cost cpu \\
        [--jobs evaluate,claims,citations] [--rounds 2] [--scale 0.5] \\
        [--variants all,minicheck-block-cache] [--code NAME=CHECKOUT ...]

The jobs, inputs, families and model costs are bench/pipeline_cost.py's
(`--model_cost cpu`: the tiny model's own forward pass on this CPU; a rate
of models/simulated_device.py: a simulated card). A variant switches one
shortcut off in the measuring process (switch()); `all` keeps every one.
Each run prints its whole run's CPU and wall seconds; the last line gives,
per job and variant, the median wall and CPU seconds and their ratio to
`all` (above 1: the shortcut saved that much of a whole run).

A switch reaches into a model's internals (a cache of size 0); a switch
whose attribute is gone fails the run. bench/README.md gives the figures of
the shortcuts removed since, measured with this script at commit 74f3c87.
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


def _through_transformers(tokenizer, texts, add_special_tokens=True, offsets=False):
  """LockedTokenizer.input_ids through transformers' wrapper alone (not the
  fast backend's encode_batch)."""
  with tokenizer._lock:  # pylint: disable=protected-access
    encoded = tokenizer.unlocked(list(texts), add_special_tokens=add_special_tokens,
                                 verbose=False, return_offsets_mapping=offsets)
  if offsets:
    return list(zip(encoded["input_ids"], encoded["offset_mapping"]))
  return encoded["input_ids"]


def switch(name: str) -> None:
  # pylint: disable=import-outside-toplevel
  from autoais.models import checkpoints, factcg, minicheck, nli_classifier
  from autoais.models.token_budget import TextCache
  classifier = nli_classifier.NliClassifierModel
  if name == "tokenizer-backend":
    checkpoints.LockedTokenizer.input_ids = _through_transformers
    return
  switches = {
      "classifier-premise-cache": (classifier, _set(_premises=lambda: TextCache(0))),
      # The pair template: the tokenizer's own pair encoding, pair by pair.
      "classifier-template": (classifier, _set(_template=None)),
      # MiniCheck's cache of each document line's sentences.
      "minicheck-block-cache": (minicheck.MiniCheckModel, _set(_blocks=lambda: TextCache(0))),
      # FactCG's cache of each document's chunks.
      "factcg-chunk-cache": (factcg.FactcgModel, _set(_chunks=lambda: TextCache(0))),
  }
  cls, change = switches[name]
  _after_init(cls, change)


# The shortcuts removed after their measurement were switched by this script
# as of commit 74f3c87 (the premise, encoding, line and word caches of the t5
# family, its strategy switch and its tokenising apart) and of a53819f (the
# t5 family's cache of words' ids, variant t5-word-cache).
VARIANTS = ("all", "tokenizer-backend", "classifier-premise-cache",
            "classifier-template", "minicheck-block-cache", "factcg-chunk-cache")


def run(variant: str, job: str, flags: list, argv: list, output: str, model_cost: str,
        record: str, code: str = ROOT) -> dict:
  result = pipeline_cost.run_child(code, job, flags, argv, output, False, model_cost,
                                   record, script=__file__,
                                   variant=variant if code == ROOT else "all")
  result["pairs"] = pipeline_cost.distinct_pairs(result.pop("run_json"))
  return result


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--family", default="t5", choices=sorted(pipeline_cost.FAMILIES))
  parser.add_argument("--model_cost", default="cpu")
  parser.add_argument("--jobs", default="evaluate,claims,citations")
  parser.add_argument("--variants", default="all")
  parser.add_argument("--code", action="append", default=[],
                      help="NAME=CHECKOUT: another checkout's code as a variant")
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
  codes = dict(item.split("=", 1) for item in args.code)
  variants = args.variants.split(",") + list(codes)
  unknown = set(variants) - set(VARIANTS) - set(codes)
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
                     args.model_cost, record, os.path.abspath(codes.get(variant, ROOT)))
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
