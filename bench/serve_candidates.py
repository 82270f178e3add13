"""Serving libraries for `autoais serve`, measured side by side (not a test; how
aiohttp was chosen: docs/serve.md). Needs a throwaway venv holding the
candidates, never the project's own:

    python -m venv /work/venv-serve-trial
    echo "$PWD/.venv/lib/python3.11/site-packages" \\
        > /work/venv-serve-trial/lib/python3.11/site-packages/zz_project.pth
    /work/venv-serve-trial/bin/pip install litserve bentoml
    /work/venv-serve-trial/bin/python bench/serve_candidates.py [--requests 96]
        [--instances 8] [--clients 16] [--workdir bench/out]

The same tiny T5 (bench/serve.py's), loaded by models/t5_nli.py, behind:

* `aiohttp`: `autoais serve` itself (serve/batching.py's batcher);
* `litserve`: a LitAPI whose batch is the requests LitServe groups
  (max_batch_size 16, batch_timeout 5 ms), one worker process;
* `bentoml`: a service whose batchable API takes the instances of the
  requests BentoML's adaptive batcher groups (max_batch_size 256 instances,
  max_latency 60 s), one worker;
* `stdlib`: the standard library's ThreadingHTTPServer, one request at a time
  (`autoais serve` before issue 19).

For each: one client at a time, then --clients concurrent clients
(bench/serve.py's measure). Ray Serve is not measured: it needs protobuf 7,
which apache-beam's pins refuse (pip's dry run, docs/serve.md). Prints one
JSON line.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import serve as bench_serve  # pylint: disable=wrong-import-position
from tests.support import serve_load as load  # pylint: disable=wrong-import-position

_PRELUDE = """
import sys
sys.path.insert(0, {root!r})
from autoais.models import t5_nli
from autoais.schemas import AttributionExample
MODEL = {model!r}

def examples(instances):
  return [AttributionExample(i["premise"], i["hypothesis"], "", "") for i in instances]

def predictions(scores):
  return [{{"nli_score": s.nli_score, "n_windows": s.n_windows,
           "truncated": s.truncated}} for s in scores]
"""

LITSERVE = """
import litserve as ls

class Api(ls.LitAPI):
  def setup(self, device):
    self.model = t5_nli.load_t5_nli(MODEL)
  def decode_request(self, request):
    return examples(request["instances"])
  def batch(self, inputs):
    return inputs
  def predict(self, batch):
    scores = self.model.score([e for request in batch for e in request], "threshold", 0.5)
    out, position = [], 0
    for request in batch:
      out.append(scores[position:position + len(request)])
      position += len(request)
    return out
  def unbatch(self, output):
    return output
  def encode_response(self, scores):
    return {{"predictions": predictions(scores)}}

if __name__ == "__main__":
  server = ls.LitServer(Api(max_batch_size=16, batch_timeout=0.005), accelerator="cpu",
                        workers_per_device=1, timeout=60)
  server.run(port={port}, generate_client_file=False)
"""

BENTOML = """
import bentoml

@bentoml.service(workers=1, traffic={{"timeout": 60}})
class Nli:
  def __init__(self):
    self.model = t5_nli.load_t5_nli(MODEL)

  @bentoml.api(batchable=True, max_batch_size=256, max_latency_ms=60000)
  def predict(self, instances: list) -> list:
    return predictions(self.model.score(examples(instances), "threshold", 0.5))
"""

STDLIB = """
import http.server, json, threading

class Server(http.server.ThreadingHTTPServer):
  daemon_threads = True

class Handler(http.server.BaseHTTPRequestHandler):
  protocol_version = "HTTP/1.1"
  def do_GET(self):
    self.reply(200, {{"status": "ok"}})
  def do_POST(self):
    body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
    with LOCK:
      scores = MODEL_OBJECT.score(examples(body["instances"]), "threshold", 0.5)
    self.reply(200, {{"predictions": predictions(scores)}})
  def reply(self, status, payload):
    data = json.dumps(payload).encode()
    self.send_response(status)
    self.send_header("Content-Type", "application/json")
    self.send_header("Content-Length", str(len(data)))
    self.end_headers()
    self.wfile.write(data)
  def log_message(self, *args):
    pass

LOCK = threading.Lock()
MODEL_OBJECT = t5_nli.load_t5_nli(MODEL)
Server(("127.0.0.1", {port}), Handler).serve_forever()
"""


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def _wait_ready(url: str, route: str, timeout: float = 180.0) -> float:
  started = time.time()
  while time.time() - started < timeout:
    try:
      with urllib.request.urlopen(url + route, timeout=5) as response:
        if response.status == 200:
          return time.time() - started
    except OSError:
      time.sleep(0.5)
  raise RuntimeError(f"{url}{route} never answered 200")


def _candidate(name, source, model, workdir, bodies, clients):
  port = _free_port()
  path = os.path.join(workdir, f"candidate_{name}.py")
  with open(path, "w", encoding="utf-8") as f:
    f.write(textwrap.dedent(_PRELUDE.format(root=ROOT, model=model))
            + textwrap.dedent(source.format(port=port)))
  if name == "bentoml":
    command = [os.path.join(os.path.dirname(sys.executable), "bentoml"), "serve",
               f"candidate_{name}:Nli", "--port", str(port), "--host", "127.0.0.1"]
    health = "/readyz"
  else:
    command, health = [sys.executable, path], "/health"
  process = subprocess.Popen(command, cwd=workdir, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL,
                             env=dict(os.environ, PYTHONPATH=ROOT + ":" + workdir))
  url = f"http://127.0.0.1:{port}"
  try:
    startup = _wait_ready(url, health)
    return {"startup_seconds": round(startup, 1),
            "one_client": bench_serve.measure(url, bodies, 1, False),
            "clients": bench_serve.measure(url, bodies, clients, False)}
  finally:
    process.terminate()
    process.wait(timeout=60)


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--requests", type=int, default=96)
  parser.add_argument("--instances", type=int, default=8)
  parser.add_argument("--clients", type=int, default=16)
  parser.add_argument("--workdir", default=None)
  parser.add_argument("--only", default="aiohttp,litserve,bentoml,stdlib")
  args = parser.parse_args()
  workdir = args.workdir or tempfile.mkdtemp(prefix="bench-serve-candidates-")
  model = bench_serve.build_model(workdir)
  bodies = bench_serve.request_bodies(args.requests, args.instances)
  results = {}
  for name in args.only.split(","):
    try:
      if name == "aiohttp":
        process, url = load.start_server(["--model", model])
        try:
          results[name] = {"one_client": bench_serve.measure(url, bodies, 1, False),
                           "clients": bench_serve.measure(url, bodies, args.clients,
                                                          False)}
        finally:
          load.stop_server(process)
      else:
        source = {"litserve": LITSERVE, "bentoml": BENTOML, "stdlib": STDLIB}[name]
        results[name] = _candidate(name, source, model, workdir, bodies, args.clients)
    except Exception as error:  # pylint: disable=broad-except
      results[name] = {"error": f"{type(error).__name__}: {error}"}
    print(name, json.dumps(results[name]), file=sys.stderr, flush=True)
  print(json.dumps(results))


if __name__ == "__main__":
  main()
