"""A run's scorer configuration: ScorerConfig, one frozen value built from the
scorer flags (beam_jobs/options.py ScorerOptions) and checked once, at launch,
cheaply (listing and small files only: models load on the workers).

    config = scorer_config(options, given_flags, local_run)  # or ConfigError, ModelError
    scorer = config.scorer()  # its Scorer, with its ModelHandler

The checks every run makes are here: a flag of another family refused
(registry.FLAG_SCORERS), the threshold, the chunk size, the score-cache
directory and a model card's threshold. Each family checks its own flags in its
check_flags (registry.FAMILIES), with the checks several share
(transforms/scoring/checks.py).
"""
import dataclasses
import types
from typing import Any, Dict, FrozenSet, Mapping, NamedTuple, Optional

from autoais.models import hub
from autoais.schemas.errors import ConfigError
from autoais.transforms.scoring.checks import check_cache_dir
from autoais.transforms.scoring.registry import FAMILIES, FLAG_SCORERS, make_scorer
from autoais.transforms.scoring.names import REMOTE, STRING_MATCH
from autoais.transforms.scoring.scorer import Scorer


# A model `autoais finetune` trained carries the threshold calibrated on its
# validation split in this file; these families decide at it unless
# --threshold is given (SPEC 5.12).
MODEL_CARD = "model_card.json"
# The card's input length of the validation scores its threshold was calibrated
# on (beam_jobs/finetune.py writes it).
CARD_INPUT_TOKENS = "calibrated_max_input_tokens"
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


def _is_threshold(value) -> bool:
  return (isinstance(value, (int, float)) and not isinstance(value, bool)
          and 0.0 <= value <= 1.0)


class Card(NamedTuple):
  """What the scorers read of a model card: its threshold, and the input
  length the validation scores it was calibrated on were computed at (None
  in a card written before finetune recorded it: the model's default)."""
  threshold: float
  max_input_tokens: Optional[int]


def model_card(model: str, named: str) -> Optional[Card]:
  """The Card of a model directory (or pinned hub id), or None where it has
  none; ConfigError for a card without a threshold in [0, 1] or with an input
  length that is not a positive integer. `named`: the model as the user named
  it, for the message."""
  from autoais.models import checkpoints  # pylint: disable=import-outside-toplevel
  if MODEL_CARD not in checkpoints.list_dir(model, "--model"):
    return None
  card = checkpoints.read_json(checkpoints.file_in(model, MODEL_CARD, "--model"),
                               "--model", named)
  card = card if isinstance(card, dict) else {}
  threshold = card.get("threshold")
  if not _is_threshold(threshold):
    raise ConfigError(f"--model {named}: {MODEL_CARD} has no threshold in "
                      f"[0, 1] (found {threshold!r})")
  length = card.get(CARD_INPUT_TOKENS)
  if length is not None and not (isinstance(length, int) and not isinstance(length, bool)
                                 and length > 0):
    raise ConfigError(f"--model {named}: {MODEL_CARD}'s {CARD_INPUT_TOKENS} is not a "
                      f"positive integer (found {length!r})")
  return Card(float(threshold), length)


def _uncalibrated_length(threshold: float, calibrated: Optional[int], length: Any,
                         where: str, remedy: str) -> ConfigError:
  """A model card's threshold beside inputs cut at another length than the
  validation scores it was calibrated on: those score otherwise, and the
  decisions would be at a threshold calibrated for other scores."""
  at = (f"inputs of at most {calibrated} tokens" if calibrated is not None
        else "the model's default input length (the card does not say which)")
  return ConfigError(
      f"{where}: the threshold of the model's {MODEL_CARD} ({threshold:.6g}) was "
      f"calibrated on validation scores computed at {at}, and inputs cut at {length} "
      f"tokens score otherwise. Give --threshold (the card's {threshold:.6g} to keep it "
      f"anyway), or {remedy}")


def _card_threshold(options, given: FrozenSet[str]) -> str:
  """Where a card family's threshold came from: --threshold where given, else
  the model card's, else the default. The jobs read options.threshold
  (agreement's header and calibration default), so a card's threshold is set
  there. A --max_input_tokens other than the card's is refused beside it."""
  if "threshold" in given:
    return "--threshold"
  if options.decision != "threshold":
    return "unused (--decision decode)"
  if not options.model:
    return "default"
  card = model_card(
      hub.pin(options.model, options.model_revision, "--model", "--model_revision"),
      options.model)
  if card is None:
    return f"default (the model has no {MODEL_CARD})"
  if options.max_input_tokens is not None and options.max_input_tokens != card.max_input_tokens:
    raise _uncalibrated_length(card.threshold, card.max_input_tokens,
                               options.max_input_tokens,
                               f"--max_input_tokens {options.max_input_tokens}",
                               "drop --max_input_tokens")
  options.threshold = card.threshold
  return f"model card ({MODEL_CARD})"


def _served_card_threshold(options, given: FrozenSet[str], local_run: bool,
                           settings: Dict[str, Any]) -> str:
  """Where --scorer remote's threshold came from, as a card family's: the
  served model's card (`autoais serve` tells its threshold in /health) unless
  --threshold is given. Where the launch cannot ask the endpoint, the workers
  refuse a served model with a card (models/remote.py): this run would not
  decide at the threshold that goes with the model."""
  if "threshold" in given:
    return "--threshold"
  if not local_run:
    settings["refuse_served_card"] = True
    return "default (a served model with a model card is refused on the workers)"
  from autoais.models.remote import fetch_health  # pylint: disable=import-outside-toplevel
  served = fetch_health(options.endpoint, options.request_timeout).get("model") or {}
  threshold = served.get("card_threshold")
  if threshold is None:
    return "default (the served model has no model card)"
  if not _is_threshold(threshold):
    raise ConfigError(f"--endpoint {options.endpoint}: the served model's card_threshold "
                      f"is not a threshold in [0, 1] (found {threshold!r})")
  calibrated = served.get("card_max_input_tokens")
  if calibrated is None or calibrated != served.get("max_input_tokens"):
    raise _uncalibrated_length(threshold, calibrated, served.get("max_input_tokens"),
                               f"--endpoint {options.endpoint}",
                               "serve the model without --max_input_tokens")
  options.threshold = float(threshold)
  return "model card of the served model (/health card_threshold)"


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
  if options.scorer in FLAG_SCORERS["score_cache"] and options.score_cache:
    check_cache_dir(options.score_cache)
  threshold_from = None
  if options.scorer in CARD_FAMILIES:
    threshold_from = _card_threshold(options, given)
  settings = FAMILIES[options.scorer].check_flags(options, local_run)
  if options.scorer == REMOTE:
    threshold_from = _served_card_threshold(options, given, local_run, settings)
  if options.decision == "decode" and "threshold" in given:
    # Only a family that decodes gets here (the others refuse decode).
    raise ConfigError(f"--threshold {options.threshold} is not used with --decision "
                      "decode: a decision is whether the generated text reads '1', as "
                      "the Attributed QA script decides, whatever nli_score is; drop "
                      "one of them")
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
        "sequence-classification NLI model), --scorer minicheck (MiniCheck's "
        "Flan-T5, RoBERTa or DeBERTa checkers), --scorer hhem (Vectara's "
        "HHEM-2.1-open), --scorer factcg (FactCG-DeBERTa) or --scorer lettucedetect "
        "(LettuceDetect's token classifier)")
  refuse_flags_not_taken(given, scorer, f"--scorer {scorer}" + (
      "" if "scorer" in given else " (the default)"))


def refuse_flags_not_taken(flags: FrozenSet[str], scorer: str, chosen: str) -> None:
  """ConfigError naming those of `flags` (dests) that family `scorer` (in the
  words `chosen`) does not take, and the families that do."""
  wrong = sorted(flag for flag in flags
                 if flag in FLAG_SCORERS and scorer not in FLAG_SCORERS[flag])
  if wrong:
    raise ConfigError("; ".join(
        f"--{flag} is for --scorer {' / '.join(FLAG_SCORERS[flag])}, not {chosen}"
        for flag in wrong) + ": a flag the scorer does not take is refused, not ignored")
