"""Random-weight (and briefly trained) T5 and mT5 models with their own
SentencePiece vocabulary, for tests and benchmarks (no network, no model hub).

    build_random_t5(directory, texts)                      # as TRUE's is published
    build_random_t5(directory, texts, vocabulary="digits", layout="saved")
    build_random_t5(directory, texts, version="1.1")       # untied, gated-GELU
    build_random_t5(directory, texts, model_type="mt5")    # an mT5 checkpoint
    train_nli_t5(directory, [(input_text, "1" or "0"), ...], steps=300)

Vocabularies (`vocabulary`):
  * "t5" (default): trained with "0" kept out of word-initial position, so that,
    as in T5's own vocabulary, "1" is the piece `▁1` and "0" is `▁` then `0`
    (T5: ids 209; 3, 632). The label pieces are then `▁1` and `▁`.
  * "digits": lines of "1"/"0" make both `▁1` and `▁0` pieces.
  * "no-digits": no digit ever starts a word, so "1" and "0" both start with
    `▁` (a tokenizer an NLI model cannot use).

Layouts (`layout`):
  * "published" (default): as `google/t5_xxl_true_nli_mixture` is published -
    config.json, generation_config.json, the weights in shards
    `model-0000N-of-0000M.safetensors` with `model.safetensors.index.json`, and
    the tokenizer as `spiece.model` + `tokenizer_config.json` (T5Tokenizer, 100
    extra ids, model_max_length 512) + `special_tokens_map.json`, no
    tokenizer.json. transformers builds the fast tokenizer from spiece.model
    when it loads the directory.
  * "saved": one `model.safetensors` and a `tokenizer.json` (a `tokenizers`
    Unigram from the SentencePiece pieces and scores, set up as T5's fast
    tokenizer is: Metaspace "▁", "</s>" appended), as `save_pretrained` of a
    fast tokenizer writes it.

Versions: "1.0" (T5 v1.0: tied input/output embeddings, ReLU feed-forward) and
"1.1" (T5 v1.1 / mT5: untied, gated-GELU).

What the fixtures rebuild of the real checkpoint: the file layout, the
tokenizer files and their settings, the split of "0", the special-token ids
(pad 0, eos 1, unk 2) and the padded embedding; not its size or its weights.
"""
import json
import os
import re
import shutil
import tempfile
from typing import Iterable, Optional, Sequence, Tuple

PAD_ID, EOS_ID, UNK_ID = 0, 1, 2
EXTRA_IDS = 100
VOCABULARIES = ("t5", "digits", "no-digits")
LAYOUTS = ("published", "saved")
# About this many shards in a published-layout fixture (the embedding, the
# largest tensor, takes one of its own).
PUBLISHED_SHARDS = 3

_WORD_INITIAL_DIGIT = re.compile(r"(?<!\S)[0-9]")
_WORD_INITIAL_ZERO = re.compile(r"(?<!\S)0")


def _training_lines(texts: Iterable[str], vocabulary: str):
  for text in texts:
    text = text.replace("\n", " ")
    if vocabulary == "t5":
      text = _WORD_INITIAL_ZERO.sub("", text)
    elif vocabulary == "no-digits":
      text = _WORD_INITIAL_DIGIT.sub("", text)
    yield text
  for _ in range(200):
    if vocabulary == "digits":
      yield "1 0 0 1 answer 1 label 0"
    elif vocabulary == "t5":
      # "1" starts words, "0" only continues them (10, 100, 2010).
      yield "1 answer 1 label 10 2010 100 1"
    else:
      yield "answer label 10 2010 100"


def train_sentencepiece(texts: Iterable[str], model_prefix: str, vocab_size: int,
                        vocabulary: str = "t5") -> str:
  """Trains a unigram SentencePiece model; returns the .model path."""
  import sentencepiece as spm  # pylint: disable=import-outside-toplevel
  if vocabulary not in VOCABULARIES:
    raise ValueError(f"vocabulary {vocabulary!r}: one of {VOCABULARIES}")
  with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False,
                                   encoding="utf-8") as corpus:
    for line in _training_lines(texts, vocabulary):
      corpus.write(line + "\n")
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


def write_published_tokenizer(spm_model: str, directory: str,
                              model_max_length: int = 512) -> int:
  """Writes the tokenizer files of a published T5 checkpoint to `directory`:
  spiece.model, tokenizer_config.json and special_tokens_map.json, no
  tokenizer.json. Returns the tokenizer's size (pieces + extra ids)."""
  import sentencepiece as spm  # pylint: disable=import-outside-toplevel
  os.makedirs(directory, exist_ok=True)
  if os.path.abspath(spm_model) != os.path.abspath(os.path.join(directory,
                                                                "spiece.model")):
    shutil.copyfile(spm_model, os.path.join(directory, "spiece.model"))
  extra = [f"<extra_id_{i}>" for i in range(EXTRA_IDS)]
  special = {"eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>",
             "additional_special_tokens": extra}
  with open(os.path.join(directory, "tokenizer_config.json"), "w",
            encoding="utf-8") as f:
    json.dump({**special, "extra_ids": EXTRA_IDS, "model_max_length": model_max_length,
               "sp_model_kwargs": {}, "tokenizer_class": "T5Tokenizer"}, f, indent=2)
  with open(os.path.join(directory, "special_tokens_map.json"), "w",
            encoding="utf-8") as f:
    json.dump(special, f, indent=2)
  return spm.SentencePieceProcessor(model_file=spm_model).get_piece_size() + EXTRA_IDS


def save_model(model, directory: str, layout: str = "published") -> None:
  """Writes the model's config, generation config and weights: in the
  published layout as about PUBLISHED_SHARDS safetensors shards with their
  index. config.json says `tie_word_embeddings` as the published files do
  (transformers 5 writes `true` and a `scale_decoder_outputs` of its own for
  every T5; a v1.1 checkpoint written by the releases it was published with
  says `false`, and transformers 5 reads that as "do not scale")."""
  if layout == "published":
    size = sum(p.numel() * p.element_size() for p in model.state_dict().values())
    model.save_pretrained(directory, max_shard_size=size // (PUBLISHED_SHARDS + 1) + 1)
  else:
    model.save_pretrained(directory, max_shard_size=10 ** 12)
  path = os.path.join(directory, "config.json")
  with open(path, encoding="utf-8") as f:
    config = json.load(f)
  config.pop("scale_decoder_outputs", None)
  config["tie_word_embeddings"] = model.lm_head.weight is model.shared.weight
  with open(path, "w", encoding="utf-8") as f:
    json.dump(config, f, indent=2, sort_keys=True)
    f.write("\n")


def build_random_t5(directory: str, texts: Iterable[str], *, vocab_size: int = 1000,
                    model_vocab_size: Optional[int] = None, d_model: int = 32,
                    d_kv: int = 8, d_ff: int = 64, num_layers: int = 2,
                    num_heads: int = 4, seed: int = 0, vocabulary: str = "t5",
                    layout: str = "published", version: str = "1.0",
                    model_max_length: int = 512, model_type: str = "t5") -> str:
  """Writes a random-weight T5ForConditionalGeneration (or, with model_type
  "mt5", MT5ForConditionalGeneration) and its tokenizer to `directory` (see
  the module docstring). `model_vocab_size` pads the embedding (T5: 32128)."""
  import torch  # pylint: disable=import-outside-toplevel
  import transformers  # pylint: disable=import-outside-toplevel
  if layout not in LAYOUTS:
    raise ValueError(f"layout {layout!r}: one of {LAYOUTS}")
  if version not in ("1.0", "1.1"):
    raise ValueError(f"version {version!r}: 1.0 or 1.1")
  prefix = {"t5": "T5", "mt5": "MT5"}[model_type]
  config_class = getattr(transformers, f"{prefix}Config")
  model_class = getattr(transformers, f"{prefix}ForConditionalGeneration")
  os.makedirs(directory, exist_ok=True)
  with tempfile.TemporaryDirectory() as scratch:
    spm_model = train_sentencepiece(texts, os.path.join(scratch, "spiece"), vocab_size,
                                    vocabulary)
    if layout == "published":
      tokenizer_size = write_published_tokenizer(spm_model, directory, model_max_length)
    else:
      tokenizer = fast_tokenizer(spm_model, model_max_length)
      tokenizer.save_pretrained(directory)
      tokenizer_size = len(tokenizer)
  tied = version == "1.0"
  config = config_class(
      vocab_size=max(model_vocab_size or 0, tokenizer_size), d_model=d_model, d_kv=d_kv,
      d_ff=d_ff, num_layers=num_layers, num_decoder_layers=num_layers,
      num_heads=num_heads, pad_token_id=PAD_ID, eos_token_id=EOS_ID,
      decoder_start_token_id=PAD_ID,
      feed_forward_proj="relu" if tied else "gated-gelu", tie_word_embeddings=tied)
  torch.manual_seed(seed)
  model = model_class(config)
  if not tied:
    # transformers 5 ties the output layer to the embedding at construction;
    # a v1.1 checkpoint has an output layer of its own.
    model.lm_head.weight = torch.nn.Parameter(
        torch.randn(config.vocab_size, d_model) * d_model ** -0.5)
  model.eval()
  save_model(model, directory, layout)
  return directory


def train_nli_t5(directory: str, examples: Sequence[Tuple[str, str]], *,
                 steps: int = 300, batch_size: int = 16, learning_rate: float = 3e-3,
                 seed: int = 0, max_input_tokens: int = 256,
                 layout: str = "published") -> str:
  """Trains the model in `directory` for `steps` steps on (input text, "1" or
  "0") pairs, with the targets tokenised as its tokenizer does, and writes it
  back in `layout`. A few hundred steps of a tiny model give greedy answers
  that mix "1" and "0" (check it: how well it learns is not the point)."""
  import random  # pylint: disable=import-outside-toplevel
  import torch  # pylint: disable=import-outside-toplevel
  from transformers import AutoModelForSeq2SeqLM, AutoTokenizer  # pylint: disable=import-outside-toplevel
  tokenizer = AutoTokenizer.from_pretrained(directory)
  model = AutoModelForSeq2SeqLM.from_pretrained(directory)
  torch.manual_seed(seed)
  rng = random.Random(seed)
  optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
  model.train()
  order = list(range(len(examples)))
  position = len(order)
  for _ in range(steps):
    if position + batch_size > len(order):
      rng.shuffle(order)
      position = 0
    batch = [examples[i] for i in order[position:position + batch_size]]
    position += batch_size
    inputs = tokenizer([text for text, _ in batch], return_tensors="pt", padding=True,
                       truncation=True, max_length=max_input_tokens)
    labels = tokenizer([label for _, label in batch], return_tensors="pt",
                       padding=True).input_ids
    labels[labels == tokenizer.pad_token_id] = -100
    loss = model(**inputs, labels=labels).loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
  model.eval()
  for name in os.listdir(directory):
    if name.endswith(".safetensors") or name == "model.safetensors.index.json":
      os.unlink(os.path.join(directory, name))
  save_model(model, directory, layout)
  return directory
