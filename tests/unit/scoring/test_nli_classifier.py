"""`--scorer nli-classifier`: scores equal a direct transformers computation
(AutoModelForSequenceClassification, softmax over the head, max over premise
windows derived here from the tokens), the supporting label from id2label or
--positive_label, refusals at launch, the score cache's identity, and evaluate
and agreement end to end.

Models are tiny random RoBERTa and DeBERTa-v2 classifiers with tokenizers
trained here (tests/support/nli_classifiers.py), saved as published
(config.json, model.safetensors, tokenizer.json), input length 64 tokens so
that the example passages need several windows.
"""
import csv
import json
import shutil

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from autoais.beam_jobs import agreement, evaluate  # pylint: disable=wrong-import-position
from autoais.models import nli_classifier  # pylint: disable=wrong-import-position
from autoais.models.nli_classifier import describe_classifier, load_nli_classifier  # pylint: disable=wrong-import-position
from autoais.schemas import AttributionExample  # pylint: disable=wrong-import-position
from tests.support.files import read_jsonl  # pylint: disable=wrong-import-position
from tests.support.jobs import run_job  # pylint: disable=wrong-import-position
from tests.support.nli_classifiers import build_tiny_classifier, pair_ids  # pylint: disable=wrong-import-position
from tests.support.paths import EXAMPLES  # pylint: disable=wrong-import-position
from tests.support.vocab import example_texts  # pylint: disable=wrong-import-position
from autoais.transforms.corpus.passages import parse_passage  # pylint: disable=wrong-import-position
from autoais.transforms.scoring.cache import identity_key  # pylint: disable=wrong-import-position
from autoais.transforms.scoring.examples import qa_example  # pylint: disable=wrong-import-position
from autoais.transforms.scoring.nli_classifier import NliClassifierScorer  # pylint: disable=wrong-import-position
from autoais.transforms.scoring.t5 import T5Scorer  # pylint: disable=wrong-import-position

THREE_WAY = {0: "entailment", 1: "neutral", 2: "contradiction"}
TWO_WAY = {0: "not_entailment", 1: "Entailment"}  # another order, another case
MAX_TOKENS = 64
MIN_WINDOW = 16  # models/nli_classifier.py _MIN_WINDOW_TOKENS


@pytest.fixture(scope="module")
def models(tmp_path_factory):
  root = tmp_path_factory.mktemp("nli_classifiers")
  texts = example_texts()
  return {
      "roberta": build_tiny_classifier(str(root / "roberta"), "roberta", THREE_WAY,
                                       texts, MAX_TOKENS),
      "deberta-v2": build_tiny_classifier(str(root / "deberta"), "deberta-v2",
                                          THREE_WAY, texts, MAX_TOKENS, seed=1),
      "two-way": build_tiny_classifier(str(root / "two_way"), "roberta", TWO_WAY,
                                       texts, MAX_TOKENS, seed=2),
  }


def _examples():
  passages = [json.loads(line)["contents"] for line in
              (EXAMPLES / "corpus" / "wiki_sample.jsonl").read_text().splitlines()]
  examples = [AttributionExample(passages[0][:80], "Paris is the capital", "", ""),
              AttributionExample("A short premise.", "A short claim.", "", "")]
  # Several windows each: premises of about 2, 5 and 12 times the input length.
  for repeat in (1, 3, 8):
    examples.append(AttributionExample(" ".join(passages[:repeat]),
                                       "The answer to the question is yes", "", ""))
  return examples


def _direct_windows(kind, tokenizer, example):
  """The model inputs of an example, built here: the pair from the kind's
  template; a premise too long split into windows of the tokens left beside the
  hypothesis, each starting a quarter of a window before the last one ends;
  where fewer than MIN_WINDOW tokens are left, one input, the longer of the two
  cut a token at a time (the hypothesis on ties) until the pair fits."""
  premise = tokenizer(example.premise, add_special_tokens=False)["input_ids"]
  hypothesis = tokenizer(example.hypothesis, add_special_tokens=False)["input_ids"]
  whole = pair_ids(kind, tokenizer, premise, hypothesis)
  if len(whole) <= MAX_TOKENS:
    return [whole]
  specials = len(whole) - len(premise) - len(hypothesis)
  size = MAX_TOKENS - (len(whole) - len(premise))
  if size < MIN_WINDOW:
    premise, hypothesis = list(premise), list(hypothesis)
    while len(premise) + len(hypothesis) + specials > MAX_TOKENS:
      (premise if len(premise) > len(hypothesis) else hypothesis).pop()
    return [pair_ids(kind, tokenizer, premise, hypothesis)]
  step = size - size // 4
  windows, start = [], 0
  while True:
    windows.append(pair_ids(kind, tokenizer, premise[start:start + size], hypothesis))
    if start + size >= len(premise):
      return windows
    start += step


def _direct_scores(directory, kind, examples, positive):
  """(max over windows of softmax(logits)[positive], window count) per
  example, one window at a time through AutoModelForSequenceClassification."""
  from transformers import AutoModelForSequenceClassification, AutoTokenizer
  tokenizer = AutoTokenizer.from_pretrained(directory)
  model = AutoModelForSequenceClassification.from_pretrained(directory).eval()
  scores, counts = [], []
  with torch.no_grad():
    for example in examples:
      windows = _direct_windows(kind, tokenizer, example)
      probabilities = [float(torch.softmax(model(input_ids=torch.tensor([ids])).logits,
                                           dim=-1)[0, positive]) for ids in windows]
      scores.append(max(probabilities))
      counts.append(len(windows))
  return np.array(scores), counts


@pytest.mark.parametrize("kind", ["roberta", "deberta-v2"])
def test_scores_equal_transformers_with_windows(models, kind):
  examples = _examples()
  # A small token budget: several padded batches of mixed lengths.
  loaded = load_nli_classifier(models[kind], token_budget=256)
  assert loaded.max_input_tokens == MAX_TOKENS and loaded.positive == 0
  scores = loaded.score(examples, threshold=0.3)
  expected, counts = _direct_scores(models[kind], kind, examples, positive=0)
  np.testing.assert_allclose([s.nli_score for s in scores], expected, rtol=0, atol=1e-5)
  assert [s.n_windows for s in scores] == counts
  assert counts[:2] == [1, 1] and min(counts[2:]) > 1 and counts[-1] > counts[2]
  assert [s.truncated for s in scores] == [count > 1 for count in counts]
  assert [s.attributable for s in scores] == [s.nli_score > 0.3 for s in scores]
  assert len({round(s.nli_score, 6) for s in scores}) > 1  # not a constant model


def test_positive_label_from_id2label_or_the_flag(models):
  examples = _examples()
  default = load_nli_classifier(models["two-way"])
  assert default.positive == 1  # "Entailment", matched in any case
  expected, _ = _direct_scores(models["two-way"], "roberta", examples, positive=1)
  np.testing.assert_allclose([s.nli_score for s in default.score(examples, 0.5)],
                             expected, rtol=0, atol=1e-5)
  named = load_nli_classifier(models["two-way"], positive_label="NOT_ENTAILMENT")
  assert named.positive == 0
  expected, _ = _direct_scores(models["two-way"], "roberta", examples, positive=0)
  np.testing.assert_allclose([s.nli_score for s in named.score(examples, 0.5)],
                             expected, rtol=0, atol=1e-5)


def _boundary_examples(tokenizer):
  """Pairs whose premise fits, just fits, just overflows and overflows many
  times over, beside hypotheses of 1 to 60 words (the longest leave fewer than
  MIN_WINDOW tokens: the tokenizer's own cut), and texts a tokenizer treats
  apart: accents, CJK, line breaks, runs of spaces, the separator written out."""
  passages = [json.loads(line)["contents"] for line in
              (EXAMPLES / "corpus" / "wiki_sample.jsonl").read_text().splitlines()]
  words = " ".join(passages).split()
  examples = []
  for hypothesis_words in (1, 5, 12, 30, 60):
    hypothesis = " ".join(words[-hypothesis_words:])
    for premise_words in list(range(1, 60)) + [120, 400]:
      examples.append(AttributionExample(" ".join(words[:premise_words]), hypothesis,
                                         "", ""))
  odd = ["Caf\u00e9 na\u00efve \u6771\u4eac\u90fd  (T\u014dky\u014d)", "  leading and trailing  ",
         "line one\nline two\n\nline three", f"before {tokenizer.sep_token} after",
         "tab\tseparated\u00a0no-break", "\u00c5ngstr\u00f6m " * 40]
  for premise in odd:
    for hypothesis in odd[:3]:
      examples.append(AttributionExample(premise, hypothesis, "", ""))
  return examples


@pytest.mark.parametrize("kind", ["roberta", "deberta-v2"])
def test_pairs_from_ids_equal_the_tokenizers_encodings(models, kind):
  loaded = load_nli_classifier(models[kind])
  assert loaded.pairs_from_ids
  examples = _boundary_examples(loaded.tokenizer)
  ours = loaded.encode_many(examples)
  theirs = [loaded.encode_by_tokenizer(example) for example in examples]
  assert ours == theirs
  windows = [len(item.windows) for item in ours]
  # Every path was taken: whole pairs, windows, and the tokenizer's cut.
  assert {False, True} == {item.truncated for item in ours}
  assert max(windows) > 3
  assert any(item.truncated and count == 1 for item, count in zip(ours, windows))
  assert ("token_type_ids" in ours[0].windows[0]) == (kind == "deberta-v2")


def test_a_premise_is_tokenised_once_across_calls(models):
  loaded = load_nli_classifier(models["roberta"])
  asked = []
  tokenizer_ids = loaded.tokenizer.input_ids

  def counted(texts, add_special_tokens=True, offsets=False):
    asked.extend(texts)
    return tokenizer_ids(texts, add_special_tokens, offsets)

  loaded.tokenizer.input_ids = counted
  premises = ["The first premise is here.", "A second premise, another passage."]
  first = [AttributionExample(premises[i % 2], f"claim {i}", "", "") for i in range(6)]
  second = [AttributionExample(premises[i % 2], f"claim {i}", "", "") for i in range(6, 9)]
  encoded = loaded.encode_many(first) + loaded.encode_many(second)
  assert sorted(asked) == sorted(premises + [f"claim {i}" for i in range(9)])
  assert encoded == [loaded.encode_by_tokenizer(example) for example in first + second]


def test_no_template_where_the_pair_encoding_is_not_one(models, monkeypatch):
  # The template is the tokenizer's own post-processor's: none without one.
  tokenizer = load_nli_classifier(models["roberta"]).tokenizer.unlocked
  tokenizer.backend_tokenizer.post_processor = None
  assert nli_classifier.pair_template(tokenizer) is None
  # A template that the probes' encodings contradict is not used: the model
  # calls the tokenizer pair by pair and scores as before.
  real = nli_classifier.pair_template

  def wrong(tokenizer):
    template = real(tokenizer)
    return template._replace(suffix=template.suffix * 2)

  monkeypatch.setattr(nli_classifier, "pair_template", wrong)
  loaded = load_nli_classifier(models["roberta"], token_budget=256)
  assert not loaded.pairs_from_ids
  examples = _examples()
  expected, counts = _direct_scores(models["roberta"], "roberta", examples, positive=0)
  scores = loaded.score(examples, threshold=0.3)
  np.testing.assert_allclose([s.nli_score for s in scores], expected, rtol=0, atol=1e-5)
  assert [s.n_windows for s in scores] == counts


def test_cache_keys_differ_across_families_and_settings(models):
  def key(directory, **options):
    scorer = NliClassifierScorer(directory, **options)
    info = describe_classifier(directory, options.get("max_input_tokens"),
                               positive_label=options.get("positive_label"))
    return identity_key(scorer.cache_identity(info))

  base = key(models["two-way"])
  assert base == key(models["two-way"])  # stable
  others = [key(models["two-way"], positive_label="not_entailment"),
            key(models["two-way"], max_input_tokens=32),
            key(models["two-way"], dtype="bfloat16"),
            key(models["roberta"])]
  # The t5 family on the same weights, tokenizer and length: another key.
  info = describe_classifier(models["two-way"], None)
  others.append(identity_key(T5Scorer(models["two-way"]).cache_identity(info)))
  assert len({base, *others}) == len(others) + 1


# End to end, and refusals at launch.


def _evaluate(model, corpus, output, *extra):
  return run_job(evaluate, "--predictions", EXAMPLES / "predictions" / "*.csv",
                 "--corpus", corpus, "--gold", EXAMPLES / "gold.jsonl",
                 "--output_dir", output, "--scorer", "nli-classifier", "--model", model,
                 "--bootstrap_samples", 20, *extra)


def test_evaluate_on_the_examples(models, example_corpus, tmp_path):
  output = tmp_path / "eval"
  assert _evaluate(models["deberta-v2"], example_corpus, output,
                   "--score_cache", tmp_path / "cache", "--threshold", 0.3) == 0
  scorer = json.loads((output / "run.json").read_text())["scorer"]
  assert scorer["name"] == scorer["family"] == "nli-classifier"
  assert scorer["positive_label"] == "entailment" and scorer["positive_label_id"] == 0
  assert scorer["labels"] == ["entailment", "neutral", "contradiction"]
  assert scorer["max_input_tokens"] == MAX_TOKENS and scorer["threshold"] == 0.3
  assert len(scorer["weights_sha256"]) == 64 and scorer["score_cache_key"]
  with open(output / "ratings.csv", newline="", encoding="utf-8") as f:
    rows = list(csv.DictReader(f))
  assert rows and {row["scorer"] for row in rows} == {"nli-classifier"}
  contents = {record["id"]: record["contents"] for record in
              read_jsonl(EXAMPLES / "corpus" / "wiki_sample.jsonl")}
  examples = [qa_example(row["question"], row["answer"],
                         parse_passage(contents[row["attribution"]])) for row in rows]
  expected, counts = _direct_scores(models["deberta-v2"], "deberta-v2", examples, 0)
  np.testing.assert_allclose([float(row["nli_score"]) for row in rows], expected,
                             rtol=0, atol=1e-5)
  assert [int(row["n_windows"]) for row in rows] == counts and max(counts) > 1
  assert [row["auto_ais"] for row in rows] == [
      "Y" if score > 0.3 else "N" for score in (float(r["nli_score"]) for r in rows)]


def test_agreement_aggrefact_with_a_positive_label(models, tmp_path):
  output = tmp_path / "agreement"
  assert run_job(agreement, "--input", EXAMPLES / "agreement" / "aggrefact.csv",
                 "--format", "aggrefact", "--output_dir", output,
                 "--scorer", "nli-classifier", "--model", models["two-way"],
                 "--positive_label", "not_entailment", "--bootstrap_samples", 20) == 0
  scorer = json.loads((output / "run.json").read_text())["scorer"]
  assert scorer["family"] == "nli-classifier"
  assert scorer["positive_label"] == "not_entailment"
  assert scorer["positive_label_source"] == "--positive_label"
  with open(EXAMPLES / "agreement" / "aggrefact.csv", newline="", encoding="utf-8") as f:
    items = list(csv.DictReader(f))
  expected, _ = _direct_scores(models["two-way"], "roberta",
                               [AttributionExample(item["doc"], item["claim"], "", "")
                                for item in items], positive=0)
  with open(output / "agreement_rows.csv", newline="", encoding="utf-8") as f:
    got = sorted(float(row["nli_score"]) for row in csv.DictReader(f))
  np.testing.assert_allclose(got, sorted(expected), rtol=0, atol=1e-5)


def test_pickle_only_checkpoint_is_refused(models, example_corpus, tmp_path, capsys):
  from transformers import AutoModelForSequenceClassification
  directory = tmp_path / "pickled"
  shutil.copytree(models["roberta"], directory)
  (directory / "model.safetensors").unlink()
  model = AutoModelForSequenceClassification.from_pretrained(models["roberta"])
  torch.save(model.state_dict(), directory / "pytorch_model.bin")
  assert _evaluate(directory, example_corpus, tmp_path / "out") == 2
  err = capsys.readouterr().err
  assert f"--model {directory}: only pickle checkpoints (pytorch_model.bin)" in err, err
  assert "safe_serialization=True" in err
  assert not (tmp_path / "out").exists()


def test_labels_naming_no_supporting_class_are_refused(models, example_corpus, tmp_path,
                                                       capsys):
  directory = tmp_path / "generic"
  shutil.copytree(models["two-way"], directory)
  config = json.loads((directory / "config.json").read_text())
  config["id2label"] = {"0": "LABEL_0", "1": "LABEL_1"}
  config["label2id"] = {"LABEL_0": 0, "LABEL_1": 1}
  (directory / "config.json").write_text(json.dumps(config))
  assert _evaluate(directory, example_corpus, tmp_path / "out") == 2
  err = capsys.readouterr().err
  assert (f"--model {directory}: none of its labels {{0: 'LABEL_0', 1: 'LABEL_1'}} is "
          "a supporting label") in err, err
  assert "--positive_label NAME" in err
  assert _evaluate(directory, example_corpus, tmp_path / "out", "--positive_label",
                   "entailment") == 2
  err = capsys.readouterr().err
  assert "--positive_label 'entailment': the head of --model" in err, err
  assert "{0: 'LABEL_0', 1: 'LABEL_1'}" in err
  assert not (tmp_path / "out").exists()
  # --positive_label belongs to this family only.
  assert run_job(evaluate, "--predictions", EXAMPLES / "predictions" / "*.csv",
                 "--corpus", example_corpus, "--gold", EXAMPLES / "gold.jsonl",
                 "--output_dir", tmp_path / "out", "--positive_label", "x") == 2
  assert "--positive_label is for --scorer nli-classifier" in capsys.readouterr().err


def test_handlers_of_the_same_settings_share_one_model_and_identifier(models):
  """A job's RunInference steps (citations has three) hold one loaded model
  per process, and name it alike to Beam, which then shares one copy across
  processes with --large_model; other settings are another model."""
  from autoais.models.nli_classifier import NliClassifierModelHandler  # pylint: disable=import-outside-toplevel
  from autoais.transforms.scoring.fanout import _model_identifier  # pylint: disable=import-outside-toplevel
  first, second, other = (NliClassifierModelHandler(models["roberta"], token_budget=budget)
                          for budget in (256, 256, 512))
  model = first.load_model()
  assert second.load_model() is model and other.load_model() is not model
  assert _model_identifier(first) == _model_identifier(second) == first.model_identifier()
  assert first.model_identifier() != other.model_identifier()
  assert _model_identifier(object()) is None


# Inputs past a model's learned position table.


def _tiny(config_class, model_class, **fields):
  config = config_class(vocab_size=100, num_hidden_layers=1, num_attention_heads=2,
                        **fields)
  return model_class(config).eval()


def _forward_takes(model, length: int) -> bool:
  ids = torch.full((1, length), 5)
  ids[0, -1] = 2  # an end token: BART's head reads the last </s>
  try:
    with torch.no_grad():
      model(input_ids=ids, attention_mask=torch.ones_like(ids))
  except (IndexError, RuntimeError):
    return False
  return True


def test_the_position_table_read_from_the_model_is_what_its_forward_takes():
  """BERT counts positions from 0, RoBERTa-style tables from the padding index
  plus one, BART's from a fixed offset; each longest input is checked against
  the model's own forward pass, one token past it failing."""
  from autoais.models.token_budget import position_table
  built = {
      "bert": _tiny(transformers.BertConfig, transformers.BertForSequenceClassification,
                    hidden_size=16, intermediate_size=16, max_position_embeddings=40),
      "xlm-roberta": _tiny(transformers.XLMRobertaConfig,
                           transformers.XLMRobertaForSequenceClassification, hidden_size=16,
                           intermediate_size=16, max_position_embeddings=40, pad_token_id=1),
      "bart": _tiny(transformers.BartConfig, transformers.BartForSequenceClassification,
                    d_model=16, encoder_layers=1, decoder_layers=1,
                    encoder_attention_heads=2, decoder_attention_heads=2,
                    encoder_ffn_dim=16, decoder_ffn_dim=16, max_position_embeddings=40,
                    eos_token_id=2),
  }
  limits = {kind: position_table(model) for kind, model in built.items()}
  assert {kind: limit[1] for kind, limit in limits.items()} == {
      "bert": 40, "xlm-roberta": 38, "bart": 40}
  for kind, model in built.items():
    assert _forward_takes(model, limits[kind][1]), kind
    assert not _forward_takes(model, limits[kind][1] + 1), kind


def test_inputs_past_the_position_table_are_refused_at_load(models, example_corpus,
                                                             tmp_path, capsys):
  """A RoBERTa of 66 positions takes 64 tokens: asking for 65 stops at load
  with the flag named, where it used to fail inside the model on the first
  long window ("index 66 is out of bounds"). DeBERTa-v3's relative positions
  take any length."""
  from autoais.models.token_budget import position_table
  from autoais.schemas.errors import ModelError
  assert load_nli_classifier(models["roberta"], max_input_tokens=MAX_TOKENS)
  with pytest.raises(ModelError) as refused:
    load_nli_classifier(models["roberta"], max_input_tokens=MAX_TOKENS + 1)
  assert (f"--max_input_tokens: inputs of up to {MAX_TOKENS + 1} tokens" in str(refused.value)
          and "(roberta.embeddings.position_embeddings) takes at most 64" in str(refused.value))
  deberta = load_nli_classifier(models["deberta-v2"], max_input_tokens=4 * MAX_TOKENS)
  assert position_table(deberta.model) is None
  assert _evaluate(models["roberta"], example_corpus, tmp_path / "out",
                   "--max_input_tokens", MAX_TOKENS + 2) == 1
  err = capsys.readouterr().err
  assert "give --max_input_tokens 64 or less" in err, err
  assert "out of bounds" not in err
