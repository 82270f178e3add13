"""`--scorer remote` and `--scorer vertex`: a hosted model (models/remote.py's
handlers) behind the Scorer interface, each distinct example scored once per run
(transforms/scoring/fanout.py) and with `--score_cache` once across runs."""
from typing import Any, Dict, Optional

import apache_beam as beam
from apache_beam.ml.inference.base import ModelHandler

from autoais.models.remote import RemoteNliModelHandler, VertexNliModelHandler, fetch_health
from autoais.transforms.scoring.fanout import ScoreUniqueExamples
from autoais.transforms.scoring.names import REMOTE, VERTEX
from autoais.transforms.scoring.scorer import DescribeScorer, Scorer, score_cache_for


class _HealthFn(beam.DoFn):

  def __init__(self, endpoint: str, timeout: float):
    self._endpoint = endpoint
    self._timeout = timeout

  def process(self, unused_impulse):
    health = fetch_health(self._endpoint, self._timeout)
    model = health.get("model") if isinstance(health, dict) else None
    yield {"served_model": model if isinstance(model, dict) else {}}


class _HostedScorer(Scorer):
  """What the remote and vertex scorers share: scoring each distinct example
  once through a handler, a cache keyed by the hosted model's identity."""

  def __init__(self, handler: ModelHandler, model_id: str, options: Dict[str, Any],
               threshold: float, score_cache: Optional[str]):
    self._handler = handler
    self._model_id = model_id
    self._options = dict(options, threshold=threshold)
    if score_cache:
      self._options["score_cache"] = score_cache

  def _describe_fn(self) -> beam.DoFn:
    raise NotImplementedError

  def score_keyed(self, work_dir: str) -> beam.PTransform:
    return ScoreUniqueExamples(
        self._handler, model_id=self._model_id, work_dir=work_dir,
        score_cache=score_cache_for(self, self._options.get("score_cache"),
                                    self._describe_fn(), self._options["threshold"]))

  def describe(self) -> Dict[str, Any]:
    return {"name": self.name, "family": self.name, "decision": "threshold", **self._options}

  def model_info(self) -> beam.PTransform:
    return DescribeScorer(self._describe_fn(),
                     self if self._options.get("score_cache") else None)


class RemoteScorer(_HostedScorer):

  name = REMOTE

  def __init__(self, endpoint: str, *, threshold: float = 0.5, timeout: float = 60.0,
               max_retries: int = 8, backoff: float = 1.0,
               instances_per_request: int = 32, score_cache: Optional[str] = None):
    options = {"endpoint": endpoint, "request_timeout": timeout,
               "max_retries": max_retries, "retry_backoff": backoff,
               "instances_per_request": instances_per_request}
    handler = RemoteNliModelHandler(
        endpoint, threshold=threshold, timeout=timeout, max_retries=max_retries,
        backoff=backoff, instances_per_request=instances_per_request)
    super().__init__(handler, endpoint, options, threshold, score_cache)

  def _describe_fn(self) -> beam.DoFn:
    return _HealthFn(self._options["endpoint"], self._options["request_timeout"])

  def cache_identity(self, model_info: Dict[str, Any]) -> Dict[str, Any]:
    """The served model's weights and settings where the server tells them
    (`autoais serve` does), else the endpoint's URL."""
    served = model_info.get("served_model") or {}
    if served.get("weights_sha256"):
      return {"scorer": REMOTE, "weights_sha256": served["weights_sha256"],
              "dtype": served.get("dtype"),
              "max_input_tokens": served.get("max_input_tokens")}
    return {"scorer": REMOTE, "endpoint": self._options["endpoint"]}


class _VertexDescribeFn(beam.DoFn):

  def __init__(self, endpoint: str):
    self._endpoint = endpoint

  def process(self, unused_impulse):
    yield {"vertex_endpoint": self._endpoint}


class VertexScorer(_HostedScorer):

  name = VERTEX

  def __init__(self, endpoint_id: str, project: str, location: str, *,
               threshold: float = 0.5, instances_per_request: int = 32,
               score_cache: Optional[str] = None):
    endpoint = f"projects/{project}/locations/{location}/endpoints/{endpoint_id}"
    handler = VertexNliModelHandler(endpoint_id, project, location,
                                    threshold=threshold,
                                    instances_per_request=instances_per_request)
    super().__init__(handler, endpoint,
                     {"endpoint": endpoint, "instances_per_request": instances_per_request},
                     threshold, score_cache)

  def _describe_fn(self) -> beam.DoFn:
    return _VertexDescribeFn(self._options["endpoint"])

  def cache_identity(self, model_info: Dict[str, Any]) -> Dict[str, Any]:
    """The endpoint: deploy another model behind it, use another cache."""
    return {"scorer": VERTEX, "endpoint": model_info["vertex_endpoint"]}
