"""How a scorer family declares itself and its flags (Family, Flag), and the
flags several families share. Each family module ends with its Family;
transforms/scoring/registry.py gathers them into the one table that the jobs'
ScorerOptions (beam_jobs/options.py), their `--help`, the Flex Template
metadata (launch/metadata.py) and `autoais serve`'s parser are made from.
"""
from typing import Any, Callable, NamedTuple, Optional, Tuple


def boolean_flag(value: str) -> bool:
  """A boolean flag that takes a value (Flex Templates pass --name=value)."""
  lowered = value.strip().lower()
  if lowered in ("true", "1", "yes"):
    return True
  if lowered in ("false", "0", "no"):
    return False
  raise ValueError(f"expected true or false, got {value!r}")


# What a Flex Template parameter's value must match (Dataflow checks it before
# the job starts); a flag with choices is held to them.
POSITIVE = r"^[1-9][0-9]*$"
NOT_NEGATIVE = r"^[0-9]+$"
SECONDS = r"^[0-9]+(\.[0-9]+)?$"
GCS_PATH = r"^gs://[^\n\r]+$"


class Flag(NamedTuple):
  """A scorer flag: `--name`, parsed by `type` with `default` (or one of
  `choices`); `help` follows "For --scorer FAMILIES: " in --help; `label`
  and `regexes` are its Flex Template parameter's; `served`: `autoais serve`
  takes it too, for the served families that declare it."""
  name: str
  label: str
  help: str
  type: Optional[Callable[[str], Any]] = None
  default: Any = None
  choices: Optional[Tuple[str, ...]] = None
  regexes: Tuple[str, ...] = ()
  served: bool = False


class Family(NamedTuple):
  """A scorer family of `--scorer`: `summary` says what it scores with (the
  words of --scorer's help); `flags` those it takes besides --scorer and
  --threshold (any other is refused, never ignored);
  `check_flags(options, local_run)` checks them at launch and returns the
  keyword arguments of `scorer(threshold=..., **settings)`; `serve(options,
  model_path, tokenizer_path)`, where `autoais serve` hosts the family, loads
  its model: (model, description for /health)."""
  name: str
  summary: str
  flags: Tuple[Flag, ...]
  check_flags: Callable[..., dict]
  scorer: type
  serve: Optional[Callable[..., tuple]] = None


# Every family's flags besides --scorer.
COMMON = (
    Flag("threshold", "AutoAIS threshold",
         "auto_ais is Y iff nli_score > threshold, a number in [0, 1] (default 0.5).",
         type=float, default=0.5, regexes=(r"^(0|1|0?\.[0-9]+|1\.0+)$",)),
)

# The T5 family's alone: the others decide by --threshold, so a --decision
# given them (even "threshold") is refused as any flag they do not take. The
# jobs read options.decision, "threshold" where not given.
DECISION = Flag(
    "decision", "Decision mode",
    "threshold (nli_score > --threshold; long premises windowed) or decode (the "
    "Attributed QA script's rule, for parity: its premise, no windows, generate() "
    "with the model's generation config reads '1').",
    default="threshold", regexes=(r"^(threshold|decode)$",))

TOKENIZER_REVISION = Flag(
    "tokenizer_revision", "Tokenizer revision",
    "for a hub id --tokenizer, the branch, tag or commit (default main), as "
    "--model_revision.", served=True)

# A model run in the job's workers (t5, nli-classifier, minicheck, hhem, factcg,
# lettucedetect).
LOCAL_MODEL = (
    Flag("model", "NLI model",
         "the NLI model, a local or gs:// directory or a Hugging Face hub id (org/name, "
         "e.g. google/t5_xxl_true_nli_mixture: resolved with huggingface_hub into its "
         "cache, HF_HOME; HF_HUB_OFFLINE and HF_TOKEN from the environment). Weights in "
         "safetensors (model.safetensors, or shards with model.safetensors.index.json) "
         "with its tokenizer: for --scorer t5 a T5/mT5 checkpoint, for --scorer "
         "nli-classifier a sequence-classification NLI checkpoint, for --scorer "
         "minicheck a MiniCheck checkpoint (Flan-T5, RoBERTa or DeBERTa), for --scorer "
         "hhem an HHEM-2 checkpoint (vectara/hallucination_evaluation_model), for "
         "--scorer factcg a FactCG-DeBERTa checkpoint (yaxili96/FactCG-DeBERTa-v3-Large), "
         "for --scorer lettucedetect a LettuceDetect token classifier "
         "(KRLabsOrg/lettucedect-*). Without "
         "--scorer, --model is refused: the default scorer, string-match, reads no "
         "model.",
         regexes=(r"^(gs://[^/]+/.+|[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*)$",)),
    Flag("model_revision", "Model revision",
         "for a hub id --model, the branch, tag or commit to load (default main), "
         "resolved to a commit at launch (a job's run.json records the id, the "
         "revision and the commit).", served=True),
    Flag("tokenizer", "Tokenizer",
         "the tokenizer (a local or gs:// directory, or a hub id; tokenizer.json, or "
         "spiece.model with tokenizer_config.json) where the model has none. Default: "
         "the model's.", served=True),
    TOKENIZER_REVISION,
    Flag("dtype", "Model dtype",
         "float32 or bfloat16 (float16 is refused: T5 overflows).", default="float32",
         regexes=(r"^(float32|bfloat16)$",), served=True),
    Flag("device", "Model device", "cpu or cuda.", default="cpu",
         regexes=(r"^(cpu|cuda)$",), served=True),
    Flag("max_input_tokens", "Model input length",
         "the model's input length; longer premises are windowed (default: the "
         "tokenizer's model_max_length, else 512).", type=int, regexes=(POSITIVE,),
         served=True),
    Flag("token_budget", "Tokens per model batch",
         "padded tokens per model batch (default 2048 on cpu, 16384 on cuda).",
         type=int, regexes=(POSITIVE,), served=True),
    Flag("torch_threads", "Model threads per worker process",
         "CPU threads of the model in each worker process (torch.set_num_threads). "
         "Default 0: torch's default, one per core. Where a machine runs several worker "
         "processes, each with its own model (Dataflow runs one SDK process per vCPU; "
         "--direct_num_workers locally), 1 keeps them from competing for the cores.",
         type=int, default=0, regexes=(NOT_NEGATIVE,)),
    Flag("large_model", "Share one model per machine",
         "true: load one model per machine, shared across worker processes (for 11B "
         "checkpoints). Default false.", type=boolean_flag, default=False,
         regexes=(r"^([Tt]rue|[Ff]alse)$",)),
)

# Requests to an HTTP endpoint, retried (remote, llm-judge).
RETRIES = (
    Flag("request_timeout", "Request timeout (s)",
         "seconds before a request times out (then retried). Default 60.", type=float,
         default=60.0, regexes=(SECONDS,)),
    Flag("max_retries", "Retries per request",
         "retries of a request after a 5xx, 429, timeout or dropped connection, before "
         "its rows go to dead letter. Default 8.", type=int, default=8,
         regexes=(NOT_NEGATIVE,)),
    Flag("retry_backoff", "First retry delay (s)",
         "first retry delay in seconds, doubled at each retry (with jitter; at most "
         "60). Default 1.", type=float, default=1.0, regexes=(SECONDS,)),
)

# Every family with a model's scores to keep across runs.
SCORE_CACHE = Flag(
    "score_cache", "Score cache directory",
    "the score cache directory (local or gs://): scores of (model, premise, "
    "hypothesis) kept across runs, so a rerun sends only new triples to the model "
    "(transforms/scoring/cache.py), one subdirectory per model identity.",
    regexes=(GCS_PATH,))

# Documents cut into chunks the claim is checked against (minicheck, llm-judge).
CHUNK_SIZE = Flag(
    "chunk_size", "Document chunk size",
    "the size of the document chunks the claim is checked against (whitespace words "
    "for MiniCheck-Flan-T5, tokens for -RoBERTa and -DeBERTa, tokens of the judge's "
    "tokenizer for llm-judge). Default MiniCheck's: 500 words, 400 tokens, 32468 "
    "tokens.", type=int, regexes=(POSITIVE,))
