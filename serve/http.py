"""The HTTP side of `autoais serve` (entry point: beam_jobs/serve.py), on
aiohttp's asyncio server (chosen by measurement against LitServe, BentoML, Ray
Serve and the standard library's server: docs/serve.md).

Routes (the Vertex AI prediction format; AIP_PREDICT_ROUTE / AIP_HEALTH_ROUTE
add their paths to /predict and /health):

    POST /predict  {"instances": [{"premise": ..., "hypothesis": ...}, ...]}
      200 {"predictions": [{"nli_score", "n_windows", "truncated"}, ...]}
      (lettucedetect: an instance may add "answer", the answer its hypothesis
      asks about, or "question", the question a hypothesis that is the
      response itself answers (AttributionExample.question), and each
      prediction adds "unsupported_spans": [{"start",
      "end", "probability"}, ...], characters of the text checked)
      400 not that body, JSON nested deeper than --max_json_depth, or an
      instance the model has nothing to score in (the message says why)
      411 no Content-Length;  413 past a limit (bytes, instances, characters or
      windows of an instance, windows of the request: the message names the
      limit, its flag and the instance);  503 the queue is full or the server
      drains (Retry-After);  504 its deadline (--request_deadline) passed
      before its scores were ready;  500 scoring failed
    GET /health    readiness: 200 {"status": "ok", "model": ...}, or 503
                   {"status": "not ready", "reasons": [...], "model": ...}
                   while draining, the queue is full, a request has waited or
                   a batch has run past --stuck_seconds, or the model thread died
    GET /live      liveness: 200 while the process and its model thread live
    GET /metrics   Prometheus text (?format=json: the same as JSON): requests
                   by status, latencies, queue depth, batch sizes, model time

How work is bounded: the body is read only up to --max_body_bytes; a
body nested past what Python's parser takes (it recurses) is a 400, as is one
nested past --max_json_depth; parsing and tokenising run on one
thread beside the event loop (the tokenizer is not shared across threads),
and every limit is checked before the request reaches the model
(serve/batching.py). Requests arriving together share the model's batches
(serve/batching.Batcher). A request whose client disconnects, or whose
deadline passes, is cancelled: if its batch has not started it is never
scored. SIGTERM (or Ctrl-C) stops taking requests (503, readiness false),
lets those in flight finish for up to --drain_seconds, then exits.
"""
import asyncio
import collections
import concurrent.futures
import json
import logging
import signal
import time
from typing import Any, Callable, Deque, Dict, List, NamedTuple, Optional, Sequence

from aiohttp import web

from autoais.serve.batching import Batcher, Limits, Overloaded, ServedModel, windows
from autoais.schemas import AttributionExample, AttributionScore
from autoais.schemas.errors import BadRequest

MAX_BODY_BYTES = 64 * 1024 * 1024
# The format nests three levels ({"instances": [{...}]}); anything much deeper
# is not a prediction request, and Python's parser recurses on nesting.
MAX_JSON_DEPTH = 32
MAX_JSON_DEPTH_LIMIT = 500
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
_RECENT_LATENCIES = 10000


class Settings(NamedTuple):
  """How the server bounds and reports its work (flags of `autoais serve`)."""
  limits: Limits = Limits()
  max_body_bytes: int = MAX_BODY_BYTES
  max_json_depth: int = MAX_JSON_DEPTH
  request_deadline: float = 60.0
  stuck_seconds: float = 60.0
  drain_seconds: float = 30.0
  predict_routes: Sequence[str] = ("/predict",)
  health_routes: Sequence[str] = ("/health",)


def json_depth(value: Any) -> int:
  """The deepest nesting of arrays and objects in a parsed JSON value (walked
  without recursion)."""
  deepest, stack = 0, [(value, 1)] if isinstance(value, (list, dict)) else []
  while stack:
    item, depth = stack.pop()
    deepest = max(deepest, depth)
    children = item.values() if isinstance(item, dict) else item
    stack.extend((child, depth + 1) for child in children
                 if isinstance(child, (list, dict)))
  return deepest


def parse_instances(body: bytes, max_instances: int,
                    max_depth: int = MAX_JSON_DEPTH) -> List[AttributionExample]:
  """A predict request body -> examples; BadRequest naming what is wrong."""
  too_deep = (f"at most {max_depth} (--max_json_depth)")
  try:
    request = json.loads(body.decode("utf-8"))
  except RecursionError as error:
    # Python's parser recurses on nesting and stops near a thousand levels,
    # far past any --max_json_depth (at most MAX_JSON_DEPTH_LIMIT).
    raise BadRequest(400, "the body nests arrays and objects more than "
                     f"{MAX_JSON_DEPTH_LIMIT} deep: {too_deep}") from error
  except (UnicodeDecodeError, ValueError) as error:
    raise BadRequest(400, f"the body is not JSON: {error}") from error
  depth = json_depth(request)
  if depth > max_depth:
    raise BadRequest(400, f"the body nests arrays and objects {depth} deep: {too_deep}")
  if not isinstance(request, dict) or not isinstance(request.get("instances"), list):
    raise BadRequest(400, 'expected {"instances": [{"premise": ..., "hypothesis": '
                     '...}, ...]}')
  instances = request["instances"]
  if len(instances) > max_instances:
    raise BadRequest(413, f"{len(instances)} instances: at most {max_instances} a "
                     "request (--max_instances)")
  examples = []
  for index, item in enumerate(instances):
    if not isinstance(item, dict):
      raise BadRequest(400, f"instance {index}: expected an object with premise and "
                       "hypothesis")
    for field in ("premise", "hypothesis"):
      if not isinstance(item.get(field), str):
        raise BadRequest(400, f"instance {index}: field '{field}' must be a string")
    if not isinstance(item.get("answer", ""), str):
      raise BadRequest(400, f"instance {index}: field 'answer' must be a string")
    if not isinstance(item.get("question", ""), str):
      raise BadRequest(400, f"instance {index}: field 'question' must be a string")
    examples.append(AttributionExample(item["premise"], item["hypothesis"],
                                       item.get("answer", ""), "", item.get("question")))
  return examples


def prediction(score: AttributionScore) -> Dict[str, Any]:
  """An instance's prediction: its score, and the answer's unsupported spans
  where the family finds them (lettucedetect)."""
  found = {"nli_score": score.nli_score, "n_windows": score.n_windows,
           "truncated": score.truncated}
  if score.spans is not None:
    found["unsupported_spans"] = [span._asdict() for span in score.spans]
  return found


class _Metrics:
  """Request counts and latencies (the batcher keeps its own)."""

  def __init__(self):
    self.by_status: Dict[int, int] = collections.Counter()
    self.latency_buckets = [0] * (len(LATENCY_BUCKETS) + 1)
    self.latency_sum = 0.0
    self.recent: Deque[float] = collections.deque(maxlen=_RECENT_LATENCIES)
    self.in_flight = 0

  def record(self, status: int, seconds: float) -> None:
    self.by_status[status] += 1
    self.latency_sum += seconds
    self.recent.append(seconds)
    index = next((i for i, bound in enumerate(LATENCY_BUCKETS) if seconds <= bound),
                 len(LATENCY_BUCKETS))
    self.latency_buckets[index] += 1


class NliService:
  """The application's state: the model, its batcher, settings and metrics."""

  def __init__(self, model: ServedModel, description: Dict[str, Any],
               settings: Settings = Settings(), *, max_batch_windows: int = 256,
               max_wait: float = 0.005, max_queue_windows: int = 4096):
    self.model = model
    self.description = description
    self.settings = settings
    self.batcher = Batcher(model.score, max_batch_windows=max_batch_windows,
                           max_wait=max_wait, max_queue_windows=max_queue_windows)
    # One thread parses and tokenises: a fast tokenizer must not be used by two
    # threads at once (its truncation settings are shared state).
    self._encoder = concurrent.futures.ThreadPoolExecutor(1, "autoais-encode")
    self.metrics = _Metrics()
    self.draining = False

  # -- routes -----------------------------------------------------------------

  def app(self) -> web.Application:
    # The body limit is ours (a 413 naming it); aiohttp's own would answer first.
    app = web.Application(client_max_size=self.settings.max_body_bytes + 1)
    for route in self.settings.predict_routes:
      app.router.add_post(route, self.predict)
    for route in self.settings.health_routes:
      app.router.add_get(route, self.health)
    app.router.add_get("/live", self.live)
    app.router.add_get("/metrics", self.metrics_page)
    return app

  def _encode(self, body: bytes):
    limits = self.settings.limits
    examples = parse_instances(body, limits.max_instances, self.settings.max_json_depth)
    return self.model.encode(examples, limits)

  async def predict(self, request: web.Request) -> web.Response:
    started = time.monotonic()
    self.metrics.in_flight += 1
    status = 499  # the client went away before an answer (nginx's code)
    try:
      response = await self._predict(request, started)
      status = response.status
      return response
    finally:
      self.metrics.in_flight -= 1
      self.metrics.record(status, time.monotonic() - started)

  async def _predict(self, request: web.Request, started: float) -> web.Response:
    settings = self.settings
    if self.draining:
      return _error(503, "the server is shutting down", retry_after=1)
    length = request.content_length
    if length is None:
      return _error(411, "a Content-Length header is required", close=True)
    if length > settings.max_body_bytes:
      return _error(413, f"{length} bytes: at most {settings.max_body_bytes} a request "
                    "(--max_body_bytes)", close=True)
    body = await request.read()
    loop = asyncio.get_running_loop()
    deadline = started + settings.request_deadline
    try:
      encoded = await asyncio.wait_for(
          loop.run_in_executor(self._encoder, self._encode, body),
          max(0.0, deadline - time.monotonic()))
      future = self.batcher.submit(encoded, windows(encoded))
      # wrap_future: cancelling the wait (deadline, client gone) cancels the
      # batcher's future, so a request whose batch has not started is dropped.
      scores = await asyncio.wait_for(asyncio.wrap_future(future),
                                      max(0.0, deadline - time.monotonic()))
    except BadRequest as error:
      return _error(error.status, str(error))
    except Overloaded as error:
      return _error(503, f"overloaded: {error}", retry_after=1)
    except asyncio.TimeoutError:
      return _error(504, f"not scored within the request deadline of "
                    f"{settings.request_deadline:g} s (--request_deadline)")
    except Exception as error:  # pylint: disable=broad-except
      logging.exception("scoring failed")
      return _error(500, f"scoring failed: {type(error).__name__}: {error}")
    return web.json_response({"predictions": [prediction(score) for score in scores]})

  def not_ready(self) -> List[str]:
    """Why the server should get no traffic now (empty: ready)."""
    reasons = []
    if self.draining:
      reasons.append("draining: shutting down")
    if not self.batcher.alive():
      reasons.append("the model thread has stopped")
    stuck = self.batcher.stuck_for()
    if stuck > self.settings.stuck_seconds:
      reasons.append(f"a model batch has run {stuck:.0f} s (--stuck_seconds "
                     f"{self.settings.stuck_seconds:g})")
    waited = self.batcher.oldest_wait()
    if waited > self.settings.stuck_seconds:
      reasons.append(f"a request has waited {waited:.0f} s for the model "
                     f"(--stuck_seconds {self.settings.stuck_seconds:g})")
    requests, queued = self.batcher.queue_depth()
    if queued >= self.batcher.max_queue_windows:
      reasons.append(f"the queue is full: {queued} model inputs of {requests} "
                     f"requests (--max_queue_windows {self.batcher.max_queue_windows})")
    return reasons

  async def health(self, unused_request: web.Request) -> web.Response:
    reasons = self.not_ready()
    if reasons:
      return web.json_response({"status": "not ready", "reasons": reasons,
                                "model": self.description}, status=503)
    return web.json_response({"status": "ok", "model": self.description})

  async def live(self, unused_request: web.Request) -> web.Response:
    if not self.batcher.alive():
      return web.json_response({"status": "dead", "reason": "the model thread has "
                                "stopped"}, status=500)
    return web.json_response({"status": "alive"})

  def metrics_values(self) -> Dict[str, Any]:
    stats = self.batcher.snapshot()
    requests, queued = self.batcher.queue_depth()
    recent = sorted(self.metrics.recent)
    return {
        "requests_by_status": {str(k): v for k, v in sorted(self.metrics.by_status.items())},
        "in_flight_requests": self.metrics.in_flight,
        "latency_seconds": {
            "count": sum(self.metrics.latency_buckets), "sum": self.metrics.latency_sum,
            "buckets": dict(zip([str(b) for b in LATENCY_BUCKETS] + ["+Inf"],
                                self.metrics.latency_buckets)),
            "p50": _quantile(recent, 0.5), "p99": _quantile(recent, 0.99)},
        "queue": {"requests": requests, "windows": queued},
        "ready": not self.not_ready(),
        "batches": stats.batches, "batched_requests": stats.requests,
        "batched_instances": stats.instances, "batched_windows": stats.windows,
        "cancelled_requests": stats.cancelled, "failed_requests": stats.failed,
        "model_seconds": stats.model_seconds,
        "requests_per_batch": {str(k): v for k, v in sorted(stats.requests_per_batch.items())},
        "windows_per_batch": {str(k): v for k, v in sorted(stats.windows_per_batch.items())},
    }

  async def metrics_page(self, request: web.Request) -> web.Response:
    values = self.metrics_values()
    if request.query.get("format") == "json":
      return web.json_response(values)
    return web.Response(text=prometheus_text(values), content_type="text/plain",
                        charset="utf-8", headers={"X-Content-Type": "version=0.0.4"})

  # -- lifecycle --------------------------------------------------------------

  async def drain(self) -> None:
    """Refuses new requests and waits (up to --drain_seconds) for those in flight."""
    self.draining = True
    stop = time.monotonic() + self.settings.drain_seconds
    while self.metrics.in_flight and time.monotonic() < stop:
      await asyncio.sleep(0.02)

  def close(self) -> None:
    self.batcher.close(timeout=self.settings.drain_seconds)
    self._encoder.shutdown(wait=False, cancel_futures=True)


def _error(status: int, message: str, *, retry_after: Optional[int] = None,
           close: bool = False) -> web.Response:
  headers = {}
  if retry_after is not None:
    headers["Retry-After"] = str(retry_after)
  if close:  # the body was not read: the connection cannot carry another request
    headers["Connection"] = "close"
  return web.json_response({"error": message}, status=status, headers=headers)


def _quantile(ordered: Sequence[float], q: float) -> Optional[float]:
  if not ordered:
    return None
  return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))])


def _histogram(name: str, counts: Dict[str, int], bounds: Sequence[float]) -> List[str]:
  """Prometheus histogram lines from {value: count} of whole-number sizes."""
  lines, total, weighted = [f"# TYPE {name} histogram"], 0, 0
  values = {int(k): v for k, v in counts.items()}
  for bound in bounds:
    lines.append(f'{name}_bucket{{le="{bound}"}} '
                 f'{sum(v for k, v in values.items() if k <= bound)}')
  total = sum(values.values())
  weighted = sum(k * v for k, v in values.items())
  lines += [f'{name}_bucket{{le="+Inf"}} {total}', f"{name}_sum {weighted}",
            f"{name}_count {total}"]
  return lines


def prometheus_text(values: Dict[str, Any]) -> str:
  """The metrics in Prometheus' text exposition format."""
  prefix = "autoais_serve_"
  lines = [f"# TYPE {prefix}requests_total counter"]
  lines += [f'{prefix}requests_total{{status="{status}"}} {count}'
            for status, count in values["requests_by_status"].items()]
  latency = values["latency_seconds"]
  lines.append(f"# TYPE {prefix}request_seconds histogram")
  cumulative = 0
  for bound, count in latency["buckets"].items():
    cumulative += count
    lines.append(f'{prefix}request_seconds_bucket{{le="{bound}"}} {cumulative}')
  lines += [f"{prefix}request_seconds_sum {latency['sum']}",
            f"{prefix}request_seconds_count {latency['count']}"]
  for name, value, kind in (
      ("in_flight_requests", values["in_flight_requests"], "gauge"),
      ("queue_requests", values["queue"]["requests"], "gauge"),
      ("queue_windows", values["queue"]["windows"], "gauge"),
      ("ready", int(values["ready"]), "gauge"),
      ("batches_total", values["batches"], "counter"),
      ("batched_instances_total", values["batched_instances"], "counter"),
      ("cancelled_requests_total", values["cancelled_requests"], "counter"),
      ("failed_requests_total", values["failed_requests"], "counter"),
      ("model_seconds_total", values["model_seconds"], "counter")):
    lines += [f"# TYPE {prefix}{name} {kind}", f"{prefix}{name} {value}"]
  lines += _histogram(f"{prefix}batch_requests", values["requests_per_batch"],
                      SIZE_BUCKETS)
  lines += _histogram(f"{prefix}batch_windows", values["windows_per_batch"], SIZE_BUCKETS)
  return "\n".join(lines) + "\n"


async def serve(service: NliService, host: str, port: int,
                on_listening: Callable[[str, int], None]) -> None:
  """Serves until SIGTERM or SIGINT, then drains (see the module docstring)."""
  # handler_cancellation: a client that disconnects cancels its handler (and
  # so its queued work); aiohttp leaves handlers running by default.
  runner = web.AppRunner(service.app(), handler_cancellation=True, access_log=None)
  await runner.setup()
  site = web.TCPSite(runner, host, port)
  await site.start()
  address = site._server.sockets[0].getsockname()  # pylint: disable=protected-access
  stop = asyncio.Event()
  loop = asyncio.get_running_loop()
  for number in (signal.SIGTERM, signal.SIGINT):
    loop.add_signal_handler(number, stop.set)
  on_listening(address[0], address[1])
  try:
    await stop.wait()
    await service.drain()
  finally:
    await runner.cleanup()
    service.close()
