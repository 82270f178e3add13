"""T5 / mT5 NLI attribution scorer (AutoAIS; SPEC 5.2), as a Beam ModelHandler.

    autoais evaluate ... --scorer t5 --model PATH [--tokenizer PATH]
        [--dtype float32|bfloat16] [--device cpu|cuda]
        [--decision threshold|decode] [--threshold 0.5]

The model reads `premise: {premise} hypothesis: {hypothesis}` and answers "1"
(entailed) or "0". `nli_score` is P(first piece of "1") renormalised over the
first pieces of "1" and "0", from one encoder pass and one decoder step
(label_logits), in token-budget batches. The pieces are read from the
tokenizer at load, never assumed (label_pieces: T5's "0" is `▁` then `0`).
`--decision decode` is the Attributed QA script's rule, for parity: the whole
input, `generate()` with the model's generation config, decoded text == "1".
Inputs and premise windows: models/t5_inputs.py; checkpoint files and their
checks: models/checkpoints.py. The contract: docs/scorers.md, "The T5 NLI
scorer".
"""
import os
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from autoais.models.checkpoints import (check_model_and_tokenizer, checkpoint_checksums,
                                        file_in, list_dir, local_model_dir, open_tokenizer,
                                        read_json)
from autoais.models import simulated_device, t5_inputs
from autoais.models.t5_inputs import EncodedExample
from autoais.models.token_budget import (DEFAULT_TOKEN_BUDGET, LocalModelHandler,
                                         TokenBudgetModel, check_device,
                                         check_dtype, load_weights,
                                         resolve_max_input_tokens)
from autoais.schemas import AttributionExample, AttributionScore
from autoais.schemas.errors import ModelError

DECISIONS = ("threshold", "decode")
SUPPORTED_MODEL_TYPES = ("t5", "mt5")
FLOAT16_REFUSED = ("--dtype float16 is refused: T5 activations overflow in float16 "
                   "(inf/NaN); use bfloat16 or float32")


class LabelPieces(NamedTuple):
  """The first pieces of the tokenizer's encodings of "1" and "0"."""
  one_id: int
  zero_id: int
  one_piece: str
  zero_piece: str


def label_pieces(tokenizer, model_path: str) -> LabelPieces:
  """The first piece of "1" and of "0" (SPEC 5.2): they must be known pieces
  and must differ, or the two answers cannot be told apart at the first step."""
  first = {}
  for label in ("1", "0"):
    encoded = tokenizer(label, add_special_tokens=False)["input_ids"]
    pieces = tokenizer.convert_ids_to_tokens(encoded)
    if not encoded or encoded[0] == tokenizer.unk_token_id:
      raise ModelError(
          f"--model {model_path}: its tokenizer encodes {label!r} as {pieces}: the "
          "first piece is not a known piece, so the model cannot answer "
          f"{label!r}; an NLI model answers with '1' and '0'")
    first[label] = (encoded[0], pieces[0], pieces)
  if first["1"][0] == first["0"][0]:
    raise ModelError(
        f"--model {model_path}: its tokenizer starts '1' ({first['1'][2]}) and '0' "
        f"({first['0'][2]}) with the same piece {first['1'][1]!r}, so the first "
        "decoder step cannot tell the two answers apart; an NLI model needs labels "
        "whose first pieces differ")
  return LabelPieces(first["1"][0], first["0"][0], first["1"][1], first["0"][1])


def refuse_sampling(do_sample: Any, model_path: str) -> None:
  """Decode mode calls `generate()` with the model's generation config, as the
  reference script does: a config that samples would make decisions random."""
  if do_sample:
    raise ModelError(f"--model {model_path}: --decision decode runs generate() with "
                     "the model's generation config, and generation_config.json "
                     "samples (do_sample true): decisions would be random. Use "
                     "--decision threshold")


def check_decode_generation(model_path: str) -> None:
  """refuse_sampling on the model directory's generation_config.json, read
  without loading the model (at launch, also on gs://)."""
  files = list_dir(model_path, "--model")
  if "generation_config.json" in files:
    generation = read_json(file_in(model_path, "generation_config.json", "--model"),
                            "--model", model_path)
    refuse_sampling(isinstance(generation, dict) and generation.get("do_sample"),
                    model_path)


def _weight(linear):
  """A linear layer's weight matrix, dequantised for int8 dynamic layers."""
  weight = linear.weight
  return weight().dequantize() if callable(weight) else weight


class T5NliModel(TokenBudgetModel):
  """A loaded NLI model: tokenisation with premise windows, batched scoring."""

  def __init__(self, model, tokenizer, model_path: str, device: str,
               max_input_tokens: int, token_budget: int,
               label_ids: Optional[Tuple[int, int]] = None,
               decoder_start_id: Optional[int] = None):
    """`label_ids` (the "1" and "0" ids) and `decoder_start_id`, where given,
    replace the tokenizer's label pieces and the config's start id (MiniCheck's
    Flan-T5 reads fixed ids from a fixed start: models/minicheck.py)."""
    super().__init__(model, tokenizer, device, max_input_tokens, token_budget)
    if label_ids is None:
      self.labels = label_pieces(tokenizer, model_path)
    else:
      self.labels = LabelPieces(*label_ids, *tokenizer.convert_ids_to_tokens(list(label_ids)))
    self.one_id, self.zero_id = self.labels.one_id, self.labels.zero_id
    self.decoder_start_id = (model.config.decoder_start_token_id
                             if decoder_start_id is None else decoder_start_id)
    config = model.config
    # T5 v1.0 scales the last decoder state by d_model^-0.5 before its tied
    # output layer; v1.1 and mT5 do not (transformers 5 says so in
    # scale_decoder_outputs, earlier releases in tie_word_embeddings).
    self._scales_decoder_output = config.model_type == "t5" and getattr(
        config, "scale_decoder_outputs", config.tie_word_embeddings)
    self._check_first_step()

  def _check_first_step(self) -> None:
    """label_logits re-implements the first decoder step: check it against the
    model's own forward on a probe input, so that a transformers release that
    changes the architecture's details stops the load instead of skewing every
    score."""
    torch = self._torch
    ids, mask = self._pad(self.tokenizer.input_ids(["premise: probe. hypothesis: probe"]))
    start = torch.full((1, 1), self.decoder_start_id, dtype=torch.long, device=ids.device)
    with torch.inference_mode():
      ours = self.label_logits(ids, mask).float()
      theirs = self.model(input_ids=ids, attention_mask=mask, decoder_input_ids=start,
                          use_cache=False).logits[:, 0, [self.one_id, self.zero_id]].float()
    # Relative to the logits' size: bfloat16 keeps 8 bits of mantissa, and the
    # reordered arithmetic rounds differently; a wrong architecture detail (a
    # missing d_model^-0.5, the wrong output layer) is off by far more.
    precise = next(self.model.parameters()).dtype == torch.float32
    tolerance = (1e-3 if precise else 5e-2) * max(1.0, float(theirs.abs().max()))
    if not torch.allclose(ours, theirs, rtol=0, atol=tolerance):
      raise ModelError(
          f"the one-step scorer disagrees with the model's forward pass on a probe "
          f"({ours.tolist()} vs {theirs.tolist()}): this transformers release "
          f"computes {type(self.model).__name__} differently; please report it")

  # -- tokenisation ---------------------------------------------------------

  def encode(self, example: AttributionExample, windowed: bool = True) -> EncodedExample:
    """The model input(s) of an example: one, or (`windowed`, past the model's
    length) one per premise window (models/t5_inputs.py)."""
    return self.encode_many([example], windowed)[0]

  def encode_many(self, examples: Sequence[AttributionExample],
                  windowed: bool = True) -> List[EncodedExample]:
    return t5_inputs.encode_many(self.tokenizer, self.max_input_tokens, examples, windowed)

  # -- scoring --------------------------------------------------------------

  def encoder_states(self, ids, mask):
    """The encoder's last hidden states, as the model computes them."""
    return self.model.get_encoder()(input_ids=ids, attention_mask=mask).last_hidden_state

  def label_logits(self, ids, mask, encoded=None):
    """Logits of "1" and "0" at the first decoder step: [batch, 2], from the
    encoder states `encoded` (computed here when not given).

    The encoder runs as the model defines it. The one decoder step is written
    out so that it does only what one step needs: self-attention over the lone
    start token is V then O (softmax over one key is 1); cross-attention folds
    the key and value projections into the query and the weighted sum, so the
    encoder states are never projected (that would cost 2 d^2 per token and
    layer, about a sixth of the encoder); and only the two label rows of the
    output layer are computed. The arithmetic is the model's, reordered.
    """
    torch = self._torch
    model = self.model
    if encoded is None:
      encoded = self.encoder_states(ids, mask)
    decoder = model.get_decoder()
    batch = ids.shape[0]
    start = torch.full((batch, 1), self.decoder_start_id, dtype=torch.long,
                       device=ids.device)
    hidden = decoder.embed_tokens(start)
    blocked = (mask == 0)[:, None, :]
    for block in decoder.block:
      self_attention, cross_attention, feed_forward = block.layer
      attention = self_attention.SelfAttention
      hidden = hidden + attention.o(attention.v(self_attention.layer_norm(hidden)))
      attention = cross_attention.EncDecAttention
      heads, width = attention.n_heads, attention.key_value_proj_dim
      query = attention.q(cross_attention.layer_norm(hidden)).view(batch, heads, width)
      keys = _weight(attention.k).view(heads, width, -1)
      scores = torch.einsum("bhd,bld->bhl", torch.einsum("bhk,hkd->bhd", query, keys),
                            encoded) * attention.scaling
      scores = scores.masked_fill(blocked, torch.finfo(scores.dtype).min)
      weights = torch.softmax(scores.float(), dim=-1).type_as(scores)
      context = torch.einsum("bhl,bld->bhd", weights, encoded)
      values = torch.einsum("bhd,hkd->bhk", context,
                            _weight(attention.v).view(heads, width, -1))
      hidden = hidden + attention.o(values.reshape(batch, 1, heads * width))
      hidden = feed_forward(hidden)
    hidden = decoder.final_layer_norm(hidden)[:, 0, :]
    if self._scales_decoder_output:
      hidden = hidden * (model.model_dim ** -0.5)
    rows = _weight(model.lm_head)[[self.one_id, self.zero_id]]
    return hidden @ rows.T

  def probabilities(self, sequences: Sequence[List[int]]) -> np.ndarray:
    """P("1") renormalised over {"1", "0"} at the first decoder step, per sequence."""
    return self._run(sequences, decode=False)[0]

  def decode_is_one(self, sequences: Sequence[List[int]]) -> np.ndarray:
    """`generate()` with the model's own generation config (greedy for TRUE's
    checkpoint), as the reference script calls it; decoded text == "1"."""
    return self._run(sequences, decode=True)[1]

  def _run(self, sequences: Sequence[List[int]], decode: bool):
    """(probabilities, decoded == "1" or None), batch by batch. With `decode`,
    generate() starts from the encoder states the probabilities were computed
    from: the encoder, most of the work, runs once per batch, not twice."""
    torch = self._torch
    from transformers.modeling_outputs import BaseModelOutput  # pylint: disable=import-outside-toplevel
    probabilities = np.empty(len(sequences), dtype=np.float64)
    decoded = np.zeros(len(sequences), dtype=bool) if decode else None
    with torch.inference_mode():
      for batch in self._batches([len(s) for s in sequences]):
        ids, mask = self._pad([sequences[i] for i in batch])
        if self.simulated_device is not None:
          probabilities[batch] = self.simulated_device.run(ids, mask)
          continue
        with self.device_turn:
          encoded = self.encoder_states(ids, mask)
          pair = self.label_logits(ids, mask, encoded).float()
          probabilities[batch] = torch.softmax(pair, dim=-1)[:, 0].cpu().numpy()
          if decode:
            outputs = self.model.generate(
                encoder_outputs=BaseModelOutput(last_hidden_state=encoded),
                attention_mask=mask)
        if decode:
          texts = self.tokenizer.batch_decode(outputs, skip_special_tokens=True)
          decoded[batch] = [text == "1" for text in texts]
    return probabilities, decoded

  def score(self, examples: Sequence[AttributionExample], decision: str,
            threshold: float) -> List[AttributionScore]:
    # Decode mode is the reference's rule: the whole input, however long.
    windowed = decision != "decode"
    encoded = self.encode_many(examples, windowed)
    sequences = [window for item in encoded for window in item.windows]
    probabilities, decoded = self._run(sequences, decode=decision == "decode")
    return self.window_scores(encoded, probabilities, threshold, decoded)


def load_t5_nli(model_path: str, dtype: str = "float32", device: str = "cpu",
                max_input_tokens: Optional[int] = None,
                token_budget: Optional[int] = None, *,
                tokenizer_path: Optional[str] = None,
                decision: str = "threshold",
                label_ids: Optional[Tuple[int, int]] = None,
                decoder_start_id: Optional[int] = None) -> T5NliModel:
  """Loads a T5/mT5 NLI model for scoring (see the module docstring);
  `label_ids` and `decoder_start_id` as T5NliModel takes them."""
  from transformers import AutoConfig, AutoModelForSeq2SeqLM  # pylint: disable=import-outside-toplevel
  check_dtype(dtype, FLOAT16_REFUSED)
  check_device(device)
  check_model_and_tokenizer(model_path, tokenizer_path)
  local_dir = local_model_dir(model_path)
  config = AutoConfig.from_pretrained(local_dir, trust_remote_code=False)
  if config.model_type not in SUPPORTED_MODEL_TYPES:
    raise ModelError(f"--model {model_path}: model type {config.model_type!r} is not "
                     f"one of {', '.join(SUPPORTED_MODEL_TYPES)}")
  _, tokenizer = open_tokenizer(model_path, tokenizer_path)
  model = load_weights(AutoModelForSeq2SeqLM, local_dir, dtype, device,
                       takes_simulated_device=True)
  if decision == "decode":
    refuse_sampling(model.generation_config.do_sample, model_path)
  loaded = T5NliModel(model, tokenizer, model_path, device,
                      resolve_max_input_tokens(tokenizer, max_input_tokens),
                      token_budget or DEFAULT_TOKEN_BUDGET[device], label_ids,
                      decoder_start_id)
  loaded.simulated_device = simulated_device.simulated(local_dir, device)
  if loaded.simulated_device is not None and decision == "decode":
    raise ModelError(f"--model {model_path}: a simulated device scores --decision "
                     "threshold only (it does not run generate())")
  return loaded


class T5NliModelHandler(LocalModelHandler):
  """RunInference handler of the T5 family (see LocalModelHandler); `decision`
  (threshold or decode) is one of its settings."""

  metrics_namespace = "autoais_t5_nli"
  load = staticmethod(load_t5_nli)
  float16_refused = FLOAT16_REFUSED

  def __init__(self, model_path: str, **settings):
    decision = settings.setdefault("decision", DECISIONS[0])
    if decision not in DECISIONS:
      raise ModelError(f"--decision {decision!r}: choose from {', '.join(DECISIONS)}")
    super().__init__(model_path, **settings)

  def _score(self, batch: Sequence[AttributionExample],
             model: T5NliModel) -> List[AttributionScore]:
    return model.score(batch, self._settings["decision"], self._threshold)


def describe_model(model_path: str, max_input_tokens: Optional[int],
                   tokenizer_path: Optional[str] = None) -> Dict[str, Any]:
  """What run.json records of a model, read on a worker: the label pieces of
  its tokenizer, a checksum of its weights and its generation config (without
  loading the weights)."""
  local_dir = local_model_dir(model_path)
  tokenizer_dir, tokenizer = open_tokenizer(model_path, tokenizer_path)
  labels = label_pieces(tokenizer, model_path)
  config = read_json(os.path.join(local_dir, "config.json"), "--model", model_path)
  generation_path = os.path.join(local_dir, "generation_config.json")
  generation = (read_json(generation_path, "--model", model_path)
                if os.path.exists(generation_path) else None)
  return {
      "model_type": config.get("model_type"),
      "tie_word_embeddings": config.get("tie_word_embeddings", True),
      **checkpoint_checksums(local_dir, tokenizer_dir, tokenizer_path or model_path),
      "label_pieces": "first piece of the tokenizer's encoding of '1' and of '0'",
      "one_token_id": labels.one_id,
      "zero_token_id": labels.zero_id,
      "one_token": labels.one_piece,
      "zero_token": labels.zero_piece,
      "max_input_tokens": resolve_max_input_tokens(tokenizer, max_input_tokens),
      "generation_config": {key: value for key, value in (generation or {}).items()
                            if key != "transformers_version"} or None,
      **simulated_device.describe(local_dir),
  }
