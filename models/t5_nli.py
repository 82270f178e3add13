"""T5 / mT5 NLI attribution scorer (AutoAIS; SPEC 5.2), as a Beam ModelHandler.

    autoais evaluate ... --scorer t5 --model PATH [--dtype float32|bfloat16]
        [--device cpu|cuda] [--decision threshold|decode] [--threshold 0.5]

The model reads `premise: {premise} hypothesis: {hypothesis}` and was trained to
answer "1" (entailed) or "0". `nli_score` is P(first decoder token = "1")
renormalised over {"1", "0"}, from one encoder pass and one decoder step, in
batches formed by token budget over length-sorted examples (little padding).
The token ids of "1" and "0" are what the model's own tokenizer produces
(T5: the piece "▁1", id 209), resolved at load time, never assumed.

Decision modes: `threshold` (auto_ais = nli_score > threshold) and `decode`
(greedy generate, then decoded text == "1": the Attributed QA script's rule).

Inputs longer than the model's length are never cut in the hypothesis: the
premise is split into overlapping windows that each fit with the whole
hypothesis, every window is scored, and the row takes the best window (in
decode mode: "1" if any window decodes to "1") and is flagged.

Models load from a local directory or gs:// (copied once per worker to a local
cache), from safetensors only, without trust_remote_code; float16 is refused
(T5 activations overflow in float16).
"""
import fcntl
import hashlib
import json
import os
import tempfile
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.ml.inference.base import ModelHandler, PredictionResult

from models.errors import ModelError
from schemas import AttributionExample, AttributionScore

DTYPES = ("float32", "bfloat16")
DEVICES = ("cpu", "cuda")
DECISIONS = ("threshold", "decode")
SUPPORTED_MODEL_TYPES = ("t5", "mt5")
_PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")
_DEFAULT_MAX_INPUT_TOKENS = 512
# Padded tokens per model batch. On CPU, batches beyond a couple of thousand
# tokens fall out of cache and run slower (measured: bench/scoring.py); GPUs
# want large batches.
DEFAULT_TOKEN_BUDGET = {"cpu": 2048, "cuda": 16384}
_WINDOW_OVERLAP = 0.25
_MIN_WINDOW_TOKENS = 16


def check_dtype(dtype: str) -> None:
  if dtype == "float16":
    raise ModelError("--dtype float16 is refused: T5 activations overflow in float16 "
                     "(inf/NaN); use bfloat16 or float32")
  if dtype not in DTYPES:
    raise ModelError(f"--dtype {dtype!r}: choose from {', '.join(DTYPES)}")


def model_files(model_path: str) -> Dict[str, int]:
  """{file name: size} of a model directory (local or gs://), checked for use.

  Raises ModelError if the directory is missing, has no config.json, or holds
  only pickle checkpoints (which can run code when loaded).
  """
  pattern = FileSystems.join(model_path.rstrip("/"), "*")
  try:
    found = FileSystems.match([pattern])[0].metadata_list
  except Exception as error:  # pylint: disable=broad-except
    raise ModelError(f"--model {model_path}: cannot list the directory: {error}") from error
  files = {os.path.basename(m.path.rstrip("/")): m.size_in_bytes for m in found}
  if not files:
    raise ModelError(f"--model {model_path}: no such model directory (or it is empty)")
  if "config.json" not in files:
    raise ModelError(f"--model {model_path}: no config.json: not a transformers model "
                     "directory")
  if not any(name.endswith(".safetensors") for name in files):
    pickles = sorted(name for name in files if name.endswith(_PICKLE_SUFFIXES))
    if pickles:
      raise ModelError(
          f"--model {model_path}: only pickle checkpoints ({', '.join(pickles)}); "
          "loading them can run arbitrary code, so they are refused. Convert the "
          "weights to safetensors (model.save_pretrained(dir, "
          "safe_serialization=True)).")
    raise ModelError(f"--model {model_path}: no *.safetensors weights")
  return files


def _local_cache_root() -> str:
  return os.environ.get("AUTOAIS_MODEL_CACHE",
                        os.path.join(tempfile.gettempdir(), "autoais-models"))


def local_model_dir(model_path: str) -> str:
  """A local directory holding the model: the path itself, or a copy of a remote
  directory made once per machine (a file lock keeps worker processes from
  copying it twice; the copy is renamed into place when complete)."""
  if FileSystems.get_scheme(model_path) in (None, "file"):
    return model_path
  files = model_files(model_path)
  key = hashlib.sha256(model_path.rstrip("/").encode("utf-8")).hexdigest()[:24]
  target = os.path.join(_local_cache_root(), key)
  os.makedirs(_local_cache_root(), exist_ok=True)
  with open(target + ".lock", "w", encoding="utf-8") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    if not os.path.isdir(target):
      partial = tempfile.mkdtemp(dir=_local_cache_root(), prefix=key + ".partial-")
      for name in files:
        source = FileSystems.join(model_path.rstrip("/"), name)
        with FileSystems.open(source, compression_type=CompressionTypes.UNCOMPRESSED) as src, \
            open(os.path.join(partial, name), "wb") as dst:
          while True:
            chunk = src.read(16 * 1024 * 1024)
            if not chunk:
              break
            dst.write(chunk)
      os.rename(partial, target)
  return target


def weights_checksum(local_dir: str) -> str:
  """sha256 over the safetensors files (name order), cached beside them."""
  names = sorted(n for n in os.listdir(local_dir) if n.endswith(".safetensors"))
  stamp = ";".join(f"{n}:{os.path.getsize(os.path.join(local_dir, n))}:"
                   f"{os.path.getmtime(os.path.join(local_dir, n))}" for n in names)
  cache = os.path.join(local_dir, ".autoais-sha256.json")
  try:
    with open(cache, encoding="utf-8") as f:
      cached = json.load(f)
    if cached.get("stamp") == stamp:
      return cached["sha256"]
  except (OSError, ValueError):
    pass
  digest = hashlib.sha256()
  for name in names:
    digest.update(name.encode("utf-8") + b"\0")
    with open(os.path.join(local_dir, name), "rb") as f:
      for chunk in iter(lambda: f.read(16 * 1024 * 1024), b""):
        digest.update(chunk)
  checksum = digest.hexdigest()
  try:
    with open(cache, "w", encoding="utf-8") as f:
      json.dump({"stamp": stamp, "sha256": checksum}, f)
  except OSError:
    pass  # a read-only model directory: recompute next time
  return checksum


def load_tokenizer(local_dir: str):
  from transformers import AutoTokenizer  # pylint: disable=import-outside-toplevel
  tokenizer = AutoTokenizer.from_pretrained(local_dir, use_fast=True,
                                            trust_remote_code=False)
  if not tokenizer.is_fast:
    raise ModelError(f"{local_dir}: needs a fast tokenizer (tokenizer.json) for "
                     "premise windows")
  return tokenizer


def label_token_ids(tokenizer, model_path: str) -> Tuple[int, int]:
  """The ids the tokenizer gives "1" and "0": each must be one known piece."""
  ids = []
  for label in ("1", "0"):
    encoded = tokenizer(label, add_special_tokens=False)["input_ids"]
    if len(encoded) != 1 or encoded[0] == tokenizer.unk_token_id:
      pieces = tokenizer.convert_ids_to_tokens(encoded)
      raise ModelError(
          f"--model {model_path}: its tokenizer has no single piece for {label!r} "
          f"(it gives {pieces}); an NLI model must answer with the pieces of "
          "'1' and '0'")
    ids.append(encoded[0])
  return ids[0], ids[1]


def _weight(linear):
  """A linear layer's weight matrix, dequantised for int8 dynamic layers."""
  weight = linear.weight
  return weight().dequantize() if callable(weight) else weight


class EncodedExample(NamedTuple):
  windows: List[List[int]]  # input ids of each window, EOS included
  truncated: bool  # the premise had to be windowed


class T5NliModel:
  """A loaded NLI model: tokenisation with premise windows, batched scoring."""

  def __init__(self, model, tokenizer, model_path: str, device: str,
               max_input_tokens: int, token_budget: int):
    import torch  # pylint: disable=import-outside-toplevel
    self._torch = torch
    self.model = model
    self.tokenizer = tokenizer
    self.device = device
    self.max_input_tokens = max_input_tokens
    self.token_budget = token_budget
    self.one_id, self.zero_id = label_token_ids(tokenizer, model_path)
    self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    self.decoder_start_id = model.config.decoder_start_token_id

  # -- tokenisation ---------------------------------------------------------

  def _ids(self, text: str) -> List[int]:
    # verbose=False: over-long inputs are expected here; they get windowed.
    return self.tokenizer(text, verbose=False)["input_ids"]

  def encode(self, example: AttributionExample) -> EncodedExample:
    ids = self._ids(f"premise: {example.premise} hypothesis: {example.hypothesis}")
    if len(ids) <= self.max_input_tokens:
      return EncodedExample([ids], False)
    premise = example.premise
    offsets = self.tokenizer(premise, add_special_tokens=False, verbose=False,
                             return_offsets_mapping=True)["offset_mapping"]
    if not offsets:  # the hypothesis alone is too long: run it whole, flagged
      return EncodedExample([ids], True)
    fixed = len(self._ids(f"premise:  hypothesis: {example.hypothesis}"))
    size = max(_MIN_WINDOW_TOKENS, self.max_input_tokens - fixed - 2)
    stride = max(1, int(size * (1 - _WINDOW_OVERLAP)))
    windows = []
    start = 0
    while True:
      end = min(start + size, len(offsets))
      while True:
        text = premise[offsets[start][0]:offsets[end - 1][1]]
        window = self._ids(f"premise: {text} hypothesis: {example.hypothesis}")
        # Re-tokenising at the cut can add a piece or two: shrink until it fits.
        if len(window) <= self.max_input_tokens or end - start <= _MIN_WINDOW_TOKENS:
          break
        end -= 1
      windows.append(window)
      if end >= len(offsets):
        break
      start = min(start + stride, end)
    return EncodedExample(windows, True)

  # -- scoring --------------------------------------------------------------

  def _batches(self, sequences: Sequence[List[int]]):
    """Index lists of length-sorted sequences, each within the token budget."""
    order = sorted(range(len(sequences)), key=lambda i: (len(sequences[i]), i))
    batch, longest = [], 0
    for index in order:
      length = len(sequences[index])
      if batch and (len(batch) + 1) * max(longest, length) > self.token_budget:
        yield batch
        batch, longest = [], 0
      batch.append(index)
      longest = max(longest, length)
    if batch:
      yield batch

  def _pad(self, sequences: Sequence[List[int]]):
    torch = self._torch
    longest = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), longest), self.pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), longest), dtype=torch.long)
    for row, sequence in enumerate(sequences):
      ids[row, :len(sequence)] = torch.tensor(sequence, dtype=torch.long)
      mask[row, :len(sequence)] = 1
    return ids.to(self.device), mask.to(self.device)

  def label_logits(self, ids, mask):
    """Logits of "1" and "0" at the first decoder step: [batch, 2].

    The encoder runs as the model defines it. The one decoder step is written
    out so that it does only what one step needs: self-attention over the lone
    start token is V then O (softmax over one key is 1); cross-attention folds
    the key and value projections into the query and the weighted sum, so the
    encoder states are never projected (that would cost 2 d^2 per token and
    layer, about a sixth of the encoder); and only the two label rows of the
    output layer are computed. The arithmetic is the model's, reordered.
    """
    torch = self._torch
    model = self.model
    encoded = model.get_encoder()(input_ids=ids, attention_mask=mask).last_hidden_state
    decoder = model.get_decoder()
    batch = ids.shape[0]
    start = torch.full((batch, 1), self.decoder_start_id, dtype=torch.long,
                       device=ids.device)
    hidden = decoder.embed_tokens(start)
    blocked = (mask == 0)[:, None, :]
    for block in decoder.block:
      self_attention, cross_attention, feed_forward = block.layer
      attention = self_attention.SelfAttention
      hidden = hidden + attention.o(attention.v(self_attention.layer_norm(hidden)))
      attention = cross_attention.EncDecAttention
      heads, width = attention.n_heads, attention.key_value_proj_dim
      query = attention.q(cross_attention.layer_norm(hidden)).view(batch, heads, width)
      keys = _weight(attention.k).view(heads, width, -1)
      scores = torch.einsum("bhd,bld->bhl", torch.einsum("bhk,hkd->bhd", query, keys),
                            encoded) * attention.scaling
      scores = scores.masked_fill(blocked, torch.finfo(scores.dtype).min)
      weights = torch.softmax(scores.float(), dim=-1).type_as(scores)
      context = torch.einsum("bhl,bld->bhd", weights, encoded)
      values = torch.einsum("bhd,hkd->bhk", context,
                            _weight(attention.v).view(heads, width, -1))
      hidden = hidden + attention.o(values.reshape(batch, 1, heads * width))
      hidden = feed_forward(hidden)
    hidden = decoder.final_layer_norm(hidden)[:, 0, :]
    if getattr(model.config, "scale_decoder_outputs", model.config.tie_word_embeddings):
      hidden = hidden * (model.model_dim ** -0.5)
    rows = _weight(model.lm_head)[[self.one_id, self.zero_id]]
    return hidden @ rows.T

  def probabilities(self, sequences: Sequence[List[int]]) -> np.ndarray:
    """P("1") renormalised over {"1", "0"} at the first decoder step, per sequence."""
    torch = self._torch
    result = np.empty(len(sequences), dtype=np.float64)
    with torch.inference_mode():
      for batch in self._batches(sequences):
        ids, mask = self._pad([sequences[i] for i in batch])
        pair = self.label_logits(ids, mask).float()
        result[batch] = torch.softmax(pair, dim=-1)[:, 0].cpu().numpy()
    return result

  def decode_is_one(self, sequences: Sequence[List[int]]) -> np.ndarray:
    """Greedy generation with the model's generation defaults, decoded == "1"."""
    torch = self._torch
    result = np.zeros(len(sequences), dtype=bool)
    with torch.inference_mode():
      for batch in self._batches(sequences):
        ids, mask = self._pad([sequences[i] for i in batch])
        outputs = self.model.generate(input_ids=ids, attention_mask=mask,
                                      do_sample=False, num_beams=1)
        texts = self.tokenizer.batch_decode(outputs, skip_special_tokens=True)
        result[batch] = [text == "1" for text in texts]
    return result

  def score(self, examples: Sequence[AttributionExample], decision: str,
            threshold: float) -> List[AttributionScore]:
    encoded = [self.encode(example) for example in examples]
    sequences = [window for item in encoded for window in item.windows]
    probabilities = self.probabilities(sequences)
    decoded = self.decode_is_one(sequences) if decision == "decode" else None
    scores, position = [], 0
    for item in encoded:
      count = len(item.windows)
      score = float(probabilities[position:position + count].max())
      if decoded is None:
        attributable = score > threshold
      else:
        attributable = bool(decoded[position:position + count].any())
      scores.append(AttributionScore(score, attributable, count, item.truncated))
      position += count
    return scores


def resolve_max_input_tokens(tokenizer, requested: Optional[int]) -> int:
  if requested:
    return requested
  length = getattr(tokenizer, "model_max_length", None)
  if isinstance(length, int) and 0 < length <= 100000:
    return length
  return _DEFAULT_MAX_INPUT_TOKENS


def load_t5_nli(model_path: str, dtype: str = "float32", device: str = "cpu",
                max_input_tokens: Optional[int] = None,
                token_budget: Optional[int] = None) -> T5NliModel:
  """Loads a T5/mT5 NLI model for scoring (see the module docstring)."""
  import torch  # pylint: disable=import-outside-toplevel
  from transformers import AutoConfig, AutoModelForSeq2SeqLM  # pylint: disable=import-outside-toplevel
  check_dtype(dtype)
  if device not in DEVICES:
    raise ModelError(f"--device {device!r}: choose from {', '.join(DEVICES)}")
  if device == "cuda" and not torch.cuda.is_available():
    raise ModelError("--device cuda: no CUDA device is available on this worker")
  model_files(model_path)
  local_dir = local_model_dir(model_path)
  config = AutoConfig.from_pretrained(local_dir, trust_remote_code=False)
  if config.model_type not in SUPPORTED_MODEL_TYPES:
    raise ModelError(f"--model {model_path}: model type {config.model_type!r} is not "
                     f"one of {', '.join(SUPPORTED_MODEL_TYPES)}")
  tokenizer = load_tokenizer(local_dir)
  model = AutoModelForSeq2SeqLM.from_pretrained(
      local_dir, use_safetensors=True, trust_remote_code=False,
      dtype=getattr(torch, dtype))
  model.to(device)
  model.eval()
  return T5NliModel(model, tokenizer, model_path, device,
                    resolve_max_input_tokens(tokenizer, max_input_tokens),
                    token_budget or DEFAULT_TOKEN_BUDGET[device])


class T5NliModelHandler(ModelHandler[AttributionExample, PredictionResult, T5NliModel]):
  """RunInference handler: the model loads once per worker (once per machine
  with `large_model`, shared across processes), batches are split by token
  budget inside run_inference."""

  def __init__(self, model_path: str, *, dtype: str = "float32", device: str = "cpu",
               decision: str = "threshold", threshold: float = 0.5,
               max_input_tokens: Optional[int] = None,
               token_budget: Optional[int] = None, max_batch_size: int = 512,
               large_model: bool = False, torch_threads: int = 0):
    super().__init__()
    check_dtype(dtype)
    if decision not in DECISIONS:
      raise ModelError(f"--decision {decision!r}: choose from {', '.join(DECISIONS)}")
    self._model_path = model_path
    self._dtype = dtype
    self._device = device
    self._decision = decision
    self._threshold = threshold
    self._max_input_tokens = max_input_tokens
    self._token_budget = token_budget
    self._max_batch_size = max_batch_size
    self._large_model = large_model
    self._torch_threads = torch_threads

  def load_model(self) -> T5NliModel:
    if self._torch_threads:
      import torch  # pylint: disable=import-outside-toplevel
      # Per process: several processes of one machine each running a model on
      # every core slow each other down.
      torch.set_num_threads(self._torch_threads)
    return load_t5_nli(self._model_path, self._dtype, self._device,
                       self._max_input_tokens, self._token_budget)

  def run_inference(self, batch: Sequence[AttributionExample], model: T5NliModel,
                    inference_args: Optional[Dict[str, Any]] = None):
    scores = model.score(batch, self._decision, self._threshold)
    return [PredictionResult(example, score, self._model_path)
            for example, score in zip(batch, scores)]

  def get_num_bytes(self, batch: Sequence[AttributionExample]) -> int:
    return sum(len(example.premise) + len(example.hypothesis) for example in batch)

  def batch_elements_kwargs(self):
    return {"min_batch_size": 1, "max_batch_size": self._max_batch_size}

  def share_model_across_processes(self) -> bool:
    return self._large_model

  def get_metrics_namespace(self) -> str:
    return "autoais_t5_nli"


def describe_model(model_path: str, max_input_tokens: Optional[int]) -> Dict[str, Any]:
  """What run.json records of a model, read on a worker: the label token ids of
  its tokenizer and a checksum of its weights (without loading the weights)."""
  local_dir = local_model_dir(model_path)
  tokenizer = load_tokenizer(local_dir)
  one_id, zero_id = label_token_ids(tokenizer, model_path)
  with open(os.path.join(local_dir, "config.json"), encoding="utf-8") as f:
    config = json.load(f)
  return {
      "model_type": config.get("model_type"),
      "weights_sha256": weights_checksum(local_dir),
      "one_token_id": one_id,
      "zero_token_id": zero_id,
      "one_token": tokenizer.convert_ids_to_tokens(one_id),
      "zero_token": tokenizer.convert_ids_to_tokens(zero_id),
      "max_input_tokens": resolve_max_input_tokens(tokenizer, max_input_tokens),
  }
