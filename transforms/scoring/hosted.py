"""`--scorer remote` and `--scorer vertex`: a hosted model (models/remote.py's
handlers) behind the Scorer interface, each distinct example scored once per run
(transforms/scoring/fanout.py) and with `--score_cache` once across runs."""
from typing import Any, Dict, Optional

import apache_beam as beam
from apache_beam.options.pipeline_options import GoogleCloudOptions

from autoais.schemas.errors import ConfigError, require
from autoais.transforms.scoring.checks import check_http_url, check_retries
from autoais.transforms.scoring.flags import RETRIES, SCORE_CACHE, Family, Flag
from autoais.transforms.scoring.names import REMOTE, VERTEX
from autoais.transforms.scoring.scorer import CallDescribe, Scorer


def check_flags(options, local_run: bool) -> Dict[str, Any]:
  """--scorer remote / vertex: validated, and where the endpoint can be
  reached from here (a local run, or vertex's own check when its Scorer is
  built), checked to answer."""
  from autoais.models.remote import fetch_health  # pylint: disable=import-outside-toplevel
  # pylint: disable=import-outside-toplevel
  # (imported by the pipeline of any scorer of a model in any case)
  from autoais.transforms.scoring.fanout import DEFAULT_MAX_EXAMPLES_PER_CALL
  if not 1 <= options.instances_per_request <= DEFAULT_MAX_EXAMPLES_PER_CALL:
    # Requests are cut from the job's calls, of at most that many examples: a
    # larger value would be recorded and never reached.
    raise ConfigError(f"--instances_per_request {options.instances_per_request}: from 1 "
                      f"to {DEFAULT_MAX_EXAMPLES_PER_CALL}, the most examples of one "
                      "call to the model")
  if options.scorer == REMOTE:
    require(options, "endpoint")
    check_http_url("--endpoint", options.endpoint)
    check_retries(options)
    # A span server (lettucedetect) says so in its model's description; where
    # the launch cannot ask (a run elsewhere), spans are not read.
    health = fetch_health(options.endpoint, options.request_timeout) if local_run else {}
    spans = (health.get("model") or {}).get("unsupported_spans") is True
    return {"endpoint": options.endpoint, "timeout": options.request_timeout,
            "max_retries": options.max_retries, "backoff": options.retry_backoff,
            "instances_per_request": options.instances_per_request,
            "score_cache": options.score_cache, **({"spans": True} if spans else {})}
  project = options.view_as(GoogleCloudOptions).project
  if not (options.endpoint_id and project and options.location):
    raise ConfigError("--scorer vertex needs --endpoint_id, --project and --location")
  return {"endpoint_id": options.endpoint_id, "project": project,
          "location": options.location,
          "instances_per_request": options.instances_per_request,
          "score_cache": options.score_cache}


def served_model(endpoint: str, timeout: float) -> Dict[str, Any]:
  """What run.json records of a remote endpoint, asked on a worker: the model
  its health answer describes (`autoais serve` tells its weights' checksum)."""
  from autoais.models.remote import fetch_health  # pylint: disable=import-outside-toplevel
  health = fetch_health(endpoint, timeout)
  model = health.get("model") if isinstance(health, dict) else None
  return {"served_model": model if isinstance(model, dict) else {}}


def vertex_endpoint(endpoint: str) -> Dict[str, Any]:
  """What run.json records of a Vertex AI endpoint: its resource name."""
  return {"vertex_endpoint": endpoint}


class RemoteScorer(Scorer):

  name = REMOTE
  _fixed = {"decision": "threshold"}

  def __init__(self, endpoint: str, *, threshold: float = 0.5, timeout: float = 60.0,
               max_retries: int = 8, backoff: float = 1.0,
               instances_per_request: int = 32, score_cache: Optional[str] = None,
               spans: bool = False, refuse_served_card: bool = False):
    """`refuse_served_card`: the workers refuse a served model with a model
    card (the launch could not read its threshold: config._served_card_threshold)."""
    from autoais.models.remote import RemoteNliModelHandler  # pylint: disable=import-outside-toplevel
    options = {"endpoint": endpoint, "request_timeout": timeout,
               "max_retries": max_retries, "retry_backoff": backoff,
               "instances_per_request": instances_per_request, "threshold": threshold}
    if spans:  # the served model's unsupported spans, read (check_flags)
      options["unsupported_spans"] = True
    self.gives_spans = spans
    handler = RemoteNliModelHandler(
        endpoint, threshold=threshold, timeout=timeout, max_retries=max_retries,
        backoff=backoff, instances_per_request=instances_per_request, spans=spans,
        refuse_served_card=refuse_served_card)
    self._configure(handler, endpoint, options, score_cache)

  def _describe_fn(self) -> beam.DoFn:
    return CallDescribe(served_model, self._options["endpoint"],
                        self._options["request_timeout"])

  def cache_identity(self, model_info: Dict[str, Any]) -> Dict[str, Any]:
    """The served model as the server describes it where it tells its weights
    (`autoais serve` does: its family's description, as run.json records a
    model in process, with the tokenizer's checksum, the supporting label, the
    window overlap, the foundation, the prompt), but where its files lie and
    the device (see T5Scorer); else the endpoint's URL. Where spans are read,
    that too, so that scores cached without spans are not read back as having
    none. Before, only the weights, dtype and input length named them: a server
    restarted with another --positive_label read back the other label's scores."""
    served = model_info.get("served_model") or {}
    spans = {"unsupported_spans": True, "prompt": served.get("prompt")} if (
        self.gives_spans) else {}
    if served.get("weights_sha256"):
      return {"scorer": REMOTE, "served_model": {
          key: value for key, value in served.items()
          # The card's threshold decides, on this side; the scores are the same.
          if key not in ("model", "device", "tokenizer_source", "card_threshold",
                         "card_max_input_tokens")},
          **spans}
    return {"scorer": REMOTE, "endpoint": self._options["endpoint"], **spans}


class VertexScorer(Scorer):

  name = VERTEX
  _fixed = {"decision": "threshold"}

  def __init__(self, endpoint_id: str, project: str, location: str, *,
               threshold: float = 0.5, instances_per_request: int = 32,
               score_cache: Optional[str] = None):
    # pylint: disable=import-outside-toplevel
    from google.api_core.exceptions import GoogleAPICallError
    from google.auth.exceptions import GoogleAuthError
    from autoais.models.remote import VertexNliModelHandler
    endpoint = f"projects/{project}/locations/{location}/endpoints/{endpoint_id}"
    try:
      handler = VertexNliModelHandler(endpoint_id, project, location,
                                      threshold=threshold,
                                      instances_per_request=instances_per_request)
    except ValueError as error:  # Beam's handler: no such endpoint, or no model on it
      raise ConfigError(f"--scorer vertex --endpoint_id {endpoint_id}: "
                        f"{error}") from error
    except (GoogleAuthError, GoogleAPICallError) as error:
      # Beam's handler asks Vertex AI for the endpoint when it is made: without
      # credentials, or refused, that was a traceback with exit 1.
      raise ConfigError(f"--scorer vertex --endpoint_id {endpoint_id} --project {project} "
                        f"--location {location}: the endpoint cannot be checked with "
                        f"this machine's Google credentials: {type(error).__name__}: "
                        f"{error}") from error
    self._configure(handler, endpoint,
                    {"endpoint": endpoint, "instances_per_request": instances_per_request,
                     "threshold": threshold}, score_cache)

  def _describe_fn(self) -> beam.DoFn:
    return CallDescribe(vertex_endpoint, self._options["endpoint"])

  def cache_identity(self, model_info: Dict[str, Any]) -> Dict[str, Any]:
    """The endpoint: deploy another model behind it, use another cache."""
    return {"scorer": VERTEX, "endpoint": model_info["vertex_endpoint"]}


ENDPOINT = Flag(
    "endpoint", "Remote NLI endpoint",
    "the URL of an NLI server in the Vertex AI prediction format (`autoais serve`), "
    "e.g. http://10.0.0.5:8080 (POST {endpoint}/predict).",
    regexes=(r"^https?://[^\s/]+(/[^\s]*)?$",))
INSTANCES_PER_REQUEST = Flag(
    "instances_per_request", "Instances per request",
    "instances per prediction request at most (Vertex AI public endpoints take "
    "1.5 MB; requests are cut from calls of at most 512 examples and 256 KiB). "
    # 1 to 512 (fanout.DEFAULT_MAX_EXAMPLES_PER_CALL; check_flags refuses more).
    "Default 32.", type=int, default=32,
    regexes=(r"^([1-9][0-9]?|[1-4][0-9][0-9]|50[0-9]|51[0-2])$",))

REMOTE_FAMILY = Family(REMOTE, "an `autoais serve` endpoint given by --endpoint",
                       (ENDPOINT,) + RETRIES + (INSTANCES_PER_REQUEST, SCORE_CACHE),
                       check_flags, RemoteScorer)
VERTEX_FAMILY = Family(
    VERTEX, "a Vertex AI endpoint given by --endpoint_id, --project and --location",
    (INSTANCES_PER_REQUEST,
     Flag("endpoint_id", "Vertex AI endpoint id",
          "the Vertex AI endpoint id (with --project and --location).",
          regexes=(r"^[0-9A-Za-z_-]+$",)),
     Flag("location", "Vertex AI endpoint region", "the endpoint's region, e.g. us-central1.",
          regexes=(r"^[a-z]+-[a-z]+[0-9]+$",)),
     SCORE_CACHE), check_flags, VertexScorer)
