"""`--scorer llm-judge`: an LLM judge behind an OpenAI-compatible endpoint
(models/llm_judge.py's handler) behind the Scorer interface, each distinct
example scored once per run (transforms/scoring/fanout.py) and with
`--score_cache` once across runs."""
from typing import Any, Dict, Optional

import apache_beam as beam

from autoais.models.llm_judge import LlmJudgeModelHandler, describe_judge
from autoais.transforms.scoring.fanout import ScoreUniqueExamples
from autoais.transforms.scoring.names import LLM_JUDGE
from autoais.transforms.scoring.scorer import (DescribeScorer, Scorer, score_cache_for,
                                              with_hub_references)


class _DescribeJudgeFn(beam.DoFn):

  def __init__(self, tokenizer_path: str):
    self._tokenizer_path = tokenizer_path

  def process(self, unused_impulse):
    yield describe_judge(self._tokenizer_path)


class LlmJudgeScorer(Scorer):

  name = LLM_JUDGE

  def __init__(self, url: str, model: str, tokenizer_path: str, *, api: str = "chat",
               threshold: float = 0.5, chunk_size: int, concurrency: int,
               timeout: float = 60.0, max_retries: int = 8, backoff: float = 1.0,
               api_key_env: Optional[str] = None, score_cache: Optional[str] = None,
               tokenizer_revision: Optional[str] = None):
    self._options = {"judge_url": url, "judge_model": model, "judge_api": api,
                     "tokenizer": tokenizer_path, "chunk_size": chunk_size,
                     "judge_concurrency": concurrency, "request_timeout": timeout,
                     "max_retries": max_retries, "retry_backoff": backoff,
                     # The variable's name only: the key never leaves the worker.
                     "judge_api_key_env": api_key_env, "threshold": threshold}
    if score_cache:
      self._options["score_cache"] = score_cache
    self._tokenizer_revision = tokenizer_revision
    self._handler = LlmJudgeModelHandler(
        url, model, tokenizer_path, api=api, threshold=threshold, chunk_size=chunk_size,
        concurrency=concurrency, timeout=timeout, max_retries=max_retries,
        backoff=backoff, api_key_env=api_key_env)

  def _describe_fn(self) -> beam.DoFn:
    return _DescribeJudgeFn(self._options["tokenizer"])

  def score_keyed(self, work_dir: str) -> beam.PTransform:
    return ScoreUniqueExamples(
        self._handler, work_dir=work_dir,
        model_id=f"{self._options['judge_url']}#{self._options['judge_model']}",
        score_cache=score_cache_for(self, self._options.get("score_cache"),
                                    self._describe_fn(), self._options["threshold"]))

  def describe(self) -> Dict[str, Any]:
    return with_hub_references({"name": LLM_JUDGE, "family": LLM_JUDGE,
                                "decision": "threshold", **self._options},
                               {"tokenizer_revision": self._tokenizer_revision})

  def model_info(self) -> beam.PTransform:
    return DescribeScorer(self._describe_fn(),
                          self if self._options.get("score_cache") else None)

  def cache_identity(self, model_info: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The endpoint, the model it serves, the API (chat templates applied by
    the server or here), the prompt, and what cuts the chunks and the claim's
    sentences: the tokenizer, the chunk size and the splitter."""
    return {"scorer": LLM_JUDGE, "judge_url": self._options["judge_url"].rstrip("/"),
            "judge_model": self._options["judge_model"],
            "judge_api": self._options["judge_api"],
            "prompt_sha256": model_info["prompt_sha256"],
            "tokenizer_sha256": model_info["tokenizer_sha256"],
            "chunk_size": self._options["chunk_size"],
            "sentence_splitter": model_info["sentence_splitter"]}
