"""A loaded NLI model served to concurrent requests, its limits and batching
(`autoais serve`: the entry point is beam_jobs/serve.py, the HTTP side
serve/http.py).

    model = ServedModel(t5_nli.load_t5_nli(MODEL_DIR, ...), "t5")  # beam_jobs/serve.py
    batcher = Batcher(model.score, max_batch_windows=256, max_wait=0.005,
                      max_queue_windows=4096)
    encoded = model.encode(examples, limits)            # BadRequest 413 past a limit
    future = batcher.submit(encoded, windows(encoded))  # concurrent.futures.Future
    scores = future.result()                            # AttributionScores, in order

Work is split in two halves so that the expensive one is shared:

* `encode`, per request on its own thread: the limits that need no tokenizer
  (characters of an instance), then the family's own tokenisation with premise
  windows (models/t5_nli.py, models/nli_classifier.py), then the limits on
  windows per instance and per request. Everything is refused before any model
  work, with 413 naming the limit and the instance. A request's instances are
  tokenised in groups (`encode_many`: the group's inputs in one tokenizer
  call) of at most ENCODE_GROUP_INSTANCES instances or ENCODE_GROUP_CHARS
  characters, the limits checked after each group: a request refused for its
  windows costs at most one group past the instance that passed the limit.
* `Batcher`, one thread that owns the model: the encoded instances of requests
  that arrive together are scored in one call of the model's `probabilities`,
  whose token-budget batches (models/token_budget.TokenBudgetModel) sort every
  window of every request by length. A batch is formed when `max_wait` seconds
  have passed since its oldest request arrived, or `max_batch_windows` windows
  wait (whichever first); requests are never split across batches. Each
  request gets exactly the scores of its own instances, the same numbers
  (within float noise) as the model's own `score` gives them one request at a
  time: the windows' maximum, as there.

A request whose future is cancelled before its batch starts (its client went
away, or its deadline passed) is never scored. `submit` refuses work past
`max_queue_windows` waiting windows (Overloaded: the server answers 503), and
`stuck_for()` says how long the running batch has been running, for the
readiness check.
"""
import collections
import concurrent.futures
import threading
import time
from typing import Any, Callable, Deque, Dict, List, NamedTuple, Optional, Sequence

from autoais.schemas import AttributionExample, AttributionScore
from autoais.schemas.errors import BadRequest

class Limits(NamedTuple):
  """What one request may ask of the model (flags of `autoais serve`)."""
  max_instances: int = 1024  # instances per request
  max_instance_chars: int = 200_000  # premise + hypothesis, checked before tokenising
  max_instance_windows: int = 64  # model inputs of one instance (premise windows)
  max_request_windows: int = 2048  # model inputs of one request


# A group of a request's instances tokenised in one call: big enough that the
# tokenizer's cost per call is shared (bench/serve_encode.py: requests of 32
# instances encode 3.4 to 5.2 times as many instances a CPU second as with one
# call an instance), small enough that a request refused for its windows was
# not tokenised far past the instance that passed the limit.
ENCODE_GROUP_INSTANCES = 32
ENCODE_GROUP_CHARS = 65_536


def encode_groups(examples: Sequence[AttributionExample]):
  """(index of the first, examples) of consecutive groups of `examples`, each
  of at most ENCODE_GROUP_INSTANCES examples and, past its first example,
  ENCODE_GROUP_CHARS characters of premise and hypothesis."""
  start, chars = 0, 0
  for index, example in enumerate(examples):
    size = len(example.premise) + len(example.hypothesis)
    if index > start and (index - start == ENCODE_GROUP_INSTANCES
                          or chars + size > ENCODE_GROUP_CHARS):
      yield start, examples[start:index]
      start, chars = index, 0
    chars += size
  if start < len(examples):
    yield start, examples[start:]


class Overloaded(Exception):
  """The batcher's queue is full: the request is refused (503, retry later)."""


class ServedModel:
  """A loaded model of a served family (its `encode_many`, `probabilities`,
  `window_scores`) with the two halves of scoring apart: `encode` (windows,
  limits) and `score` (a batch of encoded instances)."""

  def __init__(self, model, family: str, threshold: float = 0.5):
    self.model = model
    self.family = family
    self._threshold = threshold

  def encode(self, examples: Sequence[AttributionExample], limits: Limits) -> List[Any]:
    """The encoded instances of one request; BadRequest(413) naming the limit
    and the instance that passes it."""
    for index, example in enumerate(examples):
      chars = len(example.premise) + len(example.hypothesis)
      if chars > limits.max_instance_chars:
        raise BadRequest(413, f"instance {index}: {chars} characters of premise and "
                         f"hypothesis: at most {limits.max_instance_chars} an instance "
                         "(--max_instance_chars)")
    encoded, total = [], 0
    for start, group in encode_groups(examples):
      for index, item in enumerate(self.model.encode_many(group), start):
        total = self._check_windows(index, item, total, limits)
        encoded.append(item)
    return encoded

  def _check_windows(self, index: int, item: Any, total: int, limits: Limits) -> int:
    """The request's windows up to instance `index`; BadRequest(413) where the
    instance or the request passes its limit, 400 where it has nothing to
    score (factcg: a blank premise has no chunk; lettucedetect: an answer
    without tokens, or too long for the input), with the model's reason."""
    count = len(item.windows)
    if not count:
      failure = self.model.window_scores([item], [], self._threshold)[0]
      raise BadRequest(400, f"instance {index}: {failure.message}")
    if count > limits.max_instance_windows:
      raise BadRequest(413, f"instance {index}: its premise needs {count} windows of "
                       f"{self.model.max_input_tokens} tokens: at most "
                       f"{limits.max_instance_windows} an instance "
                       "(--max_instance_windows)")
    total += count
    if total > limits.max_request_windows:
      raise BadRequest(413, f"instance {index}: the request needs more than "
                       f"{limits.max_request_windows} model inputs (windows) up to "
                       "this instance: at most that many a request "
                       "(--max_request_windows); send fewer instances a request")
    return total

  def score(self, encoded: Sequence[Any]) -> List[AttributionScore]:
    """The scores of encoded instances, in order: the model's probabilities of
    all their windows in token-budget batches, each instance's score from
    its windows' (the best window; lettucedetect: each token's best)."""
    windows = [window for item in encoded for window in item.windows]
    return self.model.window_scores(encoded, self.model.probabilities(windows),
                                    self._threshold)


def windows(encoded: Sequence[Any]) -> int:
  return sum(len(item.windows) for item in encoded)


class _Job:
  __slots__ = ("items", "windows", "future", "arrived")

  def __init__(self, items, count):
    self.items = items
    self.windows = count
    self.future: concurrent.futures.Future = concurrent.futures.Future()
    self.arrived = time.monotonic()


class BatchStats:
  """What the batcher has done, for the metrics page (read under its lock)."""

  def __init__(self):
    self.batches = 0
    self.requests = 0
    self.instances = 0
    self.windows = 0
    self.cancelled = 0  # requests dropped before scoring (client gone, deadline)
    self.failed = 0  # requests whose scoring raised
    self.model_seconds = 0.0
    # batch size (requests, windows) -> number of batches
    self.requests_per_batch: Dict[int, int] = collections.Counter()
    self.windows_per_batch: Dict[int, int] = collections.Counter()


class Batcher:
  """One thread that owns the model and scores the requests waiting together
  (see the module docstring)."""

  def __init__(self, score: Callable[[List[Any]], List[Any]], *,
               max_batch_windows: int = 256, max_wait: float = 0.005,
               max_queue_windows: int = 4096):
    self._score = score
    self.max_batch_windows = max_batch_windows
    self.max_wait = max_wait
    self.max_queue_windows = max_queue_windows
    self._lock = threading.Condition()
    self._queue: Deque[_Job] = collections.deque()
    self.queued_windows = 0
    self._busy_since: Optional[float] = None
    self._closed = False
    self.stats = BatchStats()
    self._thread = threading.Thread(target=self._loop, name="autoais-batcher",
                                    daemon=True)
    self._thread.start()

  # -- the requests' side -----------------------------------------------------

  def submit(self, items: List[Any], count: int) -> concurrent.futures.Future:
    """Queues one request's encoded instances (`count` windows); its future
    gets their results in order. Overloaded past the queue's bound (a request
    larger than the bound alone is queued when the queue is empty)."""
    job = _Job(items, count)
    with self._lock:
      if self._closed:
        raise Overloaded("the server is shutting down")
      if self._queue and self.queued_windows + count > self.max_queue_windows:
        raise Overloaded(f"{self.queued_windows} model inputs are waiting: at most "
                         f"{self.max_queue_windows} (--max_queue_windows)")
      self._queue.append(job)
      self.queued_windows += count
      self._lock.notify()
    return job.future

  def queue_depth(self):
    """(requests, windows) waiting."""
    with self._lock:
      return len(self._queue), self.queued_windows

  def oldest_wait(self) -> float:
    """Seconds the oldest waiting request has waited (0 when none waits)."""
    with self._lock:
      return time.monotonic() - self._queue[0].arrived if self._queue else 0.0

  def stuck_for(self) -> float:
    """Seconds the running batch has been running (0 when idle)."""
    busy = self._busy_since
    return 0.0 if busy is None else time.monotonic() - busy

  def alive(self) -> bool:
    return self._thread.is_alive()

  def snapshot(self) -> BatchStats:
    with self._lock:
      copy = BatchStats()
      copy.__dict__.update({key: (collections.Counter(value) if isinstance(value, dict)
                                  else value)
                            for key, value in self.stats.__dict__.items()})
      return copy

  def close(self, timeout: Optional[float] = None) -> None:
    """Scores what is queued, then stops the thread."""
    with self._lock:
      self._closed = True
      self._lock.notify()
    self._thread.join(timeout)

  # -- the model's side -------------------------------------------------------

  def _take(self) -> Optional[List[_Job]]:
    """The next batch (None: closed and empty), waiting for it under the lock."""
    with self._lock:
      while not self._queue:
        if self._closed:
          return None
        self._lock.wait()
      # Wait for company until the oldest request has waited max_wait.
      while self.queued_windows < self.max_batch_windows and not self._closed:
        remaining = self._queue[0].arrived + self.max_wait - time.monotonic()
        if remaining <= 0:
          break
        self._lock.wait(remaining)
      jobs, total = [], 0
      while self._queue and (not jobs or
                             total + self._queue[0].windows <= self.max_batch_windows):
        job = self._queue.popleft()
        self.queued_windows -= job.windows
        # False: cancelled while it waited (its client went away, its deadline
        # passed): never scored.
        if not job.future.set_running_or_notify_cancel():
          self.stats.cancelled += 1
          continue
        jobs.append(job)
        total += job.windows
      if jobs:
        self._busy_since = time.monotonic()
      return jobs

  def _loop(self) -> None:
    while True:
      jobs = self._take()
      if jobs is None:
        return
      if not jobs:
        continue
      started = time.monotonic()
      outcomes = self._run(jobs)
      # The figures first, then the answers: a client that reads /metrics or
      # /health after its answer sees its batch counted and the model idle.
      with self._lock:
        stats = self.stats
        stats.batches += 1
        stats.requests += len(jobs)
        stats.instances += sum(len(job.items) for job in jobs)
        count = sum(job.windows for job in jobs)
        stats.windows += count
        stats.requests_per_batch[len(jobs)] += 1
        stats.windows_per_batch[count] += 1
        stats.failed += sum(isinstance(outcome, Exception) for outcome in outcomes)
        stats.model_seconds += time.monotonic() - started
        self._busy_since = None
      for job, outcome in zip(jobs, outcomes):
        if isinstance(outcome, Exception):
          job.future.set_exception(outcome)
        else:
          job.future.set_result(outcome)

  def _run(self, jobs: List[_Job]) -> List[Any]:
    """Each job's results, or the exception that scoring it raised."""
    try:
      results = self._score([item for job in jobs for item in job.items])
    except Exception as error:  # pylint: disable=broad-except
      if len(jobs) == 1:
        return [error]
      # One request's instances may be what fails: score each alone, so that
      # only that request gets the error.
      outcomes = []
      for job in jobs:
        try:
          outcomes.append(self._score(job.items))
        except Exception as alone:  # pylint: disable=broad-except
          outcomes.append(alone)
      return outcomes
    outcomes, position = [], 0
    for job in jobs:
      outcomes.append(results[position:position + len(job.items)])
      position += len(job.items)
    return outcomes
