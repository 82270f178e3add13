"""The scorer interface every attribution scorer implements (`--scorer NAME`).

A scorer turns `(key, AttributionExample or None)` elements into
`(key, AttributionScore or None)`: keys (the rows) ride along untouched, and a
None example (no passage found) comes back unscored, so rows that cannot be
scored need no separate path. NLI models implement `score_keyed` with Beam's
RunInference over their ModelHandler (the model loads once per worker, never on
the launching machine); rule baselines such as string-match with a plain DoFn,
so a baseline run never imports torch.

A scorer that can fail on an example (a remote endpoint that refuses it) adds a
third output, "failed": PCollection[(key, ScoringFailure)]; those rows are in
neither "scored" output. Callers read it through
transforms.scoring.attribution.ScoreAttribution, which supplies an empty "failed" for
scorers that never fail, and send it to their dead letter (reason
`scoring_failed`).
"""
from typing import Any, Callable, Dict, Optional, Tuple

import apache_beam as beam

from autoais.models import hub
from autoais.transforms.scoring.cache import ScoreCache, identity_key
from autoais.transforms.scoring.checks import LOCAL_SETTINGS


class Scorer:
  """A scorer (a family of transforms/scoring/registry.py), built from its
  flags: score_keyed, describe and model_info once for every family. A family's
  constructor sets (`_configure`) `_options` (its run.json fields after name and
  family, with `threshold`, and `score_cache` where given), `_handler` (its
  ModelHandler, None for a rule baseline), `_model_id` (what its scores are
  grouped under), `_revisions` (the hub revisions asked for, or None), and
  says in `_describe_fn` what a worker reads of its model and in
  `cache_identity` what names its scores. Test doubles override score_keyed
  and describe."""

  name: str = ""
  # run.json fields of the family that no flag sets, between family and the options.
  _fixed: Dict[str, Any] = {}
  _options: Dict[str, Any] = {}
  _handler = None
  _model_id: str = ""
  _revisions: Optional[Dict[str, Optional[str]]] = None
  # t5 and nli-classifier: where the threshold came from (transforms/scoring/config.py).
  threshold_from: Optional[str] = None
  # Whether its scores carry the answer's unsupported spans (AttributionScore.spans).
  gives_spans: bool = False

  def score_keyed(self, work_dir: str, rows_of=None) -> beam.PTransform:
    """PCollection[(key, example or None)] -> {"scored": PCollection[(key, score
    or None)], "stats": PCollection[dict] of counts to sum into run.json,
    optionally "failed": PCollection[(key, ScoringFailure)]}. `work_dir`: a
    scratch directory for the runs of the examples' groupings; `rows_of(key)`,
    where given, how many rows a key stands for in the counts of rows (a family
    that counts none ignores it). Each distinct
    example is scored once per run by the handler, and with `--score_cache`
    once across runs; threshold decisions are retaken from cached scores with
    this run's threshold, decode mode's are part of the cache identity."""
    # fanout imports RunInference, and with it torch (Beam's model manager):
    # only the scorers of a model import it, so a string-match run never does.
    from autoais.transforms.scoring.fanout import ScoreUniqueExamples  # pylint: disable=import-outside-toplevel
    threshold = (self._options["threshold"]
                 if self._options.get("decision", "threshold") == "threshold" else None)
    return ScoreUniqueExamples(
        self._handler, model_id=self._model_id, work_dir=work_dir, rows_of=rows_of,
        score_cache=score_cache_for(self, self._options.get("score_cache"),
                                    self._describe_fn(), threshold))

  def describe(self) -> Dict[str, Any]:
    """The scorer block of run.json, from the options alone: the name, the
    family, its fixed fields and its options, a hub model named as the user
    named it (with_hub_references)."""
    block = {"name": self.name, "family": self.name, **self._fixed, **self._options}
    if self.threshold_from is not None:
      block["threshold_from"] = self.threshold_from
    return with_hub_references(block, self._revisions)

  def model_info(self) -> beam.PTransform:
    """PBegin -> a singleton PCollection[dict] of what only a worker can tell
    (token ids, weights checksum); merged into the scorer block of run.json."""
    describe_fn = self._describe_fn()
    if describe_fn is None:
      return beam.Create([{}])
    return DescribeScorer(describe_fn, self, cache_key=bool(self._options.get("score_cache")))

  def _configure(self, handler, model_id: str, options: Dict[str, Any],
                 score_cache: Optional[str],
                 revisions: Optional[Dict[str, Optional[str]]] = None) -> None:
    """Sets what score_keyed, describe and model_info read (see the class
    docstring); a family's constructor calls it."""
    self._handler = handler
    self._model_id = model_id
    self._options = dict(options)
    if score_cache:
      self._options["score_cache"] = score_cache
    self._revisions = revisions

  def _describe_fn(self) -> Optional[beam.DoFn]:
    """The DoFn (CallDescribe) that reads the model's run.json fields on a
    worker; None: the scorer reads no model."""
    return None

  def model_handler(self):
    """The Beam ModelHandler that scores this scorer's examples (the Python
    API's autoais.load_scorer calls it directly), or None for a rule baseline."""
    return self._handler

  def cache_identity(self, model_info: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """What names this scorer's scores in a score cache (`--score_cache`): the
    weights' checksum or the endpoint, and the settings that change a score,
    from model_info's dict (on a worker). None: the scorer is not cached."""
    del model_info
    return None


class LocalModelScorer(Scorer):
  """The Scorer of a family whose model runs in the job's workers: its
  handler (a models.token_budget.LocalModelHandler) made from `settings`
  (LOCAL_SETTINGS and the family's own, with their defaults: any other is a
  TypeError), which run.json records after the model; a worker describes the
  model with the family's describe function, given the model and
  `describe_settings`. A family says which handler and describe function
  (`_model`, imported when called: a string-match run imports no model)."""

  settings: Dict[str, Any] = LOCAL_SETTINGS
  describe_settings: Tuple[str, ...] = ("max_input_tokens", "tokenizer_path")

  def __init__(self, model_path: str, *, threshold: float = 0.5, large_model: bool = False,
               torch_threads: int = 0, score_cache: Optional[str] = None,
               revisions: Optional[Dict[str, Optional[str]]] = None, **given):
    unknown = sorted(set(given) - set(self.settings))
    if unknown:
      raise TypeError(f"{type(self).__name__} takes no setting {', '.join(unknown)}")
    settings = {**self.settings, **given}
    handler_class, _ = self._model()
    handler = handler_class(model_path, threshold=threshold, large_model=large_model,
                            torch_threads=torch_threads, **settings)
    self._configure(handler, model_path, {
        "model": model_path, **settings, "threshold": threshold,
        "large_model": large_model, "torch_threads": torch_threads},
                    score_cache, revisions)

  @staticmethod
  def _model() -> Tuple[type, Callable[..., Dict[str, Any]]]:
    """(the family's ModelHandler class, its describe function)."""
    raise NotImplementedError

  def _describe_fn(self) -> beam.DoFn:
    _, describe = self._model()
    return CallDescribe(describe, self._options["model"],
                        *(self._options[name] for name in self.describe_settings))


def with_hub_references(block: Dict[str, Any],
                        revisions: Optional[Dict[str, Optional[str]]]) -> Dict[str, Any]:
  """A scorer's run.json fields with a hub model named as the user named it:
  `model` the id, `model_revision` the revision asked for and `model_commit`
  the commit the run loaded (models/hub.py); the same of its tokenizer
  (`tokenizer_revision`, `tokenizer_commit`). Directories stay as they are."""
  described = dict(block)
  revisions = revisions or {}
  for key, prefix in (("model", "model"), ("tokenizer_path", "tokenizer"),
                      ("tokenizer", "tokenizer")):
    if key in described:
      described.update(hub.describe(described[key], revisions.get(f"{prefix}_revision"),
                                    key, prefix))
  return described


# run.json's scorer block: what names the run's scores (Scorer.cache_identity:
# the weights or endpoint and the settings that change a score), recorded with
# or without a score cache, so that `autoais compare` can tell two runs scored
# alike from two scored otherwise.
SCORE_IDENTITY = "score_identity"


class DescribeScorer(beam.PTransform):
  """PBegin -> a singleton dict from `describe_fn` (a DoFn run once, on a
  worker: what only a worker can tell of the model); with `scorer`, its
  score identity added as SCORE_IDENTITY, and with `cache_key` the key of
  its score cache (the subdirectory) as `score_cache_key`."""

  def __init__(self, describe_fn: beam.DoFn, scorer: Optional[Scorer] = None,
               cache_key: bool = False):
    super().__init__()
    self._describe_fn = describe_fn
    self._scorer = scorer
    self._cache_key = cache_key

  def expand(self, pbegin):
    info = (pbegin
            | "StartModelInfo" >> beam.Create([None])
            | "ReadModelInfo" >> beam.ParDo(self._describe_fn))
    if self._scorer is not None:
      info = info | "AddScoreIdentity" >> beam.Map(_with_identity, self._scorer,
                                                   self._cache_key)
    return info


def _with_identity(described: Dict[str, Any], scorer: Scorer,
                   cache_key: bool) -> Dict[str, Any]:
  identity = scorer.cache_identity(described)
  if identity is None:
    return described
  described = dict(described, **{SCORE_IDENTITY: identity})
  if cache_key:
    described["score_cache_key"] = identity_key(identity)
  return described


def score_cache_for(scorer: Scorer, directory: Optional[str], describe_fn: beam.DoFn,
                    threshold: Optional[float]):
  """The ScoreCache of `scorer` in `directory` (None: no cache). Its identity is
  `scorer.cache_identity` of what `describe_fn` tells on a worker; `threshold`
  retakes decisions from cached scores (None: the cached decision stands)."""
  if not directory:
    return None
  return ScoreCache(directory,
                    lambda: DescribeScorer(describe_fn) | "IdentityOfScores" >> beam.Map(
                        _cache_identity, scorer),
                    threshold=threshold)


def _cache_identity(described: Dict[str, Any], scorer: Scorer) -> Dict[str, Any]:
  return scorer.cache_identity(described)


class CallDescribe(beam.DoFn):
  """Yields `describe(*args)` (a model module's describe function: what it
  reads of a checkpoint on a worker) once per impulse."""

  def __init__(self, describe, *args):
    self._describe = describe
    self._args = args

  def process(self, unused_impulse):
    yield self._describe(*self._args)
