"""Scorer families side by side (not a test): examples/s of every family's
ModelHandler on the same (document, claim) pairs, on this machine's CPU.

    .venv/bin/python bench/families.py [--n 96] [--rounds 3] [--batch 64]
        [--families string-match,t5,nli-classifier,minicheck-flan-t5,...]
        [--workdir bench/out/families]

Pairs: the first N AttributionBench dev (reference passage, claim) pairs of
../shared/data (documents of real length: some need several windows or
chunks). Each family runs as RunInference runs it in a worker: its handler's
`load_model()` once (timed apart), then `run_inference` on batches of
`--batch` examples, all N per round; rounds alternate the families (a slow
spell of the machine hits them all), and the median round is reported.

Models are random-weight, built here, of comparable size (what is measured is
the family's procedure at a size, not a checkpoint's accuracy):

* t5: T5 v1.0 with t5-small's shape (d_model 512, 6+6 layers, d_ff 2048),
  TRUE's input, premise windows of 512 tokens, one decoder step;
* nli-classifier: RoBERTa, hidden 512, 6 layers, 8 heads, FFN 2048 (about the
  t5 model's encoder), three-way head, windows of 512 tokens;
* minicheck-flan-t5: T5 v1.1 with t5-small's shape (gated-GELU d_ff 1024), as
  MiniCheck-Flan-T5 scores (chunks of 500 words, inputs up to 2048 tokens);
* minicheck-roberta / minicheck-deberta: the classifier shape above with two
  labels, as MiniCheck-RoBERTa (chunks of 400 tokens, inputs of 512) and
  -DeBERTa (DeBERTa-v2 relative attention; chunks of 400, inputs up to 2048);
* string-match: SPEC 5.4's rule, no model (the claim as the answer);
* llm-judge: the HTTP client against the test suite's fake OpenAI-compatible
  server in this process (tests/support/openai_server.py), 16 requests in
  flight: what the client and its chunking cost per example, not a judge's
  speed (a real judge's time is its GPU's).

Prints one JSON line: per family examples/s (median and every round), model
load seconds, parameters, windows or chunks scored, and the ratio to t5.
"""
import argparse
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.support.t5_models import build_random_t5  # pylint: disable=wrong-import-position
from autoais.schemas import AttributionExample, ScoringFailure  # pylint: disable=wrong-import-position
from autoais.transforms.scoring.string_match import string_match_score  # pylint: disable=wrong-import-position

SHARED = os.environ.get("AUTOAIS_SHARED_DATA", os.path.join(ROOT, "..", "shared", "data"))
FAMILIES = ("string-match", "t5", "nli-classifier", "minicheck-flan-t5",
            "minicheck-roberta", "minicheck-deberta", "llm-judge")
T5_SMALL = dict(d_model=512, d_kv=64, d_ff=2048, num_layers=6, num_heads=8,
                vocab_size=4000)
CLASSIFIER = {"hidden_size": 512, "num_hidden_layers": 6, "num_attention_heads": 8,
              "intermediate_size": 2048}
THREE_WAY = {0: "entailment", 1: "neutral", 2: "contradiction"}
TWO_WAY = {0: "unsupported", 1: "supported"}


def pairs(n):
  path = os.path.join(SHARED, "attributionbench", "dev_all_subset_balanced.jsonl")
  with open(path, encoding="utf-8") as f:
    records = [json.loads(line) for line in f]
  chosen = [(record["references"][0], record["claim"]) for record in records
            if record["references"] and record["references"][0].strip()][:n]
  return [AttributionExample(doc, claim, claim, doc) for doc, claim in chosen]


def _parameters(model) -> int:
  inner = getattr(model, "model", None) or getattr(getattr(model, "scorer", None),
                                                   "model", None)
  return int(sum(p.numel() for p in inner.parameters())) if inner is not None else 0


class _Family:
  """One family: its handler and loaded model, or a plain function."""

  def __init__(self, name, handler=None, function=None, closer=None):
    self.name = name
    self.handler = handler
    self.function = function
    self.closer = closer
    self.model = None
    self.load_seconds = 0.0
    self.rates = []
    self.windows = 0
    self.failures = 0

  def load(self):
    if self.handler is not None:
      start = time.perf_counter()
      self.model = self.handler.load_model()
      self.load_seconds = time.perf_counter() - start

  def run(self, examples, batch):
    start = time.perf_counter()
    results = []
    for index in range(0, len(examples), batch):
      chunk = examples[index:index + batch]
      if self.function is not None:
        results += [self.function(example) for example in chunk]
      else:
        results += [result.inference for result in
                    self.handler.run_inference(chunk, self.model)]
    self.rates.append(len(examples) / (time.perf_counter() - start))
    self.windows = sum(getattr(r, "n_windows", 0) for r in results
                       if not isinstance(r, ScoringFailure))
    self.failures = sum(isinstance(r, ScoringFailure) for r in results)

  def report(self):
    return {"examples_per_s": statistics.median(self.rates),
            "rounds": [round(rate, 2) for rate in self.rates],
            "load_s": round(self.load_seconds, 2),
            "parameters": _parameters(self.model) if self.model is not None else 0,
            "windows_or_chunks": self.windows, "failures": self.failures}


def build(name, workdir, texts):
  """The family `name`, its model built under `workdir`."""
  # pylint: disable=import-outside-toplevel
  directory = os.path.join(workdir, name)
  if name == "string-match":
    return _Family(name, function=lambda example: string_match_score(example, 0.5))
  if name == "t5":
    from autoais.models.t5_nli import T5NliModelHandler
    if not os.path.exists(directory):
      build_random_t5(directory, texts, seed=0, **T5_SMALL)
    return _Family(name, T5NliModelHandler(directory, max_input_tokens=512))
  if name == "minicheck-flan-t5":
    from autoais.models.minicheck import MiniCheckModelHandler
    if not os.path.exists(directory):
      build_random_t5(directory, texts, seed=1, version="1.1",
                      **dict(T5_SMALL, d_ff=1024))
    return _Family(name, MiniCheckModelHandler(directory))
  if name in ("nli-classifier", "minicheck-roberta", "minicheck-deberta"):
    from tests.support.nli_classifiers import build_tiny_classifier
    kind = "deberta-v2" if name == "minicheck-deberta" else "roberta"
    length = 2048 if kind == "deberta-v2" else 512
    if not os.path.exists(directory):
      build_tiny_classifier(directory, kind,
                            THREE_WAY if name == "nli-classifier" else TWO_WAY,
                            texts, length, seed=2, size=CLASSIFIER)
    if name == "nli-classifier":
      from autoais.models.nli_classifier import NliClassifierModelHandler
      return _Family(name, NliClassifierModelHandler(directory, max_input_tokens=512))
    from autoais.models.minicheck import MiniCheckModelHandler
    return _Family(name, MiniCheckModelHandler(directory))
  if name == "llm-judge":
    from autoais.models.llm_judge import LlmJudgeModelHandler
    from tests.support.openai_server import MODEL, OpenAIServer, build_judge_tokenizer
    from transformers import AutoTokenizer
    if not os.path.exists(directory):
      build_judge_tokenizer(directory)
    server = OpenAIServer(AutoTokenizer.from_pretrained(directory))
    return _Family(name, LlmJudgeModelHandler(server.url, MODEL, directory,
                                              concurrency=16),
                   closer=server.shutdown)
  raise ValueError(f"unknown family {name!r}: one of {', '.join(FAMILIES)}")


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--n", type=int, default=96)
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--batch", type=int, default=64)
  parser.add_argument("--families", default=",".join(FAMILIES))
  parser.add_argument("--workdir", default=os.path.join(ROOT, "bench", "out", "families"))
  args = parser.parse_args()
  import torch  # pylint: disable=import-outside-toplevel
  examples = pairs(args.n)
  texts = [text for example in pairs(2000) for text in (example.premise,
                                                         example.hypothesis)]
  os.makedirs(args.workdir, exist_ok=True)
  families = [build(name, args.workdir, texts) for name in args.families.split(",")]
  try:
    for family in families:
      family.load()
    with torch.inference_mode():
      for family in families:  # a warm-up round, not reported
        family.run(examples[:8], args.batch)
        family.rates.clear()
      for round_index in range(args.rounds):
        order = families if round_index % 2 == 0 else families[::-1]
        for family in order:
          family.run(examples, args.batch)
  finally:
    for family in families:
      if family.closer is not None:
        family.closer()
  reports = {family.name: family.report() for family in families}
  if "t5" in reports:
    base = reports["t5"]["examples_per_s"]
    for report in reports.values():
      report["ratio_to_t5"] = round(report["examples_per_s"] / base, 3)
  for report in reports.values():
    report["examples_per_s"] = round(report["examples_per_s"], 2)
  print(json.dumps({"n": len(examples), "rounds": args.rounds, "batch": args.batch,
                    "torch_threads": torch.get_num_threads(),
                    "cpu_count": os.cpu_count(), "families": reports}))


if __name__ == "__main__":
  main()
