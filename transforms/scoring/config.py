"""A run's scorer configuration: ScorerConfig, one frozen value built from the
scorer flags (beam_jobs/options.py ScorerOptions) and checked once, at launch,
cheaply (listing and small files only: models load on the workers).

    config = scorer_config(options, given_flags, local_run)  # or ConfigError, ModelError
    scorer = config.scorer()  # its Scorer, with its ModelHandler

The checks every family shares are here: a flag of another family refused
(registry.FLAG_SCORERS), the threshold, the chunk size and score-cache
directory, a model's --model/--tokenizer pinned where they are hub ids, a local
model's device, token budget and threads, a hosted one's URL and retries. Each
family checks its own flags in its module's check_flags (registry.FAMILIES).
"""
import dataclasses
import os
import types
import urllib.parse
from typing import Any, Callable, Dict, FrozenSet, Mapping

from apache_beam.io.filesystems import FileSystems

from autoais.models import hub
from autoais.schemas.errors import ConfigError, require, require_choice
from autoais.transforms.scoring.registry import FAMILIES, FLAG_SCORERS, family_module, make_scorer
from autoais.transforms.scoring.names import STRING_MATCH
from autoais.transforms.scoring.scorer import Scorer


# A model `autoais finetune` trained carries the threshold calibrated on its
# validation split in this file; these families decide at it unless
# --threshold is given (SPEC 5.12).
MODEL_CARD = "model_card.json"
CARD_FAMILIES = ("t5", "nli-classifier")


@dataclasses.dataclass(frozen=True)
class ScorerConfig:
  """The scorer family (`--scorer`), its threshold, and the settings its
  Scorer is built with (what the family's check_flags returned);
  `threshold_from` says where a card family's threshold came from."""
  name: str
  threshold: float
  settings: Mapping[str, Any]
  threshold_from: Any = None

  def scorer(self) -> Scorer:
    scorer = make_scorer(self.name, self.threshold, **self.settings)
    scorer.threshold_from = self.threshold_from
    return scorer


def _card_threshold(options, given: FrozenSet[str]):
  """(threshold, where it came from) of a card family: --threshold where
  given, else the model card's, else the default. The jobs read
  options.threshold (agreement's header and calibration default), so a
  card's threshold is set there too."""
  if "threshold" in given:
    return options.threshold, "--threshold"
  if options.decision != "threshold":
    return options.threshold, "unused (--decision decode)"
  if not options.model:
    return options.threshold, "default"
  from autoais.models import checkpoints  # pylint: disable=import-outside-toplevel
  model = hub.pin(options.model, options.model_revision, "--model", "--model_revision")
  if MODEL_CARD not in checkpoints.list_dir(model, "--model"):
    return options.threshold, "default (the model has no model_card.json)"
  card = checkpoints.read_json(checkpoints.file_in(model, MODEL_CARD, "--model"),
                               "--model", options.model)
  threshold = card.get("threshold") if isinstance(card, dict) else None
  if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not (
      0.0 <= threshold <= 1.0):
    raise ConfigError(f"--model {options.model}: {MODEL_CARD} has no threshold in "
                      f"[0, 1] (found {threshold!r})")
  options.threshold = float(threshold)
  return float(threshold), f"model card ({MODEL_CARD})"


def scorer_config(options, given: FrozenSet[str], local_run: bool) -> ScorerConfig:
  """Checks the scorer flags of `options` (a ScorerOptions view; `given`: the
  dests of the flags the command line gave) and returns the run's
  ScorerConfig. `local_run`: the workers run on this machine, so what they
  will read (a tokenizer, an endpoint, CUDA) is checked here too."""
  check_scorer_flags(options, given)
  if not 0.0 <= options.threshold <= 1.0:
    raise ConfigError(f"--threshold must be in [0, 1], got {options.threshold}")
  if options.scorer == STRING_MATCH and "threshold" in given:
    # Accepted, it would change nothing: the baseline's score is 1 or 0.
    raise ConfigError("--threshold is for a model scorer: string-match's nli_score is 1 "
                      "(the answer found in the passage) or 0, so no threshold changes "
                      "its decisions; choose a model (--scorer t5, nli-classifier, ...) "
                      "to set one")
  if options.chunk_size is not None and options.chunk_size < 1:
    raise ConfigError(f"--chunk_size must be positive, got {options.chunk_size}")
  module = family_module(options.scorer)
  if "score_cache" in FAMILIES[options.scorer].flags and options.score_cache:
    check_cache_dir(options.score_cache)
  threshold_from = None
  if options.scorer in CARD_FAMILIES:
    _, threshold_from = _card_threshold(options, given)
  settings = module.check_flags(options, local_run)
  return ScorerConfig(options.scorer, options.threshold, types.MappingProxyType(settings),
                      threshold_from)


def check_scorer_flags(options, given: FrozenSet[str]) -> None:
  """Refuses a scorer flag the chosen scorer does not take (FLAG_SCORERS): it
  would be ignored, and the run would answer another question than the one
  asked (`--model DIR` alone once gave a string-match leaderboard)."""
  scorer = options.scorer
  if "scorer" not in given and "model" in given:
    raise ConfigError(
        "--model needs a model scorer, and the default scorer, string-match, reads "
        "no model: add --scorer t5 (a T5/mT5 NLI model answering '1'/'0', such as "
        "google/t5_xxl_true_nli_mixture), --scorer nli-classifier (a "
        "sequence-classification NLI model) or --scorer minicheck (MiniCheck's "
        "Flan-T5, RoBERTa or DeBERTa checkers)")
  wrong = sorted(flag for flag in given
                 if flag in FLAG_SCORERS and scorer not in FLAG_SCORERS[flag])
  if wrong:
    chosen = f"--scorer {scorer}" + ("" if "scorer" in given else " (the default)")
    raise ConfigError("; ".join(
        f"--{flag} is for --scorer {' / '.join(FLAG_SCORERS[flag])}, not {chosen}"
        for flag in wrong) + ": a flag the scorer does not take is refused, not ignored")


class ModelReferences:
  """--model and --tokenizer as the workers load them: a hub id pinned to the
  commit its revision names now (models/hub.py), anything else as given."""

  def __init__(self, options):
    self.model = hub.pin(options.model, options.model_revision, "--model",
                         "--model_revision")
    self.tokenizer = hub.pin(options.tokenizer, options.tokenizer_revision,
                             "--tokenizer", "--tokenizer_revision")
    self.revisions = {"model_revision": options.model_revision,
                      "tokenizer_revision": options.tokenizer_revision}


def check_local_model(options) -> ModelReferences:
  """What every family of a model run in the workers checks first (t5,
  nli-classifier, minicheck): --model given, the device, the token budget and
  the threads; returns the model's references."""
  from autoais.models import token_budget  # pylint: disable=import-outside-toplevel
  references = ModelReferences(options)
  require(options, "model")
  require_choice("--device", options.device, token_budget.DEVICES)
  if options.token_budget is not None and options.token_budget < 1:
    raise ConfigError("--token_budget must be positive")
  if options.torch_threads < 0:
    raise ConfigError(f"--torch_threads must be 0 (torch's default) or more, got "
                      f"{options.torch_threads}")
  return references


def check_threshold_model(options, local_run: bool,
                          check_checkpoint: Callable[[ModelReferences], Any]) -> ModelReferences:
  """What nli-classifier and minicheck check: check_local_model, a decision by
  --threshold, the dtype, then their checkpoint (`check_checkpoint`: listing
  and config.json only, also on gs:// and the hub; nothing loaded) and, on a
  local run, CUDA where it is asked for."""
  from autoais.models.token_budget import check_dtype  # pylint: disable=import-outside-toplevel
  references = check_local_model(options)
  if options.decision != "threshold":
    raise ConfigError("--decision decode is the T5 family's (--scorer t5); --scorer "
                      f"{options.scorer} decides by --threshold")
  check_dtype(options.dtype)
  check_checkpoint(references)
  if local_run:
    check_cuda(options.device)
  return references


def local_model_settings(options, references: ModelReferences) -> Dict[str, Any]:
  """The settings every scorer of a model run in the workers takes (t5,
  nli-classifier, minicheck)."""
  return {"model_path": references.model, "dtype": options.dtype, "device": options.device,
          "max_input_tokens": options.max_input_tokens,
          "token_budget": options.token_budget, "large_model": options.large_model,
          "torch_threads": options.torch_threads, "tokenizer_path": references.tokenizer,
          "score_cache": options.score_cache, "revisions": references.revisions}


def readable_here(path: str) -> bool:
  """A local directory, or a hub model (its small files come into this
  machine's cache; the weights do not): worth reading at launch."""
  return hub.pinned(path) is not None or FileSystems.get_scheme(path) in (None, "file")


def check_cuda(device: str) -> None:
  if device == "cuda":
    import torch  # pylint: disable=import-outside-toplevel
    if not torch.cuda.is_available():
      raise ConfigError("--device cuda: no CUDA device on this machine")


def check_http_url(flag: str, url: str) -> None:
  parsed = urllib.parse.urlparse(url)
  if parsed.scheme not in ("http", "https") or not parsed.netloc:
    raise ConfigError(f"{flag} {url!r}: expected an http:// or https:// URL")


def check_retries(options) -> None:
  if options.request_timeout <= 0 or options.retry_backoff < 0 or (
      options.max_retries < 0):
    raise ConfigError("--request_timeout must be positive, --retry_backoff and "
                      "--max_retries not negative")


def check_cache_dir(path: str) -> None:
  if FileSystems.get_scheme(path) in (None, "file"):
    local = path.removeprefix("file://")
    if os.path.exists(local) and not os.path.isdir(local):
      raise ConfigError(f"--score_cache {path}: is a file, not a directory")
