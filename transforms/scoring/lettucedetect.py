"""`--scorer lettucedetect`: LettuceDetect's token classifier
(models/lettucedetect.py) behind the Scorer interface, each distinct (model,
premise, hypothesis) scored once per run, and with `--score_cache` once across
runs. It takes the local families' flags, --max_input_tokens as the input
length that passages are grouped into chunks under (4096 by default, as
LettuceDetect's own code), and --language, the language of its prompt;
`autoais serve --scorer lettucedetect` serves it (load_served), with the
answers' unsupported spans in its predictions."""
from typing import Any, Dict, Optional

import apache_beam as beam

from autoais.schemas.errors import require_choice
from autoais.transforms.scoring.checks import check_threshold_model, local_model_settings
from autoais.transforms.scoring.flags import LOCAL_MODEL, SCORE_CACHE, Family, Flag
from autoais.transforms.scoring.names import LETTUCEDETECT, LETTUCEDETECT_LANGUAGES
from autoais.transforms.scoring.scorer import CallDescribe, Scorer


def check_flags(options, local_run: bool) -> Dict[str, Any]:
  """--scorer lettucedetect: see checks.check_threshold_model; a token
  classifier of two labels; a language LettuceDetect has a prompt in."""
  from autoais.models import lettucedetect  # pylint: disable=import-outside-toplevel
  require_choice("--language", options.language, LETTUCEDETECT_LANGUAGES)
  references = check_threshold_model(options, local_run, lambda references: (
      lettucedetect.check_detector(references.model, references.tokenizer)))
  return {"language": options.language, **local_model_settings(options, references)}


class LettuceDetectScorer(Scorer):

  name = LETTUCEDETECT
  gives_spans = True

  def __init__(self, model_path: str, *, dtype: str = "float32", device: str = "cpu",
               threshold: float = 0.5, max_input_tokens: Optional[int] = None,
               token_budget: Optional[int] = None, large_model: bool = False,
               torch_threads: int = 0, tokenizer_path: Optional[str] = None,
               language: str = "en", score_cache: Optional[str] = None,
               revisions: Optional[Dict[str, Optional[str]]] = None):
    from autoais.models.lettucedetect import LettuceDetectModelHandler  # pylint: disable=import-outside-toplevel
    settings = {"dtype": dtype, "device": device, "max_input_tokens": max_input_tokens,
                "token_budget": token_budget, "tokenizer_path": tokenizer_path,
                "language": language}
    handler = LettuceDetectModelHandler(model_path, threshold, 512, large_model,
                                        torch_threads, **settings)
    self._configure(handler, model_path, {
        "model": model_path, "threshold": threshold, "large_model": large_model,
        "torch_threads": torch_threads, **settings}, score_cache, revisions)

  def _describe_fn(self) -> beam.DoFn:
    from autoais.models.lettucedetect import describe_lettucedetect  # pylint: disable=import-outside-toplevel
    return CallDescribe(describe_lettucedetect, self._options["model"],
                        self._options["max_input_tokens"], self._options["tokenizer_path"],
                        self._options["language"])

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
