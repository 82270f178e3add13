"""The ModelHandlers of models hosted elsewhere: `--scorer remote` and `--scorer vertex`
(their Scorers: transforms/scoring/hosted.py).

    autoais evaluate ... --scorer remote --endpoint http://HOST:PORT
        [--request_timeout 60] [--max_retries 8] [--retry_backoff 1]
        [--instances_per_request 32]
    autoais evaluate ... --scorer vertex --endpoint_id ID --project P --location L

Both speak the Vertex AI prediction format that `autoais serve` serves
(beam_jobs/serve.py):

    POST /predict  {"instances": [{"premise": ..., "hypothesis": ...}, ...]}
      -> {"predictions": [{"nli_score": 0.93, "n_windows": 1,
                           "truncated": false}, ...]}

`remote` posts through HttpClient (the standard library's HTTP client: a
timeout per request, retries with backoff, client-side throttling), which
models/llm_judge.py shares; a request refused for its content is split
(score_in_requests) until the instance refused is alone, and a request that
fails for good fails each of its instances (ScoringFailure with the status).
Against a span server (lettucedetect) it sends each answer and reads each
prediction's spans. `vertex` goes through Beam's own VertexAIModelHandlerJSON.
`auto_ais` is decided on the client: nli_score > --threshold. The contract:
docs/scorers.md, "Hosted models".
"""
import http.client
import json
import random
import socket
import threading
import time
import urllib.error
import urllib.request
from typing import Any, Callable, Dict, List, Optional, Sequence

from apache_beam.io.components.adaptive_throttler import AdaptiveThrottler
from apache_beam.metrics import Metrics
from apache_beam.ml.inference.base import ModelHandler, PredictionResult

from autoais.schemas import AttributionExample, AttributionScore, ScoringFailure, UnsupportedSpan
from autoais.schemas.errors import EndpointMisconfigured, ModelError, RequestFailed

PREDICT_ROUTE = "/predict"
HEALTH_ROUTE = "/health"
RETRYABLE_STATUSES = frozenset({429}) | frozenset(range(500, 600))
# The endpoint refuses these instances: split the request to find which.
SPLITTABLE_STATUSES = frozenset({400, 413, 422})
# The endpoint or the route is wrong for every row: stop the job.
FATAL_STATUSES = frozenset({401, 403, 404, 405})
_MAX_BACKOFF_SECONDS = 60.0
_THROTTLE_DELAY_SECONDS = 1.0


def instance(example: AttributionExample, answer: bool = False) -> Dict[str, str]:
  """An example's instance; with `answer`, its answer too (a span server's
  text checked: the answer its hypothesis asks about), and its question where
  it carries one apart (AttributionExample.question: RAGTruth's QA responses,
  which the server's prompt takes as the in-process scorer's does)."""
  found = {"premise": example.premise, "hypothesis": example.hypothesis}
  if answer and example.answer:
    found["answer"] = example.answer
  if answer and example.question is not None:
    found["question"] = example.question
  return found


def _spans(prediction: Dict[str, Any]) -> List[UnsupportedSpan]:
  """A span server's unsupported_spans, in order and apart; ValueError otherwise."""
  found, spans = prediction.get("unsupported_spans"), []
  if not isinstance(found, list):
    raise ValueError(f"unsupported_spans must be a list (the endpoint's /health says it "
                     f"gives spans), got {str(found)[:200]!r}")
  for span in found:
    start, end, probability = (span.get(key) for key in UnsupportedSpan._fields) if (
        isinstance(span, dict)) else (None,) * 3
    if not (all(type(v) is int for v in (start, end))  # pylint: disable=unidiomatic-typecheck
            and type(probability) in (int, float)  # pylint: disable=unidiomatic-typecheck
            and (spans[-1].end if spans else 0) <= start < end and 0 <= probability <= 1):
      raise ValueError(f"an unsupported span must be {{start, end, probability}}, after "
                       f"the one before, got {str(span)[:200]!r}")
    spans.append(UnsupportedSpan(start, end, float(probability)))
  return spans


def score_from_prediction(prediction: Any, threshold: float,
                          spans: bool = False) -> AttributionScore:
  """A prediction of the serve format -> AttributionScore, with `spans` its
  unsupported spans; ValueError if the prediction is not one."""
  if not isinstance(prediction, dict) or "nli_score" not in prediction:
    raise ValueError(f"a prediction must be an object with nli_score, got "
                     f"{str(prediction)[:200]!r}")
  score = prediction["nli_score"]
  if isinstance(score, bool) or not isinstance(score, (int, float)) or not (
      0.0 <= score <= 1.0):
    raise ValueError(f"nli_score must be a number in [0, 1], got {score!r}")
  windows = prediction.get("n_windows", 1)
  if isinstance(windows, bool) or not isinstance(windows, int) or windows < 1:
    raise ValueError(f"n_windows must be a positive integer, got {windows!r}")
  truncated = prediction.get("truncated", False)
  if not isinstance(truncated, bool):
    raise ValueError(f"truncated must be true or false, got {truncated!r}")
  score = float(score)
  return AttributionScore(score, score > threshold, windows, truncated,
                          _spans(prediction) if spans else None)


def score_in_requests(examples: Sequence[AttributionExample], per_request: int,
                      send: Callable[[List[Dict[str, str]]], List[Any]],
                      threshold: float, spans: bool = False) -> List[Any]:
  """Scores examples in requests of `per_request` instances through `send`
  (instances -> predictions, raising RequestFailed); each example gets an
  AttributionScore (with `spans`, the answer's: sent with its answer) or a
  ScoringFailure. Refused requests are split."""
  results: List[Any] = []

  def attempt(part: Sequence[AttributionExample]) -> None:
    try:
      predictions = send([instance(example, spans) for example in part])
      if not isinstance(predictions, list) or len(predictions) != len(part):
        raise RequestFailed(200, f"expected {len(part)} predictions, got "
                            f"{len(predictions) if isinstance(predictions, list) else 'none'}")
      scores = [score_from_prediction(p, threshold, spans) for p in predictions]
    except ValueError as error:
      failure = ScoringFailure(200, f"malformed response: {error}")
      results.extend([failure] * len(part))
      return
    except RequestFailed as error:
      if error.status in SPLITTABLE_STATUSES and len(part) > 1:
        middle = len(part) // 2
        attempt(part[:middle])
        attempt(part[middle:])
        return
      failure = ScoringFailure(error.status, error.message[:500])
      results.extend([failure] * len(part))
      return
    results.extend(scores)

  for start in range(0, len(examples), per_request):
    attempt(examples[start:start + per_request])
  return results


class HttpClient:
  """One worker's connection settings, retry loop and throttler, for every
  scorer that posts JSON to an HTTP endpoint (`remote` here, `llm-judge` in
  models/llm_judge.py). Thread-safe: several threads may post at once."""

  def __init__(self, base_url: str, timeout: float, max_retries: int, backoff: float,
               namespace: str, headers: Optional[Dict[str, str]] = None):
    self.base_url = base_url.rstrip("/")
    self.timeout = timeout
    self.max_retries = max_retries
    self.backoff = backoff
    self.headers = {"Content-Type": "application/json", **(headers or {})}
    self.throttler = AdaptiveThrottler(window_ms=60000, bucket_ms=1000,
                                       overload_ratio=2)
    # Between two throttling decisions; short where retries are (tests).
    self.throttle_delay = min(_THROTTLE_DELAY_SECONDS, max(0.01, backoff))
    self.throttled_msecs = Metrics.counter(namespace, "throttling-msecs")
    # The counter Dataflow's autoscaler reads (whole seconds).
    self.throttled_seconds = Metrics.counter(namespace, "cumulativeThrottlingSeconds")
    self._unreported_throttling = 0.0
    self._lock = threading.Lock()
    self.retries = Metrics.counter(namespace, "request_retries")
    self.failures = Metrics.counter(namespace, "requests_failed")
    self._random = random.Random()

  def _post_once(self, url: str, body: bytes):
    """-> (status, body, retry-after seconds or None); raises OSError-like
    errors for timeouts and dropped connections."""
    request = urllib.request.Request(url, data=body, method="POST", headers=self.headers)
    try:
      with urllib.request.urlopen(request, timeout=self.timeout) as response:
        return response.status, response.read(), None
    except urllib.error.HTTPError as error:
      retry_after = error.headers.get("Retry-After") if error.headers else None
      try:
        payload = error.read()
      except (OSError, http.client.HTTPException):
        payload = b""
      return error.code, payload, _seconds(retry_after)

  def post_json(self, route: str, payload: Any) -> Any:
    """POSTs `payload` as JSON to base_url + route, retrying as the module
    docstring says; -> the answer's JSON. RequestFailed when it fails for good
    (status 200 where the answer is not JSON), EndpointMisconfigured on 401,
    403, 404 or 405."""
    url = self.base_url + route
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    attempt = 0
    while True:
      self._throttle()
      started = time.time()
      try:
        status, answer, retry_after = self._post_once(url, body)
        problem = None
      except (socket.timeout, TimeoutError) as error:
        status, answer, retry_after, problem = 0, b"", None, f"timed out: {error}"
      except (urllib.error.URLError, http.client.HTTPException, ConnectionError,
              OSError) as error:
        reason = getattr(error, "reason", error)
        status, answer, retry_after, problem = 0, b"", None, (
            f"no response: {type(reason).__name__}: {reason}")
      if status == 200:
        with self._lock:
          self.throttler.successful_request(started * 1000)
        try:
          return json.loads(answer.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as error:
          raise RequestFailed(200, f"malformed response: {error}") from error
      message = problem or _error_text(answer)
      if status in FATAL_STATUSES:
        raise EndpointMisconfigured(
            f"{url} answered HTTP {status}: {message} (the endpoint "
            "or its route is wrong, or access is refused)")
      retryable = status == 0 or status in RETRYABLE_STATUSES
      if not retryable or attempt >= self.max_retries:
        self.failures.inc()
        raise RequestFailed(status, message + (
            f" (after {attempt + 1} attempts)" if retryable else ""))
      attempt += 1
      self.retries.inc()
      delay = min(_MAX_BACKOFF_SECONDS, self.backoff * 2 ** (attempt - 1))
      with self._lock:
        delay *= 0.5 + self._random.random()
      time.sleep(max(delay, retry_after or 0.0))

  def predict(self, instances: List[Dict[str, str]]) -> List[Any]:
    """The serve format's POST /predict -> its predictions."""
    answer = self.post_json(PREDICT_ROUTE, {"instances": instances})
    try:
      return answer["predictions"]
    except (KeyError, TypeError) as error:
      raise RequestFailed(200, f"malformed response: no predictions: {error}") from error

  def _throttle(self) -> None:
    # Asked once per request sent: the throttler counts each question as a
    # request, so asking again in a loop of short waits would count phantom
    # requests and throttle on and on. The wait happens with the probability
    # the SRE book's rule gives: (requests - 2 x accepted) / (requests + 1).
    with self._lock:
      throttled = self.throttler.throttle_request(time.time() * 1000)
    if throttled:
      time.sleep(self.throttle_delay)
      self.throttled_msecs.inc(int(self.throttle_delay * 1000))
      with self._lock:
        self._unreported_throttling += self.throttle_delay
        whole = int(self._unreported_throttling)
        self._unreported_throttling -= whole
      if whole:
        self.throttled_seconds.inc(whole)


def _seconds(value: Optional[str]) -> Optional[float]:
  try:
    return min(_MAX_BACKOFF_SECONDS, max(0.0, float(value))) if value else None
  except ValueError:
    return None  # an HTTP date: fall back to the backoff


def _error_text(payload: bytes) -> str:
  text = payload.decode("utf-8", errors="replace").strip()
  try:
    parsed = json.loads(text)
    if isinstance(parsed, dict) and "error" in parsed:
      error = parsed["error"]
      # OpenAI-compatible servers (vLLM) nest it: {"error": {"message": ...}}.
      if isinstance(error, dict) and "message" in error:
        error = error["message"]
      return str(error)[:500]
    if isinstance(parsed, dict) and parsed.get("object") == "error" and "message" in parsed:
      return str(parsed["message"])[:500]
  except ValueError:
    pass
  return text[:500] or "no message"


def get_json(url: str, timeout: float, flag: str,
             headers: Optional[Dict[str, str]] = None) -> Any:
  """GET url -> its JSON, once (a launch check); ModelError naming `flag` (the
  flag that gave the URL) if it does not answer with JSON."""
  request = urllib.request.Request(url, headers=headers or {})
  try:
    with urllib.request.urlopen(request, timeout=timeout) as response:
      return json.loads(response.read().decode("utf-8"))
  except (OSError, ValueError, http.client.HTTPException) as error:
    raise ModelError(f"{flag}: {url} does not answer: {error}") from error


def fetch_health(endpoint: str, timeout: float) -> Dict[str, Any]:
  """GET {endpoint}/health -> its JSON (what `autoais serve` says of its model).
  A server that is busy at this moment answers 503 "not ready" with the same
  description of its model: that is read too (requests will be retried)."""
  try:
    return get_json(endpoint.rstrip("/") + HEALTH_ROUTE, timeout, f"--endpoint {endpoint}")
  except ModelError as error:
    refused = error.__cause__
    if isinstance(refused, urllib.error.HTTPError) and refused.code == 503:
      try:
        health = json.loads(refused.read().decode("utf-8"))
      except (OSError, ValueError, http.client.HTTPException):
        health = None
      if isinstance(health, dict) and isinstance(health.get("model"), dict):
        return health
    raise


class RemoteNliModelHandler(ModelHandler[AttributionExample, PredictionResult,
                                         HttpClient]):
  """RunInference handler that scores over HTTP (see the module docstring)."""

  def __init__(self, endpoint: str, *, threshold: float = 0.5, timeout: float = 60.0,
               max_retries: int = 8, backoff: float = 1.0,
               instances_per_request: int = 32, spans: bool = False,
               refuse_served_card: bool = False):
    super().__init__()
    self._spans = spans  # read the answers' unsupported spans (a span server)
    # The launch could not ask the endpoint for the served model's card
    # threshold: a model served with one is refused (load_model).
    self._refuse_served_card = refuse_served_card
    self._endpoint = endpoint
    self._threshold = threshold
    self._timeout = timeout
    self._max_retries = max_retries
    self._backoff = backoff
    self._per_request = instances_per_request

  def load_model(self) -> HttpClient:
    if self._refuse_served_card:
      served = fetch_health(self._endpoint, self._timeout).get("model") or {}
      if served.get("card_threshold") is not None:
        raise ModelError(
            f"--endpoint {self._endpoint}: the served model carries the threshold "
            f"calibrated with it ({served['card_threshold']}, its model card), which "
            f"this run, launched where the endpoint could not be asked, would not "
            f"decide at; give --threshold (the card's, or {self._threshold} to keep "
            "the default)")
    return HttpClient(self._endpoint, self._timeout, self._max_retries, self._backoff,
                       self.get_metrics_namespace())

  def run_inference(self, batch: Sequence[AttributionExample], model: HttpClient,
                    inference_args: Optional[Dict[str, Any]] = None):
    results = score_in_requests(batch, self._per_request, model.predict, self._threshold,
                                self._spans)
    return [PredictionResult(example, result, self._endpoint)
            for example, result in zip(batch, results)]

  def get_num_bytes(self, batch: Sequence[AttributionExample]) -> int:
    return sum(len(example.premise) + len(example.hypothesis) for example in batch)

  def get_metrics_namespace(self) -> str:
    return "autoais_remote"


# ----------------------------------------------------------------------------
# Vertex AI, through Beam's handler.


class VertexNliModelHandler(ModelHandler):
  """Maps examples to Vertex instances and predictions to scores around
  Beam's VertexAIModelHandlerJSON (constructed here: it checks the endpoint)."""

  def __init__(self, endpoint_id: str, project: str, location: str, *,
               threshold: float = 0.5, instances_per_request: int = 32):
    super().__init__()
    # pylint: disable=import-outside-toplevel
    from apache_beam.ml.inference.vertex_ai_inference import VertexAIModelHandlerJSON
    self._vertex = VertexAIModelHandlerJSON(endpoint_id=endpoint_id, project=project,
                                            location=location)
    self._threshold = threshold
    self._per_request = instances_per_request

  def load_model(self):
    return self._vertex.load_model()

  def run_inference(self, batch, model, inference_args=None):
    from google.api_core.exceptions import GoogleAPICallError  # pylint: disable=import-outside-toplevel

    def send(instances):
      try:
        results = self._vertex.run_inference(instances, model, inference_args)
      except GoogleAPICallError as error:
        status = int(error.code or 0)
        if status in FATAL_STATUSES:
          raise EndpointMisconfigured(f"Vertex AI answered HTTP {status}: "
                                      f"{error.message}") from error
        raise RequestFailed(status, str(error.message)) from error
      return [result.inference for result in results]

    results = score_in_requests(batch, self._per_request, send, self._threshold)
    return [PredictionResult(example, result)
            for example, result in zip(batch, results)]

  def get_num_bytes(self, batch) -> int:
    return sum(len(example.premise) + len(example.hypothesis) for example in batch)

  def get_metrics_namespace(self) -> str:
    return "autoais_vertex"
