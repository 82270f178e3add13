"""Checkpoint and tokenizer I/O that every family of models/ shares: a
model directory listed and checked without loading it (config.json,
safetensors weights, pickle checkpoints refused, a tokenizer), its JSON files
read, a local copy made of a gs:// or hub directory (once per machine), the
checksums run.json records, and the fast tokenizer loaded and locked for the
threads of a worker (LockedTokenizer).

Local directories, gs:// (FileSystems) and Hugging Face hub ids pinned to a
commit (models/hub.py) are read alike.
"""
import fcntl
import functools
import hashlib
import json
import os
import tempfile
import threading
from typing import Any, Dict, List, Optional, Sequence

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from autoais.models import hub
from autoais.schemas.errors import ModelError

_PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")

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


def list_dir(path: str, flag: str) -> Dict[str, int]:
  """{file name: size} of a directory, local or gs://, or of a hub model's
  commit (models/hub.py)."""
  model = hub.pinned(path)
  if model is not None:
    return hub.list_files(model, flag)
  return {os.path.basename(m.path.rstrip("/")): m.size_in_bytes
          for m in _match_dir(path, flag)}


def file_in(directory: str, name: str, flag: str) -> str:
  """A path FileSystems reads `name` of `directory` from: the file itself, or
  for a hub model its copy in the cache (downloaded where missing)."""
  model = hub.pinned(directory)
  if model is not None:
    return hub.file_path(model, name, flag)
  return FileSystems.join(directory.rstrip("/"), name)


def read_json(path: str, flag: str, directory: str) -> Any:
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
    index = read_json(file_in(model_path, WEIGHTS_INDEX, "--model"), "--model",
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
  files = list_dir(model_path, "--model")
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
  return read_json(file_in(model_path, name, "--model"), "--model", model_path)


def tokenizer_files(tokenizer_path: str,
                    names: Sequence[str] = TOKENIZER_FILES) -> Dict[str, int]:
  """{file name: size} of a `--tokenizer` directory; ModelError without one
  (one of `names`: the files a tokenizer of the family is built from)."""
  files = list_dir(tokenizer_path, "--tokenizer")
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

  def input_ids(self, texts: Sequence[str], add_special_tokens: bool = True,
                offsets: bool = False) -> List[Any]:
    """The input ids of each text (with `offsets`, (ids, offset mapping) of
    each) as calling the tokenizer on the list gives them. The fast backend
    encodes the list itself where it is as such a call leaves it (no
    truncation, no padding, special tokens as the tokenizer splits them):
    transformers' wrapper would also build an attention mask and convert
    every encoding's fields: more than a quarter of a call's CPU on the
    pipeline_cost bench's passages (bench/README.md)."""
    texts = list(texts)
    if not texts:
      return []
    with self._lock:
      backend = getattr(self.unlocked, "backend_tokenizer", None)
      if (backend is not None and backend.truncation is None and backend.padding is None
          and backend.encode_special_tokens == getattr(self.unlocked,
                                                       "split_special_tokens", False)):
        if offsets:
          return [(encoding.ids, encoding.offsets) for encoding in
                  backend.encode_batch(texts, add_special_tokens=add_special_tokens)]
        encode = getattr(backend, "encode_batch_fast", backend.encode_batch)
        return [encoding.ids for encoding in
                encode(texts, add_special_tokens=add_special_tokens)]
      encoded = self.unlocked(texts, add_special_tokens=add_special_tokens, verbose=False,
                              return_offsets_mapping=offsets)
    if offsets:
      return list(zip(encoded["input_ids"], encoded["offset_mapping"]))
    return encoded["input_ids"]

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
