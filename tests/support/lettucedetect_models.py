"""A tiny random-weight LettuceDetect checkpoint in its published layout (no
network, no hub).

    model_dir = build_tiny_lettucedetect(directory, texts)

Laid out as KRLabsOrg/lettucedect-base-modernbert-en-v1 is published:
config.json of a ModernBertForTokenClassification with two labels,
model.safetensors, and ModernBERT's tokenizer as its checkpoints ship it
(tokenizer.json, tokenizer_config.json). Rebuilt of
the real tokenizer: a byte-level BPE without a prefix space, NFC, the special
tokens [UNK] [CLS] [SEP] [PAD] [MASK] after the pieces, the pair template
`[CLS] A [SEP] B [SEP]` (three special tokens), no token types,
model_max_length 8192. Not rebuilt: its 50,000 pieces (trained here on
`texts` and the English prompt) or its weights, which are random (the head
scaled up so that token probabilities spread over (0, 1) and some tokens come
out unsupported).
"""
import json
import os
from typing import Iterable

LETTUCEDETECT_ID = "KRLabsOrg/lettucedect-base-modernbert-en-v1"
SPECIALS = ("[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]")


def _tokenizer(texts: Iterable[str], vocab_size: int):
  from tokenizers import (Tokenizer, decoders, models, normalizers, pre_tokenizers,  # pylint: disable=import-outside-toplevel
                          processors, trainers)
  from transformers import PreTrainedTokenizerFast  # pylint: disable=import-outside-toplevel
  tokenizer = Tokenizer(models.BPE())
  tokenizer.normalizer = normalizers.NFC()
  tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
  tokenizer.decoder = decoders.ByteLevel()
  tokenizer.train_from_iterator(texts, trainers.BpeTrainer(
      vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
  tokenizer.add_special_tokens(list(SPECIALS))
  cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
  tokenizer.post_processor = processors.TemplateProcessing(
      single="[CLS]:0 $A:0 [SEP]:0", pair="[CLS]:0 $A:0 [SEP]:0 $B:0 [SEP]:0",
      special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
  return PreTrainedTokenizerFast(
      tokenizer_object=tokenizer, unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]",
      pad_token="[PAD]", mask_token="[MASK]", model_max_length=8192,
      model_input_names=["input_ids", "attention_mask"], clean_up_tokenization_spaces=True)


def build_tiny_lettucedetect(directory: str, texts: Iterable[str], *, hidden: int = 32,
                             layers: int = 2, heads: int = 4, seed: int = 0,
                             vocab_size: int = 600) -> str:
  """`directory`, holding the checkpoint (the module docstring)."""
  import torch  # pylint: disable=import-outside-toplevel
  from transformers import ModernBertConfig, ModernBertForTokenClassification  # pylint: disable=import-outside-toplevel
  from autoais.models.lettucedetect import PROMPTS  # pylint: disable=import-outside-toplevel
  tokenizer = _tokenizer(list(texts) + [PROMPTS["en"][1]] * 20, vocab_size)
  tokenizer.save_pretrained(directory)
  config = ModernBertConfig(
      vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=2 * hidden,
      num_hidden_layers=layers, num_attention_heads=heads, global_attn_every_n_layers=2,
      local_attention=64, max_position_embeddings=8192,
      pad_token_id=tokenizer.pad_token_id, cls_token_id=tokenizer.cls_token_id,
      sep_token_id=tokenizer.sep_token_id, bos_token_id=tokenizer.cls_token_id,
      eos_token_id=tokenizer.sep_token_id, num_labels=2,
      architectures=["ModernBertForTokenClassification"])
  torch.manual_seed(seed)
  model = ModernBertForTokenClassification(config).eval()
  with torch.no_grad():
    model.classifier.weight.mul_(8.0)
  model.save_pretrained(directory, safe_serialization=True)
  with open(os.path.join(directory, "config.json"), encoding="utf-8") as f:
    assert json.load(f)["architectures"] == ["ModernBertForTokenClassification"]
  return directory
