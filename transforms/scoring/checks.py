"""The checks of scorer flags that several families share, at launch and
cheaply (listing and small files only: models load on the workers): a model's
--model/--tokenizer pinned where they are hub ids, a local model's device,
token budget, threads and dtype, a hosted one's URL and retries, the
score-cache directory. Each family's module calls those it needs from its
check_flags."""
import math
import os
import urllib.parse
from typing import Any, Callable, Dict

from apache_beam.io.filesystems import FileSystems

from autoais.models import hub
from autoais.schemas.errors import ConfigError, require, require_choice


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
  check_model_sizes(options)
  if options.torch_threads < 0:
    raise ConfigError(f"--torch_threads must be 0 (torch's default) or more, got "
                      f"{options.torch_threads}")
  return references


def check_model_sizes(options) -> None:
  """--max_input_tokens and --token_budget, where given, are positive (jobs
  and `autoais serve`): a loader reads 0 as its default, which would leave the
  value given unused, and a negative input length would cut every input."""
  for name in ("max_input_tokens", "token_budget"):
    value = getattr(options, name, None)
    if value is not None and value < 1:
      raise ConfigError(f"--{name} must be positive, got {value}")


def check_threshold_model(options, local_run: bool,
                          check_checkpoint: Callable[[ModelReferences], Any]) -> ModelReferences:
  """What nli-classifier and minicheck check: check_local_model, the dtype,
  then their checkpoint (`check_checkpoint`: listing
  and config.json only, also on gs:// and the hub; nothing loaded) and, on a
  local run, CUDA where it is asked for."""
  from autoais.models.token_budget import check_dtype  # pylint: disable=import-outside-toplevel
  references = check_local_model(options)
  check_dtype(options.dtype)
  check_checkpoint(references)
  if local_run:
    check_cuda(options.device)
  return references


# The settings every family of a model run in the job's workers takes besides
# its threshold, threads and sharing, as the handler's `load` takes them, with
# their defaults (scorer.LocalModelScorer's table).
LOCAL_SETTINGS = {"dtype": "float32", "device": "cpu", "max_input_tokens": None,
                  "token_budget": None, "tokenizer_path": None}
# Those of a family whose input length is its own (hhem, factcg): a length
# given would be ignored, and --max_input_tokens is refused instead.
OWN_LENGTH_SETTINGS = {name: value for name, value in LOCAL_SETTINGS.items()
                       if name != "max_input_tokens"}


def local_model_settings(options, references: ModelReferences) -> Dict[str, Any]:
  """The settings every scorer of a model run in the workers takes: those of
  LOCAL_SETTINGS (the tokenizer as the workers load it), its threads and
  sharing, the score cache and the hub revisions asked for."""
  return {"model_path": references.model,
          **{name: getattr(options, name) for name in LOCAL_SETTINGS
             if name != "tokenizer_path"},
          "tokenizer_path": references.tokenizer, "large_model": options.large_model,
          "torch_threads": options.torch_threads, "score_cache": options.score_cache,
          "revisions": references.revisions}


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


# A day: past ~9e9 s the standard library's socket and thread timeouts overflow.
MAX_REQUEST_TIMEOUT = 86400.0


def check_retries(options) -> None:
  """--request_timeout in (0, a day], --retry_backoff a finite number of
  seconds, --max_retries not negative (NaN compares false to every bound, and
  was taken: a backoff of NaN waited the longest)."""
  if not (0 < options.request_timeout <= MAX_REQUEST_TIMEOUT
          and 0 <= options.retry_backoff < math.inf) or options.max_retries < 0:
    raise ConfigError(f"--request_timeout must be positive and at most "
                      f"{MAX_REQUEST_TIMEOUT:g} s, --retry_backoff a number of seconds "
                      "not negative, --max_retries not negative")


def check_cache_dir(path: str) -> None:
  if FileSystems.get_scheme(path) in (None, "file"):
    local = path.removeprefix("file://")
    if os.path.exists(local) and not os.path.isdir(local):
      raise ConfigError(f"--score_cache {path}: is a file, not a directory")
