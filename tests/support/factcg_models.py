"""A tiny random FactCG-DeBERTa checkpoint in the layout
yaxili96/FactCG-DeBERTa-v3-Large is published in (no network, no hub).

    model = build_tiny_factcg(directory, texts)

The model is tests/support/nli_classifiers.py's tiny DeBERTa-v2 sequence
classifier (DebertaV2ForSequenceClassification, relative attention, no
absolute positions, no token types: DeBERTa-v3's shape, tiny, one attention
head) with a two-label head whose id2label and label2id config.json spells out
as transformers 4 wrote a head given no names (LABEL_0, LABEL_1; FactCG's code
reads label 1 as supported; transformers 5 leaves such default names out),
one model.safetensors. Rebuilt of the real tokenizer: DeBERTa-v3's
SentencePiece layout and settings (spm.model with [PAD] 0, [CLS] 1, [SEP] 2,
[UNK] 3, [MASK] added after the pieces; `[CLS] text [SEP]`; eos [SEP]; no
lower-casing), with spm.model beside tokenizer.json and tokenizer_config.json
as the published repository holds them (its special_tokens_map.json and
added_tokens.json, which transformers 5 no longer writes, are not). Not
rebuilt: its 128,000 pieces (the vocabulary here is trained on `texts` and
FactCG's template) or its weights.
"""
import json
import os
from typing import Iterable

from tests.support.nli_classifiers import build_tiny_classifier

FACTCG_ID = "yaxili96/FactCG-DeBERTa-v3-Large"
LABELS = {0: "LABEL_0", 1: "LABEL_1"}
ATTENTION_SCALE, CLASSIFIER_SCALE, VOCAB_SIZE = 32.0, 40.0, 3000
# One attention head: a 2048-token input's disentangled attention is most of
# a parity test's time.
SIZE = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 1,
        "intermediate_size": 64}
TEMPLATE_WORDS = ("Choose your answer: based on the paragraph above can we conclude that "
                  "OPTIONS: - Yes - No I think the answer is")


def build_tiny_factcg(directory: str, texts: Iterable[str], seed: int = 0) -> str:
  """The checkpoint in `directory` (the module docstring); returns it."""
  from safetensors.torch import load_file, save_file  # pylint: disable=import-outside-toplevel
  from transformers import AutoTokenizer  # pylint: disable=import-outside-toplevel
  build_tiny_classifier(directory, "deberta-v2", LABELS,
                        list(texts) + [TEMPLATE_WORDS] * 50, model_max_length=512,
                        seed=seed, vocab_size=VOCAB_SIZE, attention_scale=ATTENTION_SCALE,
                        size=SIZE)
  AutoTokenizer.from_pretrained(directory).save_pretrained(directory)
  weights = os.path.join(directory, "model.safetensors")
  tensors = load_file(weights)
  # Scores spread over (0.5, 1) on the example texts, not one value.
  tensors["classifier.weight"] *= CLASSIFIER_SCALE
  tensors["classifier.bias"] *= 0
  save_file(tensors, weights, metadata={"format": "pt"})
  path = os.path.join(directory, "config.json")
  with open(path, encoding="utf-8") as f:
    config = json.load(f)
  config.update(id2label={str(k): v for k, v in LABELS.items()},
                label2id={v: k for k, v in LABELS.items()})
  with open(path, "w", encoding="utf-8") as f:
    json.dump(config, f, indent=2, sort_keys=True)
  assert os.path.exists(os.path.join(directory, "spm.model"))
  return directory
