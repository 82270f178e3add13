"""FactCG-DeBERTa (`--scorer factcg`), a two-label DeBERTa-v2 classifier, scored
as FactCG's `Inferencer` scores it: the document's sentences (models/sentences.py)
packed in order into chunks of at most CHUNK_WORDS words (NLTK's Treebank words
of each sentence's sentences), joined by line breaks; a sentence that would pass
the size closes the chunk (an empty one where it comes first); the last chunk
has " \\n " read as a line break, and is stripped. TEMPLATE per chunk, one text
cut at its end past MAX_INPUT_TOKENS; softmax P(label 1), max over chunks. A
blank document has no chunk: a ScoringFailure (FactCG's code fails on it)."""
from typing import List, Optional, Sequence

from autoais.models import checkpoints, nli_classifier, simulated_device
from autoais.models.sentences import sentence_splitter
from autoais.models.token_budget import LocalModelHandler, TextCache
from autoais.schemas import AttributionExample
from autoais.schemas.errors import ModelError

ARCHITECTURE = "DebertaV2ForSequenceClassification"
TEMPLATE = ('{doc}\n\nChoose your answer: based on the paragraph above can we conclude '
            'that "{claim}"?\n\nOPTIONS:\n- Yes\n- No\nI think the answer is ')
MAX_INPUT_TOKENS, CHUNK_WORDS, SUPPORTED_LABEL_ID = 2048, 550, 1
# Characters of recent documents whose chunks are kept (18% of a whole
# evaluate run on a simulated DeBERTa-v3-large: bench/README.md).
CHUNK_CACHE_CHARS = 1 << 23
_FILES = nli_classifier.CLASSIFIER_TOKENIZER_FILES
_BLANK = nli_classifier.BLANK_DOCUMENT.format(family="factcg", reference="FactCG")


def check_factcg(model_path: str, tokenizer_path: Optional[str]) -> None:
  """Launch-time checks (listing and config.json): safetensors, a tokenizer,
  a two-label DeBERTa-v2 sequence classifier."""
  checkpoints.check_model_and_tokenizer(model_path, tokenizer_path, _FILES, hint="")
  config = checkpoints.read_model_json(model_path)
  if ARCHITECTURE not in (config.get("architectures") or []) or len(
      config.get("id2label") or {0: 0, 1: 1}) != 2:
    raise ModelError(f"--model {model_path}: not a two-label {ARCHITECTURE} (config.json): "
                     "--scorer factcg reads FactCG-DeBERTa checkpoints")


class FactcgModel(nli_classifier.NliClassifierModel):
  """A loaded FactCG: chunks (cached per document), one input per chunk."""

  def __init__(self, *args):
    from nltk.tokenize.destructive import NLTKWordTokenizer  # pylint: disable=import-outside-toplevel
    super().__init__(*args)
    self.splitter, self._words = sentence_splitter(), NLTKWordTokenizer()
    self._chunks = TextCache(CHUNK_CACHE_CHARS)

  def chunks(self, document: str) -> List[str]:
    found = self._chunks.found([document])[0].get(document)
    if found is None:
      chunks, chunk, size = [], "", 0
      for sentence in self.splitter.split(document):
        words = sum(len(self._words.tokenize(part)) for part in self.splitter.split(sentence))
        if size + words > CHUNK_WORDS:
          chunks.append(chunk.strip("\n"))
          chunk, size = sentence, words
        else:
          chunk, size = f"{chunk}\n{sentence}".strip("\n"), size + words
      if size:
        chunks.append(chunk.replace(" \n ", "\n").strip("\n").strip())
      found = tuple(chunks)
      self._chunks.put(document, found)
    return list(found)

  def encode_many(self, examples: Sequence[AttributionExample]
                  ) -> List[nli_classifier.EncodedPair]:
    chunks = [self.chunks(example.premise) for example in examples]
    texts = [TEMPLATE.format(doc=chunk, claim=example.hypothesis)
             for example, pieces in zip(examples, chunks) for chunk in pieces]
    ids = iter(self.tokenizer.input_ids(texts))
    encoded = []
    for pieces in chunks:
      windows = [next(ids) for _ in pieces]
      cut = [len(item) > MAX_INPUT_TOKENS for item in windows]
      encoded.append(nli_classifier.EncodedPair(
          [{"input_ids": item[:MAX_INPUT_TOKENS - 1] + item[-1:] if long else item}
           for item, long in zip(windows, cut)], len(windows) > 1 or any(cut), _BLANK))
    return encoded


def load_factcg(model_path: str, dtype: str = "float32", device: str = "cpu",
                token_budget: Optional[int] = None, *,
                tokenizer_path: Optional[str] = None) -> FactcgModel:
  check_factcg(model_path, tokenizer_path)
  return nli_classifier.load_nli_classifier(
      model_path, dtype, device, MAX_INPUT_TOKENS, token_budget, tokenizer_path=tokenizer_path,
      positive_id=SUPPORTED_LABEL_ID, model_class=FactcgModel)


class FactcgModelHandler(LocalModelHandler):  # pylint: disable=missing-class-docstring
  metrics_namespace = "autoais_factcg"
  load = staticmethod(load_factcg)


def describe_factcg(model_path: str, tokenizer_path: Optional[str] = None) -> dict:
  """What run.json records, read on a worker without loading the weights."""
  check_factcg(model_path, tokenizer_path)
  local_dir = checkpoints.local_model_dir(model_path)
  tokenizer_dir = checkpoints.local_tokenizer_dir(model_path, tokenizer_path, _FILES)
  return {"architectures": [ARCHITECTURE], "template": TEMPLATE,
          "supported_label_id": SUPPORTED_LABEL_ID, "max_input_tokens": MAX_INPUT_TOKENS,
          "chunk_words": CHUNK_WORDS, "sentence_splitter": sentence_splitter().describe(),
          **checkpoints.checkpoint_checksums(local_dir, tokenizer_dir,
                                             tokenizer_path or model_path, _FILES),
          **simulated_device.describe(local_dir)}
