"""`--scorer nli-classifier`: a sequence-classification NLI model
(models/nli_classifier.py) behind the Scorer interface, each distinct (model,
premise, hypothesis) scored once per run, and with `--score_cache` once across
runs."""
from typing import Any, Dict, Optional

from autoais.transforms.scoring.checks import (LOCAL_SETTINGS, check_threshold_model,
                                               local_model_settings)
from autoais.transforms.scoring.flags import LOCAL_MODEL, SCORE_CACHE, Family, Flag
from autoais.transforms.scoring.names import NLI_CLASSIFIER
from autoais.transforms.scoring.scorer import LocalModelScorer


def check_flags(options, local_run: bool) -> Dict[str, Any]:
  """--scorer nli-classifier: see checks.check_threshold_model."""
  from autoais.models import nli_classifier  # pylint: disable=import-outside-toplevel
  references = check_threshold_model(
      options, local_run, lambda references: nli_classifier.check_classifier(
          references.model, references.tokenizer, options.positive_label))
  return {"positive_label": options.positive_label,
          **local_model_settings(options, references)}


class NliClassifierScorer(LocalModelScorer):

  name = NLI_CLASSIFIER
  settings = dict(LOCAL_SETTINGS, positive_label=None)
  describe_settings = ("max_input_tokens", "tokenizer_path", "positive_label")

  @staticmethod
  def _model():
    from autoais.models import nli_classifier  # pylint: disable=import-outside-toplevel
    return nli_classifier.NliClassifierModelHandler, nli_classifier.describe_classifier

  def cache_identity(self, model_info: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The family, the weights and what changes a score computed from them:
    the tokenizer, the dtype, the input length (premise windows and their
    overlap) and the supporting label. Not the device (see T5Scorer)."""
    return {"scorer": NLI_CLASSIFIER, "weights_sha256": model_info["weights_sha256"],
            "tokenizer_sha256": model_info["tokenizer_sha256"],
            "dtype": self._options["dtype"],
            "max_input_tokens": model_info["max_input_tokens"],
            "window_overlap": model_info["window_overlap"],
            "positive_label_id": model_info["positive_label_id"],
            "positive_label": model_info["positive_label"]}


def load_served(options, model_path: str, tokenizer_path: Optional[str]):
  """`autoais serve --scorer nli-classifier`: (the model loaded, its description)."""
  from autoais.models import nli_classifier  # pylint: disable=import-outside-toplevel
  model = nli_classifier.load_nli_classifier(
      model_path, options.dtype, options.device, options.max_input_tokens,
      options.token_budget, tokenizer_path=tokenizer_path,
      positive_label=options.positive_label)
  return model, nli_classifier.describe_classifier(
      model_path, options.max_input_tokens, tokenizer_path, options.positive_label)


POSITIVE_LABEL = Flag(
    "positive_label", "Supporting label",
    "the head's label (a name in config.json's id2label, any case) whose probability "
    "is the score. Default: the one label named entailment, entail, supported or "
    "support.", served=True)

FAMILY = Family(NLI_CLASSIFIER,
                "a sequence-classification NLI model given by --model",
                LOCAL_MODEL + (POSITIVE_LABEL, SCORE_CACHE), check_flags,
                NliClassifierScorer, load_served)
