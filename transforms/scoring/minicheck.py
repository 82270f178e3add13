"""`--scorer minicheck`: MiniCheck's Flan-T5, RoBERTa and DeBERTa checkers
(models/minicheck.py) behind the Scorer interface, each distinct (model,
premise, hypothesis) scored once per run, and with `--score_cache` once across
runs. A blank premise is a scoring failure (its row goes to dead letter)."""
from typing import Any, Dict, Optional

from autoais.transforms.scoring.checks import (LOCAL_SETTINGS, check_threshold_model,
                                               local_model_settings)
from autoais.transforms.scoring.flags import CHUNK_SIZE, LOCAL_MODEL, SCORE_CACHE, Family
from autoais.transforms.scoring.names import MINICHECK
from autoais.transforms.scoring.scorer import LocalModelScorer


def check_flags(options, local_run: bool) -> Dict[str, Any]:
  """--scorer minicheck: see checks.check_threshold_model."""
  from autoais.models import minicheck  # pylint: disable=import-outside-toplevel
  references = check_threshold_model(
      options, local_run,
      lambda references: minicheck.check_minicheck(references.model, references.tokenizer))
  return {"chunk_size": options.chunk_size, **local_model_settings(options, references)}


class MiniCheckScorer(LocalModelScorer):

  name = MINICHECK
  settings = dict(LOCAL_SETTINGS, chunk_size=None)
  describe_settings = ("max_input_tokens", "tokenizer_path", "chunk_size")

  @staticmethod
  def _model():
    from autoais.models import minicheck  # pylint: disable=import-outside-toplevel
    return minicheck.MiniCheckModelHandler, minicheck.describe_minicheck

  def cache_identity(self, model_info: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The family and variant, the weights and what changes a score computed
    from them: the tokenizer, the dtype, the input length, the chunk size and
    the sentence splitter (its name and version: another splitter, other
    chunks). Not the device (see T5Scorer)."""
    return {"scorer": MINICHECK, "variant": model_info["variant"],
            "weights_sha256": model_info["weights_sha256"],
            "tokenizer_sha256": model_info["tokenizer_sha256"],
            "dtype": self._options["dtype"],
            "max_input_tokens": model_info["max_input_tokens"],
            "chunk_size": model_info["chunk_size"],
            "sentence_splitter": model_info["sentence_splitter"]}


FAMILY = Family(MINICHECK, "a MiniCheck Flan-T5, RoBERTa or DeBERTa checkpoint given by "
                "--model", LOCAL_MODEL + (CHUNK_SIZE, SCORE_CACHE),
                check_flags, MiniCheckScorer)
