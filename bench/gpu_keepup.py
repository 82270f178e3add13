"""What an accelerator would need from the pipeline, by arithmetic (not a GPU measurement).

    .venv/bin/python bench/gpu_keepup.py --pipeline_pairs_per_cpu_s N [--mfu 0.4]
        [--tokens 256]
    .venv/bin/python bench/gpu_keepup.py --device_busy DEVICE_BUSY_OUTPUT
        [--device_busy_small ITS_OUTPUT_AT_A_SMALLER_SCALE] [--checkout after]

For each scorer family at its published size, the forward FLOPs of scoring one
(premise, hypothesis) pair of `--tokens` input tokens, computed from the
published architecture (layers, widths, heads; the encoder pass, plus one
decoder step for the T5 models), then the pairs per second an accelerator
would answer at a model FLOPs utilisation of `--mfu` of its dense bf16 peak,
and how many CPUs of the pipeline around the model (measured by
bench/pipeline_cost.py as distinct pairs per CPU second with an instant model)
that rate takes. Prints one JSON line, and the table with --markdown.

With `--device_busy`, the host's side is measured instead of assumed: the
file is bench/device_busy.py's output (its JSON lines, one per family @ rate,
job and mode), each giving the host CPU per distinct pair of the whole run
(every process) and the pairs per busy second of the card the rate was
measured on. Per line and accelerator: that card's pairs per second scaled
by the accelerators' bf16 peaks (arithmetic: the same model at the same
utilisation), times the host CPU per pair, is the CPUs a worker needs for
the device never to wait; and the smallest one-accelerator worker with that
many vCPUs. A run's host CPU per pair carries what each process pays once
(imports, the model's load, building the pipeline), which a small run
spreads over few pairs and worker processes pay each: give
`--device_busy_small`, the same cases at a smaller --scale, and the CPUs
come from the marginal host CPU per pair between the two, where those costs
cancel. The host CPU is this machine's; a Dataflow vCPU is a hyperthread.
CPUs are not the whole story: one process's host work runs on one thread
between batches and rounds, so a card can wait with CPUs to spare (the
busy column).

This script measures no GPU: the rates are arithmetic from FLOPs and datasheet
peaks. bench/gpu_families.py measures them on a GPU (bench/README.md, "On a
GPU"): on an H100 RoBERTa-large met the 40% assumed here, TRUE, Flan-T5-large
and DeBERTa-v3-large reached a quarter to a half of it.
"""
import argparse
import json
import math

# Dense bf16 tensor peaks from the vendors' datasheets (no sparsity), TFLOP/s.
ACCELERATORS = {
    "H100 SXM": 989.0,
    "A100": 312.0,
    "L4": 121.0,
}

# The cards of the simulated accelerator's rates (models/simulated_device.py
# RATES: the first part of a rate's name) and their dense bf16 peaks: the H200
# has the H100 SXM's compute (with more and faster memory).
RATE_CARDS = {"h100": 989.0, "h200": 989.0}

# Dataflow worker shapes with one accelerator: vCPUs of the smallest shape, and
# of the shapes beside it, from Compute Engine's machine families.
WORKER_SHAPES = {
    "H100 SXM": [("a3-highgpu-1g", 26)],
    "A100": [("a2-highgpu-1g", 12)],
    "L4": [("g2-standard-4", 4), ("g2-standard-8", 8), ("g2-standard-12", 12),
           ("g2-standard-16", 16), ("g2-standard-24", 24), ("g2-standard-32", 32)],
}


def transformer_layer_flops(tokens: int, d_model: int, d_attention: int, d_ff: int,
                            ff_matrices: int, attention_terms: int = 1,
                            cross_tokens: int = 0) -> float:
  """Forward FLOPs of one layer over `tokens` tokens: 2 per multiply-add of the
  Q, K, V, O projections and the feed-forward matrices, plus the attention
  scores and the weighted sum (`attention_terms` score matrices: 3 for
  DeBERTa's content-to-content, content-to-position and position-to-content);
  `cross_tokens`: a decoder layer's cross-attention over the encoder's."""
  projections = 2 * tokens * 4 * d_model * d_attention
  feed_forward = 2 * tokens * ff_matrices * d_model * d_ff
  attention = 2 * tokens * tokens * d_attention * (attention_terms + 1)
  cross = 0
  if cross_tokens:
    cross = (2 * tokens * 4 * d_model * d_attention
             + 2 * tokens * cross_tokens * d_attention * 2)
  return projections + feed_forward + attention + cross


# Published shapes: (layers, d_model, heads x head width, d_ff, feed-forward
# matrices (3 for T5 v1.1's gated GELU), attention score terms, decoder layers).
FAMILIES = {
    "TRUE (T5-11B, t5_xxl_true_nli_mixture)": (24, 1024, 128 * 128, 65536, 2, 1, 24),
    "MiniCheck Flan-T5-large": (24, 1024, 16 * 64, 2816, 3, 1, 24),
    "MiniCheck RoBERTa-large": (24, 1024, 16 * 64, 4096, 2, 1, 0),
    "MiniCheck DeBERTa-large": (24, 1024, 16 * 64, 4096, 2, 3, 0),
    "NLI DeBERTa-v3-large": (24, 1024, 16 * 64, 4096, 2, 3, 0),
}


def pair_flops(shape, tokens: int) -> float:
  layers, d_model, d_attention, d_ff, matrices, terms, decoder_layers = shape
  encoder = layers * transformer_layer_flops(tokens, d_model, d_attention, d_ff,
                                             matrices, terms)
  # T5 scores a pair from one decoder step (the first label token).
  decoder = decoder_layers * transformer_layer_flops(1, d_model, d_attention, d_ff,
                                                     matrices, 1, cross_tokens=tokens)
  return encoder + decoder


def smallest_worker(accelerator: str, cpus: float):
  """The smallest one-accelerator worker shape with at least `cpus` vCPUs, or None."""
  return next((name for name, vcpus in WORKER_SHAPES[accelerator] if vcpus >= cpus), None)


def table(pipeline_rate: float, mfu: float, tokens: int):
  rows = []
  for family, shape in FAMILIES.items():
    flops = pair_flops(shape, tokens)
    for accelerator, peak in ACCELERATORS.items():
      pairs = peak * 1e12 * mfu / flops
      cpus = pairs / pipeline_rate
      rows.append({"family": family, "accelerator": accelerator,
                   "tflop_per_pair": round(flops / 1e12, 4),
                   "pairs_per_s": round(pairs), "pipeline_cpus": round(cpus, 2),
                   "pipeline_cpus_ceil": math.ceil(cpus),
                   "smallest_worker": smallest_worker(accelerator, cpus)})
  return rows


def markdown(rows, pipeline_rate: float) -> str:
  lines = [f"| family | accelerator | TFLOP per pair | pairs/s it answers | CPUs at "
           f"{pipeline_rate:,.0f} pairs/s each | smallest one-accelerator worker |",
           "|---|---|---:|---:|---:|---|"]
  for row in rows:
    lines.append(f"| {row['family']} | {row['accelerator']} | {row['tflop_per_pair']} | "
                 f"{row['pairs_per_s']:,} | {row['pipeline_cpus']} | "
                 f"{row['smallest_worker'] or 'none: a pipeline that fast'} |")
  return "\n".join(lines)


def _results(lines, checkout: str):
  """{(family, rate, job, mode): that checkout's figures} of device_busy.py's
  output lines."""
  results = {}
  for line in lines:
    if line.startswith("{"):
      result = json.loads(line)
      results[(result["family"], result["rate"], result["job"], result["mode"])] = (
          result[checkout])
  return results


def measured_rows(lines, checkout: str = "after", small_lines=None):
  """device_busy.py's output lines -> per (family @ rate, job, mode) and
  accelerator: the host CPU ms per pair, the pairs per second that card
  answers, the CPUs that keep it busy and the smallest worker with them.

  A run's host CPU per pair carries what the run pays once (imports, loading
  the model, building the pipeline; in each worker process), which a small
  run spreads over few pairs. With `small_lines`, the output of the same
  cases at a smaller --scale, the CPUs come from the marginal host CPU per
  pair between the two runs, where those costs cancel."""
  full = _results(lines, checkout)
  small = _results(small_lines, checkout) if small_lines is not None else {}
  rows = []
  for (family, rate, job, mode), figures in full.items():
    whole_ms = figures["host_cpu_ms_per_pair"]
    host_ms, readable = whole_ms, True
    if small:
      other = small[(family, rate, job, mode)]
      pairs, fewer = figures["distinct_pairs"], other["distinct_pairs"]
      if pairs <= fewer:
        raise SystemExit(f"{family} @ {rate} {job} {mode}: the small run has "
                         f"{fewer} pairs, the full one {pairs}")
      total = whole_ms * pairs
      added = total - other["host_cpu_ms_per_pair"] * fewer
      host_ms = added / (pairs - fewer)
      # Two single runs: where the full run's host CPU is within a tenth of
      # the small one's, what the pairs add is not told apart from noise.
      readable = added >= 0.1 * total
    card_peak = RATE_CARDS[rate.split("-")[0]]
    for accelerator, peak in ACCELERATORS.items():
      pairs_per_s = figures["device_pairs_per_busy_s"] * peak / card_peak
      cpus = host_ms / 1000 * pairs_per_s if readable else None
      rows.append({"family": family, "rate": rate, "job": job, "mode": mode,
                   "busy_share": figures["device_busy_share"],
                   "whole_run_host_cpu_ms_per_pair": whole_ms,
                   "host_cpu_ms_per_pair": round(host_ms, 3),
                   "marginal": bool(small),
                   "accelerator": accelerator, "pairs_per_s": round(pairs_per_s),
                   "pipeline_cpus": None if cpus is None else round(cpus, 2),
                   "smallest_worker": (None if cpus is None
                                       else smallest_worker(accelerator, cpus))})
  return rows


def measured_markdown(rows) -> str:
  """One line per family @ rate, job and mode; per accelerator the CPUs that
  keep it busy and the smallest one-accelerator worker with them."""
  accelerators = list(ACCELERATORS)
  lines = ["| family @ rate | job | mode | busy | host CPU ms / pair (whole run"
           + (", marginal" if rows and rows[0]["marginal"] else "") + ") | "
           + " | ".join(f"{name}: CPUs (worker)" for name in accelerators) + " |",
           "|---|---|---|---:|---:|" + "---|" * len(accelerators)]
  cases = {}
  for row in rows:
    cases.setdefault((row["family"], row["rate"], row["job"], row["mode"]), {})[
        row["accelerator"]] = row
  for (family, rate, job, mode), by_accelerator in cases.items():
    first = next(iter(by_accelerator.values()))
    cells = [f"{by_accelerator[name]['pipeline_cpus']} "
             f"({by_accelerator[name]['smallest_worker'] or 'none'})"
             if by_accelerator[name]["pipeline_cpus"] is not None else "within noise"
             for name in accelerators]
    host = f"{first['whole_run_host_cpu_ms_per_pair']:.2f}"
    if first["marginal"]:
      host += (f", {first['host_cpu_ms_per_pair']:.2f}" if first["pipeline_cpus"] is not None
               else ", within noise")
    lines.append(f"| {family} @ {rate} | {job} | {mode} | {first['busy_share']:.3f} | "
                 f"{host} | " + " | ".join(cells) + " |")
  return "\n".join(lines)


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  source = parser.add_mutually_exclusive_group(required=True)
  source.add_argument("--pipeline_pairs_per_cpu_s", type=float,
                      help="distinct pairs per CPU second of the pipeline with an "
                      "instant model (bench/pipeline_cost.py), the slowest job's")
  source.add_argument("--device_busy", help="bench/device_busy.py's output: the host CPU "
                      "per pair measured beside the simulated accelerator")
  parser.add_argument("--device_busy_small",
                      help="with --device_busy: its output for the same cases at a smaller "
                      "--scale; the CPUs then come from the marginal host CPU per pair")
  parser.add_argument("--checkout", default="after",
                      help="with --device_busy: whose figures (after, or before)")
  parser.add_argument("--mfu", type=float, default=0.4)
  parser.add_argument("--tokens", type=int, default=256)
  parser.add_argument("--markdown", action="store_true")
  args = parser.parse_args()
  if args.device_busy:
    small = None
    if args.device_busy_small:
      with open(args.device_busy_small, encoding="utf-8") as f:
        small = f.readlines()
    with open(args.device_busy, encoding="utf-8") as f:
      rows = measured_rows(f, args.checkout, small)
    print(json.dumps({"device_busy": args.device_busy, "checkout": args.checkout,
                      "rows": rows}))
    if args.markdown:
      print(measured_markdown(rows))
    return
  rows = table(args.pipeline_pairs_per_cpu_s, args.mfu, args.tokens)
  print(json.dumps({"mfu": args.mfu, "tokens": args.tokens,
                    "pipeline_pairs_per_cpu_s": args.pipeline_pairs_per_cpu_s,
                    "rows": rows}))
  if args.markdown:
    print(markdown(rows, args.pipeline_pairs_per_cpu_s))


if __name__ == "__main__":
  main()
