"""Random-weight T5 and mT5 models with their own SentencePiece vocabulary, for
tests and benchmarks (no network, no model hub).

    build_random_t5(directory, texts, d_model=32, ...)  # -> directory
    build_random_t5(directory, texts, model_type="mt5")  # an mT5 checkpoint

The vocabulary is trained with SentencePiece on `texts` and served through a
`tokenizers` Unigram model wrapped in PreTrainedTokenizerFast, set up the way
T5's own fast tokenizer is (Metaspace "▁", "</s>" appended). In transformers 5,
T5Tokenizer(vocab_file=<custom .model>) splits "1" into "▁" + unknown; this
construction gives the piece "▁1" as T5's vocabulary does.
"""
import os
import tempfile
from typing import Iterable, Optional

PAD_ID, EOS_ID, UNK_ID = 0, 1, 2


def train_sentencepiece(texts: Iterable[str], model_prefix: str, vocab_size: int,
                        digits: bool = True) -> str:
  """Trains a unigram SentencePiece model; returns the .model path.

  With `digits`, lines of "1"/"0" make sure "▁1" and "▁0" are pieces.
  """
  import sentencepiece as spm  # pylint: disable=import-outside-toplevel
  with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False,
                                   encoding="utf-8") as corpus:
    for text in texts:
      corpus.write(text.replace("\n", " ") + "\n")
    if digits:
      for _ in range(200):
        corpus.write("1 0 0 1 answer 1 label 0\n")
  try:
    spm.SentencePieceTrainer.train(
        input=corpus.name, model_prefix=model_prefix, vocab_size=vocab_size,
        model_type="unigram", character_coverage=1.0, pad_id=PAD_ID, eos_id=EOS_ID,
        unk_id=UNK_ID, bos_id=-1, hard_vocab_limit=False, minloglevel=2,
        num_threads=2)
  finally:
    os.unlink(corpus.name)
  return model_prefix + ".model"


def fast_tokenizer(spm_model: str, model_max_length: int = 512):
  """A PreTrainedTokenizerFast equivalent to T5's, from a SentencePiece model."""
  import sentencepiece as spm  # pylint: disable=import-outside-toplevel
  from tokenizers import Regex, Tokenizer, decoders, models, normalizers  # pylint: disable=import-outside-toplevel
  from tokenizers import pre_tokenizers, processors  # pylint: disable=import-outside-toplevel
  from transformers import PreTrainedTokenizerFast  # pylint: disable=import-outside-toplevel
  processor = spm.SentencePieceProcessor(model_file=spm_model)
  vocab = [(processor.id_to_piece(i), processor.get_score(i))
           for i in range(processor.get_piece_size())]
  tokenizer = Tokenizer(models.Unigram(vocab, unk_id=UNK_ID, byte_fallback=False))
  tokenizer.normalizer = normalizers.Sequence(
      [normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " ")])
  tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁",
                                                     prepend_scheme="always")
  tokenizer.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
  tokenizer.post_processor = processors.TemplateProcessing(
      single="$A </s>", pair="$A </s> $B </s>",
      special_tokens=[("</s>", EOS_ID)])
  return PreTrainedTokenizerFast(
      tokenizer_object=tokenizer, eos_token="</s>", unk_token="<unk>",
      pad_token="<pad>", model_max_length=model_max_length)


def build_random_t5(directory: str, texts: Iterable[str], *, vocab_size: int = 1000,
                    model_vocab_size: Optional[int] = None, d_model: int = 32,
                    d_kv: int = 8, d_ff: int = 64, num_layers: int = 2,
                    num_heads: int = 4, seed: int = 0, digits: bool = True,
                    model_max_length: int = 512, model_type: str = "t5") -> str:
  """Writes a random-weight T5ForConditionalGeneration (or, with model_type
  "mt5", MT5ForConditionalGeneration) in safetensors, and its tokenizer, to
  `directory`. `model_vocab_size` pads the embedding (T5: 32128)."""
  import torch  # pylint: disable=import-outside-toplevel
  import transformers  # pylint: disable=import-outside-toplevel
  prefix = {"t5": "T5", "mt5": "MT5"}[model_type]
  config_class = getattr(transformers, f"{prefix}Config")
  model_class = getattr(transformers, f"{prefix}ForConditionalGeneration")
  os.makedirs(directory, exist_ok=True)
  spm_model = train_sentencepiece(texts, os.path.join(directory, "spiece"), vocab_size,
                                  digits=digits)
  tokenizer = fast_tokenizer(spm_model, model_max_length)
  tokenizer.save_pretrained(directory)
  config = config_class(
      vocab_size=max(model_vocab_size or 0, len(tokenizer)), d_model=d_model, d_kv=d_kv,
      d_ff=d_ff, num_layers=num_layers, num_decoder_layers=num_layers,
      num_heads=num_heads, pad_token_id=PAD_ID, eos_token_id=EOS_ID,
      decoder_start_token_id=PAD_ID, feed_forward_proj="relu",
      tie_word_embeddings=True)
  torch.manual_seed(seed)
  model = model_class(config)
  model.eval()
  model.save_pretrained(directory)
  return directory
