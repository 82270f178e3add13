"""`--scorer t5`: the T5/mT5 NLI model (models/t5_nli.py) behind the Scorer
interface, each distinct (model, premise, hypothesis) scored once per run, and
with `--score_cache` once across runs."""
from typing import Any, Dict, Optional

import apache_beam as beam

from autoais.transforms.scoring.scorer import (DescribeScorer, Scorer, score_cache_for,
                                              with_hub_references)
from autoais.models.t5_nli import T5NliModelHandler, describe_model
from autoais.transforms.scoring.names import T5
from autoais.transforms.scoring.fanout import ScoreUniqueExamples


class _DescribeModelFn(beam.DoFn):

  def __init__(self, model_path, max_input_tokens, tokenizer_path):
    self._args = (model_path, max_input_tokens, tokenizer_path)

  def process(self, unused_impulse):
    yield describe_model(*self._args)


class T5Scorer(Scorer):

  name = T5

  def __init__(self, model_path: str, *, dtype: str = "float32", device: str = "cpu",
               decision: str = "threshold", threshold: float = 0.5,
               max_input_tokens: Optional[int] = None,
               token_budget: Optional[int] = None,
               large_model: bool = False, torch_threads: int = 0,
               tokenizer_path: Optional[str] = None,
               score_cache: Optional[str] = None,
               revisions: Optional[Dict[str, Optional[str]]] = None):
    handler_options = {
        "dtype": dtype, "device": device, "decision": decision, "threshold": threshold,
        "max_input_tokens": max_input_tokens, "token_budget": token_budget,
        "large_model": large_model, "torch_threads": torch_threads,
        "tokenizer_path": tokenizer_path}
    self._options = {"model": model_path, **handler_options}
    if score_cache:
      self._options["score_cache"] = score_cache
    self._revisions = revisions
    self._handler = T5NliModelHandler(model_path, **handler_options)

  def _describe_fn(self) -> beam.DoFn:
    return _DescribeModelFn(self._options["model"], self._options["max_input_tokens"],
                            self._options["tokenizer_path"])

  def score_keyed(self, work_dir: str) -> beam.PTransform:
    # Decode mode's decision is part of the cache identity; threshold mode's is
    # retaken from the cached score with this run's threshold.
    threshold = (self._options["threshold"]
                 if self._options["decision"] == "threshold" else None)
    return ScoreUniqueExamples(
        self._handler, model_id=self._options["model"], work_dir=work_dir,
        score_cache=score_cache_for(self, self._options.get("score_cache"),
                                    self._describe_fn(), threshold))

  def describe(self) -> Dict[str, Any]:
    return with_hub_references({"name": T5, "family": T5, **self._options},
                               self._revisions)

  def model_info(self) -> beam.PTransform:
    return DescribeScorer(self._describe_fn(),
                          self if self._options.get("score_cache") else None)

  def cache_identity(self, model_info: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The weights, and what changes a score computed from them: the
    tokenizer, the dtype, the input length (premise windows) and the decision
    mode. Not the device: CPU and GPU scores differ only in their last bits, as
    one device's do between batches."""
    return {"scorer": T5, "weights_sha256": model_info["weights_sha256"],
            "tokenizer_sha256": model_info["tokenizer_sha256"],
            "dtype": self._options["dtype"],
            "max_input_tokens": model_info["max_input_tokens"],
            "decision": self._options["decision"]}
