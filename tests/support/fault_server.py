"""Test-only: a local prediction server in the `autoais serve` format that
injects faults.

    server = FaultServer(faults=["503", "429", "timeout", "drop"], delay=1.5)
    server.url  # http://127.0.0.1:PORT
    ...
    server.close()

It scores an instance with tests.support.scorers.hash_score (a function of the
instance alone, so a retried or split request gets the same numbers). Each
incoming predict request takes the next fault of `faults` until they are used
up, on every `every`-th request (bounded in count; "timeout" sleeps `delay`
seconds, bounded in time):

  "500", "502", "503"  that status;  "429"  Too Many Requests, Retry-After: 0;
  "429:N"    Too Many Requests, Retry-After: N (seconds);
  "timeout"  answers after `delay` seconds (past the client's timeout);
  "drop"     closes the connection without an answer.

Requests holding an instance whose premise or hypothesis contains
`refuse_marker` are refused every time with 422 (a permanent failure). With
`truncate_over`, an instance whose premise is longer than that many characters
is answered `truncated` (as a model whose input it overflows). `log` records
(fault or status, number of instances) per request.
"""
import http.server
import json
import threading
import time
from typing import Optional

from tests.support.scorers import hash_score


class FaultServer(http.server.ThreadingHTTPServer):

  daemon_threads = True

  def __init__(self, faults=(), delay: float = 1.5, refuse_marker: str = "REFUSE-ME",
               every: int = 1, truncate_over: Optional[int] = None, handler=None):
    self.faults = list(faults)
    self.every = every
    self.requests = 0
    self.delay = delay
    self.refuse_marker = refuse_marker
    self.truncate_over = truncate_over
    self.log = []
    self.lock = threading.Lock()
    # `handler`: another protocol with the same faults (tests/support/openai_server.py).
    super().__init__(("127.0.0.1", 0), handler or FaultHandler)
    self._thread = threading.Thread(target=self.serve_forever, daemon=True)
    self._thread.start()

  @property
  def url(self) -> str:
    return f"http://127.0.0.1:{self.server_address[1]}"

  def next_fault(self):
    with self.lock:
      self.requests += 1
      if self.faults and (self.requests - 1) % self.every == 0:
        return self.faults.pop(0)
      return None

  def truncates(self, premise: str) -> bool:
    return self.truncate_over is not None and len(premise) > self.truncate_over

  def close(self) -> None:
    self.shutdown()
    self.server_close()


class FaultHandler(http.server.BaseHTTPRequestHandler):

  protocol_version = "HTTP/1.1"
  server: FaultServer

  def _reply(self, status, payload, headers=()):
    body = json.dumps(payload).encode("utf-8")
    self.send_response(status)
    for name, value in headers:
      self.send_header(name, value)
    self.send_header("Content-Type", "application/json")
    self.send_header("Content-Length", str(len(body)))
    self.end_headers()
    self.wfile.write(body)

  def do_GET(self):  # pylint: disable=invalid-name
    self._reply(200, {"status": "ok", "model": {"name": "digest"}})

  def inject(self, fault) -> bool:
    """Answers as `fault` says (module docstring); False where there is none."""
    if fault is None:
      return False
    if fault == "drop":
      self.close_connection = True
      self.connection.shutdown(2)  # no status line: the client sees a dropped connection
    elif fault == "timeout":
      time.sleep(self.server.delay)
      self.close_connection = True  # the client gave up long ago
    elif fault.startswith("429"):
      after = fault.partition(":")[2] or "0"
      self._reply(429, {"error": "too many requests"}, [("Retry-After", after)])
    else:
      self._reply(int(fault), {"error": f"injected {fault}"})
    return True

  def do_POST(self):  # pylint: disable=invalid-name
    body = self.rfile.read(int(self.headers["Content-Length"]))
    instances = json.loads(body)["instances"]
    fault = self.server.next_fault()
    self.server.log.append((fault or "ok", len(instances)))
    if self.inject(fault):
      return
    marker = self.server.refuse_marker
    if any(marker in item["premise"] or marker in item["hypothesis"]
           for item in instances):
      self.server.log[-1] = ("422", len(instances))
      self._reply(422, {"error": "instance refused"})
      return
    self._reply(200, {"predictions": [
        {"nli_score": hash_score(item["premise"], item["hypothesis"]),
         "n_windows": 1, "truncated": self.server.truncates(item["premise"])}
        for item in instances]})

  def log_message(self, format, *args):  # pylint: disable=redefined-builtin
    pass
