"""MiniCheck fact checkers (`--scorer minicheck`) as a Beam ModelHandler: the
three published checkpoints MiniCheck-Flan-T5-Large, MiniCheck-RoBERTa-Large
and MiniCheck-DeBERTa-v3-Large, scored as MiniCheck's own `Inferencer` scores
them (`minicheck/inference.py` of github.com/Liyan06/MiniCheck).

    autoais agreement ... --scorer minicheck --model DIR [--chunk_size N]

config.json's architecture picks the variant (VARIANTS: its input, input
length and chunk size). The document is cut into chunks of sentences
(models/sentences.py), each chunk paired with the whole claim; the score is
the best chunk's, from models/t5_nli.py's one-step T5NliModel (Flan-T5, given
MiniCheck's label ids) or models/nli_classifier.py's NliClassifierModel (the
classifiers). A blank document gives no chunk, which MiniCheck's Inferencer
cannot score either: a ScoringFailure (the row goes to dead letter). The
contract: docs/scorers.md, "MiniCheck checkers".
"""
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

from autoais.models import checkpoints, nli_classifier, simulated_device, t5_nli
from autoais.models.sentences import SentenceSplitter, pack_sentences, sentence_splitter
from autoais.models.token_budget import LocalModelHandler, TextCache, TokenBudgetModel
from autoais.schemas import AttributionExample, AttributionScore, ScoringFailure
from autoais.schemas.errors import ConfigError, ModelError

# The vocabulary ids whose first-step logits MiniCheck's Flan-T5 reads
# (unsupported, supported), and its decoder start id.
T5_LABEL_IDS = (3, 209)
T5_DECODER_START_ID = 0
# The classifiers' supporting label.
SUPPORTED_LABEL_ID = 1
WORDS, TOKENS = "words", "tokens"
# The characters of recent blocks whose sentences are kept across calls
# (about 8 MiB of text, twice that with the sentences).
BLOCK_CACHE_CHARS = 1 << 23
_BLANK = nli_classifier.BLANK_DOCUMENT.format(family="minicheck", reference="MiniCheck")


class Variant(NamedTuple):
  """A MiniCheck checkpoint kind, with MiniCheck's defaults for it."""
  name: str  # MiniCheck's model_name
  seq2seq: bool
  max_input_tokens: int  # MiniCheck's max_model_len
  chunk_size: int
  chunk_unit: str
  prefix: str


VARIANTS = {
    "T5ForConditionalGeneration": Variant("flan-t5-large", True, 2048, 500, WORDS,
                                          "predict: "),
    "RobertaForSequenceClassification": Variant("roberta-large", False, 512, 400,
                                                TOKENS, ""),
    "DebertaV2ForSequenceClassification": Variant("deberta-v3-large", False, 2048, 400,
                                                  TOKENS, ""),
}


def variant_of(config: Dict[str, Any], model_path: str) -> Variant:
  """The variant config.json's architectures name; ConfigError for any other
  architecture, a classifier head without exactly two labels, or a T5
  vocabulary without MiniCheck's label ids."""
  architectures = [str(name) for name in config.get("architectures") or []]
  known = [VARIANTS[name] for name in architectures if name in VARIANTS]
  if not known:
    raise ConfigError(
        f"--model {model_path}: config.json's architectures "
        f"({', '.join(architectures) or 'none'}) are none of MiniCheck's "
        f"({', '.join(VARIANTS)}): --scorer minicheck reads MiniCheck-Flan-T5, "
        "-RoBERTa and -DeBERTa checkpoints")
  variant = known[0]
  if variant.seq2seq:
    if int(config.get("vocab_size") or 0) <= max(T5_LABEL_IDS):
      raise ConfigError(f"--model {model_path}: a vocabulary of "
                        f"{config.get('vocab_size')} ids lacks the ids MiniCheck "
                        f"reads ({T5_LABEL_IDS[0]} and {T5_LABEL_IDS[1]})")
  else:
    id2label = config.get("id2label")
    labels = len(id2label) if isinstance(id2label, dict) else config.get("num_labels", 2)
    if labels != 2:
      raise ConfigError(f"--model {model_path}: a head of {labels} labels; MiniCheck's "
                        "classifiers have two (label 1: supported)")
  return variant


def check_minicheck(model_path: str, tokenizer_path: Optional[str]) -> Variant:
  """Launch-time checks without loading the model (listing and config.json
  only, also for gs://): the directory, safetensors weights (pickle refused
  with the conversion hint), a tokenizer, and a MiniCheck architecture."""
  checkpoints.check_model_and_tokenizer(model_path, tokenizer_path,
                                   nli_classifier.CLASSIFIER_TOKENIZER_FILES, hint="")
  return variant_of(checkpoints.read_model_json(model_path), model_path)


class MiniCheckModel:
  """A loaded MiniCheck checkpoint: document chunks, inputs, batched scores."""

  def __init__(self, variant: Variant, scorer: TokenBudgetModel,
               chunk_size: int, splitter: SentenceSplitter, model_path: str):
    self.variant = variant
    self.scorer = scorer  # T5NliModel (Flan-T5) or NliClassifierModel
    self.tokenizer = scorer.tokenizer
    self.max_input_tokens = scorer.max_input_tokens
    self.chunk_size = chunk_size
    self.splitter = splitter
    self._blocks = TextCache(BLOCK_CACHE_CHARS)
    # The sizes of the sentences chunks_of adds: a line break, a blank document's "".
    self._break_and_blank_sizes = tuple(self._sizes(["\n", ""]))
    if self.tokenizer.eos_token is None:
      raise ModelError(f"--model {model_path}: its tokenizer has no eos token, which "
                       "MiniCheck puts between the document and the claim")

  def accelerated(self) -> bool:
    return self.scorer.accelerated()

  def _sizes(self, sentences: List[str]) -> List[int]:
    """Each sentence's size in the chunk unit: its words, or its tokens as the
    tokenizer cuts them at the input length (`truncation=True` keeps the
    first max_input_tokens of a text without special tokens)."""
    if self.variant.chunk_unit == WORDS:
      return [len(sentence.split()) for sentence in sentences]
    return [min(len(ids), self.max_input_tokens) for ids in
            self.tokenizer.input_ids(sentences, add_special_tokens=False)]

  def chunks(self, document: str) -> List[str]:
    return self.chunks_of([document])[document]

  def chunks_of(self, documents: Sequence[str]) -> Dict[str, List[str]]:
    """The chunks of each distinct document: its sentences, block by block
    (a line break between blocks kept as a sentence of its own; [""] for a
    document with none), packed. A block is split into sentences and sized
    once while it is in the cache of recent blocks, however many documents
    and calls carry it: chunks are cut by pair digest, so a document's pairs
    are spread over a run's calls, and citations' premises join the same
    documents, a line each, in many combinations. Splitting is most of this
    family's work outside the model."""
    documents = list(dict.fromkeys(documents))
    blocks = {document: document.split("\n") for document in documents}
    split = self._split_blocks([block for document in documents
                                for block in blocks[document]])
    line_break, empty = self._break_and_blank_sizes
    chunks = {}
    for document in documents:
      sentences, sizes = [], []
      for block in blocks[document]:
        block_sentences, block_sizes = split[block]
        sentences.extend(block_sentences)
        sizes.extend(block_sizes)
        sentences.append("\n")
        sizes.append(line_break)
      if len(sentences) > 1:
        sentences, sizes = sentences[:-1], sizes[:-1]
      else:
        sentences, sizes = [""], [empty]
      chunks[document] = pack_sentences(sentences, sizes, self.chunk_size)
    return chunks

  def _split_blocks(self, blocks: Sequence[str]) -> Dict[str, Tuple[Tuple[str, ...],
                                                                    Tuple[int, ...]]]:
    """(sentences, their sizes) of each distinct block: kept, or split now,
    the sentences of every block split now sized in one tokenizer call."""
    found, missing = self._blocks.found(blocks)
    if missing:
      sentences = [self.splitter.split(block) for block in missing]
      sizes = self._sizes([sentence for split in sentences for sentence in split])
      position = 0
      for block, split in zip(missing, sentences):
        entry = (tuple(split), tuple(sizes[position:position + len(split)]))
        position += len(split)
        self._blocks.put(block, entry)
        found[block] = entry
    return found

  def encode(self, texts: List[str]):
    """(model inputs, cut) per text: its tokens, cut at the end to the input
    length where longer (as MiniCheck's `truncation=True` does)."""
    if not texts:
      return [], []
    encoded = self.tokenizer(texts, verbose=False)
    names = list(encoded.keys())
    inputs, cut = [], []
    for index, text in enumerate(texts):
      if len(encoded["input_ids"][index]) <= self.max_input_tokens:
        inputs.append({name: encoded[name][index] for name in names})
        cut.append(False)
      else:
        inputs.append(dict(self.tokenizer(text, truncation=True, verbose=False,
                                          max_length=self.max_input_tokens)))
        cut.append(True)
    return inputs, cut

  def probabilities(self, inputs: Sequence[Dict[str, List[int]]]):
    """P(supported) per model input."""
    if self.variant.seq2seq:
      return self.scorer.probabilities([item["input_ids"] for item in inputs])
    return self.scorer.probabilities(inputs)

  def score(self, examples: Sequence[AttributionExample], threshold: float
            ) -> List[Union[AttributionScore, ScoringFailure]]:
    eos, prefix = self.tokenizer.eos_token, self.variant.prefix
    chunks_of = self.chunks_of([example.premise for example in examples])
    texts, counts = [], []
    for example in examples:
      chunks = chunks_of[example.premise]
      texts.extend(f"{prefix}{chunk}{eos}{example.hypothesis}" for chunk in chunks)
      counts.append(len(chunks))
    inputs, cut = self.encode(texts)
    encoded, position = [], 0
    for count in counts:
      encoded.append(nli_classifier.EncodedPair(
          inputs[position:position + count], count > 1 or any(cut[position:position + count]),
          _BLANK))
      position += count
    return self.scorer.window_scores(encoded, self.probabilities(inputs), threshold)


def load_minicheck(model_path: str, dtype: str = "float32", device: str = "cpu",
                   max_input_tokens: Optional[int] = None,
                   token_budget: Optional[int] = None, *,
                   tokenizer_path: Optional[str] = None,
                   chunk_size: Optional[int] = None) -> MiniCheckModel:
  """Loads a MiniCheck checkpoint (see the module docstring); input length
  and chunk size default to MiniCheck's for the variant."""
  variant = check_minicheck(model_path, tokenizer_path)
  length = max_input_tokens or variant.max_input_tokens
  if variant.seq2seq:
    scorer = t5_nli.load_t5_nli(model_path, dtype, device, length, token_budget,
                                tokenizer_path=tokenizer_path,
                                label_ids=(T5_LABEL_IDS[1], T5_LABEL_IDS[0]),
                                decoder_start_id=T5_DECODER_START_ID)
  else:
    scorer = nli_classifier.load_nli_classifier(
        model_path, dtype, device, length, token_budget, tokenizer_path=tokenizer_path,
        positive_id=SUPPORTED_LABEL_ID)
  return MiniCheckModel(variant, scorer, chunk_size or variant.chunk_size,
                        sentence_splitter(), model_path)


class MiniCheckModelHandler(LocalModelHandler):
  """RunInference handler of the minicheck family (see
  models.token_budget.LocalModelHandler). A blank document's example comes back as a
  ScoringFailure."""

  metrics_namespace = "autoais_minicheck"
  load = staticmethod(load_minicheck)


def describe_minicheck(model_path: str, max_input_tokens: Optional[int],
                       tokenizer_path: Optional[str] = None,
                       chunk_size: Optional[int] = None) -> Dict[str, Any]:
  """What run.json records of a MiniCheck checkpoint, read on a worker without
  loading its weights: the variant and its settings, the label ids, the
  sentence splitter, the checksums."""
  local_dir = checkpoints.local_model_dir(model_path)
  names = nli_classifier.CLASSIFIER_TOKENIZER_FILES
  tokenizer_dir, tokenizer = checkpoints.open_tokenizer(model_path, tokenizer_path, names)
  config = checkpoints.read_model_json(local_dir)
  variant = variant_of(config, model_path)
  if variant.seq2seq:
    pieces = tokenizer.convert_ids_to_tokens(list(T5_LABEL_IDS))
    labels = {"label_token_ids": list(T5_LABEL_IDS), "label_tokens": pieces,
              "supported_token_id": T5_LABEL_IDS[1],
              "decoder_start_token_id": T5_DECODER_START_ID}
  else:
    labels = {"supported_label_id": SUPPORTED_LABEL_ID}
  return {
      "variant": variant.name,
      "model_type": config.get("model_type"),
      "architectures": config.get("architectures"),
      **labels,
      **checkpoints.checkpoint_checksums(local_dir, tokenizer_dir, tokenizer_path or model_path,
                                    names + ("merges.txt",)),
      "max_input_tokens": max_input_tokens or variant.max_input_tokens,
      "chunk_size": chunk_size or variant.chunk_size,
      "chunk_unit": variant.chunk_unit,
      "input_format": f"{variant.prefix}{{doc}}{tokenizer.eos_token}{{claim}}",
      "sentence_splitter": sentence_splitter().describe(),
      **simulated_device.describe(local_dir),
  }
