"""Sequence-classification NLI models (`--scorer nli-classifier`) as a Beam
ModelHandler: any Hugging Face `*ForSequenceClassification` checkpoint with an
NLI head (RoBERTa / DeBERTa / BERT MNLI-style, three-way or two-way).

    autoais evaluate ... --scorer nli-classifier --model DIR [--positive_label NAME]

The (premise, hypothesis) pair is encoded as its tokenizer encodes a text
pair; `nli_score` is the softmax probability of the supporting label
(positive_index) over all the head's labels. Only the premise is ever cut: a
pair past `max_input_tokens` is scored window by window of the premise, each
beside the whole hypothesis, and takes the best window. Pairs are put together
from their texts' ids where the tokenizer's pair encoding is a template around
them (NliClassifierModel). The contract: docs/scorers.md,
"Sequence-classification NLI models".
"""
import array
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from autoais.models import checkpoints, simulated_device
from autoais.models.token_budget import (DEFAULT_TOKEN_BUDGET, LocalModelHandler,
                                         TextCache, TokenBudgetModel, check_device,
                                         check_dtype, load_weights,
                                         resolve_max_input_tokens)
from autoais.schemas import AttributionExample, AttributionScore
from autoais.schemas.errors import ConfigError, ModelError

# Names of the supporting class in published NLI heads (MNLI "entailment",
# FEVER / fact-checking "supported" / "support", some "entail"), compared
# case-insensitively.
SUPPORTING_LABELS = ("entailment", "entail", "supported", "support")
CLASSIFIER_TOKENIZER_FILES = ("tokenizer.json", "spm.model", "spiece.model",
                              "sentencepiece.bpe.model", "vocab.json", "vocab.txt")
WINDOW_OVERLAP = 0.25
_MIN_WINDOW_TOKENS = 16
# The characters of recent premises whose ids are kept across calls (int32
# ids: about 16 MiB).
PREMISE_CACHE_CHARS = 1 << 24
# What the model reads of an encoding (the attention mask is made from the
# lengths when a batch is padded).
_MODEL_FIELDS = ("input_ids", "token_type_ids")


def _model_fields(encoding) -> Dict[str, List[int]]:
  return {name: list(encoding[name]) for name in _MODEL_FIELDS if name in encoding}


def _same_inputs(ours: "EncodedPair", theirs: "EncodedPair") -> bool:
  return ours.truncated == theirs.truncated and ours.windows == theirs.windows


def head_labels(config: Dict[str, Any], model_path: str) -> Dict[int, str]:
  """{index: label name} of the classification head, from config.json."""
  architectures = config.get("architectures") or []
  if not any(str(name).endswith("ForSequenceClassification") for name in architectures):
    raise ModelError(f"--model {model_path}: config.json's architectures "
                     f"({', '.join(map(str, architectures)) or 'none'}) name no "
                     "*ForSequenceClassification model: --scorer nli-classifier "
                     "reads sequence-classification NLI heads")
  id2label = config.get("id2label")
  if not isinstance(id2label, dict) or len(id2label) < 2:
    raise ModelError(f"--model {model_path}: config.json has no id2label of two or "
                     "more labels")
  try:
    return {int(index): str(name) for index, name in id2label.items()}
  except ValueError as error:
    raise ModelError(f"--model {model_path}: config.json's id2label has a "
                     f"non-integer index: {error}") from error


def positive_index(labels: Dict[int, str], positive_label: Optional[str],
                   model_path: str) -> int:
  """The head index of the supporting label: `positive_label`'s, else the one
  label among SUPPORTING_LABELS. ConfigError, listing the labels, otherwise."""
  listed = ", ".join(f"{index}: {name!r}" for index, name in sorted(labels.items()))
  # An empty --positive_label asks for a label named "" (refused below), not
  # for the flag's default.
  given = positive_label is not None
  wanted = (positive_label.strip().lower(),) if given else SUPPORTING_LABELS
  found = [index for index, name in sorted(labels.items())
           if name.strip().lower() in wanted]
  if len(found) == 1:
    return found[0]
  if given:
    raise ConfigError(f"--positive_label {positive_label!r}: the head of --model "
                      f"{model_path} has {'no' if not found else 'several'} such "
                      f"label(s); its labels are {{{listed}}}")
  if not found:
    raise ConfigError(
        f"--model {model_path}: none of its labels {{{listed}}} is a supporting "
        f"label ({', '.join(SUPPORTING_LABELS)}, any case); name the one whose "
        "probability is the score with --positive_label NAME")
  raise ConfigError(f"--model {model_path}: several of its labels {{{listed}}} are "
                    "supporting labels; choose one with --positive_label NAME")


def check_classifier(model_path: str, tokenizer_path: Optional[str],
                     positive_label: Optional[str]) -> int:
  """Launch-time checks without loading the model (listing and config.json
  only, also for gs://); returns the supporting label's index."""
  checkpoints.check_model_and_tokenizer(model_path, tokenizer_path,
                                   CLASSIFIER_TOKENIZER_FILES, hint="")
  labels = head_labels(checkpoints.read_model_json(model_path), model_path)
  return positive_index(labels, positive_label, model_path)


class EncodedPair(NamedTuple):
  windows: List[Dict[str, List[int]]]  # model inputs of each window
  truncated: bool
  failure: str = ""  # why there is no window to score, where there is none


# A document without chunks (MiniCheck's and FactCG's Inferencers fail on it).
BLANK_DOCUMENT = ("{family}: the document is blank (no chunk to check the claim against; "
                  "{reference}'s Inferencer cannot score it either)")


class PairTemplate(NamedTuple):
  """Where the tokenizer's pair encoding puts its special tokens: prefix,
  premise, middle, hypothesis, suffix; with `types`, the token type of each
  part (a tuple for the special parts, one value for each text)."""
  prefix: List[int]
  middle: List[int]
  suffix: List[int]
  types: Optional[Tuple[List[int], int, List[int], int, List[int]]]

  def inputs(self, premise: List[int], hypothesis: List[int]) -> Dict[str, List[int]]:
    ids = self.prefix + premise + self.middle + hypothesis + self.suffix
    if self.types is None:
      return {"input_ids": ids}
    before, first, middle, second, after = self.types
    return {"input_ids": ids, "token_type_ids": (
        before + [first] * len(premise) + middle + [second] * len(hypothesis) + after)}


# Pairs the template is checked on at load (with a premise long enough for
# several windows): texts of different lengths, the premise the longer and
# the shorter.
_TEMPLATE_PROBES = (("premise", "hypothesis"),
                    ("A longer premise, of several words.", "Short"),
                    ("x", "A hypothesis of more words than its premise has"))


def pair_template(tokenizer) -> Optional[PairTemplate]:
  """The template of `tokenizer`'s pair encoding as its own post-processor
  lays it out around a pair tokenised alone, token types included where the
  model reads them; None where the fast backend has no post-processor, or
  its special tokens fall inside a text's ids or change them: such a
  tokenizer is called pair by pair."""
  backend = getattr(tokenizer, "backend_tokenizer", None)
  if backend is None or backend.post_processor is None:
    return None
  parts = backend.encode_batch(["premise", "hypothesis"], add_special_tokens=False)
  whole = backend.post_processor.process(*parts, add_special_tokens=True)
  ids, types = whole.ids, whole.type_ids
  texts_at = [i for i, special in enumerate(whole.special_tokens_mask) if not special]
  if [ids[i] for i in texts_at] != [i for part in parts for i in part.ids]:
    return None
  edges, text_types = [0], []
  for part in parts:
    span, texts_at = texts_at[:len(part.ids)], texts_at[len(part.ids):]
    if not span or span[-1] - span[0] != len(span) - 1 or len(
        {types[i] for i in span}) != 1:
      return None
    edges += [span[0], span[-1] + 1]
    text_types.append(types[span[0]])
  edges.append(len(ids))
  specials = list(zip(edges[::2], edges[1::2]))  # before, between and after the texts
  prefix, middle, suffix = (ids[start:end] for start, end in specials)
  if "token_type_ids" not in tokenizer.model_input_names:
    return PairTemplate(prefix, middle, suffix, None)
  before, between, after = (types[start:end] for start, end in specials)
  return PairTemplate(prefix, middle, suffix,
                      (before, text_types[0], between, text_types[1], after))


class NliClassifierModel(TokenBudgetModel):
  """A loaded classifier: pair encoding with premise windows, batched scoring.

  Pairs are put together from their texts' own ids where the tokenizer's pair
  encoding is a template around them (pair_template; a fast tokenizer encodes
  each text of a pair on its own and adds the special tokens after): the
  distinct premises and hypotheses of a call are tokenised in one batch,
  premises kept in a cache of recent premises (TextCache) across calls, and
  windows cut from the premise's ids as the tokenizer's overflowing
  encodings cut them. At load the template is checked against the
  tokenizer's own encodings of probe pairs, one of them windowed; a tokenizer
  that fails it is called pair by pair (encode_by_tokenizer)."""

  def __init__(self, model, tokenizer, device: str, max_input_tokens: int,
               token_budget: int, positive: int):
    super().__init__(model, tokenizer, device, max_input_tokens, token_budget)
    self.positive = positive
    self._pair_specials = tokenizer.num_special_tokens_to_add(pair=True)
    self._premises = TextCache(PREMISE_CACHE_CHARS)
    self._template = pair_template(self.tokenizer)
    if self._template is not None and not self._template_holds():
      self._template = None

  @property
  def pairs_from_ids(self) -> bool:
    """Whether pairs are put together from their texts' ids (the template held)."""
    return self._template is not None

  def _template_holds(self) -> bool:
    """Whether pairs put together from the template equal the tokenizer's own
    encodings of probe examples: a short pair, and a premise long enough for
    several windows beside a hypothesis."""
    sentence = "The premise says what the hypothesis claims, and more besides. "
    length = len(self.tokenizer.input_ids([sentence], add_special_tokens=False)[0])
    long_premise = sentence * (2 * self.max_input_tokens // max(length, 1) + 2)
    probes = [AttributionExample(premise, hypothesis, "", "")
              for premise, hypothesis in _TEMPLATE_PROBES]
    probes.append(AttributionExample(long_premise, "What the hypothesis claims.", "", ""))
    built = self._encode_from_ids(probes)
    return all(_same_inputs(ours, self.encode_by_tokenizer(example))
               for ours, example in zip(built, probes))

  def encode(self, example: AttributionExample) -> EncodedPair:
    return self.encode_many([example])[0]

  def encode_many(self, examples: Sequence[AttributionExample]) -> List[EncodedPair]:
    """The model inputs of each example: the pair as the tokenizer encodes it
    (`tokenizer(premise, hypothesis)`), or where longer than the model's input,
    the premise's windows each beside the whole hypothesis (the module
    docstring)."""
    if self._template is None:
      return [self.encode_by_tokenizer(example) for example in examples]
    return self._encode_from_ids(examples)

  def _encode_from_ids(self, examples: Sequence[AttributionExample]) -> List[EncodedPair]:
    premises = self._premise_ids([example.premise for example in examples])
    distinct = list(dict.fromkeys(example.hypothesis for example in examples))
    hypotheses = dict(zip(distinct, self.tokenizer.input_ids(distinct,
                                                             add_special_tokens=False)))
    return [self._pair(example, premises[example.premise], hypotheses[example.hypothesis])
            for example in examples]

  def _premise_ids(self, texts: Sequence[str]) -> Dict[str, List[int]]:
    kept, missing = self._premises.found(texts)
    found = {text: stored.tolist() for text, stored in kept.items()}
    if missing:
      for text, ids in zip(missing, self.tokenizer.input_ids(missing,
                                                             add_special_tokens=False)):
        self._premises.put(text, array.array("i", ids))
        found[text] = ids
    return found

  def _pair(self, example: AttributionExample, premise: List[int],
            hypothesis: List[int]) -> EncodedPair:
    template = self._template
    if len(premise) + len(hypothesis) + self._pair_specials <= self.max_input_tokens:
      return EncodedPair([template.inputs(premise, hypothesis)], False)
    size = self.max_input_tokens - len(hypothesis) - self._pair_specials
    if size < _MIN_WINDOW_TOKENS:  # the hypothesis alone (nearly) fills the input
      return self.encode_by_tokenizer(example)
    # As the tokenizer cuts overflowing encodings: windows of `size` ids, each
    # starting `step` after the one before, the last the first to reach the end.
    step = size - int(size * WINDOW_OVERLAP)
    windows, start = [], 0
    while True:
      windows.append(template.inputs(premise[start:start + size], hypothesis))
      if start + size >= len(premise):
        return EncodedPair(windows, True)
      start += step

  def encode_by_tokenizer(self, example: AttributionExample) -> EncodedPair:
    """The model inputs of `example` from the tokenizer's own calls (pair
    encoding, overflowing windows, truncation), one example at a time."""
    tokenizer = self.tokenizer
    whole = tokenizer(example.premise, example.hypothesis, verbose=False)
    if len(whole["input_ids"]) <= self.max_input_tokens:
      return EncodedPair([_model_fields(whole)], False)
    hypothesis = len(tokenizer(example.hypothesis, add_special_tokens=False,
                               verbose=False)["input_ids"])
    size = self.max_input_tokens - hypothesis - self._pair_specials
    if size < _MIN_WINDOW_TOKENS:  # the hypothesis alone (nearly) fills the input
      cut = tokenizer(example.premise, example.hypothesis, truncation="longest_first",
                      max_length=self.max_input_tokens, verbose=False)
      return EncodedPair([_model_fields(cut)], True)
    windows = tokenizer(example.premise, example.hypothesis, truncation="only_first",
                        max_length=self.max_input_tokens,
                        stride=int(size * WINDOW_OVERLAP),
                        return_overflowing_tokens=True, verbose=False)
    names = [name for name in _MODEL_FIELDS if name in windows]
    return EncodedPair([{name: list(windows[name][i]) for name in names}
                        for i in range(len(windows["input_ids"]))], True)

  def probabilities(self, inputs: Sequence[Dict[str, List[int]]]) -> np.ndarray:
    """P(supporting label), softmax over every label of the head, per input."""
    torch = self._torch
    out = np.empty(len(inputs), dtype=np.float64)
    lengths = [len(item["input_ids"]) for item in inputs]
    with torch.inference_mode():
      for batch in self._batches(lengths):
        ids, mask = self._pad([inputs[i]["input_ids"] for i in batch])
        if self.simulated_device is not None:
          out[batch] = self.simulated_device.run(ids, mask)
          continue
        kwargs = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in inputs[batch[0]]:
          kwargs["token_type_ids"], _ = self._pad(
              [inputs[i]["token_type_ids"] for i in batch], pad_id=0)
        with self.device_turn:
          logits = self.model(**kwargs).logits.float()
          out[batch] = torch.softmax(logits, dim=-1)[:, self.positive].cpu().numpy()
    return out

  def score(self, examples: Sequence[AttributionExample],
            threshold: float) -> List[AttributionScore]:
    encoded = self.encode_many(examples)
    probabilities = self.probabilities([w for item in encoded for w in item.windows])
    return self.window_scores(encoded, probabilities, threshold)


def load_nli_classifier(model_path: str, dtype: str = "float32", device: str = "cpu",
                        max_input_tokens: Optional[int] = None,
                        token_budget: Optional[int] = None, *,
                        tokenizer_path: Optional[str] = None,
                        positive_label: Optional[str] = None,
                        positive_id: Optional[int] = None,
                        model_class: type = NliClassifierModel) -> NliClassifierModel:
  """Loads a classifier for scoring (as `model_class`, a subclass where a
  family reads it otherwise); the supporting label is `positive_id`
  where given (a head whose labels name no class: MiniCheck's, label 1), else
  resolved from id2label or `positive_label`."""
  from transformers import AutoModelForSequenceClassification  # pylint: disable=import-outside-toplevel
  check_dtype(dtype)
  check_device(device)
  if positive_id is None:
    positive = check_classifier(model_path, tokenizer_path, positive_label)
  else:
    checkpoints.check_model_and_tokenizer(model_path, tokenizer_path,
                                     CLASSIFIER_TOKENIZER_FILES, hint="")
    positive = positive_id
  local_dir = checkpoints.local_model_dir(model_path)
  _, tokenizer = checkpoints.open_tokenizer(model_path, tokenizer_path,
                                       CLASSIFIER_TOKENIZER_FILES)
  model = load_weights(AutoModelForSequenceClassification, local_dir, dtype, device,
                       takes_simulated_device=True)
  loaded = model_class(model, tokenizer, device,
                       resolve_max_input_tokens(tokenizer, max_input_tokens),
                       token_budget or DEFAULT_TOKEN_BUDGET[device], positive)
  loaded.simulated_device = simulated_device.simulated(local_dir, device)
  return loaded


class NliClassifierModelHandler(LocalModelHandler):
  """RunInference handler of the nli-classifier family (see
  models.token_budget.LocalModelHandler)."""

  metrics_namespace = "autoais_nli_classifier"
  load = staticmethod(load_nli_classifier)


def describe_classifier(model_path: str, max_input_tokens: Optional[int],
                        tokenizer_path: Optional[str] = None,
                        positive_label: Optional[str] = None) -> Dict[str, Any]:
  """What run.json records of a classifier, read on a worker without loading
  its weights: the head's labels, the supporting one, the checksums."""
  local_dir = checkpoints.local_model_dir(model_path)
  tokenizer_dir, tokenizer = checkpoints.open_tokenizer(model_path, tokenizer_path,
                                                   CLASSIFIER_TOKENIZER_FILES)
  config = checkpoints.read_model_json(local_dir)
  labels = head_labels(config, model_path)
  positive = positive_index(labels, positive_label, model_path)
  return {
      "model_type": config.get("model_type"),
      "architectures": config.get("architectures"),
      "labels": [labels[index] for index in sorted(labels)],
      "positive_label": labels[positive],
      "positive_label_id": positive,
      "positive_label_source": "--positive_label" if positive_label else "id2label",
      **checkpoints.checkpoint_checksums(local_dir, tokenizer_dir, tokenizer_path or model_path,
                                    CLASSIFIER_TOKENIZER_FILES + ("merges.txt",)),
      "max_input_tokens": resolve_max_input_tokens(tokenizer, max_input_tokens),
      "window_overlap": WINDOW_OVERLAP,
      **simulated_device.describe(local_dir),
  }
