"""Attribution scorers, chosen by name (`--scorer`): see transforms/scoring/scorer.py.

The local model scorers' modules (t5, nli-classifier, minicheck) import torch and
transformers, so they are imported only when one of them is chosen; the hosted
scorers (remote, vertex) never import them; llm-judge imports transformers'
tokenizer only.
"""
from autoais.transforms.scoring.names import (LLM_JUDGE, MINICHECK, NLI_CLASSIFIER, REMOTE, SCORERS,
                                      STRING_MATCH, T5, VERTEX)
from autoais.transforms.scoring.scorer import Scorer
from autoais.transforms.scoring.string_match import StringMatchScorer


def make_scorer(name: str, threshold: float, **model_options) -> Scorer:
  if name == STRING_MATCH:
    return StringMatchScorer(threshold=threshold)
  if name == T5:
    from autoais.transforms.scoring.t5 import T5Scorer  # pylint: disable=import-outside-toplevel
    return T5Scorer(threshold=threshold, **model_options)
  if name == NLI_CLASSIFIER:
    from autoais.transforms.scoring.nli_classifier import NliClassifierScorer  # pylint: disable=import-outside-toplevel
    return NliClassifierScorer(threshold=threshold, **model_options)
  if name == MINICHECK:
    from autoais.transforms.scoring.minicheck import MiniCheckScorer  # pylint: disable=import-outside-toplevel
    return MiniCheckScorer(threshold=threshold, **model_options)
  if name == REMOTE:
    from autoais.transforms.scoring.hosted import RemoteScorer  # pylint: disable=import-outside-toplevel
    return RemoteScorer(threshold=threshold, **model_options)
  if name == VERTEX:
    from autoais.transforms.scoring.hosted import VertexScorer  # pylint: disable=import-outside-toplevel
    return VertexScorer(threshold=threshold, **model_options)
  if name == LLM_JUDGE:
    from autoais.transforms.scoring.llm_judge import LlmJudgeScorer  # pylint: disable=import-outside-toplevel
    return LlmJudgeScorer(threshold=threshold, **model_options)
  raise ValueError(f"unknown scorer {name!r} (choose from {', '.join(SCORERS)})")
