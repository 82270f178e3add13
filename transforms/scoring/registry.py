"""The scorer families of `--scorer`, as a table (FAMILIES): each family's
flags (the scorer flags it takes, ScorerOptions' dests: any other is refused,
never ignored) and its module, which checks those flags at launch
(`check_flags(options, local_run)`, returning its Scorer's settings) and
whose Scorer class builds the family's ModelHandler from them. transforms/scoring/
config.py builds a run's ScorerConfig from the table.

A family's module is imported only when it is chosen: the local models' import
torch and transformers when they score, the hosted ones never do, llm-judge
only transformers' tokenizer, and a string-match run imports none of them.
"""
import importlib
from types import ModuleType
from typing import Dict, NamedTuple, Tuple

from autoais.transforms.scoring.names import (LLM_JUDGE, MINICHECK, NLI_CLASSIFIER, REMOTE,
                                              SCORERS, STRING_MATCH, T5, VERTEX)


class Family(NamedTuple):
  name: str
  # The scorer flags it takes besides --scorer, --threshold and --decision
  # (every family's; decode is refused where it does not apply).
  flags: Tuple[str, ...]
  # autoais.transforms.scoring.<module>: its check_flags and its Scorer class.
  module: str
  scorer: str


# The flags of a model run in the job's workers (--model).
_LOCAL_MODEL = ("model", "model_revision", "tokenizer", "tokenizer_revision", "dtype",
                "device", "max_input_tokens", "token_budget", "torch_threads",
                "large_model", "score_cache")
_RETRIES = ("request_timeout", "max_retries", "retry_backoff")

FAMILIES: Dict[str, Family] = {family.name: family for family in (
    Family(STRING_MATCH, (), "string_match", "StringMatchScorer"),
    Family(T5, _LOCAL_MODEL, "t5", "T5Scorer"),
    Family(NLI_CLASSIFIER, _LOCAL_MODEL + ("positive_label",), "nli_classifier",
           "NliClassifierScorer"),
    Family(MINICHECK, _LOCAL_MODEL + ("chunk_size",), "minicheck", "MiniCheckScorer"),
    Family(REMOTE, ("endpoint",) + _RETRIES + ("instances_per_request", "score_cache"),
           "hosted", "RemoteScorer"),
    Family(VERTEX, ("instances_per_request", "endpoint_id", "location", "score_cache"),
           "hosted", "VertexScorer"),
    Family(LLM_JUDGE, ("tokenizer", "tokenizer_revision", "chunk_size") + _RETRIES + (
        "judge_url", "judge_model", "judge_api", "judge_api_key_env", "judge_concurrency",
        "score_cache"), "llm_judge", "LlmJudgeScorer"),
)}

# Which families take each scorer flag, in --scorer's order (the refusal's words).
FLAG_SCORERS: Dict[str, Tuple[str, ...]] = {
    flag: tuple(name for name in SCORERS if flag in FAMILIES[name].flags)
    for flag in sorted({flag for family in FAMILIES.values() for flag in family.flags})}


def family_module(name: str) -> ModuleType:
  """The module of family `name` (imported now)."""
  if name not in FAMILIES:
    raise ValueError(f"unknown scorer {name!r} (choose from {', '.join(SCORERS)})")
  return importlib.import_module(f"autoais.transforms.scoring.{FAMILIES[name].module}")


def make_scorer(name: str, threshold: float, **settings):
  """The Scorer of family `name` with `settings` (what its check_flags returns)."""
  return getattr(family_module(name), FAMILIES[name].scorer)(threshold=threshold, **settings)
