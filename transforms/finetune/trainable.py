"""A detector's model while `autoais finetune` trains it (SPEC 5.12): the base
loaded for its family, the loss of a batch, the scorer's own model around it
for validation, checkpoints, and the trained model saved in the layout the
scorers load.

    trainable = load_trainable("nli-classifier", base_dir, seed=0, lora_rank=0)
    loss = trainable.loss(batch)            # batch: [(premise, hypothesis, label)]
    scores = trainable.scores(examples)     # nli_score as the scorer computes it
    trainable.save(directory)               # config.json, model.safetensors, tokenizer

Families:

* t5: a T5 / mT5 (AutoModelForSeq2SeqLM) trained as TRUE is: the input
  "premise: {premise} hypothesis: {hypothesis}", the target "1" or "0" as the
  tokenizer encodes it (with its end of sequence), teacher-forced cross
  entropy. Scored by models/t5_nli.py's T5NliModel: P("1") renormalised over
  the first pieces of "1" and "0", from one encoder pass and one decoder step.
* nli-classifier: a sequence classifier (AutoModelForSequenceClassification)
  with a two-label head, 0 "not_entailment" and 1 "entailment" (a new head,
  initialised from the seed, unless the base's head already has those two
  labels), the pair encoded as its tokenizer encodes a text pair; cross
  entropy. Scored by models/nli_classifier.py's NliClassifierModel:
  P(entailment).

A training input longer than `max_input_tokens` loses the end of its premise,
never its hypothesis; scoring windows long premises as the scorers do.

LoRA (`lora_rank` > 0, peft): adapters on the attention projections peft
knows for the architecture (and, for a classifier, the head trained whole);
only they and the head train, and `save` merges them into the weights, so the
saved model is a plain checkpoint. Checkpoints (`checkpoint_tensors`,
`restore`) hold the trained parameters, the optimizer's state and torch's
random state as safetensors: nothing is pickled.
"""
import contextlib
import os
import shutil
from typing import Dict, List, Optional, Sequence, Tuple

from autoais.models import checkpoints
from autoais.schemas import AttributionExample
from autoais.schemas.errors import ModelError

T5 = "t5"
NLI_CLASSIFIER = "nli-classifier"
LABELS = {0: "not_entailment", 1: "entailment"}
TARGETS = ("0", "1")
# The files of a base that are its tokenizer, copied beside the trained weights
# as they are: the trained model tokenises exactly as its base.
TOKENIZER_FILE_NAMES = ("tokenizer.json", "tokenizer_config.json",
                        "special_tokens_map.json", "added_tokens.json", "spiece.model",
                        "spm.model", "sentencepiece.bpe.model", "vocab.json", "vocab.txt",
                        "merges.txt")
# What `save` writes besides the tokenizer files.
MODEL_FILES = {T5: ("config.json", "generation_config.json", "model.safetensors"),
               NLI_CLASSIFIER: ("config.json", "model.safetensors")}
_LORA_DROPOUT = 0.1


def tokenizer_file_names(base_dir: str) -> List[str]:
  return [name for name in TOKENIZER_FILE_NAMES
          if os.path.isfile(os.path.join(base_dir, name))]


def _two_label_head(config) -> bool:
  labels = {int(k): str(v).lower() for k, v in (config.id2label or {}).items()}
  return labels == LABELS


# Training inputs are cut at this many tokens unless --max_input_tokens says
# otherwise (fewer where the base's position table takes fewer).
DEFAULT_MAX_INPUT_TOKENS = 256


class Trainable:
  """A base model being trained for a family (see the module docstring)."""

  def __init__(self, family: str, base_dir: str, seed: int, lora_rank: int,
               device: str, max_input_tokens: Optional[int]):
    import torch  # pylint: disable=import-outside-toplevel
    from transformers import (AutoConfig, AutoModelForSeq2SeqLM,  # pylint: disable=import-outside-toplevel
                              AutoModelForSequenceClassification)
    # token_budget imports torch: not at import time (`autoais finetune --help`).
    from autoais.models.token_budget import position_table, resolve_max_input_tokens  # pylint: disable=import-outside-toplevel
    self.family = family
    self.base_dir = base_dir
    self.device = device
    self.tokenizer = checkpoints.load_tokenizer(base_dir, "--base", TOKENIZER_FILE_NAMES)
    # The input length validation scores at, and so the card's threshold is
    # calibrated at: the scorer's default for the model (not the training's).
    self.scoring_max_input_tokens = resolve_max_input_tokens(self.tokenizer, None)
    config = AutoConfig.from_pretrained(base_dir, trust_remote_code=False)
    # The seed fixes every weight the base does not hold (a new head, LoRA's A).
    torch.manual_seed(seed)
    if family == T5:
      model = AutoModelForSeq2SeqLM.from_pretrained(
          base_dir, use_safetensors=True, trust_remote_code=False, dtype=torch.float32)
      self.new_head = False
    else:
      self.new_head = not _two_label_head(config)
      model = AutoModelForSequenceClassification.from_pretrained(
          base_dir, use_safetensors=True, trust_remote_code=False, dtype=torch.float32,
          num_labels=2, id2label=dict(LABELS),
          label2id={name: index for index, name in LABELS.items()},
          ignore_mismatched_sizes=self.new_head)
    # An input past a learned position table fails inside the model, once a
    # long one comes ("index 130 is out of bounds", exit 1 mid-run): the
    # default length stops at the table, a longer one asked for is refused
    # here, before the output directory is claimed.
    table = position_table(model)
    if max_input_tokens is None:
      self.max_input_tokens = (DEFAULT_MAX_INPUT_TOKENS if table is None
                               else min(DEFAULT_MAX_INPUT_TOKENS, table[1]))
    elif table is not None and max_input_tokens > table[1]:
      raise ModelError(
          f"--max_input_tokens {max_input_tokens}: training inputs of up to that many "
          f"tokens, but the position table of --base ({table[0]}) takes at most "
          f"{table[1]}; give --max_input_tokens {table[1]} or less")
    else:
      self.max_input_tokens = max_input_tokens
    self.model = model  # the plain model (LoRA layers injected in place)
    self.trained = model  # what the optimizer and checkpoints see
    self.lora_rank = lora_rank
    if lora_rank:
      import peft  # pylint: disable=import-outside-toplevel
      task = peft.TaskType.SEQ_2_SEQ_LM if family == T5 else peft.TaskType.SEQ_CLS
      self.trained = peft.get_peft_model(model, peft.LoraConfig(
          task_type=task, r=lora_rank, lora_alpha=lora_rank,
          lora_dropout=_LORA_DROPOUT))
      self.model = self.trained.get_base_model()
    self.trained.to(device)
    if family == T5:
      self._targets = {label: self.tokenizer(TARGETS[label]).input_ids for label in (0, 1)}
    self._scorer = None

  # Training --------------------------------------------------------------------

  def parameters(self):
    return [p for p in self.trained.parameters() if p.requires_grad]

  def named_trained(self) -> List[Tuple[str, object]]:
    """The trained parameters by name (each tensor once: tied weights are one)."""
    return [(name, p) for name, p in self.trained.named_parameters() if p.requires_grad]

  def _t5_ids(self, premise: str, hypothesis: str) -> List[int]:
    text = f"premise: {premise} hypothesis: {hypothesis}"
    ids = self.tokenizer(text).input_ids
    if len(ids) <= self.max_input_tokens:
      return ids
    # Too long: the premise's end goes, the hypothesis (and EOS) stays whole.
    tail = self.tokenizer(f"hypothesis: {hypothesis}").input_ids
    head = self.tokenizer(f"premise: {premise}", add_special_tokens=False).input_ids
    return head[:max(self.max_input_tokens - len(tail), 0)] + tail

  def loss(self, batch: Sequence[Tuple[str, str, int]]):
    """The mean cross entropy of a batch of (premise, hypothesis, label)."""
    import torch  # pylint: disable=import-outside-toplevel
    self.trained.train()
    # bfloat16 on a GPU (T5 overflows in float16), the weights kept in float32.
    with (torch.autocast("cuda", dtype=torch.bfloat16) if self.device == "cuda"
          else contextlib.nullcontext()):
      return self._loss(batch)

  def _loss(self, batch: Sequence[Tuple[str, str, int]]):
    import torch  # pylint: disable=import-outside-toplevel
    if self.family == T5:
      inputs = [self._t5_ids(p, h) for p, h, _ in batch]
      targets = [self._targets[label] for _, _, label in batch]
      pad = self.tokenizer.pad_token_id
      width = max(map(len, inputs))
      ids = torch.tensor([row + [pad] * (width - len(row)) for row in inputs])
      mask = torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in inputs])
      target_width = max(map(len, targets))
      labels = torch.tensor([row + [-100] * (target_width - len(row)) for row in targets])
      output = self.trained(input_ids=ids.to(self.device),
                            attention_mask=mask.to(self.device),
                            labels=labels.to(self.device))
      return output.loss
    premises, hypotheses = [p for p, _, _ in batch], [h for _, h, _ in batch]
    try:
      # The premise's end goes first; the hypothesis stays whole.
      encoded = self.tokenizer(premises, hypotheses, truncation="only_first",
                               max_length=self.max_input_tokens, padding=True,
                               return_tensors="pt")
    except Exception:  # pylint: disable=broad-except
      # A hypothesis too long for the budget on its own: both are cut.
      encoded = self.tokenizer(premises, hypotheses, truncation="longest_first",
                               max_length=self.max_input_tokens, padding=True,
                               return_tensors="pt")
    labels = torch.tensor([label for _, _, label in batch])
    output = self.trained(**{k: v.to(self.device) for k, v in encoded.items()},
                          labels=labels.to(self.device))
    return output.loss

  # Scoring ---------------------------------------------------------------------

  def scores(self, pairs: Sequence[Tuple[str, str]]) -> List[float]:
    """nli_score of each (premise, hypothesis) as the family's scorer computes
    it, premise windows included, from the weights as they are now."""
    import torch  # pylint: disable=import-outside-toplevel
    from autoais.models.token_budget import DEFAULT_TOKEN_BUDGET  # pylint: disable=import-outside-toplevel
    # Dropout off before the scorer is built: T5NliModel checks its one-step
    # scores against the model's forward pass.
    self.trained.eval()
    if self._scorer is None:
      if self.family == T5:
        from autoais.models.t5_nli import T5NliModel  # pylint: disable=import-outside-toplevel
        self._scorer = T5NliModel(
            self.model, checkpoints.LockedTokenizer(self.tokenizer), self.base_dir,
            self.device, self.scoring_max_input_tokens, DEFAULT_TOKEN_BUDGET[self.device])
      else:
        from autoais.models.nli_classifier import NliClassifierModel  # pylint: disable=import-outside-toplevel
        self._scorer = NliClassifierModel(
            self.model, checkpoints.LockedTokenizer(self.tokenizer), self.device,
            self.scoring_max_input_tokens, DEFAULT_TOKEN_BUDGET[self.device], 1)
    examples = [AttributionExample(p, h, "", "") for p, h in pairs]
    with torch.no_grad():
      if self.family == T5:
        scored = self._scorer.score(examples, "threshold", 0.5)
      else:
        scored = self._scorer.score(examples, 0.5)
    return [score.nli_score for score in scored]

  # Checkpoints -----------------------------------------------------------------

  def checkpoint_tensors(self, optimizer) -> Dict[str, object]:
    """The trained parameters, the optimizer's state and torch's random state,
    as named tensors (for safetensors)."""
    import torch  # pylint: disable=import-outside-toplevel
    tensors = {f"param/{name}": p.detach().cpu().contiguous().clone()
               for name, p in self.named_trained()}
    names = {id(p): name for name, p in self.named_trained()}
    for group in optimizer.param_groups:
      for p in group["params"]:
        for key, value in optimizer.state.get(p, {}).items():
          value = value if torch.is_tensor(value) else torch.tensor(value)
          tensors[f"optimizer/{names[id(p)]}/{key}"] = value.detach().cpu().contiguous().clone()
    tensors["rng/torch"] = torch.get_rng_state().clone()
    return tensors

  def restore(self, tensors: Dict[str, object], optimizer) -> None:
    import torch  # pylint: disable=import-outside-toplevel
    with torch.no_grad():
      for name, p in self.named_trained():
        p.copy_(tensors[f"param/{name}"])
    for name, p in self.named_trained():
      state = {}
      prefix = f"optimizer/{name}/"
      for key in [k for k in tensors if k.startswith(prefix)]:
        state[key[len(prefix):]] = tensors[key].to(self.device)
      if state:
        optimizer.state[p] = state
    torch.set_rng_state(tensors["rng/torch"])

  # Saving ----------------------------------------------------------------------

  def save(self, directory: str) -> List[str]:
    """Writes the model as the scorers load it (LoRA merged into the weights:
    a copy is merged, training goes on unmerged) and the base's tokenizer
    files; returns the names written."""
    import copy  # pylint: disable=import-outside-toplevel
    os.makedirs(directory, exist_ok=True)
    model = self.model
    if self.lora_rank:
      model = copy.deepcopy(self.trained).merge_and_unload()
    model.save_pretrained(directory, safe_serialization=True)
    written = [name for name in MODEL_FILES[self.family]
               if os.path.isfile(os.path.join(directory, name))]
    unexpected = sorted(set(os.listdir(directory)) - set(written))
    if unexpected:
      raise ModelError(f"saving the model wrote files the scorers do not expect: "
                       f"{', '.join(unexpected)}")
    for name in tokenizer_file_names(self.base_dir):
      shutil.copyfile(os.path.join(self.base_dir, name), os.path.join(directory, name))
      written.append(name)
    return written


def load_trainable(family: str, base_dir: str, *, seed: int = 0, lora_rank: int = 0,
                   device: str = "cpu", max_input_tokens: Optional[int] = None) -> Trainable:
  """The base in a local directory, loaded for training (ModelError where it
  does not load as the family's model)."""
  try:
    return Trainable(family, base_dir, seed, lora_rank, device, max_input_tokens)
  except ModelError:
    raise
  except Exception as error:  # pylint: disable=broad-except
    raise ModelError(f"--base {base_dir}: does not load as a {family} model: "
                     f"{type(error).__name__}: {error}") from error
