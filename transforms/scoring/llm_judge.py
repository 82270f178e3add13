"""`--scorer llm-judge`: an LLM judge behind an OpenAI-compatible endpoint
(models/llm_judge.py's handler) behind the Scorer interface, each distinct
example scored once per run (transforms/scoring/fanout.py) and with
`--score_cache` once across runs."""
import os
from typing import Any, Dict, Optional

import apache_beam as beam

from autoais.models import checkpoints
from autoais.schemas.errors import ConfigError, require
from autoais.transforms.scoring.checks import (ModelReferences, check_http_url, check_retries,
                                               readable_here)
from autoais.transforms.scoring.flags import (CHUNK_SIZE, POSITIVE, RETRIES, SCORE_CACHE,
                                              TOKENIZER_REVISION, Family, Flag)
from autoais.transforms.scoring.names import JUDGE_APIS, LLM_JUDGE
from autoais.transforms.scoring.scorer import CallDescribe, Scorer


def check_flags(options, local_run: bool) -> Dict[str, Any]:
  """--scorer llm-judge: the flags checked, the tokenizer directory listed; on a
  local run the tokenizer loaded (its chat template for --judge_api
  completions), the API key's variable set, and the endpoint asked whether it
  serves --judge_model."""
  from autoais.models import llm_judge  # pylint: disable=import-outside-toplevel
  references = ModelReferences(options)
  require(options, "judge_url", "judge_model", "tokenizer")
  check_http_url("--judge_url", options.judge_url)
  check_retries(options)
  if options.judge_concurrency < 1:
    raise ConfigError("--judge_concurrency must be positive")
  if options.judge_api_key_env and local_run and not os.environ.get(
      options.judge_api_key_env):
    raise ConfigError(f"--judge_api_key_env {options.judge_api_key_env}: the "
                      "environment variable is not set")
  checkpoints.tokenizer_files(references.tokenizer, llm_judge.TOKENIZER_NAMES)
  if local_run:
    if options.judge_api == "completions" and readable_here(references.tokenizer):
      _, tokenizer = llm_judge.open_judge_tokenizer(references.tokenizer)
      llm_judge.check_chat_template(tokenizer, options.tokenizer)
    served = llm_judge.served_models(options.judge_url, options.request_timeout,
                                     options.judge_api_key_env)
    if options.judge_model not in served:
      raise ConfigError(f"--judge_model {options.judge_model}: {options.judge_url} "
                        f"serves {', '.join(served) or 'no model'}")
  return {"url": options.judge_url, "model": options.judge_model,
          "tokenizer_path": references.tokenizer,
          "tokenizer_revision": options.tokenizer_revision, "api": options.judge_api,
          "chunk_size": options.chunk_size or llm_judge.DEFAULT_CHUNK_SIZE,
          "concurrency": options.judge_concurrency, "timeout": options.request_timeout,
          "max_retries": options.max_retries, "backoff": options.retry_backoff,
          "api_key_env": options.judge_api_key_env, "score_cache": options.score_cache}


class LlmJudgeScorer(Scorer):

  name = LLM_JUDGE
  _fixed = {"decision": "threshold"}

  def __init__(self, url: str, model: str, tokenizer_path: str, *, api: str = "chat",
               threshold: float = 0.5, chunk_size: int, concurrency: int,
               timeout: float = 60.0, max_retries: int = 8, backoff: float = 1.0,
               api_key_env: Optional[str] = None, score_cache: Optional[str] = None,
               tokenizer_revision: Optional[str] = None):
    from autoais.models.llm_judge import LlmJudgeModelHandler  # pylint: disable=import-outside-toplevel
    options = {"judge_url": url, "judge_model": model, "judge_api": api,
               "tokenizer": tokenizer_path, "chunk_size": chunk_size,
               "judge_concurrency": concurrency, "request_timeout": timeout,
               "max_retries": max_retries, "retry_backoff": backoff,
               # The variable's name only: the key never leaves the worker.
               "judge_api_key_env": api_key_env, "threshold": threshold}
    handler = LlmJudgeModelHandler(
        url, model, tokenizer_path, api=api, threshold=threshold, chunk_size=chunk_size,
        concurrency=concurrency, timeout=timeout, max_retries=max_retries,
        backoff=backoff, api_key_env=api_key_env)
    self._configure(handler, f"{url}#{model}", options, score_cache,
                    {"tokenizer_revision": tokenizer_revision})

  def _describe_fn(self) -> beam.DoFn:
    from autoais.models.llm_judge import describe_judge  # pylint: disable=import-outside-toplevel
    return CallDescribe(describe_judge, self._options["tokenizer"])

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


FAMILY = Family(LLM_JUDGE, "an OpenAI-compatible LLM judge given by --judge_url, "
                "--judge_model and --tokenizer", (
    Flag("tokenizer", "Tokenizer",
         "(required) the judge's tokenizer (tokenizer.json and its chat template), "
         "which counts the chunks' tokens."),
    TOKENIZER_REVISION, CHUNK_SIZE) + RETRIES + (
    Flag("judge_url", "LLM judge endpoint",
         "the base URL of an OpenAI-compatible endpoint (`vllm serve`), e.g. "
         "http://HOST:8000/v1.", regexes=(r"^https?://[^\s]+$",)),
    Flag("judge_model", "LLM judge model",
         "the model name sent in each request, e.g. bespokelabs/Bespoke-MiniCheck-7B."),
    Flag("judge_api", "LLM judge API",
         "chat (the server applies the chat template) or completions (rendered here "
         "with --tokenizer's chat template). Default chat.", default="chat",
         choices=JUDGE_APIS),
    Flag("judge_api_key_env", "API key variable",
         "the NAME of an environment variable holding the endpoint's API key (sent as "
         "a Bearer token; set it on the workers). Never the key itself.",
         regexes=(r"^[A-Za-z_][A-Za-z0-9_]*$",)),
    Flag("judge_concurrency", "LLM judge requests in flight",
         "requests in flight at once per worker process (the server batches them). "
         "Default 16.", type=int, default=16, regexes=(POSITIVE,)),
    SCORE_CACHE), check_flags, LlmJudgeScorer)
