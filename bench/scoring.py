"""T5 NLI scoring benchmark (not a test): the reference loop against our scorer.

    .venv/bin/python bench/scoring.py [--n 256] [--job_rows 1024] [--job_rounds 2]
        [--workdir bench/out] [--parts reference,reduced,job,threads,leaderboard]
        [--threads_rows 256] [--threads_rounds 2]

On one random-weight T5 with t5-small's shape (d_model 512, 6+6 layers, d_ff
2048, vocabulary 32128; its SentencePiece vocabulary trained on the NQ oracle
passages) and N premises of real length (NQ oracle passages, one or two per
premise), measured side by side in this run:

* the reference loop of the Attributed QA script: per example, tokenise,
  `generate`, decode, compare with "1". A trained NLI model emits "1"/"0" and
  "</s>" (two decoder steps); random weights never stop, so generation is
  capped at those two steps;
* our scorer (models/t5_nli.py) in float32: length-sorted token-budget
  batches, one encoder pass and one decoder step;
* reduced precision: bfloat16 where the CPU multiplies bf16 matrices fast
  (measured here first), and torch int8 dynamic quantisation of the linear
  layers in three variants (INT8_VARIANTS), with the int8 GEMM peak of this CPU
  and the speedup over the reference that it caps any int8 path at;
  agreement with float32 is taken at the median float32 score (random
  weights put most scores on one side of 0.5);
* model FLOP utilisation: analytic model FLOPs of what each does, per second,
  over the fp32 matmul peak measured in this run ("nominal" counts the model's
  own decoder step; "executed" the reordered step our scorer actually runs);
* the whole `autoais evaluate --scorer t5` job (a separate process, start to
  exit) against the scorer alone on the same rows, alternated, medians;
* `--torch_threads`: the whole job with two worker processes
  (`--direct_running_mode=multi_processing --direct_num_workers=2`, a model
  each) with torch's default threads (one per core in each process) against
  one thread per process, alternated, medians; and model calls against distinct
  triples on a 23-system leaderboard whose systems share answers and passages.

Prints one JSON line.
"""
import argparse
import csv
import gzip
import json
import os
import random
import statistics
import subprocess
import sys
import time
import warnings

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from autoais.models import t5_nli  # pylint: disable=wrong-import-position
from tests.support.t5_models import build_random_t5  # pylint: disable=wrong-import-position
from autoais.transforms.corpus.passages import parse_passage, pyserini_contents  # pylint: disable=wrong-import-position
from autoais.transforms.scoring.examples import (qa_example)  # pylint: disable=wrong-import-position

SHARED = os.environ.get("AUTOAIS_SHARED_DATA", os.path.join(ROOT, "..", "shared", "data"))
PARTS = ("reference", "reduced", "job", "threads", "leaderboard")
T5_SMALL = dict(d_model=512, d_kv=64, d_ff=2048, num_layers=6, num_heads=8,
                model_vocab_size=32128)


def matmul_peak(dtype, size: int, repeat: int = 5) -> float:
  """Best GFLOP/s of a square matmul on this machine's threads."""
  a = torch.randn(size, size, dtype=dtype)
  b = torch.randn(size, size, dtype=dtype)
  torch.matmul(a, b)
  best = float("inf")
  for _ in range(repeat):
    start = time.perf_counter()
    torch.matmul(a, b)
    best = min(best, time.perf_counter() - start)
  return 2 * size ** 3 / best / 1e9


def int8_peaks(tokens: int = 2048, d_model: int = 512, d_ff: int = 2048,
               repeat: int = 5) -> dict:
  """Best GOP/s of an int8 linear layer of T5-small's FFN shape: with dynamic
  activation quantisation (what quantize_dynamic runs) and with activations
  already quantised (the most any int8 engine gets from these kernels)."""
  x = torch.randn(tokens, d_model)
  linear = torch.nn.Linear(d_model, d_ff)
  dynamic = quantize_linears(torch.nn.Sequential(linear), lambda name: True,
                             "per_channel")
  weight = torch.quantize_per_channel(linear.weight.detach(),
                                      linear.weight.detach().abs().amax(1) / 127,
                                      torch.zeros(d_ff, dtype=torch.long), 0, torch.qint8)
  packed = torch.ops.quantized.linear_prepack(weight, linear.bias.detach())
  quantized_x = torch.quantize_per_tensor(x, float(x.abs().max()) / 127, 128,
                                          torch.quint8)
  def best(run):
    run()
    seconds = float("inf")
    for _ in range(repeat):
      start = time.perf_counter()
      run()
      seconds = min(seconds, time.perf_counter() - start)
    return round(2 * tokens * d_model * d_ff / seconds / 1e9, 1)
  with torch.inference_mode():
    return {"dynamic_activations": best(lambda: dynamic(x)),
            "static_activations": best(lambda: torch.ops.quantized.linear(
                quantized_x, packed, 0.1, 128)),
            "float32_same_shape": best(lambda: linear(x))}


# (result name, which linear layers, weight scales): all layers per tensor is
# the fastest and least exact; the encoder's feed-forward layers alone, per
# output channel, the most exact.
INT8_VARIANTS = (
    ("int8_dynamic_all_layers", lambda name: True, "per_tensor"),
    ("int8_dynamic_encoder_per_channel", lambda name: name.startswith("encoder."),
     "per_channel"),
    ("int8_dynamic_encoder_ffn_per_channel",
     lambda name: name.startswith("encoder.") and ".DenseReluDense." in name,
     "per_channel"),
)


def quantize_linears(model, select, granularity: str):
  from torch.ao import quantization  # pylint: disable=import-outside-toplevel
  qconfig = (quantization.per_channel_dynamic_qconfig if granularity == "per_channel"
             else quantization.default_dynamic_qconfig)
  names = {name: qconfig for name, module in model.named_modules()
           if isinstance(module, torch.nn.Linear) and select(name)}
  return quantization.quantize_dynamic(model, names, dtype=torch.qint8)


def encoder_flops(length: int, config) -> float:
  d, inner, ff = config.d_model, config.num_heads * config.d_kv, config.d_ff
  ffn = (3 if config.is_gated_act else 2) * d * ff
  per_token = 4 * d * inner + ffn + 2 * length * inner  # MACs
  return 2 * config.num_layers * length * per_token


def decoder_step_flops(length: int, step: int, config, *, cross_kv: bool,
                       vocab_rows: int) -> float:
  """FLOPs of decoder step `step` (1-based) with cached keys and values;
  `cross_kv` adds projecting the encoder states (done once per sequence)."""
  d, inner, ff = config.d_model, config.num_heads * config.d_kv, config.d_ff
  ffn = (3 if config.is_gated_act else 2) * d * ff
  per_layer = 4 * d * inner + 2 * step * inner + 2 * d * inner + 2 * length * inner + ffn
  if cross_kv:
    per_layer += 2 * length * d * inner
  return 2 * (config.num_decoder_layers * per_layer + d * vocab_rows)


def examples_from_nq(n: int, tokenizer, low: int = 120, high: int = 320):
  """(question, answer, premise examples) with 120-320 tokens of premise."""
  with gzip.open(os.path.join(SHARED, "nq_oracle_passages", "nq-open-oracle.jsonl.gz"),
                 "rt", encoding="utf-8") as f:
    records = [json.loads(line) for line in f]
  rng = random.Random(0)
  examples = []
  for index, record in enumerate(records):
    context = record["ctxs"][0]
    text = context["text"]
    if rng.random() < 0.5:  # some premises are two passages long
      text += " " + records[(index + 1) % len(records)]["ctxs"][0]["text"]
    passage = parse_passage(pyserini_contents(context["title"], text))
    example = qa_example(record["question"], record["answers"][0], passage)
    length = len(tokenizer(example.premise, add_special_tokens=False)["input_ids"])
    if low <= length <= high:
      examples.append((record, passage, example))
    if len(examples) == n:
      break
  return examples


def reference_loop(model_dir, examples):
  """The Attributed QA script's procedure, one example at a time."""
  from transformers import AutoModelForSeq2SeqLM, AutoTokenizer  # pylint: disable=import-outside-toplevel
  tokenizer = AutoTokenizer.from_pretrained(model_dir)
  model = AutoModelForSeq2SeqLM.from_pretrained(model_dir).eval()
  decisions, steps = [], []
  start = time.perf_counter()
  with torch.inference_mode():
    for example in examples:
      text = f"premise: {example.premise} hypothesis: {example.hypothesis}"
      input_ids = tokenizer(text, return_tensors="pt").input_ids
      outputs = model.generate(input_ids)
      decisions.append(tokenizer.decode(outputs[0], skip_special_tokens=True) == "1")
      steps.append(outputs.shape[1] - 1)
  return time.perf_counter() - start, decisions, steps


def timed_scores(model, examples, decision="threshold"):
  start = time.perf_counter()
  scores = model.score(examples, decision, 0.5)
  return time.perf_counter() - start, scores


def write_predictions(path, rows):
  with open(path, "w", newline="", encoding="utf-8") as f:
    writer = csv.writer(f)
    writer.writerow(["question", "answer", "attribution", "passage"])
    writer.writerows(rows)


def run_job(args):
  started = time.perf_counter()
  result = subprocess.run([sys.executable, "-m", "autoais.beam_jobs.cli", "evaluate", *args],
                          cwd=ROOT, capture_output=True, text=True, check=False)
  if result.returncode:
    raise SystemExit(result.stderr[-3000:])
  return time.perf_counter() - started


def leaderboard_model_calls(model_dir, work, gold_path, records, n_questions=40):
  """23 systems over shared candidates: examples the model scored (Beam
  counter) against distinct triples (run.json)."""
  import apache_beam as beam  # pylint: disable=import-outside-toplevel
  from apache_beam.metrics.metric import MetricsFilter  # pylint: disable=import-outside-toplevel
  from apache_beam.options.pipeline_options import PipelineOptions  # pylint: disable=import-outside-toplevel
  from apache_beam.runners.portability.fn_api_runner import FnApiRunner  # pylint: disable=import-outside-toplevel
  from autoais.beam_jobs import evaluate  # pylint: disable=import-outside-toplevel
  directory = os.path.join(work, "leaderboard23")
  os.makedirs(directory, exist_ok=True)
  rng = random.Random(23)
  candidates = []
  for index, record in enumerate(records[:n_questions]):
    other = records[(index + 1) % len(records)]
    passages = [pyserini_contents(record["ctxs"][0]["title"], record["ctxs"][0]["text"]),
                pyserini_contents(other["ctxs"][0]["title"], other["ctxs"][0]["text"])]
    answers = [record["answers"][0], other["answers"][0]]
    candidates.append((record["question"], answers, passages))
  for system in range(23):
    rows = []
    for question, answers, passages in candidates:
      rows.append([question, rng.choice(answers), "p", rng.choice(passages)])
    write_predictions(os.path.join(directory, f"system-{system:02d}.csv"), rows)
  output = os.path.join(work, "eval_leaderboard23")
  options = PipelineOptions([
      "--predictions", os.path.join(directory, "*.csv"), "--gold", gold_path,
      "--output_dir", output, "--scorer", "t5", "--model", model_dir,
      "--bootstrap_samples", "50"])
  pipeline = beam.Pipeline(runner=FnApiRunner(), options=options)
  evaluate.build_pipeline(pipeline, options)
  result = pipeline.run()
  result.wait_until_finish()
  counters = result.metrics().query(MetricsFilter().with_name("model_examples"))["counters"]
  model_examples = sum(counter.committed or counter.attempted for counter in counters)
  with open(os.path.join(output, "run.json"), encoding="utf-8") as f:
    manifest = json.load(f)
  return {"rows": manifest["counts"]["read"], "scored": manifest["counts"]["scored"],
          "unique_triples": manifest["scorer"]["unique_triples"],
          "model_examples_scored": model_examples,
          "model_calls_equal_unique_triples":
              model_examples == manifest["scorer"]["unique_triples"]}


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--n", type=int, default=256)
  parser.add_argument("--job_rows", type=int, default=1024)
  parser.add_argument("--job_rounds", type=int, default=2,
                      help="whole-job runs, alternated with runs of the scorer alone")
  parser.add_argument("--threads_rows", type=int, default=256)
  parser.add_argument("--threads_rounds", type=int, default=2,
                      help="runs of each --torch_threads setting, alternated")
  parser.add_argument("--workdir", default=os.path.join(ROOT, "bench", "out", "scoring"))
  parser.add_argument("--parts", default=",".join(PARTS),
                      help="comma-separated subset of " + ",".join(PARTS))
  args = parser.parse_args()
  parts = set(args.parts.split(","))
  if not parts <= set(PARTS):
    parser.error(f"--parts: unknown {sorted(parts - set(PARTS))}")
  if "reduced" in parts:  # its speedups are over the reference measured here
    parts.add("reference")
  warnings.filterwarnings("ignore")
  os.makedirs(args.workdir, exist_ok=True)
  model_dir = os.path.join(args.workdir, "t5-small-random")
  if not os.path.exists(os.path.join(model_dir, "model.safetensors")):
    with gzip.open(os.path.join(SHARED, "nq_oracle_passages", "nq-open-oracle.jsonl.gz"),
                   "rt", encoding="utf-8") as f:
      texts = [json.loads(line)["ctxs"][0]["text"] for line in f]
    build_random_t5(model_dir, texts, vocab_size=8000, seed=0, **T5_SMALL)
    from transformers import GenerationConfig  # pylint: disable=import-outside-toplevel
    generation = GenerationConfig.from_pretrained(model_dir)
    generation.max_length = 3  # decoder start + two tokens: "1"/"0" and "</s>"
    generation.save_pretrained(model_dir)

  result = {"threads": torch.get_num_threads()}
  result["peak_gflops"] = {"float32": round(matmul_peak(torch.float32, 2048), 1),
                           "bfloat16": round(matmul_peak(torch.bfloat16, 512, 2), 1)}
  fp32 = t5_nli.load_t5_nli(model_dir, dtype="float32")
  config = fp32.model.config
  chosen = examples_from_nq(args.n, fp32.tokenizer)
  examples = [example for _, _, example in chosen]
  lengths = [len(fp32.encode(example).windows[0]) for example in examples]
  result["n"] = len(examples)
  result["input_tokens"] = {"min": min(lengths), "median": statistics.median(lengths),
                            "max": max(lengths)}

  if "reference" in parts:
    # Interleave the reference and ours in halves, so that drift in this
    # machine's speed hits both alike.
    half = len(examples) // 2
    reference_seconds, reference_decisions, reference_steps = 0.0, [], []
    ours_seconds, ours = 0.0, []
    for part in (examples[:half], examples[half:]):
      seconds, decisions, steps = reference_loop(model_dir, part)
      reference_seconds += seconds
      reference_decisions += decisions
      reference_steps += steps
      seconds, scores = timed_scores(fp32, part)
      ours_seconds += seconds
      ours += scores
    nominal = sum(encoder_flops(n, config) + decoder_step_flops(
        n, 1, config, cross_kv=True, vocab_rows=config.vocab_size) for n in lengths)
    executed = sum(encoder_flops(n, config) + decoder_step_flops(
        n, 1, config, cross_kv=False, vocab_rows=2) for n in lengths)
    reference_flops = sum(
        encoder_flops(n, config) + 2 * n * config.d_model * config.num_heads *
        config.d_kv * 2 * config.num_decoder_layers + sum(
            decoder_step_flops(n, step, config, cross_kv=False,
                               vocab_rows=config.vocab_size)
            for step in range(1, steps + 1))
        for n, steps in zip(lengths, reference_steps))
    peak = result["peak_gflops"]["float32"] * 1e9
    _, decoded = timed_scores(fp32, examples, "decode")
    result["reference"] = {
        "examples_per_s": round(len(examples) / reference_seconds, 2),
        "utilisation": round(reference_flops / reference_seconds / peak, 3)}
    result["float32"] = {
        "examples_per_s": round(len(examples) / ours_seconds, 2),
        "speedup": round(reference_seconds / ours_seconds, 2),
        "utilisation_nominal": round(nominal / ours_seconds / peak, 3),
        "utilisation_executed": round(executed / ours_seconds / peak, 3),
        "decode_mode_agreement_with_reference": round(float(np.mean(
            [d.attributable == r for d, r in zip(decoded, reference_decisions)])), 4)}
    base = np.array([s.nli_score for s in ours])
    cut = float(np.median(base))

    def reduced(name, model, subset):
      seconds, scores = timed_scores(model, [examples[i] for i in subset])
      values = np.array([s.nli_score for s in scores])
      reference_rate = len(examples) / reference_seconds
      rate = len(subset) / seconds
      result[name] = {
          "examples": len(subset), "examples_per_s": round(rate, 2),
          "speedup_over_fp32_reference": round(rate / reference_rate, 2),
          "decision_agreement_with_fp32": round(float(np.mean(
              (values > cut) == (base[subset] > cut))), 4),
          "median_abs_delta": float(np.median(np.abs(values - base[subset])))}

  if "reduced" in parts:
    if result["peak_gflops"]["bfloat16"] >= result["peak_gflops"]["float32"]:
      reduced("bfloat16", t5_nli.load_t5_nli(model_dir, dtype="bfloat16"),
              list(range(len(examples))))
    else:
      result["bfloat16"] = {"skipped": "this CPU multiplies bf16 matrices at "
                            f"{result['peak_gflops']['bfloat16']} GFLOP/s (no native "
                            "bf16): a bf16 model would run slower than float32"}
    # int8: the GEMM peak first (the ceiling of any int8 path on this CPU),
    # then three dynamic-quantisation variants, from fastest to most exact.
    result["int8_peak_gops"] = int8_peaks()
    # If every model FLOP ran at that peak: the most an int8 path could gain.
    result["int8_ceiling_speedup_over_reference"] = {
        kind: round(gops * 1e9 / (reference_flops / reference_seconds), 2)
        for kind, gops in result["int8_peak_gops"].items() if kind != "float32_same_shape"}
    for name, select, qconfig in INT8_VARIANTS:
      int8 = t5_nli.load_t5_nli(model_dir, dtype="float32")
      int8.model = quantize_linears(int8.model, select, qconfig)
      reduced(name, int8, list(range(len(examples))))

  # The whole job against the scorer alone, on the same rows.
  gold_path = os.path.join(SHARED, "nq_open", "NQ-open.dev.jsonl")
  if "job" in parts:
    job_rows = examples_from_nq(args.job_rows, fp32.tokenizer)
    predictions = os.path.join(args.workdir, "job_predictions")
    os.makedirs(predictions, exist_ok=True)
    write_predictions(os.path.join(predictions, "system.csv"),
                      [[record["question"], record["answers"][0], "p",
                        pyserini_contents(passage.title, passage.text)]
                       for record, passage, _ in job_rows])
    # The scorer alone and the job alternate (alone, job, alone, job, alone),
    # and medians are compared: this machine's speed drifts by 20% or more.
    alone_seconds, job_seconds = [], []
    job_examples = [example for _, _, example in job_rows]
    for round_index in range(args.job_rounds + 1):
      if round_index:
        job_seconds.append(run_job([
            "--predictions", os.path.join(predictions, "system.csv"),
            "--gold", gold_path, "--output_dir", os.path.join(args.workdir, "eval_job"),
            "--scorer", "t5", "--model", model_dir, "--bootstrap_samples", "200"]))
      alone_seconds.append(timed_scores(fp32, job_examples)[0])
    result["job"] = {
        "rows": len(job_rows),
        "scorer_only_seconds": [round(s, 2) for s in alone_seconds],
        "job_seconds": [round(s, 2) for s in job_seconds],
        "job_over_scorer": round(statistics.median(job_seconds) /
                                 statistics.median(alone_seconds), 3)}

  if "threads" in parts:
    rows = examples_from_nq(args.threads_rows, fp32.tokenizer)
    predictions = os.path.join(args.workdir, "threads_predictions.csv")
    write_predictions(predictions, [[record["question"], record["answers"][0], "p",
                                     pyserini_contents(passage.title, passage.text)]
                                    for record, passage, _ in rows])
    seconds = {"0": [], "1": []}
    for _ in range(args.threads_rounds):
      for threads in seconds:  # alternated: this machine's speed drifts
        seconds[threads].append(run_job([
            "--predictions", predictions, "--gold", gold_path,
            "--output_dir", os.path.join(args.workdir, f"eval_threads_{threads}"),
            "--scorer", "t5", "--model", model_dir, "--bootstrap_samples", "200",
            "--direct_running_mode=multi_processing", "--direct_num_workers=2",
            "--torch_threads", threads]))
    result["torch_threads"] = {
        "rows": len(rows), "cpu_count": os.cpu_count(), "worker_processes": 2,
        "default_seconds": [round(s, 2) for s in seconds["0"]],
        "one_thread_seconds": [round(s, 2) for s in seconds["1"]],
        "default_over_one_thread": round(statistics.median(seconds["0"]) /
                                         statistics.median(seconds["1"]), 3)}

  if "leaderboard" in parts:
    with gzip.open(os.path.join(SHARED, "nq_oracle_passages", "nq-open-oracle.jsonl.gz"),
                   "rt", encoding="utf-8") as f:
      records = [json.loads(line) for line in f]
    result["leaderboard_23_systems"] = leaderboard_model_calls(model_dir, args.workdir,
                                                               gold_path, records)
  print(json.dumps(result))


if __name__ == "__main__":
  main()
