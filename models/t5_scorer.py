"""`--scorer t5`: the T5/mT5 NLI model (models/t5_nli.py) behind the Scorer
interface, each distinct (model, premise, hypothesis) scored once per run."""
from typing import Any, Dict, Optional

import apache_beam as beam

from models import T5
from models.base import Scorer
from models.t5_nli import T5NliModelHandler, describe_model
from transforms.inference import ScoreUniqueExamples


class _DescribeModelFn(beam.DoFn):

  def __init__(self, model_path, max_input_tokens):
    self._args = (model_path, max_input_tokens)

  def process(self, unused_impulse):
    yield describe_model(*self._args)


class _DescribeModel(beam.PTransform):

  def __init__(self, fn):
    super().__init__()
    self._fn = fn

  def expand(self, pbegin):
    return (pbegin
            | "StartModelInfo" >> beam.Create([None])
            | "ReadModelInfo" >> beam.ParDo(self._fn))


class T5Scorer(Scorer):

  name = T5

  def __init__(self, model_path: str, *, dtype: str = "float32", device: str = "cpu",
               decision: str = "threshold", threshold: float = 0.5,
               max_input_tokens: Optional[int] = None,
               token_budget: Optional[int] = None,
               large_model: bool = False):
    handler_options = {
        "dtype": dtype, "device": device, "decision": decision, "threshold": threshold,
        "max_input_tokens": max_input_tokens, "token_budget": token_budget,
        "large_model": large_model}
    self._options = {"model": model_path, **handler_options}
    self._handler = T5NliModelHandler(model_path, **handler_options)

  def score_keyed(self) -> beam.PTransform:
    return ScoreUniqueExamples(self._handler, model_id=self._options["model"])

  def describe(self) -> Dict[str, Any]:
    return {"name": T5, **self._options}

  def model_info(self) -> beam.PTransform:
    return _DescribeModel(_DescribeModelFn(self._options["model"],
                                           self._options["max_input_tokens"]))
