"""Does the accelerator wait for the pipeline? `autoais evaluate` on a real GPU
(not a test; needs CUDA and NVML).

    python3 bench/gpu_pipeline.py [--scale 4] [--runs flan-t5-large:in_process,...]
        [--workdir DIR] [--out DIR]

The leaderboard of bench/pipeline_cost.py's evaluate case (8 systems x 1,500
x `--scale` questions citing a 20k-passage corpus, systems sharing answers and
passages) scored end to end by `autoais evaluate` on the DirectRunner with a
random-weight model of a published shape on the GPU in bfloat16: the t5 family
with a Flan-T5-large-shaped checkpoint (tests/support/t5_models.py) and the
nli-classifier family with a RoBERTa-large-shaped one
(tests/support/nli_classifiers.py), each tokenizer trained here on the
synthetic passages. Each run (`MODEL:MODE`, MODE in_process or
multi_processing with `--direct_num_workers 4`) is a child process timed
whole; a thread of this process samples the GPU's utilisation (NVML: the share
of the last sample period in which a kernel ran) every 0.2 s. Reported per
run: wall seconds, distinct pairs scored (run.json's model_calls), the
scoring window (first to last sample with the GPU busy), the distinct pairs
per second of that window, and the GPU's mean utilisation over it: near 100%
means the model, not the pipeline, set the pace.
"""
import argparse
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline import AUTOAIS, ROOT, Words  # pylint: disable=wrong-import-position
from pipeline_cost import distinct_pairs, write_evaluate_inputs  # pylint: disable=wrong-import-position
from gpu_families import SHAPES  # pylint: disable=wrong-import-position

MODES = {"in_process": [],
         "multi_processing": ["--direct_running_mode", "multi_processing",
                              "--direct_num_workers", "4"]}


def build_models(work: str, words: Words, names) -> dict:
  from tests.support.nli_classifiers import build_tiny_classifier  # pylint: disable=import-outside-toplevel
  from tests.support.t5_models import build_random_t5  # pylint: disable=import-outside-toplevel
  from tests.support.vocab import example_texts  # pylint: disable=import-outside-toplevel
  # The example texts give the vocabulary the label pieces "1" and "0" that the
  # synthetic words lack (the t5 family refuses a tokenizer that cannot tell them apart).
  texts = [words.passage(i) for i in range(2000)] + list(example_texts())
  models = {}
  if "flan-t5-large" in names:
    fields = SHAPES["flan-t5-large"][2]
    directory = build_random_t5(
        os.path.join(work, "flan-t5-large-shaped"), texts, vocab_size=4000,
        model_vocab_size=32128, d_model=fields["d_model"], d_kv=fields["d_kv"],
        d_ff=fields["d_ff"], num_layers=fields["num_layers"],
        num_heads=fields["num_heads"], version="1.1")
    models["flan-t5-large"] = ["--scorer", "t5", "--model", directory]
  if "roberta-large" in names:
    fields = SHAPES["roberta-large"][2]
    directory = build_tiny_classifier(
        os.path.join(work, "roberta-large-shaped"), "roberta",
        {0: "entailment", 1: "neutral", 2: "contradiction"}, texts,
        model_max_length=512,
        size={key: fields[key] for key in ("hidden_size", "num_hidden_layers",
                                           "num_attention_heads", "intermediate_size")})
    models["roberta-large"] = ["--scorer", "nli-classifier", "--model", directory]
  return models


class GpuSampler(threading.Thread):
  """(seconds since start, utilisation %) of GPU 0 every `interval` seconds."""

  def __init__(self, interval: float = 0.2, enabled: bool = True):
    super().__init__(daemon=True)
    self._nvml = self._handle = None
    if enabled:
      import pynvml  # pylint: disable=import-outside-toplevel
      pynvml.nvmlInit()
      self._nvml = pynvml
      self._handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    self._interval = interval
    self._stopping = threading.Event()
    self.samples = []
    self.start_time = time.perf_counter()

  def run(self):
    while self._nvml and not self._stopping.is_set():
      rates = self._nvml.nvmlDeviceGetUtilizationRates(self._handle)
      self.samples.append((time.perf_counter() - self.start_time, rates.gpu))
      time.sleep(self._interval)

  def stop(self):
    self._stopping.set()
    self.join()


def run_one(name: str, mode: str, model_argv, inputs: dict, work: str,
            device: str) -> dict:
  output = os.path.join(work, f"out-{name}-{mode}")
  argv = (AUTOAIS + ["evaluate"] + inputs["argv"] + model_argv
          + ["--device", device, "--dtype", "bfloat16", "--output_dir", output,
             "--progress_interval", "0"] + MODES[mode])
  sampler = GpuSampler(enabled=device == "cuda")
  sampler.start()
  started = time.perf_counter()
  process = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
  wall = time.perf_counter() - started
  sampler.stop()
  if process.returncode:
    return {"run": f"{name}:{mode}", "failed": process.returncode,
            "stderr": process.stderr[-2000:]}
  with open(os.path.join(output, "run.json"), encoding="utf-8") as f:
    record = json.load(f)
  pairs = distinct_pairs(record)
  busy = [t for t, utilisation in sampler.samples if utilisation > 0]
  window = (busy[-1] - busy[0]) if len(busy) > 1 else 0.0
  in_window = [u for t, u in sampler.samples if busy and busy[0] <= t <= busy[-1]]
  return {"run": f"{name}:{mode}", "wall_s": round(wall, 1),
          "rows": record["counts"]["read"], "rows_scored": record["counts"]["scored"],
          "timings": record.get("timings"),
          "distinct_pairs": pairs, "scoring_window_s": round(window, 1),
          "pairs_per_window_s": round(pairs / window, 1) if pairs and window else None,
          "gpu_mean_utilisation_in_window": (round(sum(in_window) / len(in_window), 1)
                                             if in_window else None),
          "gpu_mean_utilisation_whole_run": round(
              sum(u for _, u in sampler.samples) / max(1, len(sampler.samples)), 1),
          "samples": len(sampler.samples)}


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--scale", type=float, default=4.0)
  parser.add_argument("--runs", default="flan-t5-large:in_process,roberta-large:in_process,"
                      "roberta-large:multi_processing")
  parser.add_argument("--workdir", default="/tmp/gpu_pipeline")
  parser.add_argument("--out", default=None)
  parser.add_argument("--device", default="cuda",
                      help="cpu: a dry run of the same steps without a GPU (no utilisation)")
  args = parser.parse_args()
  runs = [tuple(run.split(":")) for run in args.runs.split(",")]
  for name, mode in runs:
    if name not in ("flan-t5-large", "roberta-large") or mode not in MODES:
      sys.exit(f"--runs: {name}:{mode} is not MODEL:MODE of flan-t5-large, roberta-large "
               f"and {', '.join(MODES)}")
  os.makedirs(args.workdir, exist_ok=True)
  words = Words(7)
  started = time.perf_counter()
  inputs_dir = os.path.join(args.workdir, "evaluate")
  os.makedirs(inputs_dir, exist_ok=True)
  inputs = write_evaluate_inputs(inputs_dir, args.scale, words)
  models = build_models(args.workdir, words, {name for name, _ in runs})
  print(json.dumps({"prepared_s": round(time.perf_counter() - started, 1),
                    "scale": args.scale}), flush=True)
  records = []
  for name, mode in runs:
    record = run_one(name, mode, models[name], inputs, args.workdir, args.device)
    records.append(record)
    print(json.dumps(record), flush=True)
  if args.out:
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "gpu_pipeline.json"), "w", encoding="utf-8") as f:
      json.dump(records, f, indent=1)


if __name__ == "__main__":
  main()
