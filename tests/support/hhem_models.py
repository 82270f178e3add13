"""A tiny random-weight HHEM-2.1-open checkpoint in its published layout, and
the tiny stand-in of its foundation model (no network, no hub).

    foundation, model = build_tiny_hhem(root, texts)

`foundation` (root/flan-t5-base) stands in for `google/flan-t5-base`, the
model HHEM's config.json names: config.json of a T5 v1.1 encoder-decoder
(Flan-T5's shape, tiny) and the tokenizer as T5 checkpoints publish it
(tests/support/t5_models.py: spiece.model + tokenizer_config.json with
"tokenizer_class": "T5Tokenizer", 100 extra ids, model_max_length 512, and
special_tokens_map.json; no tokenizer.json, so transformers builds the fast
tokenizer). Rebuilt of the real tokenizer: that layout and its settings, the
special ids (pad 0, eos 1, unk 2), "</s>" appended to every text, "<pad>"
read as the pad token where a text holds it (HHEM's prompt starts with it),
line breaks read as white space. Not rebuilt: its 32,000 pieces (the
vocabulary here is trained on `texts` and HHEM's prompt) or its weights.

`model` (root/hhem) is laid out as vectara/hallucination_evaluation_model is
published: config.json naming the HHEMv2 architecture, its remote-code
auto_map, `foundation` and `model_type` "HHEMv2" (PUBLISHED_CONFIG), and one
model.safetensors whose tensors are a T5ForTokenClassification's (encoder
and a two-label classifier) under the `t5.` prefix, named as transformers 4
saved them: the embedding once, as `t5.transformer.shared.weight` (the
encoder's tied copy left out). Its weights are random, with the classifier
scaled up so that scores spread over (0, 1).
"""
import json
import os
from typing import Iterable, Tuple

from tests.support.t5_models import EOS_ID, PAD_ID, train_sentencepiece, write_published_tokenizer

FOUNDATION_ID = "google/flan-t5-base"
HHEM_ID = "vectara/hallucination_evaluation_model"
PROMPT = ("<pad> Determine if the hypothesis is true given the premise?\n\n"
          "Premise: {text1}\n\nHypothesis: {text2}")
# As the hub's config.json has it, beside `foundation` and `prompt`.
PUBLISHED_CONFIG = {
    "architectures": ["HHEMv2ForSequenceClassification"],
    "auto_map": {"AutoConfig": "configuration_hhem_v2.HHEMv2Config",
                 "AutoModelForSequenceClassification":
                     "modeling_hhem_v2.HHEMv2ForSequenceClassification"},
    "model_type": "HHEMv2",
    "torch_dtype": "float32",
    "transformers_version": "4.39.3",
}


def build_tiny_hhem(root: str, texts: Iterable[str], *, d_model: int = 32,
                    num_layers: int = 2, num_heads: int = 4, seed: int = 0,
                    with_prompt: bool = True) -> Tuple[str, str]:
  """(foundation directory, HHEM directory) under `root` (the module
  docstring); `with_prompt`: config.json carries HHEM's prompt."""
  import torch  # pylint: disable=import-outside-toplevel
  from safetensors.torch import save_file  # pylint: disable=import-outside-toplevel
  from transformers import T5Config, T5ForTokenClassification  # pylint: disable=import-outside-toplevel
  foundation, model_dir = os.path.join(root, "flan-t5-base"), os.path.join(root, "hhem")
  os.makedirs(model_dir, exist_ok=True)
  prompt_words = PROMPT.replace("{text1}", "").replace("{text2}", "").replace("<pad>", "")
  spm_model = train_sentencepiece(list(texts) + [prompt_words] * 50,
                                  os.path.join(root, "spiece"), 1000)
  vocab_size = write_published_tokenizer(spm_model, foundation)
  config = T5Config(vocab_size=vocab_size, d_model=d_model, d_kv=d_model // num_heads,
                    d_ff=2 * d_model, num_layers=num_layers, num_decoder_layers=num_layers,
                    num_heads=num_heads, pad_token_id=PAD_ID, eos_token_id=EOS_ID,
                    decoder_start_token_id=PAD_ID, feed_forward_proj="gated-gelu",
                    tie_word_embeddings=False, architectures=["T5ForConditionalGeneration"])
  config.save_pretrained(foundation)
  torch.manual_seed(seed)
  model = T5ForTokenClassification(config).eval()
  with torch.no_grad():
    model.classifier.weight.mul_(2.0)
  tensors = {f"t5.{name}": tensor.contiguous() for name, tensor in model.state_dict().items()
             if name != "transformer.encoder.embed_tokens.weight"}
  save_file(tensors, os.path.join(model_dir, "model.safetensors"), metadata={"format": "pt"})
  published = dict(PUBLISHED_CONFIG, foundation=FOUNDATION_ID)
  if with_prompt:
    published["prompt"] = PROMPT
  with open(os.path.join(model_dir, "config.json"), "w", encoding="utf-8") as f:
    json.dump(published, f, indent=2, sort_keys=True)
  return foundation, model_dir
