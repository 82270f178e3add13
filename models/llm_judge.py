"""`--scorer llm-judge`: an LLM judge behind an OpenAI-compatible endpoint (what
`vllm serve bespokelabs/Bespoke-MiniCheck-7B` exposes), scored as MiniCheck's
LLMCheck scores Bespoke-MiniCheck-7B; a Beam ModelHandler (its Scorer:
transforms/scoring/llm_judge.py).

    autoais evaluate ... --scorer llm-judge --judge_url http://HOST:8000/v1 \\
        --judge_model bespokelabs/Bespoke-MiniCheck-7B --tokenizer TOKENIZER_DIR \\
        [--judge_api chat|completions] [--judge_api_key_env VAR] \\
        [--chunk_size 32468] [--judge_concurrency 16] \\
        [--request_timeout 60] [--max_retries 8] [--retry_backoff 1]

As LLMCheck (minicheck/inference.py of github.com/Liyan06/MiniCheck): every
(document chunk, claim sentence) is a prompt (document_chunks,
claim_sentences, messages); one token is generated with its top log-probs,
whose "yes" probabilities are summed (support_probability); the score is the
minimum over claim sentences of the maximum over chunks (combine). The
judge's tokenizer (`--tokenizer`) counts the chunks' tokens, and renders the
prompt for the completions API. Requests go through models/remote.py's
HttpClient, up to `--judge_concurrency` at once per worker; an example whose
prompt fails for good, or is answered without usable log-probs, becomes a
ScoringFailure (dead letter `scoring_failed`). The contract: docs/scorers.md,
"LLM judges".
"""
import concurrent.futures
import hashlib
import json
import math
import os
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from apache_beam.ml.inference.base import ModelHandler, PredictionResult

from autoais.models import checkpoints
from autoais.models.sentences import pack_sentences, sentence_splitter
from autoais.models.remote import HttpClient
from autoais.schemas import AttributionExample, AttributionScore, ScoringFailure
from autoais.schemas.errors import ModelError, RequestFailed

# The APIs (--judge_api) and their routes under the base URL.
ROUTES = {"chat": "/chat/completions", "completions": "/completions"}
APIS = tuple(ROUTES)
MODELS_ROUTE = "/models"
# MiniCheck's defaults: max_model_len 32768, less 300 tokens kept for the claim.
DEFAULT_CHUNK_SIZE = 32768 - 300
DEFAULT_CONCURRENCY = 16
TOP_LOGPROBS = 5  # MiniCheck's SamplingParams(logprobs=5)
TOKENIZER_NAMES = ("tokenizer.json",)
# What the tokenizer's checksum covers: the vocabulary and its chat template.
_TOKENIZER_CHECKSUM_NAMES = ("tokenizer.json", "chat_template.jinja")

# The prompt is an interface fact of the judge (Bespoke-MiniCheck-7B was
# trained on it): SYSTEM_PROMPT and USER_PROMPT of MiniCheck's
# minicheck/utils.py, verbatim (tests/unit/scoring/test_llm_judge.py checks).
SYSTEM_PROMPT = (
    "Determine whether the provided claim is consistent with the corresponding "
    "document. Consistency in this context implies that all information presented "
    "in the claim is substantiated by the document. If not, it should be considered "
    "inconsistent. Please assess the claim's consistency with the document by "
    "responding with either \"Yes\" or \"No\".")
USER_PROMPT = "Document: [DOCUMENT]\nClaim: [CLAIM]"


def prompt_digest() -> str:
  """sha256 of the prompt's two texts: run.json and the score cache name it."""
  return hashlib.sha256(json.dumps([SYSTEM_PROMPT, USER_PROMPT]).encode("utf-8")
                        ).hexdigest()


def messages(document: str, claim: str) -> List[Dict[str, str]]:
  # Replaced in this order, as MiniCheck does: a document holding "[CLAIM]"
  # gets the claim there too.
  user = USER_PROMPT.replace("[DOCUMENT]", document).replace("[CLAIM]", claim)
  return [{"role": "system", "content": SYSTEM_PROMPT},
          {"role": "user", "content": user}]


def document_chunks(document: str, count_tokens: Callable[[str], int], chunk_size: int,
                    split: Callable[[str], List[str]]) -> List[str]:
  """The document's chunks, as LLMCheck.get_all_chunks_per_doc cuts them:
  its blocks' sentences, a line break between blocks, packed as MiniCheck's
  Inferencer packs them (pack_sentences), [""] for none."""
  pieces: List[str] = []
  for block in document.split("\n"):
    pieces.extend(split(block))
    pieces.append("\n")
  pieces = pieces[:-1] or [""]
  return pack_sentences(pieces, [count_tokens(piece) for piece in pieces],
                        chunk_size) or [""]


def claim_sentences(claim: str, split: Callable[[str], List[str]]) -> List[str]:
  """The claim's sentences; a claim with none (empty, whitespace) is judged as
  it is (MiniCheck has no answer for it: it fails on such a claim)."""
  return split(claim) or [claim]


def request_body(api: str, model: str, document: str, claim: str,
                 template: Optional[Callable[[List[Dict[str, str]]], str]]) -> Dict[str, Any]:
  """One prompt's request: temperature 0, one token, the top log-probs."""
  body: Dict[str, Any] = {"model": model, "temperature": 0, "max_tokens": 1}
  if api == "chat":
    body.update(messages=messages(document, claim), logprobs=True,
                top_logprobs=TOP_LOGPROBS)
  else:
    body.update(prompt=template(messages(document, claim)), logprobs=TOP_LOGPROBS)
  return body


def top_logprobs(api: str, answer: Any) -> List[Tuple[str, float]]:
  """(token text, log-prob) of the first generated token's top alternatives;
  ValueError where the answer has none."""
  try:
    choice = answer["choices"][0]
    logprobs = choice["logprobs"]
    if api == "chat":
      first = logprobs["content"][0]["top_logprobs"]
      pairs = [(item["token"], item["logprob"]) for item in first]
    else:
      first = logprobs["top_logprobs"][0]
      pairs = list(first.items())
  except (KeyError, IndexError, TypeError, AttributeError) as error:
    raise ValueError(f"no log-probs of the first token in the answer "
                     f"({type(error).__name__}: {error})") from error
  if not pairs:
    raise ValueError("the answer's top log-probs are empty")
  for token, logprob in pairs:
    if not isinstance(token, str) or isinstance(logprob, bool) or not isinstance(
        logprob, (int, float)) or math.isnan(logprob) or logprob > 1e-6:
      raise ValueError(f"a top log-prob must be a token and a number <= 0, got "
                       f"{token!r}: {logprob!r}")
  return pairs


def support_probability(pairs: Sequence[Tuple[str, float]]) -> float:
  """MiniCheck's: the summed probability of the top tokens reading "yes" in
  any case, 0 where none does."""
  return sum(math.exp(logprob) for token, logprob in pairs if token.lower() == "yes")


def combine(probabilities: Sequence[Sequence[float]]) -> float:
  """[chunk][claim sentence] probabilities -> the minimum over sentences of the
  maximum over chunks (MiniCheck's SentenceFusion)."""
  return min(max(column) for column in zip(*probabilities))


class Judge:
  """What a worker holds: the HTTP client, the tokenizer, the thread pool, the
  sentence splitter (a class, not a tuple: Beam keeps a weak reference to a
  loaded model)."""

  def __init__(self, client: HttpClient, tokenizer: Any,
               pool: concurrent.futures.ThreadPoolExecutor):
    self.client = client
    self.tokenizer = tokenizer
    self.pool = pool
    self.splitter = sentence_splitter()
    # Beam may run bundles in several threads over one loaded model; a fast
    # tokenizer called from two threads at once can fail ("Already borrowed").
    self.tokenizer_lock = threading.Lock()


def _api_key(variable: Optional[str]) -> Dict[str, str]:
  if not variable:
    return {}
  key = os.environ.get(variable)
  if not key:
    raise ModelError(f"--judge_api_key_env {variable}: the environment variable is not "
                     "set on this worker")
  return {"Authorization": f"Bearer {key}"}


def open_judge_tokenizer(tokenizer_path: str):
  """(local directory, tokenizer) of `--tokenizer` (local or gs://)."""
  return checkpoints.open_tokenizer(tokenizer_path, tokenizer_path, TOKENIZER_NAMES)


def check_chat_template(tokenizer, tokenizer_path: str) -> None:
  if not getattr(tokenizer, "chat_template", None):
    raise ModelError(f"--tokenizer {tokenizer_path}: no chat template (in "
                     "tokenizer_config.json or chat_template.jinja); --judge_api "
                     "completions renders the judge's prompt with it")


def describe_judge(tokenizer_path: str) -> Dict[str, Any]:
  """What a worker tells of the judge's scoring for run.json and the cache."""
  local_dir, tokenizer = open_judge_tokenizer(tokenizer_path)
  return {"tokenizer_sha256": checkpoints.tokenizer_checksum(local_dir,
                                                        _TOKENIZER_CHECKSUM_NAMES),
          "chat_template": bool(getattr(tokenizer, "chat_template", None)),
          "prompt_sha256": prompt_digest(),
          "sentence_splitter": sentence_splitter().describe()}


def served_models(url: str, timeout: float, api_key_env: Optional[str]) -> List[str]:
  """GET {url}/models (OpenAI's list of models) -> the ids served (a launch check)."""
  from autoais.models.remote import get_json  # pylint: disable=import-outside-toplevel
  answer = get_json(url.rstrip("/") + MODELS_ROUTE, timeout, f"--judge_url {url}",
                    _api_key(api_key_env))
  try:
    return [str(item["id"]) for item in answer["data"]]
  except (KeyError, TypeError) as error:
    raise ModelError(f"--judge_url {url}: {url.rstrip('/')}{MODELS_ROUTE} is not an "
                     f"OpenAI list of models ({error})") from error


class LlmJudgeModelHandler(ModelHandler[AttributionExample, PredictionResult, Judge]):
  """RunInference handler of an OpenAI-compatible judge (module docstring)."""

  def __init__(self, url: str, model: str, tokenizer_path: str, *, api: str = "chat",
               threshold: float = 0.5, chunk_size: int = DEFAULT_CHUNK_SIZE,
               concurrency: int = DEFAULT_CONCURRENCY, timeout: float = 60.0,
               max_retries: int = 8, backoff: float = 1.0,
               api_key_env: Optional[str] = None):
    super().__init__()
    if api not in APIS:
      raise ValueError(f"api must be one of {APIS}, got {api!r}")
    self._url = url
    self._model = model
    self._tokenizer_path = tokenizer_path
    self._api = api
    self._threshold = threshold
    self._chunk_size = chunk_size
    self._concurrency = concurrency
    self._timeout = timeout
    self._max_retries = max_retries
    self._backoff = backoff
    self._api_key_env = api_key_env

  def load_model(self) -> Judge:
    _, tokenizer = open_judge_tokenizer(self._tokenizer_path)
    if self._api == "completions":
      check_chat_template(tokenizer, self._tokenizer_path)
    client = HttpClient(self._url, self._timeout, self._max_retries, self._backoff,
                        self.get_metrics_namespace(), _api_key(self._api_key_env))
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=self._concurrency,
                                                 thread_name_prefix="llm-judge")
    return Judge(client, tokenizer, pool)

  def _template(self, tokenizer) -> Optional[Callable[[List[Dict[str, str]]], str]]:
    if self._api == "chat":
      return None
    return lambda conversation: tokenizer.apply_chat_template(
        conversation, add_generation_prompt=True, tokenize=False)

  def _ask(self, client: HttpClient, body: Dict[str, Any]) -> Any:
    """One prompt's support probability, or a ScoringFailure."""
    try:
      answer = client.post_json(ROUTES[self._api], body)
    except RequestFailed as error:
      return ScoringFailure(error.status, error.message[:500])
    try:
      return support_probability(top_logprobs(self._api, answer))
    except ValueError as error:
      return ScoringFailure(200, f"malformed response: {error}"[:500])

  def run_inference(self, batch: Sequence[AttributionExample], model: Judge,
                    inference_args: Optional[Dict[str, Any]] = None):
    def count_tokens(text: str) -> int:
      return len(model.tokenizer(text, add_special_tokens=False)["input_ids"])

    template = self._template(model.tokenizer)
    plans = []
    asked: Dict[str, concurrent.futures.Future] = {}
    for example in batch:
      with model.tokenizer_lock:
        chunks = document_chunks(example.premise, count_tokens, self._chunk_size,
                                 model.splitter.split)
        claims = claim_sentences(example.hypothesis, model.splitter.split)
        bodies = [[request_body(self._api, self._model, chunk, claim, template)
                   for claim in claims] for chunk in chunks]
      grid = []
      for row_bodies in bodies:
        row = []
        for body in row_bodies:
          key = json.dumps(body, sort_keys=True)
          if key not in asked:
            asked[key] = model.pool.submit(self._ask, model.client, body)
          row.append(asked[key])
        grid.append(row)
      plans.append(grid)
    results = []
    for example, grid in zip(batch, plans):
      answers = [[future.result() for future in row] for row in grid]
      failed = [a for row in answers for a in row if isinstance(a, ScoringFailure)]
      if failed:
        result: Any = failed[0]
      else:
        score = min(1.0, combine(answers))
        result = AttributionScore(score, score > self._threshold, len(grid), len(grid) > 1)
      results.append(PredictionResult(example, result, self._model))
    return results

  def get_num_bytes(self, batch: Sequence[AttributionExample]) -> int:
    return sum(len(example.premise) + len(example.hypothesis) for example in batch)

  def get_metrics_namespace(self) -> str:
    return "autoais_llm_judge"
