"""`--scorer factcg`: FactCG-DeBERTa (models/factcg.py) behind the Scorer
interface, each distinct (model, premise, hypothesis) scored once per run, and
with `--score_cache` once across runs. It takes the local families' flags but
--max_input_tokens: FactCG's input length (2048 tokens) and chunk size (550
words) are its Inferencer's own, so a length given would change its scores
into another scorer's, and is refused instead."""
from typing import Any, Dict, Optional

from autoais.transforms.scoring.checks import (OWN_LENGTH_SETTINGS, check_threshold_model,
                                               local_model_settings)
from autoais.transforms.scoring.flags import LOCAL_MODEL, SCORE_CACHE, Family
from autoais.transforms.scoring.names import FACTCG
from autoais.transforms.scoring.scorer import LocalModelScorer


def check_flags(options, local_run: bool) -> Dict[str, Any]:
  """--scorer factcg: see checks.check_threshold_model."""
  from autoais.models import factcg  # pylint: disable=import-outside-toplevel
  references = check_threshold_model(options, local_run, lambda references: (
      factcg.check_factcg(references.model, references.tokenizer)))
  settings = local_model_settings(options, references)
  del settings["max_input_tokens"]  # not taken (the module docstring)
  return settings


class FactcgScorer(LocalModelScorer):

  name = FACTCG
  settings = OWN_LENGTH_SETTINGS
  describe_settings = ("tokenizer_path",)

  @staticmethod
  def _model():
    from autoais.models import factcg  # pylint: disable=import-outside-toplevel
    return factcg.FactcgModelHandler, factcg.describe_factcg

  def cache_identity(self, model_info: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The family, the weights and what changes a score computed from them:
    the tokenizer, the template, the sentence splitter and the dtype. Not
    the device (see T5Scorer)."""
    return {"scorer": FACTCG, "weights_sha256": model_info["weights_sha256"],
            "tokenizer_sha256": model_info["tokenizer_sha256"],
            "template": model_info["template"],
            "sentence_splitter": model_info["sentence_splitter"],
            "dtype": self._options["dtype"]}


def load_served(options, model_path: str, tokenizer_path: Optional[str]):
  """`autoais serve --scorer factcg`: (the model loaded, its description)."""
  from autoais.models import factcg  # pylint: disable=import-outside-toplevel
  model = factcg.load_factcg(model_path, options.dtype, options.device,
                             options.token_budget, tokenizer_path=tokenizer_path)
  return model, factcg.describe_factcg(model_path, tokenizer_path)


FAMILY = Family(FACTCG, "FactCG-DeBERTa checkpoint given by --model",
                tuple(flag for flag in LOCAL_MODEL if flag.name != "max_input_tokens")
                + (SCORE_CACHE,), check_flags, FactcgScorer, load_served)
