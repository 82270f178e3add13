"""serve: an NLI scorer over HTTP, in the Vertex AI prediction format, for
`--scorer remote` and Vertex AI; requests arriving together share model batches.

    autoais serve --model DIR_OR_HUB_ID [--model_revision REV]
        [--scorer t5|nli-classifier|hhem|factcg|lettucedetect]
        [--tokenizer DIR_OR_HUB_ID] [--positive_label NAME] [--language en]
        [--host 127.0.0.1] [--port 8080]
        [--dtype float32|bfloat16] [--device cpu|cuda] [--max_input_tokens N]
        [--token_budget N] [--max_batch_windows 256] [--max_wait_ms 5]
        [--max_queue_windows 4096] [--max_instances 1024]
        [--max_instance_chars 200000] [--max_instance_windows 64]
        [--max_request_windows 2048] [--max_body_bytes 67108864]
        [--max_json_depth 32] [--request_deadline 60] [--stuck_seconds 60]
        [--drain_seconds 30]
    python -m autoais.beam_jobs.serve ...

Routes (serve/http.py has their statuses):

    POST /predict  {"instances": [{"premise": "...", "hypothesis": "..."}, ...]}
      200 -> {"predictions": [{"nli_score": 0.93, "n_windows": 1,
                               "truncated": false}, ...]}
    GET /health    readiness (503 with the reasons while not ready), and the
                   model's description: {"status": "ok", "model": {...}}
    GET /live      liveness;   GET /metrics   Prometheus text (?format=json)

`nli_score` is the family's score (models/t5_nli.py, models/nli_classifier.py,
...), windows and all; the client decides auto_ais with its threshold. A
lettucedetect server reads an instance's optional "answer" (the answer a QA
hypothesis asks about, whose characters its spans count) and adds
"unsupported_spans" to each prediction (serve/http.py). The model
loads once, before the port opens; one thread owns it and scores the
instances of concurrent requests together (serve/batching.py). Every request
is bounded before it reaches the model: body bytes, JSON depth, instances,
characters and windows per instance, windows per request (413 or 400 naming
the limit and the instance), and a deadline (504); a request whose client
disconnects is dropped unscored.

As a Vertex AI custom-container model: the container runs `autoais serve
--host 0.0.0.0` (launch/Dockerfile.serve); Vertex's AIP_HTTP_PORT,
AIP_PREDICT_ROUTE, AIP_HEALTH_ROUTE and AIP_STORAGE_URI (the model directory,
gs:// is copied locally) are the defaults of --port, the routes and --model.
On a GPU or TPU VM, run it with --device cuda and point `autoais evaluate
--scorer remote --endpoint http://VM:PORT` at it.

`--port 0` takes a free port; the line "autoais serve: listening on URL" on
stderr tells which. SIGTERM or Ctrl-C stops taking requests, lets those in
flight finish (up to --drain_seconds) and exits 0.
"""
if __name__ == "__main__":
  import sys
  from autoais.beam_jobs.serve import run
  sys.exit(run())

import argparse
import asyncio
import logging
import os
import sys
from typing import Optional

from autoais.beam_jobs.running import EXIT_CONFIG_ERROR
from autoais.schemas.errors import ConfigError, ModelError

DEFAULT_PORT = 8080


def _route(value: Optional[str], default: str) -> tuple:
  return tuple(sorted({default, value})) if value else (default,)


def parse_args(argv):
  """serve's flags, with `given`: the scorer flags the command line gave, with
  any value (a flag of another family given at its default is refused too)."""
  from autoais.beam_jobs.options import dests_given  # pylint: disable=import-outside-toplevel
  parser = argument_parser()
  args = parser.parse_args(argv)
  args.given = dests_given(parser, argv, [flag.name for flag, _ in _served_flags()])
  return args


def argument_parser() -> argparse.ArgumentParser:
  """serve's flags (the Python API reads them too: autoais.serve's signature)."""
  # pylint: disable=import-outside-toplevel
  from autoais.serve.batching import Limits
  from autoais.serve.http import MAX_BODY_BYTES, MAX_JSON_DEPTH
  from autoais.transforms.scoring.registry import add_scorer_flags
  env = os.environ
  parser = argparse.ArgumentParser(prog="autoais serve", description=__doc__.split(
      "\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--model", default=env.get("AIP_STORAGE_URI"),
                      help="NLI model: a directory (local or gs://) or a Hugging "
                      "Face hub id (org/name); default $AIP_STORAGE_URI (Vertex AI).")
  add_scorer_flags(parser, _served_flags())
  parser.add_argument("--host", default="127.0.0.1",
                      help="Address to listen on (default 127.0.0.1; 0.0.0.0 in a "
                      "container).")
  parser.add_argument("--port", type=int, default=int(env.get("AIP_HTTP_PORT",
                                                              DEFAULT_PORT)),
                      help="Port (default $AIP_HTTP_PORT, else 8080; 0: a free one).")
  batching = parser.add_argument_group("batching across requests")
  batching.add_argument("--max_batch_windows", type=int, default=256,
                        help="Most model inputs (windows) of the requests scored "
                        "together (default 256).")
  batching.add_argument("--max_wait_ms", type=float, default=5.0,
                        help="How long the oldest waiting request waits for others "
                        "to share its batch (default 5 ms).")
  batching.add_argument("--max_queue_windows", type=int, default=4096,
                        help="Most model inputs waiting; more: 503 (default 4096).")
  limits = parser.add_argument_group("limits of one request")
  defaults = Limits()
  limits.add_argument("--max_instances", type=int, default=defaults.max_instances,
                      help="Most instances in one request (more: 413).")
  limits.add_argument("--max_instance_chars", type=int,
                      default=defaults.max_instance_chars,
                      help="Most characters of premise and hypothesis of an instance, "
                      "checked before tokenising (more: 413).")
  limits.add_argument("--max_instance_windows", type=int,
                      default=defaults.max_instance_windows,
                      help="Most premise windows (model inputs) of an instance "
                      "(more: 413).")
  limits.add_argument("--max_request_windows", type=int,
                      default=defaults.max_request_windows,
                      help="Most model inputs of one request (more: 413).")
  limits.add_argument("--max_body_bytes", type=int, default=MAX_BODY_BYTES,
                      help="Most bytes of a request body (more: 413).")
  limits.add_argument("--max_json_depth", type=int, default=MAX_JSON_DEPTH,
                      help="Deepest nesting of the body (deeper: 400).")
  limits.add_argument("--request_deadline", type=float, default=60.0,
                      help="Seconds a request may take before it is answered 504 "
                      "and its work dropped (default 60).")
  health = parser.add_argument_group("health and shutdown")
  health.add_argument("--stuck_seconds", type=float, default=60.0,
                      help="Not ready while a batch has run, or a request waited, "
                      "longer (default 60).")
  health.add_argument("--drain_seconds", type=float, default=30.0,
                      help="On SIGTERM, how long requests in flight may finish "
                      "(default 30).")
  return parser


def _served_flags():
  """The scorer flags of the families serve hosts (transforms/scoring/registry.py)."""
  from autoais.transforms.scoring.registry import SERVED, scorer_flags  # pylint: disable=import-outside-toplevel
  return scorer_flags(SERVED, default="t5", served=True)


def _check(args) -> None:
  # pylint: disable=import-outside-toplevel
  from autoais.serve.http import MAX_JSON_DEPTH_LIMIT
  from autoais.transforms.scoring.checks import check_model_sizes
  from autoais.transforms.scoring.config import refuse_flags_not_taken
  if not args.model:
    raise ConfigError("missing required option --model")
  refuse_flags_not_taken(args.given, args.scorer, f"--scorer {args.scorer}")
  check_model_sizes(args)
  if not 0 <= args.port < 65536:
    raise ConfigError(f"--port {args.port}: must be in [0, 65535]")
  for name in ("max_batch_windows", "max_queue_windows", "max_instances",
               "max_instance_chars", "max_instance_windows", "max_request_windows",
               "max_body_bytes", "max_json_depth"):
    if getattr(args, name) < 1:
      raise ConfigError(f"--{name} {getattr(args, name)}: must be positive")
  if args.max_json_depth > MAX_JSON_DEPTH_LIMIT:
    raise ConfigError(f"--max_json_depth {args.max_json_depth}: at most "
                      f"{MAX_JSON_DEPTH_LIMIT} (Python's parser stops near a thousand)")
  for name in ("max_wait_ms", "drain_seconds"):
    if not getattr(args, name) >= 0:
      raise ConfigError(f"--{name} {getattr(args, name)}: must be zero or more")
  # At 0 every request would pass its deadline (504) and every batch count as
  # stuck (/health 503): the server would answer nothing.
  for name in ("request_deadline", "stuck_seconds"):
    if not getattr(args, name) > 0:
      raise ConfigError(f"--{name} {getattr(args, name)}: must be positive")
  if args.max_wait_ms / 1000 >= args.request_deadline:
    raise ConfigError(f"--max_wait_ms {args.max_wait_ms:g}: a request alone would wait "
                      f"past --request_deadline {args.request_deadline:g} s for others "
                      "to share its batch (504)")


def load_served_model(args, model_path: str, tokenizer_path: Optional[str] = None):
  """(ServedModel, description for /health) of the model serve's flags `args`
  name, loaded by its family (transforms/scoring/registry.py)."""
  # pylint: disable=import-outside-toplevel
  from autoais.serve.batching import ServedModel
  from autoais.transforms.scoring.config import CARD_FAMILIES, model_card
  from autoais.transforms.scoring.registry import FAMILIES
  family = FAMILIES[args.scorer]
  model, description = family.serve(args, model_path, tokenizer_path)
  description = dict(description, scorer=args.scorer, model=model_path, dtype=args.dtype,
                     device=args.device)
  if args.scorer in CARD_FAMILIES:
    # A model `autoais finetune` trained: `--scorer remote` decides at its
    # card's threshold, as the family in process does.
    # It decides at inputs of the card's length only (config._served_card_threshold):
    # a card that does not say was calibrated at the model's default length.
    card = model_card(model_path, model_path)
    if card is not None:
      description["card_threshold"] = card.threshold
      calibrated = card.max_input_tokens
      if calibrated is None and args.max_input_tokens is None:
        calibrated = description.get("max_input_tokens")  # served at the default
      description["card_max_input_tokens"] = calibrated
  if family.scorer.gives_spans:  # what `--scorer remote` reads spans by
    description["unsupported_spans"] = True
  return ServedModel(model, args.scorer), description


def run(argv=None) -> int:
  logging.getLogger().setLevel(logging.INFO)
  args = parse_args(sys.argv[1:] if argv is None else argv)
  try:
    _check(args)
  except ConfigError as error:
    print(f"autoais serve: error: {error}", file=sys.stderr)
    return EXIT_CONFIG_ERROR
  # pylint: disable=import-outside-toplevel
  from autoais.models import hub
  from autoais.serve.batching import Limits
  from autoais.serve import http
  try:
    model, description = load_served_model(
        args, hub.pin(args.model, args.model_revision, "--model", "--model_revision"),
        hub.pin(args.tokenizer, args.tokenizer_revision, "--tokenizer",
                "--tokenizer_revision"))
  except (ModelError, ConfigError) as error:
    print(f"autoais serve: error: {error}", file=sys.stderr)
    return EXIT_CONFIG_ERROR
  env = os.environ
  settings = http.Settings(
      limits=Limits(args.max_instances, args.max_instance_chars,
                    args.max_instance_windows, args.max_request_windows),
      max_body_bytes=args.max_body_bytes, max_json_depth=args.max_json_depth,
      request_deadline=args.request_deadline, stuck_seconds=args.stuck_seconds,
      drain_seconds=args.drain_seconds,
      predict_routes=_route(env.get("AIP_PREDICT_ROUTE"), "/predict"),
      health_routes=_route(env.get("AIP_HEALTH_ROUTE"), "/health"))
  service = http.NliService(model, description, settings,
                            max_batch_windows=args.max_batch_windows,
                            max_wait=args.max_wait_ms / 1000,
                            max_queue_windows=args.max_queue_windows)

  def listening(host, port):
    print(f"autoais serve: listening on http://{host}:{port} (model {args.model}, "
          f"{args.scorer}, {args.dtype}, {args.device})", file=sys.stderr, flush=True)

  try:
    asyncio.run(http.serve(service, args.host, args.port, listening))
  except OSError as error:
    service.close()
    print(f"autoais serve: error: cannot listen on {args.host}:{args.port}: {error}",
          file=sys.stderr)
    return EXIT_CONFIG_ERROR
  return 0
