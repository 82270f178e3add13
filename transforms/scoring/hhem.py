"""`--scorer hhem`: Vectara's HHEM-2.1-open (models/hhem.py) behind the Scorer
interface, each distinct (model, premise, hypothesis) scored once per run,
and with `--score_cache` once across runs. It takes the local families' flags
but --max_input_tokens: the whole input is scored, as HHEM's own code scores
it, so an input length would be ignored, and is refused instead."""
from typing import Any, Dict, Optional

from autoais.transforms.scoring.checks import (OWN_LENGTH_SETTINGS, check_threshold_model,
                                               local_model_settings)
from autoais.transforms.scoring.flags import LOCAL_MODEL, SCORE_CACHE, Family
from autoais.transforms.scoring.names import HHEM
from autoais.transforms.scoring.scorer import LocalModelScorer


def check_flags(options, local_run: bool) -> Dict[str, Any]:
  """--scorer hhem: see checks.check_threshold_model; the foundation that
  config.json names, where --tokenizer does not name one, pinned as
  --tokenizer would be."""
  from autoais.models import hhem  # pylint: disable=import-outside-toplevel

  def check_checkpoint(references):
    _, references.tokenizer = hhem.check_hhem(references.model, references.tokenizer)

  references = check_threshold_model(options, local_run, check_checkpoint)
  settings = local_model_settings(options, references)
  del settings["max_input_tokens"]  # not taken (the module docstring)
  return settings


class HhemScorer(LocalModelScorer):

  name = HHEM
  settings = OWN_LENGTH_SETTINGS
  describe_settings = ("tokenizer_path",)

  @staticmethod
  def _model():
    from autoais.models import hhem  # pylint: disable=import-outside-toplevel
    return hhem.HhemModelHandler, hhem.describe_hhem

  def cache_identity(self, model_info: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The family, the weights and what changes a score computed from them:
    the foundation's tokenizer, the prompt and the dtype. Not the
    device (see T5Scorer)."""
    return {"scorer": HHEM, "weights_sha256": model_info["weights_sha256"],
            "tokenizer_sha256": model_info["tokenizer_sha256"],
            "prompt": model_info["prompt"], "dtype": self._options["dtype"]}


def load_served(options, model_path: str, tokenizer_path: Optional[str]):
  """`autoais serve --scorer hhem`: (the model loaded, its description)."""
  from autoais.models import hhem  # pylint: disable=import-outside-toplevel
  model = hhem.load_hhem(model_path, options.dtype, options.device, options.token_budget,
                         tokenizer_path=tokenizer_path)
  return model, hhem.describe_hhem(model_path, tokenizer_path)


FOUNDATION_HELP = (
    "the foundation model, a local or gs:// directory or a hub id, whose tokenizer and "
    "config.json (the model's shape) HHEM reads. Default: the foundation the model's "
    "config.json names (google/flan-t5-base).")

FAMILY = Family(HHEM, "Vectara's HHEM-2.1-open checkpoint given by --model",
                tuple(flag._replace(help=FOUNDATION_HELP) if flag.name == "tokenizer"
                      else flag for flag in LOCAL_MODEL if flag.name != "max_input_tokens")
                + (SCORE_CACHE,), check_flags, HhemScorer, load_served)
