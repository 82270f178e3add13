"""The pipeline's own cost per pair (not a test): every scoring job run with an
instant model.

    .venv/bin/python bench/pipeline_cost.py [--code OTHER_CHECKOUT] [--rounds 2]
        [--jobs evaluate,claims,audit,citations,agreement] [--scale 1.0]
        [--family t5] [--model_cost instant|cpu|RATE] [--profile]
        [--workdir bench/out/pipeline_cost]

--family picks the scorer family whose host work is measured (FAMILIES): t5
(the default, `--scorer t5`), nli-classifier-roberta and
nli-classifier-deberta (`--scorer nli-classifier` with a RoBERTa byte-level
BPE or a DeBERTa-v3 SentencePiece tokenizer), minicheck-roberta,
minicheck-deberta and minicheck-flan-t5 (`--scorer minicheck`), factcg
(`--scorer factcg`, tests/support's FactCG-DeBERTa fixture). Every
family's tokenizer is trained here on the synthetic passages with 4,000
pieces, its model random and tiny; its input length is the published
checkpoint's (512 tokens; MiniCheck's variants set their own).

The instant model of the t5 family is the family as a job runs it (`--scorer t5 --model DIR`,
a tiny random T5 built by tests/support/t5_models.py) whose two model computations,
T5NliModel.encoder_states and the first decoder step (label_logits), are
replaced in the measuring process by functions that answer at once with
tensors of the right shapes ("1" where the sum of an input's ids is odd,
else "0": a mix, so that the steps that depend on the answers run, as
citations' precision rounds do for supported sentences alone; until
2026-11-27's fifth session it answered 0.5, "0", for every pair, and
citations' figures of before then count its recall round alone):
tokenisation, premise windows, length-sorted token-budget batches, padding
into tensors, and everything of the pipeline around them still run. (The
load-time probe that checks the decoder step against the model's forward
pass still runs the real model, once per load.) The classifiers' instant
model is their loaded torch model's forward answering at once with logits of
the head's width (the supporting label's high where the sum of an input's ids
is odd, low elsewhere): pair encoding with premise windows, MiniCheck's
document chunks, token-budget batches and padding still run.

--model_cost says what the model costs: `instant` (the default, above);
`cpu`, the tiny model's own forward pass on this machine's CPU (one torch
thread); or a rate of models/simulated_device.py's RATES (h100-true-11b,
h200-flan-t5-large, h100-roberta-large, ...): the family's model directory
copied with the simulated device's marker, so each padded batch waits, GIL
released, for the time that card takes. With a simulated device the whole
run's wall time is the figure (the waits cost no CPU): each job's line adds
pairs per wall second and the device's busy share of the scoring window.

Each run is a fresh child process that imports the `autoais` package from a
checkout (this one, and with --code another one, for before and after), runs
the job in-process (DirectRunner, in-memory FnApiRunner) and measures the
process's CPU seconds (user + sys, all threads) of the job's run alone, not of
the imports before it. Every job also runs with string-match on the same inputs:
the yardstick of a path without a model. Rounds alternate the checkouts and
scorers; medians are reported. Distinct pairs are the t5 run's model calls
(run.json: each distinct premise/hypothesis scored once). Each job runs on its
full inputs and on a quarter of them: distinct pairs per CPU second of the
whole run, and marginal (the difference in pairs over the difference in CPU
seconds), from which what every run pays once cancels out.

--profile adds one cProfile run per job and checkout, its time split into
stages by the function that spends it (a built-in's time goes to the stage of
its caller): tokenising, premise windows, model batching (RunInference, token
budget, padding, the instant model), fan-out and grouping of distinct examples,
reading and joins, the job's own steps, writing outputs, Beam's own overhead,
and the rest. Profiling slows Python code, so shares are approximate; the profile
sees the main thread only, and other_threads_cpu_s says how much CPU the other
threads spent (the fast tokenizer encodes a list on its own threads).

Prints one JSON line per job (with the after / before ratios) and a last line
with every job's rates.
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
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline import (AUTOAIS, ROOT, Words, passage_id, write_corpus,  # pylint: disable=wrong-import-position
                      python_speed_seconds)
import citations as citations_bench  # pylint: disable=wrong-import-position
sys.path.insert(0, ROOT)  # tests/support's model builders

JOBS = ("evaluate", "claims", "audit", "citations", "agreement")
LAYERS = ("schemas", "models", "transforms", "serve", "beam_jobs", "launch")


# -- inputs -------------------------------------------------------------------


def write_corpus_once(work: str, n_passages: int, words: Words) -> str:
  """The corpus of evaluate and audit (build-corpus of this checkout), built once."""
  source, corpus = os.path.join(work, "corpus_src"), os.path.join(work, "corpus")
  if not os.path.exists(os.path.join(corpus, "corpus.json")):
    write_corpus(source, n_passages, words)
    subprocess.run(AUTOAIS + ["build-corpus", "--input", f"{source}/*.jsonl", "--output",
                              corpus, "--num_shards", "16"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  return corpus


N_PASSAGES = 20000


def write_evaluate_inputs(work: str, scale: float, words: Words) -> dict:
  """8 systems x Q questions citing a 20k-passage corpus: systems share answers
  and passages (a leaderboard's distinct pairs are fewer than its rows)."""
  n_questions, n_passages, n_systems = int(1500 * scale), N_PASSAGES, 8
  corpus = write_corpus_once(os.path.dirname(work), n_passages, words)
  gold = os.path.join(work, "gold.jsonl")
  rng = random.Random(3)
  with open(gold, "w", encoding="utf-8") as f:
    for q in range(n_questions):
      home = words.passage((q * 7) % n_passages).split()
      f.write(json.dumps({"question": f"question {q}",
                          "answer": [" ".join(home[10:12]), home[30]]}) + "\n")
  predictions = os.path.join(work, "predictions")
  os.makedirs(predictions, exist_ok=True)
  for s in range(n_systems):
    with open(os.path.join(predictions, f"system-{s}.csv"), "w", newline="",
              encoding="utf-8") as f:
      writer = csv.writer(f)
      writer.writerow(["question", "answer", "attribution"])
      for q in range(n_questions):
        home = (q * 7) % n_passages
        text = words.passage(home).split()
        answer = " ".join(text[10:12]) if rng.random() < 0.5 else f"{text[rng.randint(0, 70)]} x"
        cited = home + (0 if rng.random() < 0.5 else rng.randint(1, 3))
        writer.writerow([f"question {q}", answer, passage_id(cited % n_passages)])
  return {"argv": ["--predictions", f"{predictions}/*.csv", "--corpus", corpus,
                   "--gold", gold, "--bootstrap_samples", "100"]}


def write_claims_inputs(work: str, scale: float, words: Words) -> dict:
  """Flat claims JSONL: 4 systems, each claim with 2 evidence passages drawn
  from a shared pool (systems cite the same passages)."""
  n_answers, n_systems = int(600 * scale), 4
  path = os.path.join(work, "claims.jsonl")
  rng = random.Random(5)
  with open(path, "w", encoding="utf-8") as f:
    for s in range(n_systems):
      for q in range(n_answers):
        for c in range(3):
          pool = q * 3
          evidence = [words.passage(pool + rng.randint(0, 2), 60) for _ in range(2)]
          claim = " ".join(words.passage(pool + c, 60).split()[s * 3:s * 3 + 10])
          f.write(json.dumps({"system_name": f"system-{s}", "question": f"question {q}",
                              "claim": claim.capitalize() + ".", "evidence": evidence,
                              "support": rng.choice(["Complete", "Partial", "Missing"])})
                  + "\n")
  return {"argv": ["--input", path, "--format", "jsonl", "--bootstrap_samples", "100"]}


def write_audit_inputs(work: str, scale: float, words: Words) -> dict:
  """Answers with k = 10 candidates each from the evaluate corpus (TREC run)."""
  n_answers, k, n_passages = int(600 * scale), 10, N_PASSAGES
  corpus = write_corpus_once(os.path.dirname(work), n_passages, words)
  directory = os.path.join(work, "audit")
  os.makedirs(directory, exist_ok=True)
  with open(os.path.join(directory, "answers.csv"), "w", encoding="utf-8") as answers, \
      open(os.path.join(directory, "topics.tsv"), "w", encoding="utf-8") as topics, \
      open(os.path.join(directory, "run.trec"), "w", encoding="utf-8") as run:
    answers.write("system_name,question,answer\n")
    for q in range(n_answers):
      home = (q * 7919) % n_passages
      text = words.passage(home).split()
      answers.write(f"bench,question {q},{text[10]} {text[11]}\n")
      topics.write(f"q{q}\tquestion {q}\n")
      for rank in range(1, k + 1):
        doc = (home + (rank - 1) * 104729) % n_passages
        run.write(f"q{q} Q0 {passage_id(doc)} {rank} {k - rank + 1}.0 bench\n")
  return {"argv": ["--answers", os.path.join(directory, "answers.csv"), "--candidates",
                   os.path.join(directory, "run.trec"), "--topics",
                   os.path.join(directory, "topics.tsv"), "--corpus",
                   corpus, "--bootstrap_samples", "100"]}


def write_citations_inputs(work: str, scale: float, words: Words) -> dict:
  """bench/citations.py's ALCE items: 3 sentences of 2 citations, 5 documents."""
  directory = os.path.join(work, "citations")
  citations_bench.write_items(directory, int(800 * scale), 4, words)
  return {"argv": ["--input", os.path.join(directory, "*.jsonl"),
                   "--bootstrap_samples", "100"]}


def write_agreement_inputs(work: str, scale: float, words: Words) -> dict:
  """A ratings CSV: 4 systems over the same questions and passages."""
  n_questions, n_systems = int(1500 * scale), 4
  path = os.path.join(work, "ratings.csv")
  rng = random.Random(9)
  with open(path, "w", newline="", encoding="utf-8") as f:
    writer = csv.writer(f)
    writer.writerow(["system_name", "question", "answer", "attribution", "passage",
                     "human_rating"])
    for s in range(n_systems):
      for q in range(n_questions):
        passage = words.passage(q)
        text = passage.split()
        answer = " ".join(text[10:12]) if rng.random() < 0.6 else f"{text[s]} y"
        writer.writerow([f"system-{s}", f"question {q}?", answer, f"doc-{q}", passage,
                         rng.choice("YN")])
  # No --bootstrap_samples: the ratings format's groups are systems, not data
  # sets, and agreement refuses a flag it would leave unused.
  return {"argv": ["--input", path, "--format", "ratings"]}


WRITERS = {"evaluate": write_evaluate_inputs, "claims": write_claims_inputs,
           "audit": write_audit_inputs, "citations": write_citations_inputs,
           "agreement": write_agreement_inputs}


# -- the child: one job run in this process ----------------------------------


def use_checkout(root: str) -> None:
  """Imports `autoais` and its layers from `root` (a checkout), whatever the
  virtualenv's editable install points at."""
  import importlib.abc  # pylint: disable=import-outside-toplevel
  import importlib.util  # pylint: disable=import-outside-toplevel
  folders = {"autoais": os.path.join(root, "autoais"),
             **{f"autoais.{layer}": os.path.join(root, layer) for layer in LAYERS}}

  class Finder(importlib.abc.MetaPathFinder):

    def find_spec(self, fullname, path=None, target=None):
      del path, target
      if fullname not in folders:
        return None
      return importlib.util.spec_from_file_location(
          fullname, os.path.join(folders[fullname], "__init__.py"),
          submodule_search_locations=[folders[fullname]])

  sys.meta_path.insert(0, Finder())


def make_model_instant() -> None:
  """Replaces the T5 family's two model computations, and the classifiers'
  forward pass, by answers of the right shapes (see the module docstring);
  the t5 family's load-time probe, which calls label_logits without encoder
  states, still runs the real model."""
  import torch  # pylint: disable=import-outside-toplevel
  from autoais.models.nli_classifier import NliClassifierModel  # pylint: disable=import-outside-toplevel
  from autoais.models.t5_nli import T5NliModel  # pylint: disable=import-outside-toplevel
  real_init = NliClassifierModel.__init__

  def classifier_init(self, model, *args, **kwargs):
    real_init(self, model, *args, **kwargs)
    labels, positive = model.config.num_labels, self.positive

    def forward(input_ids, attention_mask, token_type_ids=None):
      del token_type_ids
      one = ((input_ids * attention_mask).sum(dim=1) % 2).to(torch.float32) * 8 - 4
      logits = torch.zeros((input_ids.shape[0], labels))
      logits[:, positive] = one
      return types.SimpleNamespace(logits=logits)

    model.forward = forward

  NliClassifierModel.__init__ = classifier_init
  real_label_logits = T5NliModel.label_logits
  real_encoder_states = T5NliModel.encoder_states

  def encoder_states(self, ids, mask):
    del mask
    # Of the right shape without filling memory: a zero broadcast.
    return torch.zeros((1, 1, 1)).expand(ids.shape[0], ids.shape[1],
                                         self.model.config.d_model)

  def label_logits(self, ids, mask, encoded=None):
    if encoded is None:
      return real_label_logits(self, ids, mask, real_encoder_states(self, ids, mask))
    # "1" or "0" by the parity of the input's ids: a mix of entailed and not,
    # as a real model answers, so that steps that depend on the answers run
    # (citations asks its precision rounds only of supported sentences).
    one = ((ids * mask).sum(dim=1) % 2).to(torch.float32) * 2 - 1
    return torch.stack((one, torch.zeros_like(one)), dim=1)

  T5NliModel.encoder_states = encoder_states
  T5NliModel.label_logits = label_logits


STAGES = ("tokenising", "windows", "model batching", "fan-out and grouping",
          "reading and joins", "job steps", "writing outputs", "beam overhead", "other")


def stage_of(func) -> str:
  """The stage of a profiled function (filename, line, name)."""
  filename, _, name = func
  path = filename.replace(os.sep, "/")
  if "/tokenizers/" in path or "/transformers/tokenization" in path or (
      path.endswith(("models/t5_inputs.py", "models/checkpoints.py"))
      and name in ("encode_many", "model_text", "__call__", "locked", "input_ids")):
    return "tokenising"
  if path.endswith("models/t5_inputs.py"):
    return "windows"
  if (path.endswith(("models/t5_nli.py", "models/token_budget.py",
                     "bench/pipeline_cost.py")) or
      "/apache_beam/ml/inference/" in path or "/torch/" in path or
      (path.endswith("transforms/scoring/fanout.py") and "_ChunkHandler" in name)):
    return "model batching"
  if path.endswith(("transforms/scoring/fanout.py", "transforms/scoring/examples.py")):
    return "fan-out and grouping"
  if "/transforms/io/" in path or "/transforms/corpus/" in path:
    return "reading and joins"
  if "/transforms/rows/" in path or "/pyarrow/" in path:
    return "writing outputs"
  if "/apache_beam/" in path:
    return "beam overhead"
  if "/autoais/" in path or any(f"/{layer}/" in path for layer in LAYERS):
    return "job steps"
  return "other"


def profile_stages(profiler) -> dict:
  """Seconds per stage: each function's own time to its stage; a built-in's
  (no file) split over its callers' stages by the time each caller spent in it."""
  import pstats  # pylint: disable=import-outside-toplevel
  stats = pstats.Stats(profiler).stats
  seconds = dict.fromkeys(STAGES, 0.0)
  for func, (_, _, own, _, callers) in stats.items():
    if func[0] == "~" and callers:
      for caller, edge in callers.items():
        seconds[stage_of(caller)] += edge[2]
    else:
      seconds[stage_of(func)] += own
  total = sum(seconds.values())
  return {"profiled_thread_cpu_s": round(total, 2),
          **{stage: round(value / total, 3) for stage, value in seconds.items()}}


def child(spec: dict) -> None:
  import resource  # pylint: disable=import-outside-toplevel
  use_checkout(spec["code"])
  import importlib  # pylint: disable=import-outside-toplevel
  job = importlib.import_module(f"autoais.beam_jobs.{spec['job'].replace('-', '_')}")
  if spec["scorer"] != "string-match":
    if spec.get("model_cost", "instant") == "instant":
      make_model_instant()
    # Imports before the clock (a process's start-up, not a pair's cost): the
    # model's modules, Beam's RunInference, torch and transformers.
    for module in ("autoais.models.t5_nli", "autoais.models.nli_classifier",
                   "autoais.models.minicheck",
                   "transformers.models.t5.modeling_t5",
                   "transformers.models.roberta.modeling_roberta",
                   "transformers.models.deberta_v2.modeling_deberta_v2"):
      importlib.import_module(module)
    from transformers import (AutoModelForSeq2SeqLM, AutoModelForSequenceClassification,  # pylint: disable=import-outside-toplevel,unused-import
                              AutoTokenizer)
  import autoais  # pylint: disable=import-outside-toplevel
  assert autoais.__file__.startswith(spec["code"]), autoais.__file__
  profiler = None
  if spec["profile"]:
    import cProfile  # pylint: disable=import-outside-toplevel
    # The profiled thread's CPU time, not wall time: on a shared machine wall
    # time charges other processes' turns to whatever ran when they came.
    profiler = cProfile.Profile(time.thread_time)
  record = spec.get("record")
  if record and os.path.exists(record):
    os.unlink(record)
  before = resource.getrusage(resource.RUSAGE_SELF)
  # Worker processes of multi_processing (reaped when the run ends).
  children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
  main_thread = time.thread_time()
  wall = time.monotonic()
  if profiler:
    profiler.enable()
  code = job.run(spec["argv"])
  if profiler:
    profiler.disable()
  wall = time.monotonic() - wall
  main_thread = time.thread_time() - main_thread
  after = resource.getrusage(resource.RUSAGE_SELF)
  children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
  cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
  children_cpu = ((children_after.ru_utime - children_before.ru_utime)
                  + (children_after.ru_stime - children_before.ru_stime))
  # The fast tokenizer encodes a list on its own threads (Rust, rayon): their
  # CPU is in cpu_s but not in the main thread's profile.
  result = {"exit": code, "cpu_s": cpu, "children_cpu_s": children_cpu, "wall_s": wall,
            "other_threads_cpu_s": cpu - main_thread,
            "peak_rss_mib": after.ru_maxrss / 1024}
  if record and spec["scorer"] != "string-match":
    from autoais.models import simulated_device  # pylint: disable=import-outside-toplevel
    with open(record, encoding="utf-8") as f:
      batches = [json.loads(line) for line in f]
    # Each batch busy for its tokens' time at the rate, from its start: the
    # same definition for every checkout (before 2026-11-29 the record's
    # "end" was taken after the sleep, once the thread had the GIL back, so
    # it counted the wait for the host as busy time).
    rate = simulated_device.RATES[spec["model_cost"]]
    intervals = [(b["start"], b["start"] + b["tokens"] * rate.seconds / rate.tokens)
                 for b in batches]
    result["device_busy_share"] = simulated_device._busy_share(intervals)  # pylint: disable=protected-access
    result["device_busy_s"] = sum(end - start for start, end in intervals)
    result["device_batches"] = len(batches)
    result["device_processes"] = len({b["pid"] for b in batches})
  if profiler:
    result["stages"] = profile_stages(profiler)
    if spec.get("dump"):
      profiler.dump_stats(spec["dump"])
  print("RESULT " + json.dumps(result))


# -- the parent ---------------------------------------------------------------


def distinct_pairs(record: dict) -> int:
  """The distinct premise/hypothesis pairs the model scored (run.json: the
  scorer block's model_calls, or the job's own count)."""
  for block in (record.get("scorer", {}), record, record.get("counts", {})):
    if isinstance(block.get("model_calls"), int):
      return block["model_calls"]
  raise KeyError(f"no model_calls in run.json: {sorted(record)}")


def run_child(code: str, job: str, scorer: list, argv: list, output: str,
              profile: bool, model_cost: str = "instant", record: str = "",
              script: str = __file__, **extra) -> dict:
  """One run in a child process of `script` (this one, or another bench's
  that takes the same --child spec, with `extra` keys)."""
  spec = {"code": code, "job": job, "profile": profile, "model_cost": model_cost,
          "record": record, **extra,
          "scorer": scorer[1] if scorer else "string-match",
          "argv": argv + ["--output_dir", output, "--progress_interval", "0"] + scorer}
  process = subprocess.run(
      ["nice", "-n", "5", sys.executable, os.path.abspath(script), "--child",
       json.dumps(spec)], cwd=ROOT, capture_output=True, text=True, check=False)
  lines = [line for line in process.stdout.splitlines() if line.startswith("RESULT ")]
  if process.returncode or not lines or json.loads(lines[-1][len("RESULT "):])["exit"]:
    raise SystemExit(f"{job} ({code}, {spec['scorer']}, {extra}) failed:\n"
                     f"{process.stderr[-3000:]}")
  result = json.loads(lines[-1][len("RESULT "):])
  with open(os.path.join(output, "run.json"), encoding="utf-8") as f:
    result["run_json"] = json.load(f)
  return result


# family -> (scorer, what build_family_model builds). The t5 family's model
# keeps its directory name ("model") so that earlier work directories serve.
FAMILIES = {
    "t5": ("t5", "t5"),
    "nli-classifier-roberta": ("nli-classifier", "roberta"),
    "nli-classifier-deberta": ("nli-classifier", "deberta-v2"),
    "minicheck-roberta": ("minicheck", "roberta"),
    "minicheck-deberta": ("minicheck", "deberta-v2"),
    "minicheck-flan-t5": ("minicheck", "flan-t5"),
    "factcg": ("factcg", "factcg"),
}


def build_family_model(family: str, work: str, words: Words) -> list:
  """The scorer flags of `family` with its model, built once in `work`."""
  scorer, kind = FAMILIES[family]
  texts = [words.passage(i) for i in range(2000)]
  if kind == "t5":
    model = os.path.join(work, "model")
  else:
    model = os.path.join(work, f"model-{family}")
  if not os.path.isdir(model):
    if kind == "factcg":
      # FactCG-DeBERTa's published layout (tests/support/factcg_models.py).
      from tests.support.factcg_models import build_tiny_factcg  # pylint: disable=import-outside-toplevel
      build_tiny_factcg(model, texts)
    elif kind in ("t5", "flan-t5"):
      from tests.support.t5_models import build_random_t5  # pylint: disable=import-outside-toplevel
      # MiniCheck-Flan-T5 is a T5 v1.1 (untied output layer).
      build_random_t5(model, texts, vocab_size=4000, seed=5,
                      version="1.1" if kind == "flan-t5" else "1.0")
    else:
      from tests.support.nli_classifiers import build_tiny_classifier  # pylint: disable=import-outside-toplevel
      labels = ({0: "entailment", 1: "neutral", 2: "contradiction"}
                if scorer == "nli-classifier" else {0: "LABEL_0", 1: "LABEL_1"})
      build_tiny_classifier(model, kind, labels, texts, model_max_length=512,
                            vocab_size=4000)
  return ["--scorer", scorer, "--model", model]


def simulated_model(flags: list, rate: str, work: str) -> tuple:
  """(the flags with --model a copy of the model holding the simulated
  device's marker at `rate`, the device's record file)."""
  import shutil  # pylint: disable=import-outside-toplevel
  from autoais.models.simulated_device import MARKER, RATES  # pylint: disable=import-outside-toplevel
  if rate not in RATES:
    raise SystemExit(f"--model_cost {rate!r}: instant, cpu or one of {', '.join(RATES)}")
  model = flags[flags.index("--model") + 1]
  copy, record = f"{model}-{rate}", os.path.join(work, f"busy-{rate}.jsonl")
  if not os.path.isdir(copy):
    shutil.copytree(model, copy)
  with open(os.path.join(copy, MARKER), "w", encoding="utf-8") as f:
    json.dump({"rate": rate, "record": record}, f)
  flags = list(flags)
  flags[flags.index("--model") + 1] = copy
  return flags, record


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--code", action="append", default=[],
                      help="another checkout to measure beside this one (before)")
  parser.add_argument("--jobs", default=",".join(JOBS))
  parser.add_argument("--rounds", type=int, default=2)
  parser.add_argument("--scale", type=float, default=1.0)
  parser.add_argument("--family", default="t5", choices=sorted(FAMILIES))
  parser.add_argument("--model_cost", default="instant",
                      help="instant, cpu, or a simulated device's rate (the docstring)")
  parser.add_argument("--profile", action="store_true")
  parser.add_argument("--skip_string_match", action="store_true")
  parser.add_argument("--workdir", default=os.path.join(ROOT, "bench", "out",
                                                        "pipeline_cost"))
  parser.add_argument("--child", help=argparse.SUPPRESS)
  args = parser.parse_args()
  if args.child:
    child(json.loads(args.child))
    return
  work = args.workdir
  os.makedirs(work, exist_ok=True)
  words = Words(seed=1)
  # One torch thread: with an instant model, intra-op threads have nothing to
  # share, and on a loaded machine their spin-waits are CPU charged to the run.
  model_flags = build_family_model(args.family, work, words) + ["--torch_threads", "1"]
  record = ""
  if args.model_cost not in ("instant", "cpu"):
    model_flags, record = simulated_model(model_flags, args.model_cost, work)
  tag = f"{args.family}-{args.model_cost}"
  checkouts = {"this": ROOT, **{f"code{i}": os.path.abspath(c)
                                for i, c in enumerate(args.code)}}
  # The marginal cost per pair is measured between two sizes of the same
  # inputs: what a run costs whatever its size (building the pipeline, Beam's
  # bundle processors, loading the model) cancels out.
  sizes = {"full": args.scale, "small": args.scale / 4}
  summary = {}
  for job in args.jobs.split(","):
    argvs = {}
    for size, scale in sizes.items():
      os.makedirs(os.path.join(work, f"{job}-{size}"), exist_ok=True)
      argvs[size] = WRITERS[job](os.path.join(work, f"{job}-{size}"), scale, words)["argv"]
    runs = {(name, size): [] for name in checkouts for size in sizes}
    string_match = {size: [] for size in sizes}
    yardsticks = []
    for _ in range(args.rounds):
      yardsticks.append(python_speed_seconds())
      for size, argv in argvs.items():
        for name, code in checkouts.items():
          runs[name, size].append(run_child(
              code, job, model_flags, argv, os.path.join(work, f"out-{job}-{size}-{name}-{tag}"),
              False, args.model_cost, record))
        if not args.skip_string_match:
          string_match[size].append(run_child(
              ROOT, job, [], argv, os.path.join(work, f"out-{job}-{size}-sm"), False))
    result = {"job": job, "family": args.family, "model_cost": args.model_cost,
              "python_yardstick_s": yardsticks}
    for name, code in checkouts.items():
      pairs = {size: distinct_pairs(runs[name, size][0]["run_json"]) for size in sizes}
      cpu = {size: statistics.median(r["cpu_s"] for r in runs[name, size])
             for size in sizes}
      result[name] = {
          "code": code, "distinct_pairs": pairs["full"], "cpu_s": round(cpu["full"], 2),
          "cpu_s_all": [round(r["cpu_s"], 2) for r in runs[name, "full"]],
          "pairs_per_cpu_s": round(pairs["full"] / cpu["full"], 1),
          "wall_s_all": [round(r["wall_s"], 2) for r in runs[name, "full"]],
          "pairs_per_wall_s": round(pairs["full"] / statistics.median(
              r["wall_s"] for r in runs[name, "full"]), 1),
          "other_threads_cpu_s": round(statistics.median(
              r["other_threads_cpu_s"] for r in runs[name, "full"]), 2),
          "small_distinct_pairs": pairs["small"], "small_cpu_s": round(cpu["small"], 2),
          "marginal_pairs_per_cpu_s": round(
              (pairs["full"] - pairs["small"]) / (cpu["full"] - cpu["small"]), 1),
          "peak_rss_mib": round(max(r["peak_rss_mib"] for r in runs[name, "full"]))}
      if record:
        result[name]["device_busy_share"] = round(statistics.median(
            r["device_busy_share"] for r in runs[name, "full"]), 3)
      if args.profile:
        profiled = run_child(code, job, model_flags, argvs["full"],
                             os.path.join(work, f"out-{job}-profile-{name}-{tag}"), True,
                             args.model_cost, record)
        result[name]["stages"] = profiled["stages"]
    if not args.skip_string_match:
      pairs = {size: distinct_pairs(runs["this", size][0]["run_json"]) for size in sizes}
      cpu = {size: statistics.median(r["cpu_s"] for r in string_match[size])
             for size in sizes}
      result["string_match"] = {
          "cpu_s": round(cpu["full"], 2), "small_cpu_s": round(cpu["small"], 2),
          "pairs_per_cpu_s": round(pairs["full"] / cpu["full"], 1),
          "marginal_pairs_per_cpu_s": round(
              (pairs["full"] - pairs["small"]) / (cpu["full"] - cpu["small"]), 1)}
    for name in checkouts:
      if name != "this":
        for rate in ("pairs_per_cpu_s", "marginal_pairs_per_cpu_s", "pairs_per_wall_s"):
          result[f"this_over_{name}_{rate}"] = round(
              result["this"][rate] / result[name][rate], 2)
    summary[job] = {name: {rate: result[name][rate] for rate in (
        "pairs_per_cpu_s", "marginal_pairs_per_cpu_s", "pairs_per_wall_s")}
                    for name in checkouts}
    if "string_match" in result:
      summary[job]["string_match"] = {rate: result["string_match"][rate] for rate in (
          "pairs_per_cpu_s", "marginal_pairs_per_cpu_s")}
    print(json.dumps(result), flush=True)
  print(json.dumps({"distinct_pairs_per_cpu_s": summary}))


if __name__ == "__main__":
  main()
