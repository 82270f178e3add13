"""What the local model families (models/t5_nli.py, models/nli_classifier.py,
models/minicheck.py, ...) share: the dtype and device checks, their weights
loaded one way (load_weights), the model input length, TokenBudgetModel (a
torch model and its locked tokenizer on a device, sequences batched by padded
tokens) and LocalModelHandler, the base of their RunInference handlers (one
model per worker, or per machine with `--large_model`; `--torch_threads`).
"""
import collections
import contextlib
import hashlib
import itertools
import threading
import weakref
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
from apache_beam.ml.inference.base import ModelHandler, PredictionResult

from autoais.models import simulated_device
from autoais.models.checkpoints import LockedTokenizer
from autoais.schemas import LOCAL_FAILURE, AttributionExample, AttributionScore, ScoringFailure
from autoais.schemas.errors import ModelError

DTYPES = ("float32", "bfloat16")
DEVICES = ("cpu", "cuda")
_DEFAULT_MAX_INPUT_TOKENS = 512
# Padded tokens per model batch. On CPU, batches beyond a couple of thousand
# tokens fall out of cache and run slower (measured: bench/scoring.py); GPUs
# want large batches.
DEFAULT_TOKEN_BUDGET = {"cpu": 2048, "cuda": 16384}



def attention_kwargs(dtype: str, device: str) -> Dict[str, str]:
  """from_pretrained's attention choice: transformers' default (SDPA) except
  for bfloat16 on a CPU whose torch kernels run below AVX-512. There torch
  2.13's bfloat16 SDPA packs its operands for AMX whenever the chip has AMX,
  a path only built into its AVX-512 kernels, and fails ("pack_vnni2 is only
  supported when avx512 is supported") once a sequence passes ~64 tokens:
  on an AMX Xeon run with ATEN_CPU_CAPABILITY=avx2 or default. The eager
  attention computes the same softmax(QK^T)V without that kernel."""
  import torch  # pylint: disable=import-outside-toplevel
  if (dtype == "bfloat16" and device == "cpu"
      and not torch.backends.cpu.get_cpu_capability().startswith("AVX512")):
    return {"attn_implementation": "eager"}
  return {}


def load_weights(model_class, local_dir: str, dtype: str, device: str, *,
                 takes_simulated_device: bool = False, **kwargs):
  """`model_class.from_pretrained(local_dir)` as every local family loads its
  weights: safetensors only, never remote code, each tensor cast to `dtype`
  as it is read from the memory-mapped files (float32 weights load into
  bfloat16 without a float32 copy: bench/model_load.py), attention as
  attention_kwargs chooses; moved to `device`, in eval mode. `kwargs` go to
  from_pretrained (with output_loading_info: (model, loading info)).

  A directory holding the simulated device's marker is refused unless the
  family `takes_simulated_device` (it attaches simulated_device.simulated to
  the loaded model): a family that does not would load the real model and
  leave the marker unused."""
  import torch  # pylint: disable=import-outside-toplevel
  if not takes_simulated_device and simulated_device.read_marker(local_dir) is not None:
    raise ModelError(f"--model {local_dir}: it holds {simulated_device.MARKER} (a "
                     "simulated device), which this scorer cannot use: the simulated "
                     "device answers one score per input, and this model's outputs are "
                     "read otherwise")
  loaded = model_class.from_pretrained(local_dir, use_safetensors=True,
                                       trust_remote_code=False, dtype=getattr(torch, dtype),
                                       **attention_kwargs(dtype, device), **kwargs)
  (loaded[0] if isinstance(loaded, tuple) else loaded).to(device).eval()
  return loaded


def check_device(device: str) -> None:
  """On the worker, before loading: a known device, and CUDA where it is asked for."""
  import torch  # pylint: disable=import-outside-toplevel
  if device not in DEVICES:
    raise ModelError(f"--device {device!r}: choose from {', '.join(DEVICES)}")
  if device == "cuda" and not torch.cuda.is_available():
    raise ModelError("--device cuda: no CUDA device is available on this worker")



def check_dtype(dtype: str, float16_refused: Optional[str] = None) -> None:
  """One of DTYPES; a family whose activations overflow in float16 refuses it
  by name, with `float16_refused` as the message."""
  if dtype == "float16" and float16_refused:
    raise ModelError(float16_refused)
  if dtype not in DTYPES:
    raise ModelError(f"--dtype {dtype!r}: choose from {', '.join(DTYPES)}")


def resolve_max_input_tokens(tokenizer, requested: Optional[int]) -> int:
  if requested:
    return requested
  length = getattr(tokenizer, "model_max_length", None)
  if isinstance(length, int) and 0 < length <= 100000:
    return length
  return _DEFAULT_MAX_INPUT_TOKENS



def position_table(model) -> Optional[Tuple[str, int]]:
  """(name, longest input) of the learned table of absolute positions in a
  torch model, or None where it has none (T5's relative buckets, DeBERTa-v3's
  relative attention, rotary positions: these take any length). An input past
  the table fails inside the model, on the worker ("index 66 is out of
  bounds"). RoBERTa-style tables count from the padding index plus one,
  BART-style ones from their `offset`."""
  named_modules = getattr(model, "named_modules", None)
  tables = []
  for name, module in (named_modules() if named_modules is not None else ()):
    if name.endswith(("position_embeddings", "embed_positions")) and hasattr(
        module, "num_embeddings"):
      start = getattr(module, "offset", 0) or 0
      if getattr(module, "padding_idx", None) is not None:
        start += module.padding_idx + 1
      tables.append((module.num_embeddings - start, name))
  if not tables:
    return None
  longest, name = min(tables)
  return name, longest


def token_batches(lengths: Sequence[int], budget: int):
  """Index lists of the sequences of `lengths`, sorted by length, each within
  `budget` tokens once padded to its longest (a longer sequence alone)."""
  order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
  batch, longest = [], 0
  for index in order:
    length = lengths[index]
    if batch and (len(batch) + 1) * max(longest, length) > budget:
      yield batch
      batch, longest = [], 0
    batch.append(index)
    longest = max(longest, length)
  if batch:
    yield batch


def padded(sequences: Sequence[List[int]], pad_id: int) -> Tuple[np.ndarray, np.ndarray]:
  """(ids, attention mask) int64 arrays of `sequences` padded on the right
  with `pad_id`. Built in numpy in one pass over the batch's tokens, not a
  small tensor per sequence: the same tensors at a fraction of the
  per-sequence cost."""
  lengths = np.fromiter((len(s) for s in sequences), dtype=np.int64, count=len(sequences))
  mask = np.arange(int(lengths.max()), dtype=np.int64)[None, :] < lengths[:, None]
  ids = np.full(mask.shape, pad_id, dtype=np.int64)
  # Row-major order of the mask's True cells is the sequences' order, token by token.
  ids[mask] = np.fromiter(itertools.chain.from_iterable(sequences), dtype=np.int64,
                          count=int(lengths.sum()))
  return ids, mask.astype(np.int64)


class TokenBudgetModel:
  """What the loaded models of every family share (T5NliModel here,
  NliClassifierModel in models/nli_classifier.py): the torch model and its
  tokenizer on `device`, the model input length, and batches of sequences
  sorted by length, each within `token_budget` tokens once padded."""

  def __init__(self, model, tokenizer, device: str, max_input_tokens: int,
               token_budget: int):
    import torch  # pylint: disable=import-outside-toplevel
    self._torch = torch
    self.model = model
    self.tokenizer = (tokenizer if isinstance(tokenizer, LockedTokenizer)
                      else LockedTokenizer(tokenizer))
    self.device = device
    self.max_input_tokens = max_input_tokens
    self.token_budget = token_budget
    self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    table = position_table(model)
    if table is not None and max_input_tokens > table[1]:
      raise ModelError(
          f"--max_input_tokens: inputs of up to {max_input_tokens} tokens (the flag, else "
          f"the family's or the tokenizer's length), but the model's position table "
          f"({table[0]}) takes at most {table[1]}; give --max_input_tokens {table[1]} "
          "or less")
    # A SimulatedDevice (models/simulated_device.py) that answers the padded
    # batches in place of the torch model, where the model directory asks.
    self.simulated_device = None
    # One batch on a GPU at a time, whichever thread sends it: the token
    # budget sizes a batch's activations for the card's memory, and threads
    # overlapping their host work (transforms/scoring/fanout.py) would
    # otherwise put two there at once. A CPU model runs unlocked, as before.
    self.device_turn = threading.Lock() if device == "cuda" else contextlib.nullcontext()

  def accelerated(self) -> bool:
    """Whether batches go to an accelerator (a GPU, or a simulated one) that
    waits while the host prepares the next: where overlapping host and device
    work pays. A method, not an attribute: a model shared across processes
    (`--large_model`) is reached through a proxy that forwards calls only."""
    return self.device != "cpu" or self.simulated_device is not None

  def _batches(self, lengths: Sequence[int]):
    return token_batches(lengths, self.token_budget)

  @staticmethod
  def window_scores(encoded: Sequence[Any], probabilities: np.ndarray, threshold: float,
                    decoded: Optional[np.ndarray] = None
                    ) -> List[Union[AttributionScore, ScoringFailure]]:
    """One AttributionScore per encoded example (its `windows`, `truncated`),
    from the probabilities of all their windows in order: the best window's
    score; attributable above `threshold`, or where a window decoded "1". An
    example without windows is a ScoringFailure (its `failure` says why)."""
    scores, position = [], 0
    for item in encoded:
      count = len(item.windows)
      if not count:
        scores.append(ScoringFailure(LOCAL_FAILURE, item.failure))
        continue
      score = float(probabilities[position:position + count].max())
      if decoded is None:
        attributable = score > threshold
      else:
        attributable = bool(decoded[position:position + count].any())
      scores.append(AttributionScore(score, attributable, count, item.truncated))
      position += count
    return scores

  def _pad(self, sequences: Sequence[List[int]], pad_id: Optional[int] = None):
    """padded() `sequences` as tensors on the model's device, with `pad_id`
    (the tokenizer's by default)."""
    torch = self._torch
    ids, mask = padded(sequences, self.pad_id if pad_id is None else pad_id)
    return torch.from_numpy(ids).to(self.device), torch.from_numpy(mask).to(self.device)



class TextCache:
  """What a model found of recent texts (a premise's ids, a document line's
  sentences and their sizes, a document's chunks), at most `max_chars`
  characters of texts in all, the least recently used dropped first; shared
  by a worker's threads (one lock). It counts one unit, the characters of the
  texts kept: what is kept of a text grows with the text. Chunks are cut by pair digest, so a text that many
  pairs share reaches many calls of a run."""

  def __init__(self, max_chars: int):
    self._entries: "collections.OrderedDict[str, Any]" = collections.OrderedDict()
    self._chars = 0
    self._max_chars = max_chars
    self._lock = threading.Lock()

  def found(self, texts: Sequence[str]) -> Tuple[Dict[str, Any], List[str]]:
    """({text: its value} of the distinct `texts` kept, the distinct texts
    not kept, in order)."""
    kept: Dict[str, Any] = {}
    missing: List[str] = []
    with self._lock:
      for text in dict.fromkeys(texts):
        if text in self._entries:
          self._entries.move_to_end(text)
          kept[text] = self._entries[text]
        else:
          missing.append(text)
    return kept, missing

  def put(self, text: str, value: Any) -> None:
    if len(text) > self._max_chars:
      return
    with self._lock:
      if text not in self._entries:
        self._entries[text] = value
        self._chars += len(text)
      while self._chars > self._max_chars:
        dropped, _ = self._entries.popitem(last=False)
        self._chars -= len(dropped)


# Models loaded in this process, by handler type, path and settings; an entry
# goes when no handler holds its model any more.
_LOADED: "weakref.WeakValueDictionary[tuple, Any]" = weakref.WeakValueDictionary()
_LOADING = threading.Lock()


class LocalModelHandler(ModelHandler[AttributionExample, PredictionResult, Any]):
  """What the RunInference handlers of models run in the job's workers share
  (t5, nli-classifier, minicheck): the model loads once per worker (once per
  machine with `large_model`, shared across processes), batches of examples
  are split by token budget inside the model's `score`, and `torch_threads`
  sets each process's threads. A subclass gives its family's loader
  (`load`, called with the model path and the `settings` the handler was
  made with: all the loaded model depends on besides the handler's type and
  path) and, where it differs, how a batch is scored (_score)."""

  metrics_namespace = "autoais_model"
  load: Any = None  # the family's load function, a staticmethod
  # The family's refusal of --dtype float16 (check_dtype), where it overflows.
  float16_refused: Optional[str] = None

  def __init__(self, model_path: str, *, threshold: float = 0.5, max_batch_size: int = 512,
               large_model: bool = False, torch_threads: int = 0, **settings):
    """`settings` are the keyword arguments of the family's `load` (dtype,
    device, max_input_tokens, token_budget, tokenizer_path and the family's
    own); the dtype is checked here, before any worker loads."""
    super().__init__()
    check_dtype(settings.get("dtype", DTYPES[0]), self.float16_refused)
    self._model_path = model_path
    self._threshold = threshold
    self._max_batch_size = max_batch_size
    self._large_model = large_model
    self._torch_threads = torch_threads
    self._settings = settings

  def _key(self) -> tuple:
    return (self._model_path,) + tuple(sorted(self._settings.items()))

  def load_model(self) -> Any:
    """The model, loaded once per process for the same type, path and
    settings while a handler still holds it: each RunInference of a job
    (citations asks in three rounds, each its own) loads its model on its
    own, and would otherwise hold a copy of the same weights per round, in
    memory (on a GPU too) and in loading time. Beam shares a model between
    RunInference steps only across processes (model_identifier, below);
    docs/architecture.md says why this registry stays for the rest."""
    self._set_threads()
    key = (type(self),) + self._key()
    with _LOADING:
      model = _LOADED.get(key)
      if model is None:
        model = self.load(self._model_path, **self._settings)
        _LOADED[key] = model
    return model

  def model_identifier(self) -> str:
    """RunInference's model_identifier: the same for handlers of the same
    type, path and settings, so that with `large_model` (a model shared
    across a machine's processes) every RunInference step of a job uses one
    shared copy, not one each."""
    key = repr((type(self).__qualname__,) + self._key())
    return "autoais-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]

  def _set_threads(self) -> None:
    if self._torch_threads:
      import torch  # pylint: disable=import-outside-toplevel
      # Per process: several processes of one machine each running a model on
      # every core slow each other down.
      torch.set_num_threads(self._torch_threads)

  def _score(self, batch: Sequence[AttributionExample], model) -> List[AttributionScore]:
    return model.score(batch, self._threshold)

  def chunks_in_flight(self, model) -> int:
    """How many of a call's chunks (transforms/scoring/fanout.py) may be under
    way at once: two where the model runs on an accelerator (one chunk's
    batches on the device while the next is tokenised and padded beside
    them), one on a CPU, whose cores are the device."""
    return 2 if model.accelerated() else 1

  def run_inference(self, batch: Sequence[AttributionExample], model,
                    inference_args: Optional[Dict[str, Any]] = None):
    scores = self._score(batch, model)
    return [PredictionResult(example, score, self._model_path)
            for example, score in zip(batch, scores)]

  def get_num_bytes(self, batch: Sequence[AttributionExample]) -> int:
    return sum(len(example.premise) + len(example.hypothesis) for example in batch)

  def batch_elements_kwargs(self):
    return {"min_batch_size": 1, "max_batch_size": self._max_batch_size}

  def share_model_across_processes(self) -> bool:
    return self._large_model

  def get_metrics_namespace(self) -> str:
    return self.metrics_namespace

