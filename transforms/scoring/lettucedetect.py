"""`--scorer lettucedetect`: LettuceDetect's token classifier
(models/lettucedetect.py) behind the Scorer interface, each distinct (model,
premise, hypothesis) scored once per run, and with `--score_cache` once across
runs. It takes the local families' flags, --max_input_tokens as the input
length that passages are grouped into chunks under (4096 by default, as
LettuceDetect's own code), and --language, the language of its prompt;
`autoais serve --scorer lettucedetect` serves it (load_served), with the
answers' unsupported spans in its predictions."""
from typing import Any, Dict, Optional

from autoais.schemas.errors import require_choice
from autoais.transforms.scoring.checks import (LOCAL_SETTINGS, check_threshold_model,
                                               local_model_settings)
from autoais.transforms.scoring.flags import LOCAL_MODEL, SCORE_CACHE, Family, Flag
from autoais.transforms.scoring.names import LETTUCEDETECT, LETTUCEDETECT_LANGUAGES
from autoais.transforms.scoring.scorer import LocalModelScorer


def check_flags(options, local_run: bool) -> Dict[str, Any]:
  """--scorer lettucedetect: see checks.check_threshold_model; a token
  classifier of two labels; a language LettuceDetect has a prompt in."""
  from autoais.models import lettucedetect  # pylint: disable=import-outside-toplevel
  require_choice("--language", options.language, LETTUCEDETECT_LANGUAGES)
  references = check_threshold_model(options, local_run, lambda references: (
      lettucedetect.check_detector(references.model, references.tokenizer)))
  return {"language": options.language, **local_model_settings(options, references)}


class LettuceDetectScorer(LocalModelScorer):

  name = LETTUCEDETECT
  gives_spans = True
  settings = dict(LOCAL_SETTINGS, language="en")
  describe_settings = ("max_input_tokens", "tokenizer_path", "language")

  @staticmethod
  def _model():
    from autoais.models import lettucedetect  # pylint: disable=import-outside-toplevel
    return lettucedetect.LettuceDetectModelHandler, lettucedetect.describe_lettucedetect

  def cache_identity(self, model_info: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The family, the weights and what changes a score computed from them:
    the tokenizer, the prompt, the input length (the chunks) and the dtype.
    Not the device (see T5Scorer)."""
    return {"scorer": LETTUCEDETECT, "weights_sha256": model_info["weights_sha256"],
            "tokenizer_sha256": model_info["tokenizer_sha256"],
            "prompt": model_info["prompt"], "max_input_tokens": model_info["max_input_tokens"],
            "dtype": self._options["dtype"]}


def load_served(options, model_path: str, tokenizer_path: Optional[str]):
  """`autoais serve --scorer lettucedetect`: (the model loaded, its description)."""
  from autoais.models import lettucedetect  # pylint: disable=import-outside-toplevel
  model = lettucedetect.load_lettucedetect(
      model_path, options.dtype, options.device, options.max_input_tokens,
      options.token_budget, tokenizer_path=tokenizer_path, language=options.language)
  return model, lettucedetect.describe_lettucedetect(model_path, options.max_input_tokens,
                                                     tokenizer_path, options.language)


LANGUAGE = Flag(
    "language", "LettuceDetect prompt language",
    "the language of LettuceDetect's prompt, one of its checkpoints' (default en).",
    default="en", choices=LETTUCEDETECT_LANGUAGES, served=True)
INPUT_LENGTH_HELP = (
    "the model's input length: passages that do not fit beside the answer are grouped "
    "into chunks that do, each scored, a token taking its largest probability over "
    "them (default 4096, LettuceDetect's).")

FAMILY = Family(LETTUCEDETECT, "LettuceDetect's token classifier given by --model: "
                "unsupported spans of the answer",
                tuple(flag._replace(help=INPUT_LENGTH_HELP) if flag.name == "max_input_tokens"
                      else flag for flag in LOCAL_MODEL) + (LANGUAGE, SCORE_CACHE),
                check_flags, LettuceDetectScorer, load_served)
