"""T5 / mT5 NLI attribution scorer (AutoAIS; SPEC 5.2), as a Beam ModelHandler.

    autoais evaluate ... --scorer t5 --model PATH [--tokenizer PATH]
        [--dtype float32|bfloat16] [--device cpu|cuda]
        [--decision threshold|decode] [--threshold 0.5]

The model reads `premise: {premise} hypothesis: {hypothesis}` and was trained to
answer "1" (entailed) or "0". `nli_score` is P(first label piece of "1")
renormalised over the first pieces of "1" and "0", from one encoder pass and one
decoder step, in batches formed by token budget over length-sorted examples
(little padding). The label pieces are the *first* piece of the tokenizer's
encoding of each label, resolved at load time, never assumed: T5's vocabulary
has `▁1` (id 209) but no `▁0`, so "0" is `▁` (id 3) then `0` (id 632) and the
pair is (209, 3), as MiniCheck's Flan-T5 code reads it.

Decision modes: `threshold` (auto_ais = nli_score > threshold; premises past
the model's length are windowed, see below) and `decode` (the Attributed QA
script's rule, for parity: the whole input however long, `generate()` with the
model's own generation config, decoded text == "1").

Tokenisation is batched: the inputs of a chunk in one tokenizer call, and
where the tokenizer splits at whitespace (T5's and mT5's, as transformers
builds them from spiece.model) a premise is tokenised once while its pieces
are in the worker's cache of recent premises (_PieceCache) and joined to each
hypothesis' pieces: the same ids as the whole input
(tests/unit/scoring/test_t5_scorer.py).

In threshold mode, inputs longer than the model's length are never cut in the
hypothesis: the premise is split into overlapping windows that each fit with
the whole hypothesis, every window is scored, and the row takes the best window
and is flagged.

Checkpoints load as they are published: `model.safetensors`, or shards named by
`model.safetensors.index.json` (every shard must be present); the tokenizer
from `tokenizer.json`, or from `spiece.model` + `tokenizer_config.json` alone
(transformers builds the fast tokenizer from it, once per worker), or from
another directory (`--tokenizer`). Local directories or gs:// (copied once per
machine to a local cache); safetensors only, without trust_remote_code;
float16 is refused (T5 activations overflow in float16). Weights stored in
float32 load into `--dtype bfloat16` tensor by tensor from the memory-mapped
files: no float32 copy of the model is held (bench/model_load.py measures it).
"""
import array
import collections
import fcntl
import functools
import hashlib
import itertools
import json
import os
import tempfile
import threading
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.ml.inference.base import ModelHandler, PredictionResult

from autoais.models import hub
from autoais.schemas import AttributionExample, AttributionScore
from autoais.schemas.errors import ModelError

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


def check_device(device: str) -> None:
  """On the worker, before loading: a known device, and CUDA where it is asked for."""
  import torch  # pylint: disable=import-outside-toplevel
  if device not in DEVICES:
    raise ModelError(f"--device {device!r}: choose from {', '.join(DEVICES)}")
  if device == "cuda" and not torch.cuda.is_available():
    raise ModelError("--device cuda: no CUDA device is available on this worker")


def check_dtype(dtype: str) -> None:
  if dtype == "float16":
    raise ModelError("--dtype float16 is refused: T5 activations overflow in float16 "
                     "(inf/NaN); use bfloat16 or float32")
  if dtype not in DTYPES:
    raise ModelError(f"--dtype {dtype!r}: choose from {', '.join(DTYPES)}")


SINGLE_WEIGHTS = "model.safetensors"
WEIGHTS_INDEX = "model.safetensors.index.json"
# A tokenizer directory holds one of these; transformers builds the fast
# tokenizer from the SentencePiece model where tokenizer.json is absent.
TOKENIZER_FILES = ("tokenizer.json", "spiece.model")


def _match_dir(path: str, flag: str):
  """The FileMetadata of a directory's files, local or gs://."""
  pattern = FileSystems.join(path.rstrip("/"), "*")
  try:
    return FileSystems.match([pattern])[0].metadata_list
  except Exception as error:  # pylint: disable=broad-except
    raise ModelError(f"{flag} {path}: cannot list the directory: {error}") from error


def _list_dir(path: str, flag: str) -> Dict[str, int]:
  """{file name: size} of a directory, local or gs://, or of a hub model's
  commit (models/hub.py)."""
  model = hub.pinned(path)
  if model is not None:
    return hub.list_files(model, flag)
  return {os.path.basename(m.path.rstrip("/")): m.size_in_bytes
          for m in _match_dir(path, flag)}


def _file_in(directory: str, name: str, flag: str) -> str:
  """A path FileSystems reads `name` of `directory` from: the file itself, or
  for a hub model its copy in the cache (downloaded where missing)."""
  model = hub.pinned(directory)
  if model is not None:
    return hub.file_path(model, name, flag)
  return FileSystems.join(directory.rstrip("/"), name)


def _read_json(path: str, flag: str, directory: str) -> Any:
  try:
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
      return json.loads(f.read().decode("utf-8"))
  except (OSError, ValueError, UnicodeDecodeError) as error:
    raise ModelError(f"{flag} {directory}: {os.path.basename(path)} is not readable "
                     f"JSON: {error}") from error


def weight_files(model_path: str, files: Dict[str, int]) -> List[str]:
  """The safetensors files the model loads from, as transformers chooses them:
  model.safetensors, else the shards its index names (in name order). Raises
  ModelError for an index that names a shard the directory lacks, or shards
  without their index."""
  if SINGLE_WEIGHTS in files:
    return [SINGLE_WEIGHTS]
  if WEIGHTS_INDEX in files:
    index = _read_json(_file_in(model_path, WEIGHTS_INDEX, "--model"), "--model",
                       model_path)
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict) or not weight_map or not all(
        isinstance(shard, str) for shard in weight_map.values()):
      raise ModelError(f"--model {model_path}: {WEIGHTS_INDEX} has no weight_map of "
                       "tensor names to shard files")
    shards = sorted(set(weight_map.values()))
    missing = [shard for shard in shards if shard not in files]
    if missing:
      raise ModelError(
          f"--model {model_path}: {len(missing)} of the {len(shards)} shards that "
          f"{WEIGHTS_INDEX} names are missing: {', '.join(missing)} (an incomplete "
          "download or copy?)")
    return shards
  shards = sorted(name for name in files if name.endswith(".safetensors"))
  if shards:
    raise ModelError(f"--model {model_path}: safetensors files ({', '.join(shards)}) "
                     f"but neither {SINGLE_WEIGHTS} nor the {WEIGHTS_INDEX} that "
                     "names sharded weights")
  pickles = sorted(name for name in files if name.endswith(_PICKLE_SUFFIXES))
  if pickles:
    raise ModelError(
        f"--model {model_path}: only pickle checkpoints ({', '.join(pickles)}); "
        "loading them can run arbitrary code, so they are refused. Convert the "
        "weights to safetensors (model.save_pretrained(dir, "
        "safe_serialization=True)).")
  raise ModelError(f"--model {model_path}: no *.safetensors weights")


def model_files(model_path: str) -> Dict[str, int]:
  """{file name: size} of a model directory (local or gs://), checked for use.

  Raises ModelError if the directory is missing, has no config.json, holds
  only pickle checkpoints (which can run code when loaded), or names shards
  in its index that it does not hold.
  """
  files = _list_dir(model_path, "--model")
  if not files:
    raise ModelError(f"--model {model_path}: no such model directory (or it is empty)")
  if "config.json" not in files:
    raise ModelError(f"--model {model_path}: no config.json: not a transformers model "
                     "directory")
  weight_files(model_path, files)
  return files


def _none_of(names: Sequence[str]) -> str:
  if len(names) == 2:
    return f"neither {names[0]} nor {names[1]}"
  return f"none of {', '.join(names)}"


def has_tokenizer(files: Dict[str, int], names: Sequence[str] = TOKENIZER_FILES) -> bool:
  return any(name in files for name in names)


def read_model_json(model_path: str, name: str = "config.json") -> Any:
  """A JSON file of a model directory (local or gs://), read without loading
  the model; ModelError if it is not readable JSON."""
  return _read_json(_file_in(model_path, name, "--model"), "--model", model_path)


def tokenizer_files(tokenizer_path: str,
                    names: Sequence[str] = TOKENIZER_FILES) -> Dict[str, int]:
  """{file name: size} of a `--tokenizer` directory; ModelError without one
  (one of `names`: the files a tokenizer of the family is built from)."""
  files = _list_dir(tokenizer_path, "--tokenizer")
  if not files:
    raise ModelError(f"--tokenizer {tokenizer_path}: no such directory (or it is empty)")
  if not has_tokenizer(files, names):
    raise ModelError(f"--tokenizer {tokenizer_path}: no tokenizer in it ("
                     f"{_none_of(names)})")
  return files


def check_model_and_tokenizer(model_path: str, tokenizer_path: Optional[str],
                              names: Sequence[str] = TOKENIZER_FILES,
                              hint: str = " (TRUE's checkpoint uses T5's own)") -> None:
  """What can be checked of a model without loading it (at launch: listing
  only, also for gs://): the directory, config.json, safetensors weights (pickle
  refused), and a tokenizer (one of `names`) there or in `tokenizer_path`."""
  files = model_files(model_path)
  if tokenizer_path:
    tokenizer_files(tokenizer_path, names)
  elif not has_tokenizer(files, names):
    raise ModelError(
        f"--model {model_path}: no tokenizer in the model directory ("
        f"{_none_of(names)}); name the directory of the model's "
        f"tokenizer with --tokenizer DIR{hint}")


def _local_cache_root() -> str:
  return os.environ.get("AUTOAIS_MODEL_CACHE",
                        os.path.join(tempfile.gettempdir(), "autoais-models"))


def _local_copy(path: str, files: Dict[str, int], flag: str) -> str:
  """A local directory holding `path`'s files: the path itself, or a copy of a
  remote directory made once per machine (a file lock keeps worker processes
  from copying it twice; the copy is renamed into place when complete). The
  copy is keyed by the path and each object's name, size and update time, so
  weights uploaded again to the same path are copied again, not read stale."""
  if FileSystems.get_scheme(path) in (None, "file"):
    return path
  listing = sorted((os.path.basename(m.path.rstrip("/")), m.size_in_bytes,
                    m.last_updated_in_seconds) for m in _match_dir(path, flag)
                   if os.path.basename(m.path.rstrip("/")) in files)
  key = hashlib.sha256(json.dumps([path.rstrip("/"), listing]).encode("utf-8")
                       ).hexdigest()[:24]
  target = os.path.join(_local_cache_root(), key)
  os.makedirs(_local_cache_root(), exist_ok=True)
  with open(target + ".lock", "w", encoding="utf-8") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    if not os.path.isdir(target):
      partial = tempfile.mkdtemp(dir=_local_cache_root(), prefix=key + ".partial-")
      for name in files:
        source = FileSystems.join(path.rstrip("/"), name)
        with FileSystems.open(source, compression_type=CompressionTypes.UNCOMPRESSED) as src, \
            open(os.path.join(partial, name), "wb") as dst:
          while True:
            chunk = src.read(16 * 1024 * 1024)
            if not chunk:
              break
            dst.write(chunk)
      os.rename(partial, target)
  return target


# Files of a hub model that loading reads besides its weights: configs,
# tokenizers (tokenizer.json, spiece.model, spm.model, vocab.json, merges.txt)
# and chat templates. Pickle checkpoints and other frameworks' weights are never
# downloaded.
_SMALL_FILE_SUFFIXES = (".json", ".txt", ".model", ".jinja")


def _small_files(files: Dict[str, int]) -> List[str]:
  return [name for name in files if name.endswith(_SMALL_FILE_SUFFIXES)]


def local_model_dir(model_path: str) -> str:
  """A local directory holding the model: the directory itself, a copy of a
  gs:// one (see _local_copy), or a hub model's snapshot in the Hugging Face
  cache, with its weights and small files downloaded (models/hub.py)."""
  model = hub.pinned(model_path)
  if model is not None:
    files = model_files(model_path)
    return hub.snapshot_dir(model, weight_files(model_path, files) + _small_files(files),
                            "--model")
  if FileSystems.get_scheme(model_path) in (None, "file"):
    return model_path
  return _local_copy(model_path, model_files(model_path), "--model")


def local_tokenizer_dir(model_path: str, tokenizer_path: Optional[str],
                        names: Sequence[str] = TOKENIZER_FILES) -> str:
  """A local directory holding the tokenizer: `--tokenizer`'s, else the model's.
  Of a hub model only the small files come (not the weights: at launch, the
  label pieces are read from the tokenizer alone)."""
  model = hub.pinned(tokenizer_path or model_path)
  if model is not None:
    files = (tokenizer_files(tokenizer_path, names) if tokenizer_path
             else model_files(model_path))
    return hub.snapshot_dir(model, _small_files(files),
                            "--tokenizer" if tokenizer_path else "--model")
  if not tokenizer_path:
    return local_model_dir(model_path)
  if FileSystems.get_scheme(tokenizer_path) in (None, "file"):
    tokenizer_files(tokenizer_path, names)
    return tokenizer_path
  return _local_copy(tokenizer_path, tokenizer_files(tokenizer_path, names),
                     "--tokenizer")


def weights_checksum(local_dir: str) -> str:
  """sha256 over the weight files (the index's shards in name order, each name
  and its bytes). Reading 45 GB of shards takes minutes, so the result is
  cached under the model cache root (never in the model directory, which is
  the user's), keyed by the directory's real path, and recomputed when a
  file's size, modification time or inode changes."""
  names = weight_files(local_dir, {name: 0 for name in os.listdir(local_dir)})
  stamp = []
  for name in names:
    status = os.stat(os.path.join(local_dir, name))
    stamp.append([name, status.st_size, status.st_mtime_ns, status.st_ino])
  real = os.path.realpath(local_dir)
  cache = os.path.join(_local_cache_root(), "checksums",
                       hashlib.sha256(real.encode("utf-8")).hexdigest()[:24] + ".json")
  try:
    with open(cache, encoding="utf-8") as f:
      cached = json.load(f)
    if cached.get("directory") == real and cached.get("stamp") == stamp:
      return cached["sha256"]
  except (OSError, ValueError, AttributeError):
    pass
  digest = hashlib.sha256()
  for name in names:
    digest.update(name.encode("utf-8") + b"\0")
    with open(os.path.join(local_dir, name), "rb") as f:
      for chunk in iter(lambda: f.read(16 * 1024 * 1024), b""):
        digest.update(chunk)
  checksum = digest.hexdigest()
  try:
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    partial = f"{cache}.{os.getpid()}.tmp"
    with open(partial, "w", encoding="utf-8") as f:
      json.dump({"directory": real, "stamp": stamp, "sha256": checksum}, f)
    os.replace(partial, cache)
  except OSError:
    pass  # no writable cache: recompute next time
  return checksum


_TOKENIZER_SETTINGS = ("tokenizer_config.json", "special_tokens_map.json",
                       "added_tokens.json")


def tokenizer_checksum(local_dir: str, names: Sequence[str] = TOKENIZER_FILES) -> str:
  """sha256 over the tokenizer's files (vocabulary and settings) in name order:
  the same weights read through another tokenizer score differently."""
  digest = hashlib.sha256()
  for name in sorted(tuple(names) + _TOKENIZER_SETTINGS):
    path = os.path.join(local_dir, name)
    if os.path.exists(path):
      digest.update(name.encode("utf-8") + b"\0")
      with open(path, "rb") as f:
        digest.update(f.read())
  return digest.hexdigest()


def checkpoint_checksums(local_dir: str, tokenizer_dir: str, tokenizer_source: str,
                         names: Sequence[str] = TOKENIZER_FILES) -> Dict[str, Any]:
  """What run.json records of a checkpoint's files, in this order: the weights'
  sha256 and file count, where the tokenizer came from and its sha256."""
  return {
      "weights_sha256": weights_checksum(local_dir),
      "weight_files": len(weight_files(local_dir, {n: 0 for n in os.listdir(local_dir)})),
      "tokenizer_source": tokenizer_source,
      "tokenizer_sha256": tokenizer_checksum(local_dir=tokenizer_dir, names=names),
  }


def load_tokenizer(local_dir: str, flag: str = "--model",
                   names: Sequence[str] = TOKENIZER_FILES):
  """The fast tokenizer of a local directory. From spiece.model alone,
  transformers converts the SentencePiece model (bench/model_load.py: about
  0.3 s for T5's 32k pieces), once per loading process."""
  from transformers import AutoTokenizer  # pylint: disable=import-outside-toplevel
  if not any(os.path.exists(os.path.join(local_dir, name)) for name in names):
    raise ModelError(f"{flag} {local_dir}: no tokenizer ({_none_of(names)})")
  tokenizer = AutoTokenizer.from_pretrained(local_dir, use_fast=True,
                                            trust_remote_code=False)
  if not tokenizer.is_fast:
    raise ModelError(f"{flag} {local_dir}: needs a fast tokenizer (tokenizer.json or "
                     "a SentencePiece spiece.model) for premise windows")
  return tokenizer


def open_tokenizer(model_path: str, tokenizer_path: Optional[str],
                   names: Sequence[str] = TOKENIZER_FILES):
  """(local directory, fast tokenizer) of `--tokenizer`, else of the model's
  directory (one of `names` there)."""
  local_dir = local_tokenizer_dir(model_path, tokenizer_path, names)
  return local_dir, load_tokenizer(local_dir, "--tokenizer" if tokenizer_path else "--model",
                                   names)


class LabelPieces(NamedTuple):
  """The first pieces of the tokenizer's encodings of "1" and "0"."""
  one_id: int
  zero_id: int
  one_piece: str
  zero_piece: str


def label_pieces(tokenizer, model_path: str) -> LabelPieces:
  """The first piece of "1" and of "0" (SPEC 5.2): they must be known pieces
  and must differ, or the two answers cannot be told apart at the first step."""
  first = {}
  for label in ("1", "0"):
    encoded = tokenizer(label, add_special_tokens=False)["input_ids"]
    pieces = tokenizer.convert_ids_to_tokens(encoded)
    if not encoded or encoded[0] == tokenizer.unk_token_id:
      raise ModelError(
          f"--model {model_path}: its tokenizer encodes {label!r} as {pieces}: the "
          "first piece is not a known piece, so the model cannot answer "
          f"{label!r}; an NLI model answers with '1' and '0'")
    first[label] = (encoded[0], pieces[0], pieces)
  if first["1"][0] == first["0"][0]:
    raise ModelError(
        f"--model {model_path}: its tokenizer starts '1' ({first['1'][2]}) and '0' "
        f"({first['0'][2]}) with the same piece {first['1'][1]!r}, so the first "
        "decoder step cannot tell the two answers apart; an NLI model needs labels "
        "whose first pieces differ")
  return LabelPieces(first["1"][0], first["0"][0], first["1"][1], first["0"][1])


def refuse_sampling(do_sample: Any, model_path: str) -> None:
  """Decode mode calls `generate()` with the model's generation config, as the
  reference script does: a config that samples would make decisions random."""
  if do_sample:
    raise ModelError(f"--model {model_path}: --decision decode runs generate() with "
                     "the model's generation config, and generation_config.json "
                     "samples (do_sample true): decisions would be random. Use "
                     "--decision threshold")


def check_decode_generation(model_path: str) -> None:
  """refuse_sampling on the model directory's generation_config.json, read
  without loading the model (at launch, also on gs://)."""
  files = _list_dir(model_path, "--model")
  if "generation_config.json" in files:
    generation = _read_json(_file_in(model_path, "generation_config.json", "--model"),
                            "--model", model_path)
    refuse_sampling(isinstance(generation, dict) and generation.get("do_sample"),
                    model_path)


def _weight(linear):
  """A linear layer's weight matrix, dequantised for int8 dynamic layers."""
  weight = linear.weight
  return weight().dequantize() if callable(weight) else weight


class LockedTokenizer:
  """A tokenizer that one thread calls at a time; attributes read through.

  Beam's RunInference shares one loaded model among the threads of a worker
  process. A fast tokenizer keeps its truncation and padding settings in
  shared state and sets them on each call: two threads calling it with
  different settings corrupted each other's encodings (tests/unit/scoring/
  test_thread_safety.py: "index 130 is out of bounds" with the NLI
  classifier's windows) or fail ("Already borrowed"). Encoding is a small
  share of a batch's time, and the model runs outside the lock."""

  def __init__(self, tokenizer):
    self.unlocked = tokenizer
    self._lock = threading.RLock()

  def __call__(self, *args, **kwargs):
    with self._lock:
      return self.unlocked(*args, **kwargs)

  def __len__(self) -> int:
    return len(self.unlocked)

  def __getattr__(self, name: str):
    if name.startswith("__") or name in ("unlocked", "_lock"):
      # Not found on the instance (copy and pickle probe before __init__).
      raise AttributeError(name)
    value = getattr(self.unlocked, name)
    if not callable(value):
      return value

    @functools.wraps(value)
    def locked(*args, **kwargs):
      with self._lock:
        return value(*args, **kwargs)

    return locked


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

  def _batches(self, lengths: Sequence[int]):
    """Index lists of the sequences of `lengths`, sorted by length, each within
    the token budget once padded to its longest."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    batch, longest = [], 0
    for index in order:
      length = lengths[index]
      if batch and (len(batch) + 1) * max(longest, length) > self.token_budget:
        yield batch
        batch, longest = [], 0
      batch.append(index)
      longest = max(longest, length)
    if batch:
      yield batch

  @staticmethod
  def window_scores(encoded: Sequence[Any], probabilities: np.ndarray, threshold: float,
                    decoded: Optional[np.ndarray] = None) -> List[AttributionScore]:
    """One AttributionScore per encoded example (its `windows`, `truncated`),
    from the probabilities of all their windows in order: the best window's
    score; attributable above `threshold`, or where a window decoded "1"."""
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

  def _pad(self, sequences: Sequence[List[int]], pad_id: Optional[int] = None):
    """(ids, attention mask) tensors of `sequences` padded on the right with
    `pad_id` (the tokenizer's by default), on the model's device. Built in
    numpy in one pass over the batch's tokens, not a small tensor per
    sequence: the same tensors at a fraction of the per-sequence cost."""
    torch = self._torch
    lengths = np.fromiter((len(s) for s in sequences), dtype=np.int64,
                          count=len(sequences))
    mask = np.arange(int(lengths.max()), dtype=np.int64)[None, :] < lengths[:, None]
    ids = np.full(mask.shape, self.pad_id if pad_id is None else pad_id, dtype=np.int64)
    # Row-major order of the mask's True cells is the sequences' order, token by token.
    ids[mask] = np.fromiter(itertools.chain.from_iterable(sequences), dtype=np.int64,
                            count=int(lengths.sum()))
    return (torch.from_numpy(ids).to(self.device),
            torch.from_numpy(mask.astype(np.int64)).to(self.device))


def _tokenises_words_apart(tokenizer) -> Any:
  """(prefix, suffix): the special tokens the tokenizer puts around a text's
  pieces, where the input ids of "A B" are always prefix + pieces of A +
  pieces of B + suffix; else False. That holds where nothing crosses the space
  between A and B: the normaliser maps grapheme by grapheme (a SentencePiece
  charsmap, or none), the first pre-tokenizer splits at whitespace and drops
  it, every later one is a Metaspace that marks each word alike (prepend
  "always"), and the special tokens are the same around any text (TemplateProcessing
  of one sequence). The fast tokenizers transformers builds from T5's and mT5's
  spiece.model are of that kind; any other tokenizer takes the whole text."""
  try:
    state = json.loads(tokenizer.backend_tokenizer.to_str())
  except (AttributeError, TypeError, ValueError):
    return False
  normalizer = state.get("normalizer") or {"type": "Precompiled"}
  pre = state.get("pre_tokenizer") or {}
  steps = pre.get("pretokenizers", []) if pre.get("type") == "Sequence" else [pre]
  post = state.get("post_processor") or {}
  template = post.get("single", []) if post.get("type") == "TemplateProcessing" else None
  if (normalizer.get("type") != "Precompiled" or not steps
      or steps[0].get("type") != "WhitespaceSplit"
      or any(step.get("type") != "Metaspace" or step.get("prepend_scheme") != "always"
             for step in steps[1:])
      or template is None
      or sum("Sequence" in item for item in template) != 1):
    return False
  probe = "premise: a hypothesis: b"
  whole = tokenizer(probe, verbose=False)["input_ids"]
  pieces = tokenizer(probe, add_special_tokens=False, verbose=False)["input_ids"]
  start = next((i for i in range(len(whole) - len(pieces) + 1)
                if whole[i:i + len(pieces)] == pieces), None)
  if not pieces or start is None:
    return False
  return whole[:start], whole[start + len(pieces):]


# Characters after which Unicode does not always end a grapheme cluster
# (Grapheme_Cluster_Break=Prepend lies in these blocks): a premise ending in
# one is tokenised whole with its hypothesis, so no grapheme spans the join.
_PREPEND_BLOCKS = ((0x0600, 0x08FF), (0x0D4E, 0x0D4E), (0x11000, 0x11FFF))


def _ends_clear_of_the_next_character(text: str) -> bool:
  last = ord(text[-1])
  return not any(low <= last <= high for low, high in _PREPEND_BLOCKS)


# Tokens of premise pieces a loaded T5 model keeps (int32: 16 MiB, plus the
# texts): about 13,000 passages of 320 tokens.
PREMISE_CACHE_TOKENS = 1 << 22


class _PieceCache:
  """The pieces of recently tokenised premises, up to `max_tokens` in all, the
  least recently used dropped first. Chunks are cut by pair digest, so the
  pairs of one passage are spread over a run's chunks: a passage that many
  pairs share is tokenised again in each chunk unless its pieces are kept
  across them. Shared by the threads of a worker process (one lock)."""

  def __init__(self, max_tokens: int):
    self._entries: "collections.OrderedDict[str, array.array]" = collections.OrderedDict()
    self._tokens = 0
    self._max_tokens = max_tokens
    self._lock = threading.Lock()

  def get(self, text: str) -> Optional[List[int]]:
    with self._lock:
      pieces = self._entries.get(text)
      if pieces is None:
        return None
      self._entries.move_to_end(text)
    return pieces.tolist()

  def put(self, text: str, pieces: List[int]) -> None:
    if len(pieces) > self._max_tokens:
      return
    with self._lock:
      if text in self._entries:
        return
      self._entries[text] = array.array("i", pieces)
      self._tokens += len(pieces)
      while self._tokens > self._max_tokens:
        _, dropped = self._entries.popitem(last=False)
        self._tokens -= len(dropped)


class EncodedExample(NamedTuple):
  windows: List[List[int]]  # input ids of each window, EOS included
  truncated: bool  # the premise had to be windowed


class T5NliModel(TokenBudgetModel):
  """A loaded NLI model: tokenisation with premise windows, batched scoring."""

  def __init__(self, model, tokenizer, model_path: str, device: str,
               max_input_tokens: int, token_budget: int,
               label_ids: Optional[Tuple[int, int]] = None,
               decoder_start_id: Optional[int] = None):
    """`label_ids` (the "1" and "0" ids) and `decoder_start_id`, where given,
    replace the tokenizer's label pieces and the config's start id (MiniCheck's
    Flan-T5 reads fixed ids from a fixed start: models/minicheck.py)."""
    super().__init__(model, tokenizer, device, max_input_tokens, token_budget)
    if label_ids is None:
      self.labels = label_pieces(tokenizer, model_path)
    else:
      self.labels = LabelPieces(*label_ids, *tokenizer.convert_ids_to_tokens(list(label_ids)))
    self.one_id, self.zero_id = self.labels.one_id, self.labels.zero_id
    self.decoder_start_id = (model.config.decoder_start_token_id
                             if decoder_start_id is None else decoder_start_id)
    config = model.config
    # T5 v1.0 scales the last decoder state by d_model^-0.5 before its tied
    # output layer; v1.1 and mT5 do not (transformers 5 says so in
    # scale_decoder_outputs, earlier releases in tie_word_embeddings).
    self._scales_decoder_output = config.model_type == "t5" and getattr(
        config, "scale_decoder_outputs", config.tie_word_embeddings)
    # (prefix, suffix) special tokens where premise and hypothesis can be
    # tokenised apart, else False; found on first use.
    self._words_apart: Any = None
    self._premise_pieces = _PieceCache(PREMISE_CACHE_TOKENS)
    self._check_first_step()

  def _check_first_step(self) -> None:
    """label_logits re-implements the first decoder step: check it against the
    model's own forward on a probe input, so that a transformers release that
    changes the architecture's details stops the load instead of skewing every
    score."""
    torch = self._torch
    ids, mask = self._pad([self._ids("premise: probe. hypothesis: probe")])
    start = torch.full((1, 1), self.decoder_start_id, dtype=torch.long, device=ids.device)
    with torch.inference_mode():
      ours = self.label_logits(ids, mask).float()
      theirs = self.model(input_ids=ids, attention_mask=mask, decoder_input_ids=start,
                          use_cache=False).logits[:, 0, [self.one_id, self.zero_id]].float()
    # Relative to the logits' size: bfloat16 keeps 8 bits of mantissa, and the
    # reordered arithmetic rounds differently; a wrong architecture detail (a
    # missing d_model^-0.5, the wrong output layer) is off by far more.
    precise = next(self.model.parameters()).dtype == torch.float32
    tolerance = (1e-3 if precise else 5e-2) * max(1.0, float(theirs.abs().max()))
    if not torch.allclose(ours, theirs, rtol=0, atol=tolerance):
      raise ModelError(
          f"the one-step scorer disagrees with the model's forward pass on a probe "
          f"({ours.tolist()} vs {theirs.tolist()}): this transformers release "
          f"computes {type(self.model).__name__} differently; please report it")

  # -- tokenisation ---------------------------------------------------------

  def _ids(self, text: str) -> List[int]:
    return self._ids_of([text])[0]

  def _ids_of(self, texts: Sequence[str]) -> List[List[int]]:
    """The input ids of each text, from one tokenizer call: the fast tokenizer
    encodes a list in one pass, and its Python wrapper, which costs more than
    the encoding of a sentence, runs once per list instead of once per text."""
    if not texts:
      return []
    # verbose=False: over-long inputs are expected here; they get windowed.
    return self.tokenizer(list(texts), verbose=False)["input_ids"]

  def encode(self, example: AttributionExample, windowed: bool = True) -> EncodedExample:
    """The model input(s) of an example: one, or (`windowed`, past the model's
    length) one per premise window."""
    return self.encode_many([example], windowed)[0]

  def encode_many(self, examples: Sequence[AttributionExample],
                  windowed: bool = True) -> List[EncodedExample]:
    """encode() of each example; only the inputs past the model's length are
    windowed one by one. Where the tokenizer allows it (_tokenises_words_apart),
    each distinct "premise: ..." and "hypothesis: ..." of the examples is
    tokenised once and the input ids joined: a passage that many pairs share
    is tokenised once, not once a pair; else the whole inputs, in one call."""
    if self._tokenises_apart():
      whole = self._joined_ids(examples, *self._words_apart)
    else:
      whole = self._ids_of([f"premise: {example.premise} hypothesis: {example.hypothesis}"
                            for example in examples])
    return [EncodedExample([ids], False)
            if len(ids) <= self.max_input_tokens or not windowed
            else self._windows(example, ids)
            for example, ids in zip(examples, whole)]

  def _tokenises_apart(self) -> bool:
    if self._words_apart is None:
      self._words_apart = _tokenises_words_apart(self.tokenizer)
    return bool(self._words_apart)

  def _joined_ids(self, examples: Sequence[AttributionExample], prefix: List[int],
                  suffix: List[int]) -> List[List[int]]:
    """The input ids of each example's "premise: P hypothesis: H" as the
    special tokens around the pieces of "premise: P" and of "hypothesis: H":
    each distinct text tokenised once, and a premise's pieces kept for the
    chunks that follow (_PieceCache)."""
    texts: Dict[str, int] = {}  # to tokenise, in one call: text -> position
    premises: Dict[str, List[int]] = {}
    missed = []
    parts = []
    for example in examples:
      premise = f"premise: {example.premise}"
      if not _ends_clear_of_the_next_character(premise):
        whole = f"{premise} hypothesis: {example.hypothesis}"
        parts.append((None, texts.setdefault(whole, len(texts))))
        continue
      if premise not in premises and premise not in texts:
        cached = self._premise_pieces.get(premise)
        if cached is None:
          texts[premise] = len(texts)
          missed.append(premise)
        else:
          premises[premise] = cached
      parts.append((premise, texts.setdefault(f"hypothesis: {example.hypothesis}",
                                              len(texts))))
    pieces = self.tokenizer(list(texts), add_special_tokens=False,
                            verbose=False)["input_ids"] if texts else []
    for premise in missed:
      premises[premise] = pieces[texts[premise]]
      self._premise_pieces.put(premise, premises[premise])
    return [prefix + (premises[premise] if premise is not None else []) + pieces[rest] + suffix
            for premise, rest in parts]

  def _windows(self, example: AttributionExample, ids: List[int]) -> EncodedExample:
    """The premise windows of an example whose whole input (`ids`) is past the
    model's length: each window fits with the whole hypothesis."""
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

  def encoder_states(self, ids, mask):
    """The encoder's last hidden states, as the model computes them."""
    return self.model.get_encoder()(input_ids=ids, attention_mask=mask).last_hidden_state

  def label_logits(self, ids, mask, encoded=None):
    """Logits of "1" and "0" at the first decoder step: [batch, 2], from the
    encoder states `encoded` (computed here when not given).

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
    if encoded is None:
      encoded = self.encoder_states(ids, mask)
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
    if self._scales_decoder_output:
      hidden = hidden * (model.model_dim ** -0.5)
    rows = _weight(model.lm_head)[[self.one_id, self.zero_id]]
    return hidden @ rows.T

  def probabilities(self, sequences: Sequence[List[int]]) -> np.ndarray:
    """P("1") renormalised over {"1", "0"} at the first decoder step, per sequence."""
    return self._run(sequences, decode=False)[0]

  def decode_is_one(self, sequences: Sequence[List[int]]) -> np.ndarray:
    """`generate()` with the model's own generation config (greedy for TRUE's
    checkpoint), as the reference script calls it; decoded text == "1"."""
    return self._run(sequences, decode=True)[1]

  def _run(self, sequences: Sequence[List[int]], decode: bool):
    """(probabilities, decoded == "1" or None), batch by batch. With `decode`,
    generate() starts from the encoder states the probabilities were computed
    from: the encoder, most of the work, runs once per batch, not twice."""
    torch = self._torch
    from transformers.modeling_outputs import BaseModelOutput  # pylint: disable=import-outside-toplevel
    probabilities = np.empty(len(sequences), dtype=np.float64)
    decoded = np.zeros(len(sequences), dtype=bool) if decode else None
    with torch.inference_mode():
      for batch in self._batches([len(s) for s in sequences]):
        ids, mask = self._pad([sequences[i] for i in batch])
        encoded = self.encoder_states(ids, mask)
        pair = self.label_logits(ids, mask, encoded).float()
        probabilities[batch] = torch.softmax(pair, dim=-1)[:, 0].cpu().numpy()
        if decode:
          outputs = self.model.generate(
              encoder_outputs=BaseModelOutput(last_hidden_state=encoded),
              attention_mask=mask)
          texts = self.tokenizer.batch_decode(outputs, skip_special_tokens=True)
          decoded[batch] = [text == "1" for text in texts]
    return probabilities, decoded

  def score(self, examples: Sequence[AttributionExample], decision: str,
            threshold: float) -> List[AttributionScore]:
    # Decode mode is the reference's rule: the whole input, however long.
    windowed = decision != "decode"
    encoded = self.encode_many(examples, windowed)
    sequences = [window for item in encoded for window in item.windows]
    probabilities, decoded = self._run(sequences, decode=decision == "decode")
    return self.window_scores(encoded, probabilities, threshold, decoded)


def resolve_max_input_tokens(tokenizer, requested: Optional[int]) -> int:
  if requested:
    return requested
  length = getattr(tokenizer, "model_max_length", None)
  if isinstance(length, int) and 0 < length <= 100000:
    return length
  return _DEFAULT_MAX_INPUT_TOKENS


def load_t5_nli(model_path: str, dtype: str = "float32", device: str = "cpu",
                max_input_tokens: Optional[int] = None,
                token_budget: Optional[int] = None, *,
                tokenizer_path: Optional[str] = None,
                decision: str = "threshold",
                label_ids: Optional[Tuple[int, int]] = None,
                decoder_start_id: Optional[int] = None) -> T5NliModel:
  """Loads a T5/mT5 NLI model for scoring (see the module docstring);
  `label_ids` and `decoder_start_id` as T5NliModel takes them."""
  import torch  # pylint: disable=import-outside-toplevel
  from transformers import AutoConfig, AutoModelForSeq2SeqLM  # pylint: disable=import-outside-toplevel
  check_dtype(dtype)
  check_device(device)
  check_model_and_tokenizer(model_path, tokenizer_path)
  local_dir = local_model_dir(model_path)
  config = AutoConfig.from_pretrained(local_dir, trust_remote_code=False)
  if config.model_type not in SUPPORTED_MODEL_TYPES:
    raise ModelError(f"--model {model_path}: model type {config.model_type!r} is not "
                     f"one of {', '.join(SUPPORTED_MODEL_TYPES)}")
  _, tokenizer = open_tokenizer(model_path, tokenizer_path)
  # safetensors files are memory-mapped and each tensor is cast to `dtype` as
  # it is read: float32 weights load into bfloat16 without a float32 copy.
  model = AutoModelForSeq2SeqLM.from_pretrained(
      local_dir, use_safetensors=True, trust_remote_code=False,
      dtype=getattr(torch, dtype))
  if decision == "decode":
    refuse_sampling(model.generation_config.do_sample, model_path)
  model.to(device)
  model.eval()
  return T5NliModel(model, tokenizer, model_path, device,
                    resolve_max_input_tokens(tokenizer, max_input_tokens),
                    token_budget or DEFAULT_TOKEN_BUDGET[device], label_ids,
                    decoder_start_id)


class LocalModelHandler(ModelHandler[AttributionExample, PredictionResult, Any]):
  """What the RunInference handlers of models run in the job's workers share
  (t5 here, nli-classifier in models/nli_classifier.py): the model loads once
  per worker (once per machine with `large_model`, shared across processes),
  batches of examples are split by token budget inside the model's `score`,
  and `torch_threads` sets each process's threads. Subclasses load the model
  (calling `_set_threads` first) and say how a batch is scored."""

  metrics_namespace = "autoais_model"

  def __init__(self, model_path: str, threshold: float, max_batch_size: int,
               large_model: bool, torch_threads: int):
    super().__init__()
    self._model_path = model_path
    self._threshold = threshold
    self._max_batch_size = max_batch_size
    self._large_model = large_model
    self._torch_threads = torch_threads

  def _set_threads(self) -> None:
    if self._torch_threads:
      import torch  # pylint: disable=import-outside-toplevel
      # Per process: several processes of one machine each running a model on
      # every core slow each other down.
      torch.set_num_threads(self._torch_threads)

  def _score(self, batch: Sequence[AttributionExample], model) -> List[AttributionScore]:
    raise NotImplementedError

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


class T5NliModelHandler(LocalModelHandler):
  """RunInference handler of the T5 family (see LocalModelHandler)."""

  metrics_namespace = "autoais_t5_nli"

  def __init__(self, model_path: str, *, dtype: str = "float32", device: str = "cpu",
               decision: str = "threshold", threshold: float = 0.5,
               max_input_tokens: Optional[int] = None,
               token_budget: Optional[int] = None, max_batch_size: int = 512,
               large_model: bool = False, torch_threads: int = 0,
               tokenizer_path: Optional[str] = None):
    super().__init__(model_path, threshold, max_batch_size, large_model, torch_threads)
    check_dtype(dtype)
    if decision not in DECISIONS:
      raise ModelError(f"--decision {decision!r}: choose from {', '.join(DECISIONS)}")
    self._dtype = dtype
    self._device = device
    self._decision = decision
    self._max_input_tokens = max_input_tokens
    self._token_budget = token_budget
    self._tokenizer_path = tokenizer_path

  def load_model(self) -> T5NliModel:
    self._set_threads()
    return load_t5_nli(self._model_path, self._dtype, self._device,
                       self._max_input_tokens, self._token_budget,
                       tokenizer_path=self._tokenizer_path, decision=self._decision)

  def _score(self, batch: Sequence[AttributionExample],
             model: T5NliModel) -> List[AttributionScore]:
    return model.score(batch, self._decision, self._threshold)


def describe_model(model_path: str, max_input_tokens: Optional[int],
                   tokenizer_path: Optional[str] = None) -> Dict[str, Any]:
  """What run.json records of a model, read on a worker: the label pieces of
  its tokenizer, a checksum of its weights and its generation config (without
  loading the weights)."""
  local_dir = local_model_dir(model_path)
  tokenizer_dir, tokenizer = open_tokenizer(model_path, tokenizer_path)
  labels = label_pieces(tokenizer, model_path)
  config = _read_json(os.path.join(local_dir, "config.json"), "--model", model_path)
  generation_path = os.path.join(local_dir, "generation_config.json")
  generation = (_read_json(generation_path, "--model", model_path)
                if os.path.exists(generation_path) else None)
  return {
      "model_type": config.get("model_type"),
      "tie_word_embeddings": config.get("tie_word_embeddings", True),
      **checkpoint_checksums(local_dir, tokenizer_dir, tokenizer_path or model_path),
      "label_pieces": "first piece of the tokenizer's encoding of '1' and of '0'",
      "one_token_id": labels.one_id,
      "zero_token_id": labels.zero_id,
      "one_token": labels.one_piece,
      "zero_token": labels.zero_piece,
      "max_input_tokens": resolve_max_input_tokens(tokenizer, max_input_tokens),
      "generation_config": {key: value for key, value in (generation or {}).items()
                            if key != "transformers_version"} or None,
  }
