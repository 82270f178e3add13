"""Scorer families on a real GPU (not a test; needs CUDA): measured pairs per second.

    python3 bench/gpu_families.py [--tokens 256] [--batches 16,64,256] [--iters 10]
        [--families t5-11b,flan-t5-large,roberta-large,deberta-v3-large]
        [--handler_pairs 2048] [--handler_budgets 0,65536] [--profile] [--out DIR]

Part 1, the model alone: each family at its published shape (bench/gpu_keepup.py's
FAMILIES: layers, widths, heads, vocabulary) built with random weights directly in
bfloat16 on the GPU (no checkpoint is downloaded; the arithmetic of a forward pass
does not depend on the weights' values), then the forward pass that scores a pair
(the T5 models: the encoder and one decoder step; the classifiers: the encoder and
the head) over batches of `--tokens`-token pairs of random ids, the ids copied from
host memory every batch as a job's are. Timed with CUDA events, 3 warm-ups then
`--iters` batches: the median batch gives pairs/s, and the FLOPs of
gpu_keepup.pair_flops over that time the model FLOPs utilisation of the card's
measured bf16 matrix peak (an 8192^3 product timed first in the same run).

With --profile, each timed batch is then run 3 more times under torch.profiler:
the CUDA kernels' summed time against the batch's wall time (the share the GPU
was busy; the rest it waited for the host to launch work), the kernel launches
per batch, and the kernels that took the most time.

Part 2, our own path: the t5 family's RunInference handler
(autoais.models.t5_nli.T5NliModelHandler, `--dtype bfloat16 --device cuda`) on a
random Flan-T5-large-shaped checkpoint written in the published layout
(tests/support/t5_models.py; its SentencePiece vocabulary trained here on the
project's example texts), scoring `--handler_pairs` pairs of premises of about
`--tokens` pieces as RunInference batches them, at each GPU batch token budget
of `--handler_budgets` (0: the handler's default for cuda): pairs/s of the wall
clock and of the process's CPU seconds (tokenising and windows on the host),
beside the model alone on the same padded batches. Then correctness on the GPU: the
handler's scores in bfloat16 and float32 on CUDA against float32 on the CPU
(largest difference of P("1")), and its one-step decoder (label_logits) against
the model's own forward pass.

Prints one JSON line per measurement and a table at the end; with --out, writes
them to DIR/gpu_families.json too.
"""
import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_keepup import FAMILIES, pair_flops  # pylint: disable=wrong-import-position

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.append(ROOT)  # tests/support (after the installed package: ROOT/autoais is not the whole package)

# Published configurations (the models' config.json fields that fix the arithmetic),
# keyed by the short names of --families, with gpu_keepup's family of each.
SHAPES = {
    "t5-11b": ("TRUE (T5-11B, t5_xxl_true_nli_mixture)", "t5", dict(
        vocab_size=32128, d_model=1024, d_kv=128, d_ff=65536, num_layers=24,
        num_decoder_layers=24, num_heads=128, feed_forward_proj="relu",
        tie_word_embeddings=True)),
    "flan-t5-large": ("MiniCheck Flan-T5-large", "t5", dict(
        vocab_size=32128, d_model=1024, d_kv=64, d_ff=2816, num_layers=24,
        num_decoder_layers=24, num_heads=16, feed_forward_proj="gated-gelu",
        tie_word_embeddings=False)),
    "roberta-large": ("MiniCheck RoBERTa-large", "roberta", dict(
        vocab_size=50265, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
        intermediate_size=4096, max_position_embeddings=514, type_vocab_size=1,
        num_labels=2)),
    "deberta-v3-large": ("NLI DeBERTa-v3-large", "deberta-v2", dict(
        vocab_size=128100, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
        intermediate_size=4096, max_position_embeddings=512, type_vocab_size=0,
        relative_attention=True, position_buckets=256, norm_rel_ebd="layer_norm",
        share_att_key=True, pos_att_type=["p2c", "c2p"], max_relative_positions=-1,
        position_biased_input=False, num_labels=3)),
}


def emit(record, records):
  records.append(record)
  print(json.dumps(record), flush=True)


def timed_median(torch, step, iters: int, warmups: int = 3) -> float:
  """Median seconds of `step()` over `iters` calls after `warmups`, by CUDA events."""
  for _ in range(warmups):
    step()
  torch.cuda.synchronize()
  times = []
  for _ in range(iters):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    step()
    end.record()
    end.synchronize()
    times.append(start.elapsed_time(end) / 1000.0)
  return statistics.median(times)


def matmul_peak(torch) -> float:
  """TFLOP/s of an 8192^3 bf16 product on random data, the card's ceiling here."""
  n = 8192
  a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
  b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
  seconds = timed_median(torch, lambda: a @ b, 10)
  return 2 * n ** 3 / seconds / 1e12


def build_family(torch, transformers, kind: str, fields: dict):
  """A random-weight model of the published shape, made in bf16 on the GPU."""
  torch.manual_seed(0)
  previous = torch.get_default_dtype()
  torch.set_default_dtype(torch.bfloat16)
  try:
    with torch.device("cuda"):
      if kind == "t5":
        config = transformers.T5Config(pad_token_id=0, eos_token_id=1,
                                       decoder_start_token_id=0, **fields)
        model = transformers.T5ForConditionalGeneration(config)
      elif kind == "roberta":
        model = transformers.RobertaForSequenceClassification(
            transformers.RobertaConfig(**fields))
      else:
        model = transformers.DebertaV2ForSequenceClassification(
            transformers.DebertaV2Config(**fields))
  finally:
    torch.set_default_dtype(previous)
  return model.eval()


def forward_step(torch, model, kind: str, host_ids, host_mask):
  """One scoring forward pass over a batch whose ids come from host memory."""
  def step():
    ids = host_ids.to("cuda")
    mask = host_mask.to("cuda")
    with torch.inference_mode():
      if kind == "t5":
        start = torch.zeros((ids.shape[0], 1), dtype=torch.long, device="cuda")
        logits = model(input_ids=ids, attention_mask=mask, decoder_input_ids=start).logits
      else:
        logits = model(input_ids=ids, attention_mask=mask).logits
      return logits.float().softmax(-1)[:, 0].cpu()
  return step


def profile_step(torch, name: str, batch: int, step_s: float, step, records,
                 steps: int = 3, top: int = 12):
  """Where a batch's GPU time goes: torch.profiler over `steps` batches, the CUDA
  kernels' summed time against the batch's wall time (the rest the GPU idled,
  waiting for the host to launch work), and the kernels that took most of it."""
  from torch.profiler import ProfilerActivity, profile  # pylint: disable=import-outside-toplevel
  try:
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
      for _ in range(steps):
        step()
      torch.cuda.synchronize()
    kernels = [event for event in prof.key_averages()
               if event.device_type == torch.autograd.DeviceType.CUDA]
    def device_us(event):
      return (getattr(event, "self_device_time_total", None)
              or getattr(event, "self_cuda_time_total", 0))
    total_us = sum(device_us(event) for event in kernels)
    ranked = sorted(kernels, key=device_us, reverse=True)[:top]
    emit({"part": "profile", "family": name, "batch": batch, "steps": steps,
          "kernel_ms_per_batch": round(total_us / steps / 1e3, 2),
          "batch_ms": round(step_s * 1e3, 2),
          "gpu_busy_share_of_batch": round(total_us / steps / 1e6 / step_s, 3),
          "kernel_launches_per_batch": round(sum(event.count for event in kernels) / steps),
          "top_kernels": [{"kernel": event.key[:120], "calls_per_batch": event.count // steps,
                           "ms_per_batch": round(device_us(event) / steps / 1e3, 2),
                           "share": round(device_us(event) / max(total_us, 1e-9), 3)}
                          for event in ranked]}, records)
  except Exception as error:  # pylint: disable=broad-except
    # A profiler that fails must not cost the timings of the run around it.
    emit({"part": "profile", "family": name, "batch": batch,
          "error": f"{type(error).__name__}: {error}"[:500]}, records)


def part_models(torch, transformers, args, peak, records):
  for name in args.families.split(","):
    family, kind, fields = SHAPES[name]
    built = time.time()
    model = build_family(torch, transformers, kind, fields)
    params = sum(p.numel() for p in model.parameters())
    build_s = time.time() - built
    flops = pair_flops(FAMILIES[family], args.tokens)
    for batch in [int(b) for b in args.batches.split(",")]:
      generator = torch.Generator().manual_seed(batch)
      host_ids = torch.randint(5, fields["vocab_size"], (batch, args.tokens),
                               generator=generator)
      host_mask = torch.ones_like(host_ids)
      try:
        seconds = timed_median(torch, forward_step(torch, model, kind, host_ids, host_mask),
                               args.iters)
      except torch.OutOfMemoryError:
        emit({"part": "model", "family": name, "batch": batch, "oom": True}, records)
        torch.cuda.empty_cache()
        continue
      if args.profile:
        profile_step(torch, name, batch, seconds,
                     forward_step(torch, model, kind, host_ids, host_mask), records)
      emit({"part": "model", "family": name, "gpu_keepup_family": family,
            "attention": getattr(model.config, "_attn_implementation", None),
            "params_b": round(params / 1e9, 3), "build_s": round(build_s, 1),
            "tokens": args.tokens, "batch": batch, "batch_ms": round(seconds * 1e3, 2),
            "pairs_per_s": round(batch / seconds, 1),
            "tflop_per_pair": round(flops / 1e12, 4),
            "achieved_tflops": round(batch * flops / seconds / 1e12, 1),
            "mfu_of_measured_peak": round(batch * flops / seconds / 1e12 / peak, 3),
            "max_memory_gib": round(torch.cuda.max_memory_allocated() / 2 ** 30, 1)},
           records)
    del model
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()


def premise_texts(words, count: int, n_words: int, seed: int):
  import random  # pylint: disable=import-outside-toplevel
  rng = random.Random(seed)
  return [" ".join(rng.choice(words) for _ in range(n_words)) for _ in range(count)]


def part_handler(torch, args, records):
  from autoais.models.t5_nli import T5NliModelHandler  # pylint: disable=import-outside-toplevel
  from autoais.schemas import AttributionExample  # pylint: disable=import-outside-toplevel
  from tests.support.t5_models import build_random_t5  # pylint: disable=import-outside-toplevel
  from tests.support.vocab import example_texts  # pylint: disable=import-outside-toplevel
  texts = list(example_texts())
  words = sorted({w for text in texts for w in text.split()})
  _, _, fields = SHAPES["flan-t5-large"]
  with tempfile.TemporaryDirectory() as scratch:
    model_dir = os.path.join(scratch, "flan-t5-large-shaped")
    built = time.time()
    build_random_t5(model_dir, texts, vocab_size=4000, model_vocab_size=32128,
                    d_model=fields["d_model"], d_kv=fields["d_kv"], d_ff=fields["d_ff"],
                    num_layers=fields["num_layers"], num_heads=fields["num_heads"],
                    version="1.1")
    build_s = time.time() - built
    words_per_premise = None
    for budget in [int(b) for b in args.handler_budgets.split(",")]:
      handler = T5NliModelHandler(model_dir, dtype="bfloat16", device="cuda",
                                  token_budget=budget or None)
      loaded = time.time()
      model = handler.load_model()
      load_s = time.time() - loaded
      if words_per_premise is None:
        pieces = len(model.tokenizer.encode(premise_texts(words, 1, 100, 0)[0]))
        words_per_premise = max(8, int(100 * args.tokens * 0.85 / pieces))
        premises = premise_texts(words, args.handler_pairs, words_per_premise, 1)
        hypotheses = premise_texts(words, args.handler_pairs, 12, 2)
        examples = [AttributionExample(p, h, h, p) for p, h in zip(premises, hypotheses)]
      batch_size = handler.batch_elements_kwargs()["max_batch_size"]
      batches = [examples[i:i + batch_size] for i in range(0, len(examples), batch_size)]
      handler.run_inference(batches[0], model)  # warm-up
      torch.cuda.synchronize()
      cpu0, wall0 = time.process_time(), time.perf_counter()
      scored = [r for batch in batches for r in handler.run_inference(batch, model)]
      torch.cuda.synchronize()
      wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
      windows = sum(r.inference.n_windows for r in scored)
      encoded = model.encode_many(examples)
      sequences = [w for item in encoded for w in item.windows]
      lengths = [len(s) for s in sequences]
      # The model alone on the same padded batches the handler ran.
      index_batches = list(model._batches(lengths))  # pylint: disable=protected-access
      padded = [model._pad([sequences[i] for i in b]) for b in index_batches]  # pylint: disable=protected-access

      def model_only(model=model, padded=padded):
        with torch.inference_mode():
          for ids, mask in padded:
            model.label_logits(ids, mask).float().softmax(-1)[:, 0].cpu()
      model_only_s = timed_median(torch, model_only, 3, warmups=1)
      emit({"part": "handler", "family": "flan-t5-large", "dtype": "bfloat16",
            "build_s": round(build_s, 1), "load_s": round(load_s, 1),
            "pairs": len(examples), "windows": windows,
            "mean_pieces_per_window": round(sum(lengths) / len(lengths), 1),
            "token_budget": model.token_budget, "gpu_batches": len(index_batches),
            "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "pairs_per_wall_s": round(len(examples) / wall, 1),
            "pairs_per_cpu_s": round(len(examples) / cpu, 1),
            "model_alone_s": round(model_only_s, 2),
            "model_alone_pairs_per_s": round(len(examples) / model_only_s, 1),
            "gpu_share_of_wall": round(model_only_s / wall, 3)}, records)
      del padded, model_only

    # Correctness on the GPU, on a slice of the pairs.
    sample = examples[:256]
    bf16 = [r.inference.nli_score for r in handler.run_inference(sample, model)]
    del model
    torch.cuda.empty_cache()
    fp32_cuda_handler = T5NliModelHandler(model_dir, dtype="float32", device="cuda")
    fp32_cuda = fp32_cuda_handler.load_model()
    fp32 = [r.inference.nli_score for r in fp32_cuda_handler.run_inference(sample, fp32_cuda)]
    firsts = [item.windows[0] for item in fp32_cuda.encode_many(sample[:32])]
    ids, mask = fp32_cuda._pad(firsts)  # pylint: disable=protected-access
    with torch.inference_mode():
      ours = fp32_cuda.label_logits(ids, mask).float()
      start = torch.full((ids.shape[0], 1), fp32_cuda.decoder_start_id, device=ids.device)
      full = fp32_cuda.model(input_ids=ids, attention_mask=mask,
                             decoder_input_ids=start).logits[:, 0, :].float()
      full = full[:, [fp32_cuda.one_id, fp32_cuda.zero_id]]
    del fp32_cuda
    torch.cuda.empty_cache()
    cpu_handler = T5NliModelHandler(model_dir, dtype="float32", device="cpu")
    cpu_model = cpu_handler.load_model()
    cpu_sample = sample[:64]
    cpu = [r.inference.nli_score for r in cpu_handler.run_inference(cpu_sample, cpu_model)]
    emit({"part": "correctness", "family": "flan-t5-large", "pairs": len(sample),
          "max_abs_bf16_cuda_vs_fp32_cuda": max(abs(a - b) for a, b in zip(bf16, fp32)),
          "max_abs_fp32_cuda_vs_fp32_cpu": max(abs(a - b) for a, b in
                                               zip(fp32[:len(cpu)], cpu)),
          "max_abs_bf16_cuda_vs_fp32_cpu": max(abs(a - b) for a, b in
                                               zip(bf16[:len(cpu)], cpu)),
          "label_logits_vs_forward_max_rel": float(
              ((ours - full).norm() / full.norm()).item()),
          "score_spread": [round(min(fp32), 4), round(max(fp32), 4)]}, records)


def table(records) -> str:
  lines = ["| family | batch x tokens | ms per batch | pairs/s | achieved TFLOP/s | MFU |",
           "|---|---|---:|---:|---:|---:|"]
  for r in records:
    if r.get("part") == "model" and not r.get("oom"):
      lines.append(f"| {r['family']} ({r['params_b']}B) | {r['batch']} x {r['tokens']} | "
                   f"{r['batch_ms']} | {r['pairs_per_s']:,} | {r['achieved_tflops']} | "
                   f"{r['mfu_of_measured_peak']:.0%} |")
  return "\n".join(lines)


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--tokens", type=int, default=256)
  parser.add_argument("--batches", default="16,64,256")
  parser.add_argument("--iters", type=int, default=10)
  parser.add_argument("--families", default=",".join(SHAPES))
  parser.add_argument("--handler_pairs", type=int, default=2048,
                      help="pairs for part 2 (0: skip it)")
  parser.add_argument("--handler_budgets", default="0,65536",
                      help="part 2's token budgets per GPU batch (0: the handler's default)")
  parser.add_argument("--profile", action="store_true",
                      help="after each timed batch, torch.profiler's view of it: the GPU's "
                      "busy share of the batch and the kernels that took most time")
  parser.add_argument("--out", default=None)
  args = parser.parse_args()
  import torch  # pylint: disable=import-outside-toplevel
  import transformers  # pylint: disable=import-outside-toplevel
  if not torch.cuda.is_available():
    sys.exit("gpu_families.py needs a CUDA device")
  records = []
  peak = matmul_peak(torch)
  emit({"part": "device", "name": torch.cuda.get_device_name(),
        "torch": torch.__version__, "transformers": transformers.__version__,
        "bf16_matmul_tflops": round(peak, 1)}, records)
  try:
    part_models(torch, transformers, args, peak, records)
    if args.handler_pairs:
      part_handler(torch, args, records)
  finally:
    emit({"part": "host", "max_rss_mib": round(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}, records)
    if args.out:
      os.makedirs(args.out, exist_ok=True)
      with open(os.path.join(args.out, "gpu_families.json"), "w", encoding="utf-8") as f:
        json.dump(records, f, indent=1)
    print(table(records))


if __name__ == "__main__":
  main()
