"""Vectara's HHEM-2.1-open (`--scorer hhem`) as a Beam ModelHandler, from its
checkpoint as published (config.json naming HHEMv2 and its `foundation`; the
weights of a T5ForTokenClassification under the `t5.` prefix) without its
remote code. The foundation (`--tokenizer`, else config.json's) gives the
tokenizer and the shape. An example is HHEM's prompt filled with the premise
and the hypothesis, tokenised whole and scored whole however long, as HHEM's
own code does (no truncation, no windows: T5's relative positions take any
length); the score is the head's softmax at the first position, P(class 1).
Batches and probabilities are NliClassifierModel's, one input per example."""
import types
from typing import List, Optional, Sequence, Tuple

from autoais.models import checkpoints, hub, nli_classifier, simulated_device
from autoais.models.t5_nli import FLOAT16_REFUSED
from autoais.models.token_budget import (DEFAULT_TOKEN_BUDGET, LocalModelHandler,
                                         check_device, check_dtype, load_weights,
                                         resolve_max_input_tokens)
from autoais.schemas import AttributionExample
from autoais.schemas.errors import ModelError

ARCHITECTURE = "HHEMv2ForSequenceClassification"
PROMPT = ("<pad> Determine if the hypothesis is true given the premise?\n\n"
          "Premise: {text1}\n\nHypothesis: {text2}")
CONSISTENT_LABEL_ID = 1


def check_hhem(model_path: str, tokenizer_path: Optional[str]) -> Tuple[str, str]:
  """(prompt, foundation) of an HHEM checkpoint, read without loading it
  (listing and JSON, also gs:// and the hub): safetensors weights, config.json
  naming the architecture, a prompt of {text1} and {text2} (HHEM's where it
  has none), the foundation (`tokenizer_path`, else config.json's hub id,
  pinned) with a tokenizer and config.json."""
  checkpoints.model_files(model_path)
  config = checkpoints.read_model_json(model_path)
  if ARCHITECTURE not in (config.get("architectures") or []):
    raise ModelError(f"--model {model_path}: config.json's architectures "
                     f"({', '.join(map(str, config.get('architectures') or [])) or 'none'})"
                     f" do not name {ARCHITECTURE}: --scorer hhem reads HHEM-2 checkpoints")
  prompt, named = config.get("prompt") or PROMPT, config.get("foundation")
  try:
    prompt.format(text1="", text2="")
  except (KeyError, IndexError, ValueError, AttributeError) as error:
    raise ModelError(f"--model {model_path}: config.json's prompt is not a template of "
                     f"{{text1}} and {{text2}}: {error!r}") from error
  foundation = tokenizer_path or (isinstance(named, str) and hub.pin(
      named, None, "--tokenizer", "--tokenizer_revision"))
  if not foundation:
    raise ModelError(f"--model {model_path}: config.json names no foundation; name it "
                     "(a directory or hub id) with --tokenizer")
  if "config.json" not in checkpoints.tokenizer_files(foundation):
    raise ModelError(f"--tokenizer {foundation}: no config.json (HHEM's shape is its "
                     "foundation's)")
  return prompt, foundation


class HhemModel(nli_classifier.NliClassifierModel):
  """A loaded HHEM: the prompt's text per example, tokenised whole."""

  def __init__(self, model, tokenizer, device: str, token_budget: int, prompt: str):
    super().__init__(_FirstPosition(model), tokenizer, device,
                     resolve_max_input_tokens(tokenizer, None), token_budget,
                     CONSISTENT_LABEL_ID)
    self.prompt = prompt

  def encode_many(self, examples: Sequence[AttributionExample]
                  ) -> List[nli_classifier.EncodedPair]:
    texts = [self.prompt.format(text1=e.premise, text2=e.hypothesis) for e in examples]
    return [nli_classifier.EncodedPair([{"input_ids": ids}], False)
            for ids in self.tokenizer.input_ids(texts)]


class _FirstPosition:  # pylint: disable=too-few-public-methods
  """The token classifier's logits at the first position, as a classifier's."""

  def __init__(self, model):
    self.model = model

  def __call__(self, input_ids, attention_mask):
    states = self.model.transformer(input_ids=input_ids, attention_mask=attention_mask)
    return types.SimpleNamespace(logits=self.model.classifier(states[0][:, 0]))


def load_hhem(model_path: str, dtype: str = "float32", device: str = "cpu",
              token_budget: Optional[int] = None, *,
              tokenizer_path: Optional[str] = None) -> HhemModel:
  """Loads an HHEM checkpoint: every tensor of the token classifier from its
  weights, in the shape of the foundation's T5 config (others refused)."""
  from transformers import T5Config, T5ForTokenClassification  # pylint: disable=import-outside-toplevel
  check_dtype(dtype, FLOAT16_REFUSED)
  check_device(device)
  prompt, foundation = check_hhem(model_path, tokenizer_path)
  foundation_dir, tokenizer = checkpoints.open_tokenizer(model_path, foundation)
  local_dir = checkpoints.local_model_dir(model_path)
  model, loading = load_weights(
      T5ForTokenClassification, local_dir, dtype, device,
      config=T5Config.from_pretrained(foundation_dir), key_mapping={r"^t5\.": ""},
      output_loading_info=True, ignore_mismatched_sizes=True, takes_simulated_device=True)
  wrong = {kind: sorted(map(str, loading[kind])) for kind in
           ("missing_keys", "unexpected_keys", "mismatched_keys") if loading[kind]}
  if wrong:
    raise ModelError(f"--model {model_path}: its weights are not those of a "
                     f"T5ForTokenClassification of {foundation}'s shape: {wrong}")
  loaded = HhemModel(model, tokenizer, device, token_budget or DEFAULT_TOKEN_BUDGET[device],
                     prompt)
  loaded.simulated_device = simulated_device.simulated(local_dir, device)
  return loaded


class HhemModelHandler(LocalModelHandler):
  """RunInference handler of the hhem family (see LocalModelHandler)."""

  metrics_namespace = "autoais_hhem"
  load = staticmethod(load_hhem)
  float16_refused = FLOAT16_REFUSED


def describe_hhem(model_path: str, tokenizer_path: Optional[str] = None) -> dict:
  """What run.json records of an HHEM checkpoint, read on a worker without
  loading its weights."""
  prompt, foundation = check_hhem(model_path, tokenizer_path)
  local_dir = checkpoints.local_model_dir(model_path)
  foundation_dir = checkpoints.local_tokenizer_dir(model_path, foundation)
  named = hub.pinned(foundation)
  return {"architectures": [ARCHITECTURE],
          "foundation": named.repo_id if named else foundation, "prompt": prompt,
          "consistent_label_id": CONSISTENT_LABEL_ID, "input_length": "whole",
          **checkpoints.checkpoint_checksums(local_dir, foundation_dir, foundation),
          **simulated_device.describe(local_dir)}
