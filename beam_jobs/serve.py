"""serve: the T5/mT5 NLI scorer over HTTP, in the Vertex AI prediction format.

    autoais serve --model DIR [--tokenizer DIR] [--host 127.0.0.1] [--port 8080]
        [--dtype float32|bfloat16] [--device cpu|cuda] [--max_input_tokens N]
        [--token_budget N] [--max_instances 1024]
    python -m beam_jobs.serve ...

Routes:

    POST /predict  {"instances": [{"premise": "...", "hypothesis": "..."}, ...]}
      200 -> {"predictions": [{"nli_score": 0.93, "n_windows": 1,
                               "truncated": false}, ...]}
      400 a body that is not that (the message names the instance and field),
      411 no Content-Length, 413 too many instances or bytes, 500 scoring failed
    GET /health    200 -> {"status": "ok", "model": {weights_sha256, dtype, ...}}

`nli_score` is the model's P("1") renormalised over {"1", "0"} (models/t5_nli.py),
windows and all; the client decides auto_ais with its threshold. The model
loads once, before the port opens; requests are scored one at a time (one
model), each in token-budget batches.

As a Vertex AI custom-container model: the container runs `autoais serve
--host 0.0.0.0` (launch/Dockerfile.serve); Vertex's AIP_HTTP_PORT,
AIP_PREDICT_ROUTE, AIP_HEALTH_ROUTE and AIP_STORAGE_URI (the model directory,
gs:// is copied locally) are the defaults of --port, the routes and --model.
On a GPU or TPU VM, run it with --device cuda and point `autoais evaluate
--scorer remote --endpoint http://VM:PORT` at it.

`--port 0` takes a free port; the line "autoais serve: listening on URL" on
stderr tells which. SIGTERM or Ctrl-C stops the server.
"""
if __name__ == "__main__":
  import sys
  from beam_jobs.serve import run
  sys.exit(run())

import argparse
import http.server
import json
import logging
import os
import signal
import sys
import threading
from typing import Any, Dict, List, Optional

from beam_jobs.common import EXIT_CONFIG_ERROR
from schemas import AttributionExample
from schemas.errors import BadRequest, ModelError

DEFAULT_PORT = 8080
MAX_BODY_BYTES = 64 * 1024 * 1024


def parse_instances(body: bytes, max_instances: int) -> List[AttributionExample]:
  """A predict request body -> examples; BadRequest naming what is wrong."""
  try:
    request = json.loads(body.decode("utf-8"))
  except (UnicodeDecodeError, ValueError) as error:
    raise BadRequest(400, f"the body is not JSON: {error}") from error
  if not isinstance(request, dict) or not isinstance(request.get("instances"), list):
    raise BadRequest(400, 'expected {"instances": [{"premise": ..., "hypothesis": '
                     '...}, ...]}')
  instances = request["instances"]
  if len(instances) > max_instances:
    raise BadRequest(413, f"{len(instances)} instances: at most {max_instances} a "
                     "request")
  examples = []
  for index, item in enumerate(instances):
    if not isinstance(item, dict):
      raise BadRequest(400, f"instance {index}: expected an object with premise and "
                       "hypothesis")
    for field in ("premise", "hypothesis"):
      if not isinstance(item.get(field), str):
        raise BadRequest(400, f"instance {index}: field '{field}' must be a string")
    examples.append(AttributionExample(item["premise"], item["hypothesis"], "", ""))
  return examples


class NliServer(http.server.ThreadingHTTPServer):
  """An HTTP server holding one loaded model."""

  daemon_threads = True

  def __init__(self, address, model, description: Dict[str, Any], *,
               predict_routes=("/predict",), health_routes=("/health",),
               max_instances: int = 1024):
    self.model = model
    self.description = description
    self.predict_routes = frozenset(predict_routes)
    self.health_routes = frozenset(health_routes)
    self.max_instances = max_instances
    self.lock = threading.Lock()
    super().__init__(address, _Handler)

  def predict(self, examples: List[AttributionExample]) -> List[Dict[str, Any]]:
    with self.lock:
      scores = self.model.score(examples, "threshold", 0.5)
    return [{"nli_score": score.nli_score, "n_windows": score.n_windows,
             "truncated": score.truncated} for score in scores]


class _Handler(http.server.BaseHTTPRequestHandler):

  protocol_version = "HTTP/1.1"
  server: NliServer

  def _reply(self, status: int, payload: Dict[str, Any]) -> None:
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    self.send_response(status)
    self.send_header("Content-Type", "application/json")
    self.send_header("Content-Length", str(len(body)))
    self.end_headers()
    self.wfile.write(body)

  def do_GET(self):  # pylint: disable=invalid-name
    if self.path.split("?")[0] in self.server.health_routes:
      self._reply(200, {"status": "ok", "model": self.server.description})
    else:
      self._reply(404, {"error": f"no route {self.path}"})

  def do_POST(self):  # pylint: disable=invalid-name
    if self.path.split("?")[0] not in self.server.predict_routes:
      self._reply(404, {"error": f"no route {self.path}"})
      return
    length = self.headers.get("Content-Length")
    if length is None or not length.isdigit():
      self.close_connection = True
      self._reply(411, {"error": "a Content-Length header is required"})
      return
    if int(length) > MAX_BODY_BYTES:
      self.close_connection = True
      self._reply(413, {"error": f"{length} bytes: at most {MAX_BODY_BYTES}"})
      return
    body = self.rfile.read(int(length))
    try:
      examples = parse_instances(body, self.server.max_instances)
    except BadRequest as error:
      self._reply(error.status, {"error": str(error)})
      return
    try:
      predictions = self.server.predict(examples)
    except Exception as error:  # pylint: disable=broad-except
      logging.exception("scoring failed")
      self._reply(500, {"error": f"scoring failed: {type(error).__name__}: {error}"})
      return
    self._reply(200, {"predictions": predictions})

  def log_message(self, format, *args):  # pylint: disable=redefined-builtin
    logging.debug("%s " + format, self.address_string(), *args)


def _route(value: Optional[str], default: str) -> tuple:
  return tuple(sorted({default, value})) if value else (default,)


def parse_args(argv):
  env = os.environ
  parser = argparse.ArgumentParser(prog="autoais serve", description=__doc__.split(
      "\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--model", default=env.get("AIP_STORAGE_URI"),
                      help="NLI model directory (local or gs://); default "
                      "$AIP_STORAGE_URI (Vertex AI).")
  parser.add_argument("--tokenizer", default=None,
                      help="The tokenizer's directory (local or gs://) where the "
                      "model directory has none (default: the model directory).")
  parser.add_argument("--host", default="127.0.0.1",
                      help="Address to listen on (default 127.0.0.1; 0.0.0.0 in a "
                      "container).")
  parser.add_argument("--port", type=int, default=int(env.get("AIP_HTTP_PORT",
                                                              DEFAULT_PORT)),
                      help="Port (default $AIP_HTTP_PORT, else 8080; 0: a free one).")
  parser.add_argument("--dtype", default="float32", help="float32 or bfloat16.")
  parser.add_argument("--device", default="cpu", help="cpu or cuda.")
  parser.add_argument("--max_input_tokens", type=int, default=None,
                      help="Model input length; longer premises are windowed.")
  parser.add_argument("--token_budget", type=int, default=None,
                      help="Padded tokens per model batch (default 2048 on cpu, "
                      "16384 on cuda).")
  parser.add_argument("--max_instances", type=int, default=1024,
                      help="Most instances in one request (more: 413).")
  return parser.parse_args(argv)


def run(argv=None) -> int:
  logging.getLogger().setLevel(logging.INFO)
  args = parse_args(sys.argv[1:] if argv is None else argv)
  if not args.model:
    print("autoais serve: error: missing required option --model", file=sys.stderr)
    return EXIT_CONFIG_ERROR
  if not 0 <= args.port < 65536 or args.max_instances < 1:
    print("autoais serve: error: --port must be in [0, 65535] and --max_instances "
          "positive", file=sys.stderr)
    return EXIT_CONFIG_ERROR
  from models import t5_nli  # pylint: disable=import-outside-toplevel
  try:
    model = t5_nli.load_t5_nli(args.model, args.dtype, args.device,
                               args.max_input_tokens, args.token_budget,
                               tokenizer_path=args.tokenizer)
    description = dict(t5_nli.describe_model(args.model, args.max_input_tokens,
                                             args.tokenizer),
                       model=args.model, dtype=args.dtype, device=args.device)
  except ModelError as error:
    print(f"autoais serve: error: {error}", file=sys.stderr)
    return EXIT_CONFIG_ERROR
  env = os.environ
  try:
    server = NliServer((args.host, args.port), model, description,
                       predict_routes=_route(env.get("AIP_PREDICT_ROUTE"), "/predict"),
                       health_routes=_route(env.get("AIP_HEALTH_ROUTE"), "/health"),
                       max_instances=args.max_instances)
  except OSError as error:
    print(f"autoais serve: error: cannot listen on {args.host}:{args.port}: {error}",
          file=sys.stderr)
    return EXIT_CONFIG_ERROR
  host, port = server.server_address[:2]
  stop = threading.Event()

  def _stop(unused_signum, unused_frame):
    stop.set()

  if threading.current_thread() is threading.main_thread():
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
  thread = threading.Thread(target=server.serve_forever, name="autoais-serve",
                            daemon=True)
  thread.start()
  print(f"autoais serve: listening on http://{host}:{port} (model {args.model}, "
        f"{args.dtype}, {args.device})", file=sys.stderr, flush=True)
  stop.wait()
  server.shutdown()
  server.server_close()
  return 0
