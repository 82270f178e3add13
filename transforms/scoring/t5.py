"""`--scorer t5`: the T5/mT5 NLI model (models/t5_nli.py) behind the Scorer
interface, each distinct (model, premise, hypothesis) scored once per run, and
with `--score_cache` once across runs."""
from typing import Any, Dict, Optional

from autoais.models import checkpoints
from autoais.schemas.errors import ConfigError, require_choice
from autoais.transforms.scoring.checks import (LOCAL_SETTINGS, check_cuda, check_local_model,
                                               local_model_settings, readable_here)
from autoais.transforms.scoring.flags import DECISION, LOCAL_MODEL, SCORE_CACHE, Family
from autoais.transforms.scoring.names import T5
from autoais.transforms.scoring.scorer import LocalModelScorer


def check_flags(options, local_run: bool) -> Dict[str, Any]:
  """The model's directory listed, its tokenizer's and weights' files there;
  with --decision decode, its generation config read (sampling refused); on
  a local run, its tokenizer's label pieces read. Nothing loaded."""
  # pylint: disable=import-outside-toplevel
  from autoais.models import t5_nli
  from autoais.models.token_budget import check_dtype
  references = check_local_model(options)
  check_dtype(options.dtype, t5_nli.FLOAT16_REFUSED)
  require_choice("--decision", options.decision, t5_nli.DECISIONS)
  checkpoints.check_model_and_tokenizer(references.model, references.tokenizer)
  if options.decision == "decode":
    if options.max_input_tokens is not None:
      # Decode mode scores each whole input, however long (the reference
      # script's rule): an input length would change nothing.
      raise ConfigError(f"--max_input_tokens {options.max_input_tokens} is not used with "
                        "--decision decode, which scores each whole input as the "
                        "Attributed QA script does (no premise windows); drop one of them")
    t5_nli.check_decode_generation(references.model)
  if local_run and readable_here(references.tokenizer or references.model):
    t5_nli.label_pieces(checkpoints.load_tokenizer(
        checkpoints.local_tokenizer_dir(references.model, references.tokenizer),
        "--tokenizer" if options.tokenizer else "--model"), options.model)
    check_cuda(options.device)
  return {"decision": options.decision, **local_model_settings(options, references)}


class T5Scorer(LocalModelScorer):

  name = T5
  settings = dict(LOCAL_SETTINGS, decision="threshold")

  @staticmethod
  def _model():
    from autoais.models import t5_nli  # pylint: disable=import-outside-toplevel
    return t5_nli.T5NliModelHandler, t5_nli.describe_model

  def cache_identity(self, model_info: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The weights, and what changes a score computed from them: the
    tokenizer, the dtype, the input length (premise windows) and the decision
    mode. Not the device: CPU and GPU scores differ only in their last bits, as
    one device's do between batches."""
    return {"scorer": T5, "weights_sha256": model_info["weights_sha256"],
            "tokenizer_sha256": model_info["tokenizer_sha256"],
            "dtype": self._options["dtype"],
            "max_input_tokens": model_info["max_input_tokens"],
            "decision": self._options["decision"]}


def load_served(options, model_path: str, tokenizer_path: Optional[str]):
  """`autoais serve --scorer t5`: (the model loaded, its description)."""
  from autoais.models import t5_nli  # pylint: disable=import-outside-toplevel
  model = t5_nli.load_t5_nli(model_path, options.dtype, options.device,
                             options.max_input_tokens, options.token_budget,
                             tokenizer_path=tokenizer_path)
  return model, t5_nli.describe_model(model_path, options.max_input_tokens, tokenizer_path)


FAMILY = Family(T5, "a T5/mT5 NLI model given by --model",
                LOCAL_MODEL + (SCORE_CACHE, DECISION), check_flags, T5Scorer, load_served)
