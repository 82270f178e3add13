"""Load on an `autoais serve` endpoint, for its load test
(tests/unit/serve/test_serve_load.py) and bench/serve.py: the server started
in its own process, and concurrent clients that each send their requests one
after another.

    process, url = start_server(["--model", DIR, "--max_wait_ms", "5"])
    result = send_concurrently(url, bodies, clients=16, timeout=60)
    result.statuses, result.latencies, result.answers, result.instances_per_second()
    stop_server(process)   # SIGTERM; returns the exit code
"""
import concurrent.futures
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_LISTENING = re.compile(r"listening on (http://[^\s]+:\d+)")


def start_server(args: Sequence[str], startup_timeout: float = 120.0,
                 command: Optional[List[str]] = None) -> Tuple[subprocess.Popen, str]:
  """`autoais serve ARGS --port 0` (or `command`) in a new process; (process,
  URL) once it says where it listens. Its stderr past that line is drained on a
  thread (a full pipe would block the server)."""
  env = dict(os.environ, PYTHONPATH=_ROOT)
  process = subprocess.Popen(
      command or [sys.executable, "-m", "autoais.beam_jobs.cli", "serve", *map(str, args),
                  "--port", "0"],
      cwd=_ROOT, env=env, stderr=subprocess.PIPE, text=True)
  url, seen = None, []
  deadline = time.time() + startup_timeout
  while url is None and time.time() < deadline:
    line = process.stderr.readline()
    if not line and process.poll() is not None:
      break
    seen.append(line)
    found = _LISTENING.search(line)
    url = found.group(1) if found else None
  if url is None:
    process.kill()
    raise RuntimeError("autoais serve did not start:\n" + "".join(seen[-20:]))
  threading.Thread(target=lambda: [None for _ in process.stderr], daemon=True).start()
  return process, url


def stop_server(process: subprocess.Popen, timeout: float = 60.0) -> int:
  process.send_signal(signal.SIGTERM)
  return process.wait(timeout=timeout)


def post(url: str, body: bytes, timeout: float,
         route: str = "/predict") -> Tuple[int, Any, float]:
  """(status, parsed JSON answer or None, seconds); status 0: no answer
  (timeout, dropped connection)."""
  request = urllib.request.Request(url + route, data=body, method="POST",
                                   headers={"Content-Type": "application/json"})
  started = time.perf_counter()
  try:
    with urllib.request.urlopen(request, timeout=timeout) as response:
      status, payload = response.status, response.read()
  except urllib.error.HTTPError as error:
    status, payload = error.code, error.read()
  except OSError:
    return 0, None, time.perf_counter() - started
  seconds = time.perf_counter() - started
  try:
    return status, json.loads(payload.decode("utf-8")), seconds
  except ValueError:
    return status, None, seconds


def get_json(url: str, route: str, timeout: float = 10.0) -> Tuple[int, Any]:
  try:
    with urllib.request.urlopen(url + route, timeout=timeout) as response:
      return response.status, json.loads(response.read())
  except urllib.error.HTTPError as error:
    return error.code, json.loads(error.read())


def instances_body(pairs: Sequence[Tuple[str, str]]) -> bytes:
  return json.dumps({"instances": [{"premise": p, "hypothesis": h} for p, h in pairs]},
                    ensure_ascii=False).encode("utf-8")


class LoadResult(NamedTuple):
  statuses: List[int]  # per body, in the order given
  answers: List[Any]
  latencies: List[float]
  started: List[float]  # seconds after the run began
  seconds: float  # the whole run
  instances: int  # instances of the bodies answered 200

  def instances_per_second(self) -> float:
    return self.instances / self.seconds

  def percentile(self, q: float, statuses=(200,)) -> float:
    chosen = sorted(latency for latency, status in zip(self.latencies, self.statuses)
                    if status in statuses)
    return chosen[min(len(chosen) - 1, int(q * len(chosen)))] if chosen else float("nan")


def send_concurrently(url: str, bodies: Sequence[bytes], clients: int,
                      timeout: float = 60.0) -> LoadResult:
  """Sends every body from `clients` threads, each taking the next unsent body
  once its previous answer came (closed-loop clients, as Beam workers are)."""
  statuses: List[int] = [0] * len(bodies)
  answers: List[Any] = [None] * len(bodies)
  latencies: List[float] = [0.0] * len(bodies)
  starts: List[float] = [0.0] * len(bodies)
  lock = threading.Lock()
  position = [0]
  began = time.perf_counter()

  def client():
    while True:
      with lock:
        index = position[0]
        position[0] += 1
      if index >= len(bodies):
        return
      starts[index] = time.perf_counter() - began
      statuses[index], answers[index], latencies[index] = post(url, bodies[index],
                                                               timeout)

  with concurrent.futures.ThreadPoolExecutor(clients) as pool:
    for future in [pool.submit(client) for _ in range(clients)]:
      future.result()
  seconds = time.perf_counter() - began
  answered = sum(_count(answer) for answer, status in zip(answers, statuses)
                 if status == 200)
  return LoadResult(statuses, answers, latencies, starts, seconds, answered)


def _count(answer: Any) -> int:
  if isinstance(answer, dict):
    answer = answer.get("predictions")
  return len(answer) if isinstance(answer, list) else 0


def metrics(url: str) -> Dict[str, Any]:
  return get_json(url, "/metrics?format=json")[1]
