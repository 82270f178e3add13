"""The T5 NLI scorer: exact against the reference procedure, batch-invariant,
windowed without cutting the hypothesis, and refusing unusable models.

Models here are tiny, random, and built in a temp dir with their own
SentencePiece vocabulary (tests/support/t5_models.py), laid out as TRUE's checkpoint is
published (sharded safetensors with an index, `spiece.model` +
`tokenizer_config.json`, no tokenizer.json) and split as T5 splits: "1" is
`▁1`, "0" is `▁` + `0`. One test keeps a vocabulary that has `▁0` and a
`tokenizer.json` (layout "saved"). So that greedy decoding gives a mix of "1"
and "0" answers (and the parity test is not vacuous), the embedding rows of the
two label pieces are scaled up and generation stops after one token; the
reference procedure reads the same generation settings. Parity with the
reference script itself: tests/jobs/test_reference_parity.py.
"""
import csv
import json
import os
import pathlib
import random

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from autoais.beam_jobs import evaluate  # pylint: disable=wrong-import-position
from autoais.models import checkpoints, t5_nli  # pylint: disable=wrong-import-position
from tests.support.t5_models import build_random_t5, save_model  # pylint: disable=wrong-import-position
from autoais.schemas import AttributionExample  # pylint: disable=wrong-import-position
from tests.support.files import read_jsonl  # pylint: disable=wrong-import-position
from tests.support.jobs import run_job  # pylint: disable=wrong-import-position
from tests.support.paths import PROJECT_ROOT  # pylint: disable=wrong-import-position
from autoais.transforms.corpus.passages import parse_passage  # pylint: disable=wrong-import-position
from autoais.transforms.scoring.examples import (claim_example, qa_example)  # pylint: disable=wrong-import-position

EXAMPLES = PROJECT_ROOT / "examples"


def _texts():
  texts = [json.loads(line)["contents"] for line in
           (EXAMPLES / "corpus" / "wiki_sample.jsonl").read_text().splitlines()]
  texts += [g["question"] + " " + " ".join(g["answer"])
            for g in read_jsonl(EXAMPLES / "gold.jsonl")]
  return texts + ["premise: hypothesis: The answer to the question is"] * 50


def _sharpen(directory):
  """Make greedy decoding answer "1" for some inputs and "0" for others: set the
  output rows of the two pieces to +/- a direction along which the first decoder
  state varies between inputs, large enough to beat every other piece; and stop
  generation after one token."""
  from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
  tokenizer = AutoTokenizer.from_pretrained(directory)
  model = AutoModelForSeq2SeqLM.from_pretrained(directory)
  labels = t5_nli.label_pieces(tokenizer, directory)
  one, zero = labels.one_id, labels.zero_id
  states = []
  with torch.no_grad():
    for example in _examples(20, seed=9):
      ids = tokenizer(f"premise: {example.premise} hypothesis: {example.hypothesis}",
                      return_tensors="pt").input_ids
      output = model(input_ids=ids, decoder_input_ids=torch.tensor([[0]]),
                     output_hidden_states=True)
      states.append(output.decoder_hidden_states[-1][0, 0])
    states = torch.stack(states) * model.config.d_model ** -0.5
    mean = states.mean(0)
    direction = torch.linalg.svd(states - mean, full_matrices=False).Vh[0]
    # Orthogonal to the mean state, so the sign of the projection varies.
    unit_mean = mean / mean.norm()
    direction = direction - (direction @ unit_mean) * unit_mean
    direction = direction / direction.norm()
    scale = 20 / float((states @ direction).abs().median())
    model.shared.weight[one] = direction * scale
    model.shared.weight[zero] = -direction * scale
  model.generation_config.max_length = 2
  for name in os.listdir(directory):
    if name.endswith(".safetensors") or name.endswith(".index.json"):
      os.unlink(os.path.join(directory, name))
  save_model(model, directory)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
  directory = str(tmp_path_factory.mktemp("tiny_t5") / "model")
  build_random_t5(directory, _texts(), vocab_size=2000, seed=3)
  return directory


@pytest.fixture(scope="module")
def sharp_model(tmp_path_factory):
  """The same random model, sharpened so that greedy decoding reads "1" or "0"."""
  directory = str(tmp_path_factory.mktemp("sharp_t5") / "model")
  build_random_t5(directory, _texts(), vocab_size=2000, seed=3)
  _sharpen(directory)
  return directory


@pytest.fixture(scope="module")
def loaded(tiny_model):
  return t5_nli.load_t5_nli(tiny_model, token_budget=4096)


def _examples(n=40, seed=0):
  corpus = [json.loads(line)["contents"] for line in
            (EXAMPLES / "corpus" / "wiki_sample.jsonl").read_text().splitlines()]
  gold = read_jsonl(EXAMPLES / "gold.jsonl")
  rng = random.Random(seed)
  examples = []
  for i in range(n):
    record = gold[i % len(gold)]
    passage = parse_passage(" ".join(corpus[(i * 7 + j) % len(corpus)]
                                     for j in range(1 + i % 3)))
    answer = record["answer"][0] if i % 2 else rng.choice(corpus).split()[5]
    examples.append(qa_example(record["question"], answer, passage))
  return examples


def test_label_ids_are_the_first_pieces_as_in_t5(loaded):
  """T5's split: "1" is one piece, "0" is "▁" then "0"; the labels are the
  first pieces, and the second piece of "0" is not read."""
  tokenizer = loaded.tokenizer
  assert tokenizer.convert_ids_to_tokens(
      tokenizer("0", add_special_tokens=False)["input_ids"]) == ["▁", "0"]
  assert tokenizer.convert_ids_to_tokens(loaded.one_id) == "▁1"
  assert tokenizer.convert_ids_to_tokens(loaded.zero_id) == "▁"
  assert loaded.labels == (loaded.one_id, loaded.zero_id, "▁1", "▁")


def test_vocabulary_with_a_zero_piece_and_a_tokenizer_json(tmp_path):
  directory = build_random_t5(str(tmp_path / "digits"), _texts(), vocab_size=2000,
                              seed=3, vocabulary="digits", layout="saved")
  model = t5_nli.load_t5_nli(directory)
  assert (model.labels.one_piece, model.labels.zero_piece) == ("▁1", "▁0")
  _assert_equals_direct_computation(model, directory, _examples(8))


def _direct_scores(directory, examples):
  """P(first piece of "1") over the two first pieces at the first decoder
  step, computed with transformers alone, one example at a time."""
  from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
  tokenizer = AutoTokenizer.from_pretrained(directory)
  model = AutoModelForSeq2SeqLM.from_pretrained(directory).eval()
  one = tokenizer("1", add_special_tokens=False).input_ids[0]
  zero = tokenizer("0", add_special_tokens=False).input_ids[0]
  scores = []
  with torch.no_grad():
    for example in examples:
      ids = tokenizer(f"premise: {example.premise} hypothesis: {example.hypothesis}",
                      return_tensors="pt").input_ids
      logits = model(input_ids=ids, decoder_input_ids=torch.tensor(
          [[model.config.decoder_start_token_id]])).logits[0, 0]
      scores.append(float(torch.softmax(logits[[one, zero]], dim=-1)[0]))
  return np.array(scores)


def _assert_equals_direct_computation(model, directory, examples):
  ours = np.array([s.nli_score for s in model.score(examples, "threshold", 0.5)])
  np.testing.assert_allclose(ours, _direct_scores(directory, examples), atol=1e-5)
  assert ours.std() > 0


@pytest.mark.parametrize("model_type,version", [("t5", "1.0"), ("t5", "1.1"),
                                                ("mt5", "1.1")])
def test_published_layouts_equal_transformers(tmp_path, model_type, version):
  """T5 v1.0 (tied embeddings), v1.1 and mT5 (untied), each as published."""
  directory = build_random_t5(str(tmp_path / "model"), _texts(), vocab_size=2000,
                              seed=4, model_type=model_type, version=version)
  files = set(os.listdir(directory))
  assert "tokenizer.json" not in files and {"spiece.model", "tokenizer_config.json",
                                            "model.safetensors.index.json"} <= files
  shards = sorted(name for name in files if name.endswith(".safetensors"))
  assert len(shards) > 1 and shards[0] == f"model-00001-of-{len(shards):05d}.safetensors"
  model = t5_nli.load_t5_nli(directory)
  assert model.model.config.model_type == model_type
  tied = version == "1.0"
  published = json.loads((pathlib.Path(directory) / "config.json").read_text())
  assert published["tie_word_embeddings"] == tied
  assert (model.model.lm_head.weight is model.model.shared.weight) == tied
  # Only T5 v1.0 scales the last decoder state (mT5 never does).
  assert model._scales_decoder_output == (tied and model_type == "t5")  # pylint: disable=protected-access
  assert model.labels.zero_piece == "▁"
  _assert_equals_direct_computation(model, directory, _examples(12, seed=8))


def test_batched_scores_equal_one_at_a_time(loaded):
  examples = _examples()
  sequences = [w for e in examples for w in loaded.encode(e).windows]
  lengths = {len(s) for s in sequences}
  assert len(lengths) > 10  # padding is exercised
  one_by_one = np.array([loaded.probabilities([s])[0] for s in sequences])
  for budget in (64, 300, 1000, 100000):
    loaded.token_budget = budget
    np.testing.assert_allclose(loaded.probabilities(sequences), one_by_one, atol=1e-5)
  order = list(range(len(sequences)))
  random.Random(1).shuffle(order)
  loaded.token_budget = 2000
  shuffled = loaded.probabilities([sequences[i] for i in order])
  np.testing.assert_allclose(shuffled, one_by_one[order], atol=1e-5)
  assert one_by_one.std() > 0  # scores vary with the input


def test_one_decoder_step_equals_the_models_forward(loaded):
  """label_logits reorders the first decoder step; the result is the model's."""
  sequences = [w for e in _examples(12, seed=6) for w in loaded.encode(e).windows]
  ids, mask = loaded._pad(sequences)  # pylint: disable=protected-access
  start = torch.zeros((len(sequences), 1), dtype=torch.long)
  with torch.inference_mode():
    ours = loaded.label_logits(ids, mask)
    full = loaded.model(input_ids=ids, attention_mask=mask, decoder_input_ids=start,
                        use_cache=False).logits[:, 0, [loaded.one_id, loaded.zero_id]]
  assert mask.min() == 0  # padding is exercised
  np.testing.assert_allclose(ours.numpy(), full.numpy(), atol=1e-5, rtol=1e-5)


def test_decode_mode_equals_reference_procedure(sharp_model):
  from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
  tokenizer = AutoTokenizer.from_pretrained(sharp_model)
  model = AutoModelForSeq2SeqLM.from_pretrained(sharp_model)
  loaded = t5_nli.load_t5_nli(sharp_model)
  examples = _examples(60, seed=2)
  reference = []
  for example in examples:
    text = f"premise: {example.premise} hypothesis: {example.hypothesis}"
    outputs = model.generate(tokenizer(text, return_tensors="pt").input_ids)
    reference.append(tokenizer.decode(outputs[0], skip_special_tokens=True) == "1")
  loaded.token_budget = 3000
  ours = [s.attributable for s in loaded.score(examples, "decode", 0.5)]
  assert ours == reference
  assert 0 < sum(reference) < len(reference)  # both answers occur


def test_threshold_mode_is_score_above_threshold(loaded):
  examples = _examples(30, seed=4)
  for threshold in (0.1, 0.5, 0.9):
    for score in loaded.score(examples, "threshold", threshold):
      assert score.attributable == (score.nli_score > threshold)
      assert 0.0 <= score.nli_score <= 1.0


def test_long_premise_is_windowed_and_keeps_the_hypothesis(tiny_model):
  model = t5_nli.load_t5_nli(tiny_model, max_input_tokens=96)
  filler = " ".join(["The museum's collection spans many centuries of art."] * 40)
  premise = filler + " The first ascent was made by Edmund Hillary."
  hypothesis = ("The answer to the question 'who made the first confirmed ascent of "
                "mount everest' is 'Edmund Hillary'")
  example = AttributionExample(premise, hypothesis, "Edmund Hillary", premise)
  encoded = model.encode(example)
  assert encoded.truncated and len(encoded.windows) > 3
  texts = [model.tokenizer.decode(w, skip_special_tokens=True) for w in encoded.windows]
  for window, text in zip(encoded.windows, texts):
    assert len(window) <= 96
    assert text.startswith("premise:")
    assert text.endswith("hypothesis: " + hypothesis)
  assert "Edmund Hillary." in texts[-1].split(" hypothesis:")[0]
  (score,) = model.score([example], "threshold", 0.5)
  per_window = [model.probabilities([w])[0] for w in encoded.windows]
  assert score.n_windows == len(encoded.windows) and score.truncated
  assert score.nli_score == pytest.approx(max(per_window), abs=1e-6)


def test_short_input_is_one_window_and_tokenised_like_the_reference(loaded):
  example = _examples(1)[0]
  encoded = loaded.encode(example)
  assert not encoded.truncated and len(encoded.windows) == 1
  text = f"premise: {example.premise} hypothesis: {example.hypothesis}"
  assert encoded.windows[0] == loaded.tokenizer(text)["input_ids"]


def test_examples_encoded_together_equal_each_encoded_alone(tiny_model):
  """encode_many tokenises a chunk's inputs in one call; each example's
  windows and the padded tensors are those of one example at a time."""
  model = t5_nli.load_t5_nli(tiny_model, max_input_tokens=96)
  examples = _examples(30, seed=8)
  long = " ".join(["The museum's collection spans many centuries of art."] * 30)
  examples[3] = AttributionExample(long, examples[3].hypothesis, "", long)
  examples[17] = AttributionExample(long + " Hillary.", examples[17].hypothesis, "", "")
  together = model.encode_many(examples)
  alone = []
  for example in examples:
    text = f"premise: {example.premise} hypothesis: {example.hypothesis}"
    whole = model.tokenizer.unlocked(text, verbose=False)["input_ids"]
    alone.append(model.encode(example))
    if len(whole) <= 96:
      assert alone[-1] == t5_nli.EncodedExample([whole], False)
  assert together == alone
  assert sum(item.truncated for item in together) >= 2  # windows are exercised
  sequences = [window for item in together for window in item.windows]
  ids, mask = model._pad(sequences)  # pylint: disable=protected-access
  longest = max(len(s) for s in sequences)
  assert ids.dtype == mask.dtype == torch.long and ids.shape == (len(sequences), longest)
  for row, sequence in enumerate(sequences):
    padding = longest - len(sequence)
    assert ids[row].tolist() == sequence + [model.pad_id] * padding
    assert mask[row].tolist() == [1] * len(sequence) + [0] * padding
  assert mask.min() == 0  # padding is exercised


def test_premise_and_hypothesis_tokenised_apart_equal_the_whole_input(loaded):
  """The published T5 tokenizer splits at whitespace, so encode_many tokenises
  each distinct premise once; the ids are the whole input's, whatever the
  premise's edges (spaces, combining marks, a grapheme that does not end)."""
  premises = ["", " ", "Ends with a space ", "  two  spaces  inside ", "tab\tand\nnewline\n",
              "accent\u0301", " \u0301leading combining", "Arabic \u0600", "dot reph \u0d4e",
              "ZWJ \u200d", "emoji \U0001F469\u200d\U0001F4BB", "</s> in text", "\u3000ideographic\u3000",
              "nbsp\u00a0", "ﬁ ligature", "Ｆｕｌｌｗｉｄｔｈ"]
  hypotheses = ["", " starts with a space", "\u0301combining first", "The answer is 'x'",
                "trailing  "]
  examples = [AttributionExample(premise, hypothesis, "", "")
              for premise in premises for hypothesis in hypotheses]
  first = loaded.encode_many(examples, windowed=False)
  # Again, in another order: the premises' pieces now come from the cache.
  again = loaded.encode_many(examples[::-1], windowed=False)[::-1]
  for example, item, cached in zip(examples, first, again):
    text = f"premise: {example.premise} hypothesis: {example.hypothesis}"
    whole = loaded.tokenizer.unlocked(text, verbose=False)["input_ids"]
    assert item.windows == cached.windows == [whole], text


def test_premises_of_documents_a_line_each_equal_premises_tokenised_whole(tiny_model):
  """Premises that join documents a line each (citations' premises): their
  whole inputs and windows are those of the premise tokenised whole, also at
  lines that are empty, white space, or start or end in a character that does
  not end a grapheme."""
  model = t5_nli.load_t5_nli(tiny_model, max_input_tokens=48)
  rng = random.Random(5)
  sentences = [text for text in _texts()[:-50] if text.strip()]
  documents = [" ".join(rng.sample(sentences, 2))[:rng.randint(20, 400)] for _ in range(12)]
  documents += ["", " ", "\r", "\t tab and space ", "\u0301starts with a combining mark",
                "ends in Arabic \u0600", "emoji \U0001F469\u200d\U0001F4BB", "ﬁ ligature",
                "\u00a0nbsp first", "Ｆｕｌｌｗｉｄｔｈ", "\u200dZWJ first"]
  premises = ["\n".join(rng.choice(documents) for _ in range(rng.randint(1, 5)))
              for _ in range(80)]
  premises += ["\n", "\n\nboth ends\n", documents[0] + "\n" + documents[0]]
  examples = [AttributionExample(premise, rng.choice(["short one", "a longer hypothesis "
                                                      "of several words here"]), "", "")
              for premise in premises]
  expected = [_windows_tokenised_whole(model, example) for example in examples]
  assert model.encode_many(examples) == expected
  assert model.encode_many(examples[::-1]) == expected[::-1]
  windowed = [item for item in expected if item.truncated]
  assert len(windowed) > 20


def test_inputs_of_odd_texts_equal_the_tokenizers(tiny_model):
  """Inputs of texts of every kind of white space between and around their
  words and of characters inside them (non-ASCII, ones the normaliser
  changes, removes or makes white space, a carriage return, a mark after a
  space, a character that may join the next) as premise and as hypothesis:
  the tokenizer's ids of the whole input, and their windows those of each
  window tokenised whole."""
  model = t5_nli.load_t5_nli(tiny_model, max_input_tokens=48)
  words = [word for text in _texts()[:-50] for word in text.split()
           if word.isascii() and word.isprintable()][:400]
  rng = random.Random(11)
  texts = ["", " ", "  two  spaces  ", "\ttab\x0cform feed\nnew line", "one",
           "x" * 300, "premise:", "hypothesis: Who? 42,000.5 (yes) [no] {x} a_b-c/d",
           "a\r\nb", "vertical\x0btab", "caf\u00e9 noir", "nb\u00a0sp", "ends in space ",
           "\x1cstarts removed", "a \u0301mark", "\u0600 prepend", "x \x07bell",
           "a \uff9e\u05b0b"]
  # Inside words: accents, CJK, a ligature and full-width letters (changed
  # by the normaliser), a no-break, an ideographic and a zero-width space
  # (made spaces), a control character (removed), a soft hyphen (kept), a
  # diaeresis (a space and a mark), a vertical tab (white space the
  # normaliser keeps).
  odd = ["caf\u00e9", "na\u00efve", "\u6771\u4eac", "\ufb01ne", "\uff21\uff22", "nb\u00a0sp",
         "a\u3000b", "zero\u200bwidth", "x\x1cy", "soft\u00adhyphen", "\u00a8x", "v\x0bt",
         "\u00bd", "\u00e9t\u00e9", "Z\u00fcrich"]
  for _ in range(150):
    separators = [rng.choice([" ", " ", " ", "  ", "\t", " \x0c "]) for _ in range(12)]
    picked = rng.sample(words, rng.randint(1, 12))
    texts.append(rng.choice(["", " "]) + "".join(
        word + separator for word, separator in zip(picked, separators)).rstrip(
            rng.choice([" ", ""])))
  texts += [f"{rng.choice(words)} \u00ab{rng.choice(words)}\u00bb {rng.choice(words)}"
            for _ in range(20)]
  for _ in range(60):
    picked = rng.sample(words, 4) + rng.sample(odd, 3)
    rng.shuffle(picked)
    texts.append(rng.choice(["", " ", "\n"]) + "".join(
        word + rng.choice([" ", "  ", "\n", "\t"]) for word in picked).rstrip(rng.choice([" ", ""])))
  examples = [AttributionExample(text, rng.choice(texts), "", "") for text in texts]
  examples += [AttributionExample(rng.choice(texts), text, "", "") for text in texts]
  for start in range(0, len(examples), 23):
    part = examples[start:start + 23]
    assert model.encode_many(part, windowed=False) == [t5_nli.EncodedExample(
        [model.tokenizer.unlocked(f"premise: {e.premise} hypothesis: {e.hypothesis}",
                                  verbose=False)["input_ids"]], False) for e in part]
    assert model.encode_many(part) == [_windows_tokenised_whole(model, e) for e in part]
  assert sum(not text.isascii() for text in texts) > 70


def test_claim_level_examples_are_scored(loaded):
  example = claim_example("Mars has two moons, Phobos and Deimos.",
                          "Mars has two natural satellites.")
  assert example.premise.startswith("Mars has two moons")
  (score,) = loaded.score([example], "threshold", 0.5)
  text = f"premise: {example.premise} hypothesis: {example.hypothesis}"
  assert loaded.encode(example).windows[0] == loaded.tokenizer(text)["input_ids"]
  assert 0.0 <= score.nli_score <= 1.0


def test_bfloat16_scores_follow_float32(tiny_model):
  fp32 = t5_nli.load_t5_nli(tiny_model, dtype="float32")
  bf16 = t5_nli.load_t5_nli(tiny_model, dtype="bfloat16")
  examples = _examples(30, seed=5)
  a = np.array([s.nli_score for s in fp32.score(examples, "threshold", 0.5)])
  b = np.array([s.nli_score for s in bf16.score(examples, "threshold", 0.5)])
  assert np.median(np.abs(a - b)) < 0.02


@pytest.mark.parametrize("capability, dtype, device, eager", [
    ("AVX2", "bfloat16", "cpu", True), ("DEFAULT", "bfloat16", "cpu", True),
    ("AVX512", "bfloat16", "cpu", False), ("AVX2", "float32", "cpu", False),
    ("AVX2", "bfloat16", "cuda", False)])
def test_bfloat16_on_cpu_below_avx512_kernels_takes_eager_attention(
    monkeypatch, capability, dtype, device, eager):
  # torch 2.13's bfloat16 SDPA fails on an AMX chip whose kernels run below
  # AVX-512 (ATEN_CPU_CAPABILITY=avx2 or default): the test above failed so on
  # an AMX Xeon before this choice; this one pins the choice on any chip.
  import torch  # pylint: disable=import-outside-toplevel
  from autoais.models.token_budget import attention_kwargs  # pylint: disable=import-outside-toplevel
  monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: capability)
  assert attention_kwargs(dtype, device) == (
      {"attn_implementation": "eager"} if eager else {})


def test_every_family_loads_its_weights_through_load_weights():
  # One place says how weights load (safetensors only, never remote code): a
  # family that called from_pretrained on a model class itself could drop
  # either. Configs and tokenizers are read elsewhere (checkpoints.py).
  import ast  # pylint: disable=import-outside-toplevel
  import torch  # pylint: disable=import-outside-toplevel
  from autoais.models import token_budget  # pylint: disable=import-outside-toplevel
  readers = {"AutoConfig", "AutoTokenizer", "T5Config", "model_class"}
  others = []
  for path in sorted((PROJECT_ROOT / "models").glob("*.py")):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
      if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
          and node.func.attr == "from_pretrained"
          and ast.unparse(node.func.value) not in readers):
        others.append(f"{path.name}:{node.lineno} {ast.unparse(node.func)}")
  assert not others, others

  class Recorder:  # pylint: disable=too-few-public-methods
    """A model class that records how it is asked to load."""
    asked = {}

    @classmethod
    def from_pretrained(cls, directory, **kwargs):
      cls.asked = dict(kwargs, directory=directory)
      return torch.nn.Linear(2, 2).train()

  model = token_budget.load_weights(Recorder, "DIR", "bfloat16", "cpu", key_mapping={})
  assert {key: Recorder.asked[key] for key in
          ("directory", "use_safetensors", "trust_remote_code", "dtype", "key_mapping")} == {
              "directory": "DIR", "use_safetensors": True, "trust_remote_code": False,
              "dtype": torch.bfloat16, "key_mapping": {}}
  assert not model.training


# ----------------------------------------------------------------------------
# End to end, and errors.


def _evaluate(model, corpus, output, *extra, predictions=None, gold=None):
  return run_job(evaluate, "--predictions",
                 predictions or EXAMPLES / "predictions" / "*.csv",
                 "--corpus", corpus, "--gold", gold or EXAMPLES / "gold.jsonl",
                 "--output_dir", output, "--scorer", "t5", "--model", model,
                 "--bootstrap_samples", 50, *extra)


def test_evaluate_with_t5_on_the_examples(tiny_model, loaded, example_corpus, tmp_path):
  # Both runs take --torch_threads 1: the multi-process run is also the one
  # test_torch_threads_sets_the_threads_of_each_workers_model made on its own
  # (merged here to spare a two-worker run of evaluate, ~40 s of the suite).
  assert _evaluate(tiny_model, example_corpus, tmp_path / "a", "--torch_threads", 1) == 0
  assert _evaluate(tiny_model, example_corpus, tmp_path / "b", "--torch_threads", 1,
                   "--direct_running_mode=multi_processing",
                   "--direct_num_workers=2") == 0
  # Exact: model calls are fixed by the data, not the runner (docs/scorers.md),
  # so both runs score the same batches, with one thread, on one machine.
  for name in ("ratings.parquet", "ratings.csv", "leaderboard.csv"):
    assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
  assert json.loads((tmp_path / "b" / "run.json").read_text())["scorer"][
      "torch_threads"] == 1
  manifest = json.loads((tmp_path / "a" / "run.json").read_text())
  scorer = manifest["scorer"]
  assert scorer["name"] == "t5" and scorer["dtype"] == "float32"
  assert scorer["one_token_id"] == loaded.one_id and scorer["one_token"] == "▁1"
  assert scorer["zero_token_id"] == loaded.zero_id and scorer["zero_token"] == "▁"
  assert len(scorer["weights_sha256"]) == 64 and len(scorer["tokenizer_sha256"]) == 64
  assert scorer["weight_files"] > 1  # the shards of the published layout
  assert scorer["threshold"] == 0.5
  counts = manifest["counts"]
  assert scorer["rows_scored_by_model"] == counts["scored"]
  assert 0 < scorer["unique_triples"] <= counts["scored"]
  with open(tmp_path / "a" / "ratings.csv", newline="", encoding="utf-8") as f:
    rows = list(csv.DictReader(f))
  assert len(rows) == counts["scored"] and {row["scorer"] for row in rows} == {"t5"}
  # Every row's nli_score is transformers' own softmax over the two first
  # pieces, computed here from the corpus passage, one row at a time.
  contents = {record["id"]: record["contents"] for record in
              read_jsonl(EXAMPLES / "corpus" / "wiki_sample.jsonl")}
  examples = [qa_example(row["question"], row["answer"],
                         parse_passage(contents[row["attribution"]])) for row in rows]
  assert {row["n_windows"] for row in rows} == {"1"}
  np.testing.assert_allclose([float(row["nli_score"]) for row in rows],
                             _direct_scores(tiny_model, examples), atol=1e-5)


def test_torch_threads_sets_the_threads_of_each_workers_model(tiny_model, example_corpus,
                                                              tmp_path, capsys):
  from autoais.models.t5_nli import T5NliModelHandler
  before = torch.get_num_threads()
  wanted = before + 1  # differs from the default on any machine
  try:
    T5NliModelHandler(tiny_model, torch_threads=wanted).load_model()
    assert torch.get_num_threads() == wanted
  finally:
    torch.set_num_threads(before)
  # A two-worker run with --torch_threads 1: test_evaluate_with_t5_on_the_examples.
  capsys.readouterr()
  assert _evaluate(tiny_model, example_corpus, tmp_path / "bad", "--torch_threads",
                   -1) == 2
  assert "--torch_threads must be 0" in capsys.readouterr().err


def test_identical_triples_are_scored_once(tiny_model, example_corpus, tmp_path):
  predictions = tmp_path / "predictions"
  predictions.mkdir()
  source = (EXAMPLES / "predictions" / "retrieve-then-read.csv").read_text()
  for system in range(4):  # four systems with the same answers and passages
    (predictions / f"copy-{system}.csv").write_text(source)
  assert _evaluate(tiny_model, example_corpus, tmp_path / "out",
                   predictions=predictions / "*.csv") == 0
  scorer = json.loads((tmp_path / "out" / "run.json").read_text())["scorer"]
  assert scorer["rows_scored_by_model"] == 4 * scorer["unique_triples"]
  assert scorer["unique_triples"] == len(source.strip().splitlines()) - 1


def test_missing_model_directory(example_corpus, tmp_path, capsys):
  assert _evaluate(tmp_path / "nowhere", example_corpus, tmp_path / "out") == 2
  assert "no such model directory" in capsys.readouterr().err
  assert not (tmp_path / "out").exists()


def test_pickle_only_checkpoint_is_refused(tiny_model, example_corpus, tmp_path,
                                           capsys):
  from transformers import AutoModelForSeq2SeqLM
  directory = tmp_path / "pickled"
  directory.mkdir()
  model = AutoModelForSeq2SeqLM.from_pretrained(tiny_model)
  torch.save(model.state_dict(), directory / "pytorch_model.bin")
  model.config.save_pretrained(directory)
  assert _evaluate(directory, example_corpus, tmp_path / "out") == 2
  assert "only pickle checkpoints (pytorch_model.bin)" in capsys.readouterr().err


def test_float16_is_refused(tiny_model, example_corpus, tmp_path, capsys):
  assert _evaluate(tiny_model, example_corpus, tmp_path / "out",
                   "--dtype", "float16") == 2
  assert "float16 is refused: T5 activations overflow" in capsys.readouterr().err


def test_labels_starting_with_the_same_piece_are_refused(example_corpus, tmp_path,
                                                       capsys):
  directory = build_random_t5(str(tmp_path / "no_digits"), _texts(), vocab_size=500,
                              vocabulary="no-digits")
  assert _evaluate(directory, example_corpus, tmp_path / "out") == 2
  err = capsys.readouterr().err
  assert ("its tokenizer starts '1' (['▁', '1']) and '0' (['▁', '0']) with the same "
          "piece '▁'") in err, err
  assert not (tmp_path / "out").exists()


def _copy_model(source, target, leave_out=()):
  import shutil
  shutil.copytree(source, target, ignore=shutil.ignore_patterns(*leave_out))
  return target


def test_shards_missing_from_the_index_are_refused(tiny_model, example_corpus,
                                                   tmp_path, capsys):
  directory = _copy_model(tiny_model, tmp_path / "partial",
                          leave_out=("model-00002-of-*.safetensors",))
  assert _evaluate(directory, example_corpus, tmp_path / "out") == 2
  err = capsys.readouterr().err
  assert "shards that model.safetensors.index.json names are missing: " \
         "model-00002-of-0000" in err, err
  assert not (tmp_path / "out").exists()
  loose = _copy_model(tiny_model, tmp_path / "no_index",
                      leave_out=("model.safetensors.index.json",))
  assert _evaluate(loose, example_corpus, tmp_path / "out") == 2
  assert "neither model.safetensors nor the model.safetensors.index.json" in \
      capsys.readouterr().err


def test_checkpoint_without_tokenizer_takes_tokenizer_flag(tiny_model, example_corpus,
                                                           tmp_path, capsys):
  """TRUE's instructions load T5's tokenizer apart from the checkpoint: a model
  directory without tokenizer files runs with --tokenizer, and scores as the
  same model with its tokenizer inside."""
  tokenizer_files = ("spiece.model", "tokenizer_config.json", "special_tokens_map.json")
  weights = _copy_model(tiny_model, tmp_path / "weights", leave_out=tokenizer_files)
  tokenizer = _copy_model(tiny_model, tmp_path / "tokenizer",
                          leave_out=("*.safetensors", "*.json"))
  for name in tokenizer_files[1:]:
    (tokenizer / name).write_bytes((pathlib.Path(tiny_model) / name).read_bytes())
  assert _evaluate(weights, example_corpus, tmp_path / "none") == 2
  assert "no tokenizer in the model directory" in capsys.readouterr().err
  assert _evaluate(weights, example_corpus, tmp_path / "empty", "--tokenizer",
                   tmp_path / "weights") == 2
  assert "no tokenizer in it (neither tokenizer.json nor spiece.model)" in \
      capsys.readouterr().err
  assert not (tmp_path / "empty").exists()
  assert _evaluate(weights, example_corpus, tmp_path / "apart", "--tokenizer",
                   tokenizer) == 0
  assert _evaluate(tiny_model, example_corpus, tmp_path / "inside") == 0
  # Exact: the same weights on the same inputs make the same batches.
  for name in ("ratings.parquet", "leaderboard.csv"):
    # leaderboard.csv names the scorer by its model's directory, which differs.
    apart, inside = ((tmp_path / run / name).read_bytes().replace(
        str(model).encode(), b"MODEL") for run, model in (("apart", weights),
                                                           ("inside", tiny_model)))
    assert apart == inside, name
  apart = json.loads((tmp_path / "apart" / "run.json").read_text())["scorer"]
  assert apart["tokenizer_path"] == str(tokenizer)
  assert apart["tokenizer_source"] == str(tokenizer)


def test_decode_mode_refuses_a_sampling_generation_config(tiny_model, example_corpus,
                                                          tmp_path, capsys):
  directory = _copy_model(tiny_model, tmp_path / "sampling")
  generation = json.loads((directory / "generation_config.json").read_text())
  (directory / "generation_config.json").write_text(json.dumps(
      dict(generation, do_sample=True)))
  assert _evaluate(directory, example_corpus, tmp_path / "out", "--decision",
                   "decode") == 2
  assert "samples (do_sample true): decisions would be random" in \
      capsys.readouterr().err
  assert _evaluate(directory, example_corpus, tmp_path / "ok") == 0


def test_real_leaderboard_with_t5_is_identical_across_runners(nq_leaderboard_inputs,
                                                             tmp_path):
  inputs = nq_leaderboard_inputs
  # A vocabulary trained on the leaderboard's passages keeps inputs near their
  # real token length (about 4 characters a piece), as T5's would.
  texts = [f"{title} {text}" for title, text in inputs["contents"].values()]
  texts += [" ".join(g["answer"]) + " " + g["question"] for g in inputs["gold"]]
  tiny_model = build_random_t5(str(tmp_path / "model"), texts + _texts(),
                               vocab_size=4000, seed=5)
  # Two of the five systems keep CI short; they share passages and, where the
  # sparse system cites the right passage, answers too.
  predictions = ",".join(str(inputs["root"] / "predictions" / f"{name}.csv") for name in
                         ("right-answer-right-passage", "sparse-with-unknown-ids"))
  outputs = {}
  for mode, flags in {"in_process": [],
                      "multi_process": ["--direct_running_mode=multi_processing",
                                        "--direct_num_workers=2"]}.items():
    outputs[mode] = tmp_path / mode
    assert _evaluate(tiny_model, inputs["corpus"], outputs[mode], *flags,
                     predictions=predictions, gold=inputs["gold_path"]) == 0
  # Exact (byte-identical across runners, docs/scorers.md): model calls are
  # fixed by the data, not by the runner's bundles: both score the same batches.
  for name in ("ratings.parquet", "ratings.csv", "leaderboard.csv", "scores.txt"):
    assert ((outputs["in_process"] / name).read_bytes() ==
            (outputs["multi_process"] / name).read_bytes()), name
  manifest = json.loads((outputs["in_process"] / "run.json").read_text())
  counts, scorer = manifest["counts"], manifest["scorer"]
  assert counts["reconciled"] and counts["scored"] > 3000
  # Systems share passages and answers: fewer model calls than scored rows.
  assert scorer["rows_scored_by_model"] == counts["scored"]
  assert scorer["unique_triples"] < counts["scored"]


def test_weights_checksum_covers_every_shard_and_is_cached_outside_the_model(
    tiny_model, tmp_path, monkeypatch):
  monkeypatch.setenv("AUTOAIS_MODEL_CACHE", str(tmp_path / "cache"))
  directory = _copy_model(tiny_model, tmp_path / "model")
  before = {path.name: path.read_bytes() for path in directory.iterdir()}
  first = checkpoints.weights_checksum(str(directory))
  # Nothing is written into the user's model directory.
  assert {path.name: path.read_bytes() for path in directory.iterdir()} == before
  cached = list((tmp_path / "cache" / "checksums").glob("*.json"))
  assert len(cached) == 1
  # The second call reads the cache: a planted value comes back.
  record = json.loads(cached[0].read_text())
  cached[0].write_text(json.dumps(dict(record, sha256="planted")))
  assert checkpoints.weights_checksum(str(directory)) == "planted"
  cached[0].write_text(json.dumps(record))
  # A change to any shard (here the last one; same size) gives a new checksum.
  last = sorted(directory.glob("model-*.safetensors"))[-1]
  data = bytearray(last.read_bytes())
  data[-1] ^= 1
  last.write_bytes(bytes(data))
  assert checkpoints.weights_checksum(str(directory)) not in (first, "planted")


def _windows_tokenised_whole(model, example):
  """The premise windows as their definition reads: the premise's text from
  one of its pieces to another, tokenised whole with the hypothesis; shrunk
  by a piece while too long (models/t5_nli.py joins them from the premise's
  pieces instead)."""
  premise = example.premise
  offsets = model.tokenizer(premise, add_special_tokens=False,
                            return_offsets_mapping=True)["offset_mapping"]
  whole = model.tokenizer(f"premise: {premise} hypothesis: {example.hypothesis}",
                          verbose=False)["input_ids"]
  if len(whole) <= model.max_input_tokens:
    return t5_nli.EncodedExample([whole], False)
  if not offsets:
    return t5_nli.EncodedExample([whole], True)
  fixed = len(model.tokenizer(f"premise:  hypothesis: {example.hypothesis}")["input_ids"])
  size = max(16, model.max_input_tokens - fixed - 2)
  stride = max(1, int(size * 0.75))
  windows, start = [], 0
  while True:
    end = min(start + size, len(offsets))
    while True:
      text = premise[offsets[start][0]:offsets[end - 1][1]]
      window = model.tokenizer(f"premise: {text} hypothesis: {example.hypothesis}",
                               verbose=False)["input_ids"]
      if len(window) <= model.max_input_tokens or end - start <= 16:
        break
      end -= 1
    windows.append(window)
    if end >= len(offsets):
      break
    start = min(start + stride, end)
  return t5_nli.EncodedExample(windows, True)


def test_windows_joined_from_the_premises_pieces_equal_windows_tokenised_whole(tiny_model):
  """Windows are joined from the premise's pieces, a word cut at an edge
  tokenised again: the ids are those of each window's text tokenised whole,
  whatever the words (unknown characters, a lone "▁", combining marks, a
  premise the normaliser changes, long words cut inside, a hypothesis alone
  past the length)."""
  model = t5_nli.load_t5_nli(tiny_model, max_input_tokens=48)
  rng = random.Random(11)
  # Words the normaliser leaves as they are (the premise's pieces are joined),
  # then some it changes (the windows are tokenised whole).
  kept = _texts()[0].split()[:40] + ["x", "Q", "qqzzjj", "été", "\u0600x",
                                     "y\u0600", "\U0001F469\u200d\U0001F4BB", "a" * 40,
                                     "Hillary.", "(1953)", "q\u0301q\u0301q\u0301",
                                     "\U0001F44D\U0001F3FD"]
  words = kept + ["▁", "a▁b", "e\u0301t\u0301", "Ｆｕｌｌ", "ﬁne", "\u00a0", "nbsp\u00a0x", "\u0301x"]
  spaces = [" "] * 12 + ["  ", "\n", "\t", " \n "]
  examples = []
  for i in range(60):
    n = rng.randint(1, 120)
    premise = "".join(rng.choice(kept if i % 3 else words) + rng.choice(spaces)
                      for _ in range(n)).strip()
    hypothesis = " ".join(rng.choice(words) for _ in range(rng.choice([1, 5, 12, 60])))
    examples.append(AttributionExample(premise, hypothesis, "", ""))
  expected = [_windows_tokenised_whole(model, example) for example in examples]
  assert model.encode_many(examples) == expected
  assert [model.encode(example) for example in examples[:10]] == expected[:10]
  windowed = [item for item in expected if item.truncated]
  assert len(windowed) > 30 and sum(len(item.windows) for item in windowed) > 150
