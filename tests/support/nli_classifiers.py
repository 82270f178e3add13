"""Tiny random sequence-classification NLI checkpoints (RoBERTa, DeBERTa-v2)
with their own tokenizers trained here (no network, no hub), saved as
published: config.json, model.safetensors and the tokenizer.

    build_tiny_classifier(directory, "roberta", {0: "entailment", 1: "neutral", 2: "contradiction"})

RoBERTa gets a byte-level BPE trained with the `tokenizers` library
(`<s> A </s></s> B </s>`, saved as tokenizer.json and its settings). DeBERTa-v2
gets what microsoft/deberta-v3-* publish: a SentencePiece unigram `spm.model`
([PAD] 0, [CLS] 1, [SEP] 2, [UNK] 3; [MASK] added after the pieces) and a
tokenizer_config.json of {"do_lower_case": false, "vocab_type": "spm"} plus the
model_max_length that a fine-tuned checkpoint saved by transformers carries; no
tokenizer.json, so that transformers converts the SentencePiece model when it
loads it (`[CLS] A [SEP] B [SEP]`, eos `[SEP]`). `pair_ids(kind, tokenizer, premise_ids,
hypothesis_ids)` writes a pair input out by hand from that template, so a test
can build model inputs without the product's code.
"""
from typing import Dict, Iterable, List, Optional

ARCHITECTURES = ("roberta", "deberta-v2")
_ROBERTA_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]


def _roberta_tokenizer(texts: Iterable[str], model_max_length: int, vocab_size: int):
  from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers  # pylint: disable=import-outside-toplevel
  from transformers import PreTrainedTokenizerFast  # pylint: disable=import-outside-toplevel
  tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
  tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
  tokenizer.decoder = decoders.ByteLevel()
  tokenizer.train_from_iterator(texts, trainers.BpeTrainer(
      vocab_size=vocab_size, special_tokens=_ROBERTA_SPECIALS,
      initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
  tokenizer.post_processor = processors.RobertaProcessing(
      ("</s>", tokenizer.token_to_id("</s>")), ("<s>", tokenizer.token_to_id("<s>")))
  return PreTrainedTokenizerFast(
      tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", sep_token="</s>",
      cls_token="<s>", unk_token="<unk>", pad_token="<pad>", mask_token="<mask>",
      model_max_length=model_max_length)


def _deberta_v3_spm(texts: Iterable[str], directory: str, model_max_length: int,
                    vocab_size: int) -> None:
  """spm.model and tokenizer_config.json in `directory`, as DeBERTa-v3's."""
  import json  # pylint: disable=import-outside-toplevel
  import os  # pylint: disable=import-outside-toplevel
  import tempfile  # pylint: disable=import-outside-toplevel
  import sentencepiece as spm  # pylint: disable=import-outside-toplevel
  os.makedirs(directory, exist_ok=True)
  with tempfile.TemporaryDirectory() as scratch:
    corpus = os.path.join(scratch, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
      for text in texts:
        f.write(" ".join(text.split()) + "\n")
    spm.SentencePieceTrainer.train(
        input=corpus, model_prefix=os.path.join(scratch, "spm"), vocab_size=vocab_size,
        model_type="unigram", character_coverage=1.0, pad_id=0, pad_piece="[PAD]",
        bos_id=1, bos_piece="[CLS]", eos_id=2, eos_piece="[SEP]", unk_id=3,
        unk_piece="[UNK]", hard_vocab_limit=False, minloglevel=2, num_threads=2)
    os.replace(os.path.join(scratch, "spm.model"), os.path.join(directory, "spm.model"))
  with open(os.path.join(directory, "tokenizer_config.json"), "w", encoding="utf-8") as f:
    json.dump({"do_lower_case": False, "vocab_type": "spm",
               "model_max_length": model_max_length}, f)


def build_tiny_classifier(directory: str, kind: str, id2label: Dict[int, str],
                          texts: Iterable[str], model_max_length: int = 64,
                          seed: int = 0, attention_scale: float = 1.0,
                          size: Optional[Dict[str, int]] = None,
                          vocab_size: int = 600) -> str:
  """A random `kind` sequence classifier with head `id2label`, saved in
  `directory` (safetensors); returns the directory. `attention_scale`
  multiplies the attention's query, key and value weights: a random RoBERTa's
  first token otherwise attends to all tokens nearly alike, and its
  probabilities barely move from input to input. `size`: the encoder's shape
  (hidden_size, num_hidden_layers, num_attention_heads, intermediate_size;
  default a tiny one). `vocab_size`: the tokenizer's pieces (a few hundred
  cut words into several pieces each; bench/ asks for thousands, nearer a
  published vocabulary's pieces per word)."""
  import torch  # pylint: disable=import-outside-toplevel
  from transformers import (DebertaV2Config, DebertaV2ForSequenceClassification,  # pylint: disable=import-outside-toplevel
                            DebertaV2Tokenizer, RobertaConfig,
                            RobertaForSequenceClassification)
  texts = list(texts)
  labels = {"id2label": {int(k): v for k, v in id2label.items()},
            "label2id": {v: int(k) for k, v in id2label.items()}}
  size = size or {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
                  "intermediate_size": 64}
  torch.manual_seed(seed)
  if kind == "roberta":
    tokenizer = _roberta_tokenizer(texts, model_max_length, vocab_size)
    config = RobertaConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                           bos_token_id=tokenizer.cls_token_id,
                           eos_token_id=tokenizer.sep_token_id,
                           max_position_embeddings=model_max_length + 2, **size, **labels)
    model = RobertaForSequenceClassification(config)
  elif kind == "deberta-v2":
    _deberta_v3_spm(texts, directory, model_max_length, vocab_size)
    # By its class: AutoTokenizer finds it through config.json's model_type,
    # which is written below (as the product loads it).
    tokenizer = DebertaV2Tokenizer.from_pretrained(directory)
    config = DebertaV2Config(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                             max_position_embeddings=model_max_length,
                             relative_attention=True, position_buckets=16,
                             pos_att_type=["p2c", "c2p"], position_biased_input=False,
                             type_vocab_size=0, **size, **labels)
    model = DebertaV2ForSequenceClassification(config)
  else:
    raise ValueError(f"kind {kind!r}: one of {ARCHITECTURES}")
  with torch.no_grad():  # spread the head's outputs so probabilities vary
    for parameter in model.classifier.parameters():
      parameter.mul_(20.0)
    for name, parameter in model.named_parameters():
      if ".attention." in name and name.endswith(("query.weight", "key.weight",
                                                  "value.weight", "query_proj.weight",
                                                  "key_proj.weight", "value_proj.weight")):
        parameter.mul_(attention_scale)
  model.eval()
  model.save_pretrained(directory, safe_serialization=True)
  if kind == "roberta":
    tokenizer.save_pretrained(directory)
  return directory


def pair_ids(kind: str, tokenizer, premise_ids: List[int],
             hypothesis_ids: List[int]) -> List[int]:
  """The model input of a (premise, hypothesis) pair from the kind's template."""
  if kind == "roberta":
    cls, sep = tokenizer.convert_tokens_to_ids(["<s>", "</s>"])
    return [cls] + premise_ids + [sep, sep] + hypothesis_ids + [sep]
  cls, sep = tokenizer.convert_tokens_to_ids(["[CLS]", "[SEP]"])
  return [cls] + premise_ids + [sep] + hypothesis_ids + [sep]
