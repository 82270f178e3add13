"""`--scorer minicheck`: per-item probabilities equal MiniCheck's own
`Inferencer` (../shared/reference/minicheck/inference.py, run as it is, its hub
loaders pointed at tiny local models and its `sent_tokenize` at our splitter)
for each of MiniCheck's architectures, on documents of one chunk, of several
chunks and with line breaks; the sentence splitter; the variant from
config.json and the refusals at launch; the cache identity; and `agreement`
end to end.

Models: a tiny random T5 v1.1 (Flan-T5's shape) in the published sharded
layout with a SentencePiece vocabulary of several hundred ids (3 and 209 among
them), and tiny random RoBERTa and DeBERTa-v2 two-label classifiers (their
attention sharpened, so that their scores vary), each with its own tokenizer
trained here (tests/support/t5_models.py, tests/support/nli_classifiers.py). Chunk
sizes and input lengths are small, so the example passages need several chunks
and some inputs are cut at the input length.
"""
import csv
import json
import shutil

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from autoais.beam_jobs import agreement, evaluate  # pylint: disable=wrong-import-position
from autoais.models import sentences  # pylint: disable=wrong-import-position
from autoais.models.minicheck import describe_minicheck, load_minicheck, pack_sentences  # pylint: disable=wrong-import-position
from tests.support.t5_models import build_random_t5  # pylint: disable=wrong-import-position
from autoais.schemas import AttributionExample, ScoringFailure  # pylint: disable=wrong-import-position
from tests.support.jobs import run_job  # pylint: disable=wrong-import-position
from tests.support.nli_classifiers import build_tiny_classifier  # pylint: disable=wrong-import-position
from tests.support.minicheck_reference import import_minicheck  # pylint: disable=wrong-import-position
from tests.support.paths import EXAMPLES  # pylint: disable=wrong-import-position
from tests.support.vocab import example_texts  # pylint: disable=wrong-import-position
from autoais.transforms.scoring.cache import identity_key  # pylint: disable=wrong-import-position
from autoais.transforms.scoring.minicheck import MiniCheckScorer  # pylint: disable=wrong-import-position

TWO_LABELS = {0: "LABEL_0", 1: "LABEL_1"}
# kind -> (MiniCheck's model_name, input length, chunk size): chunks of a few
# sentences, inputs that a long sentence and its claim overflow.
SETTINGS = {"t5": ("flan-t5-large", 96, 20), "roberta": ("roberta-large", 64, 30),
            "deberta": ("deberta-v3-large", 64, 30)}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
  root = tmp_path_factory.mktemp("minicheck")
  texts = example_texts()
  return {
      "t5": build_random_t5(str(root / "t5"), texts, version="1.1", seed=5),
      "roberta": build_tiny_classifier(str(root / "roberta"), "roberta", TWO_LABELS,
                                       texts, 64, attention_scale=20.0),
      "deberta": build_tiny_classifier(str(root / "deberta"), "deberta-v2", TWO_LABELS,
                                       texts, 64, seed=4, attention_scale=20.0),
  }


def _passages():
  return [json.loads(line)["contents"].split(" » ")[-1] for line in
          (EXAMPLES / "corpus" / "wiki_sample.jsonl").read_text().splitlines()]


def _examples():
  """(document, claim) pairs: one short sentence; a passage; two and three
  passages joined by a line break, a blank line and a trailing break; a
  passage broken at every sentence end; a sentence longer than any chunk."""
  passages = _passages()
  claim = "The answer to the question is yes"
  long_sentence = " ".join((passages[2] + " " + passages[3]).replace(".", ",").split()
                           [:150]) + "."
  return [
      ("A short premise.", "A short claim."),
      (passages[0], "Paris is the capital"),
      (passages[1] + "\n" + passages[2], claim),
      (passages[3] + "\n\n" + passages[4] + "\n" + passages[5] + "\n", claim),
      (passages[6].replace(". ", ".\n"), "It was built in 1889."),
      ("Short first. " + long_sentence + " Short last.", claim),
      ("\nA document that starts with a line break.", "A claim."),
  ]


class _Local:
  """A transformers Auto class whose from_pretrained reads `directory`
  whatever hub name it is given (the reference's other arguments kept, bar
  the hub-only ones)."""

  def __init__(self, auto_class, directory):
    self._auto, self._directory = auto_class, directory

  def from_pretrained(self, unused_name, **kwargs):
    for hub_only in ("cache_dir", "device_map", "revision", "token"):
      kwargs.pop(hub_only, None)
    return self._auto.from_pretrained(self._directory, **kwargs)


def _reference_inferencer(monkeypatch, kind, directory, split):
  inference, _ = import_minicheck(monkeypatch, split)
  for name in ("AutoConfig", "AutoTokenizer", "AutoModelForSeq2SeqLM",
               "AutoModelForSequenceClassification"):
    monkeypatch.setattr(inference, name, _Local(getattr(transformers, name), directory))
  model_name, length, chunk_size = SETTINGS[kind]
  inferencer = inference.Inferencer(model_name, max_model_len=length, batch_size=3,
                                    cache_dir=None)
  inferencer.chunk_size = chunk_size  # what MiniCheck.score sets
  return inferencer


@pytest.mark.parametrize("kind", sorted(SETTINGS))
def test_probabilities_equal_minicheck_inferencer(models, kind, monkeypatch):
  _, length, chunk_size = SETTINGS[kind]
  ours = load_minicheck(models[kind], max_input_tokens=length, chunk_size=chunk_size,
                        token_budget=512)
  reference = _reference_inferencer(monkeypatch, kind, models[kind], ours.splitter.split)
  pairs = _examples()
  scores = ours.score([AttributionExample(doc, claim, "", "") for doc, claim in pairs],
                      threshold=0.5)
  expected, counts = [], []
  for doc, claim in pairs:
    output = reference.inference_per_example(doc, claim)
    expected.append(output["max_support_prob"])
    counts.append(len(output["support_prob_per_chunk"]))
    if kind != "deberta":  # its used_chunks cut at "</s>", which DeBERTa's inputs lack
      assert ours.chunks(doc) == output["used_chunks"]
  got = np.array([score.nli_score for score in scores])
  print(f"{kind}: max abs diff {np.abs(got - expected).max():.2e} over {len(pairs)} "
        f"documents, chunks {counts}")
  np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5)
  assert [score.n_windows for score in scores] == counts
  assert counts[0] == 1 and max(counts) >= 4  # one chunk, and several
  assert len({round(value, 4) for value in expected}) > 3  # not a constant model
  assert all(score.truncated for score in scores if score.n_windows > 1)
  assert any(max(len(ours.tokenizer(chunk)["input_ids"]) for chunk in ours.chunks(doc))
             > length for doc, _ in pairs)  # some input is cut (in both)
  assert not scores[0].truncated
  # An input past the length is cut at its end, as MiniCheck's tokenizer call cuts it.
  inputs, cut = ours.encode([pairs[5][0] + "</s>" + pairs[5][1]])
  assert cut == [True] and len(inputs[0]["input_ids"]) == length


@pytest.mark.parametrize("kind", ["roberta", "t5"])
def test_a_block_is_split_once_across_documents_and_calls(models, kind):
  _, length, chunk_size = SETTINGS[kind]
  ours = load_minicheck(models[kind], max_input_tokens=length, chunk_size=chunk_size)
  split, blocks = ours.splitter.split, []

  def counted(block):
    blocks.append(block)
    return split(block)

  ours.splitter = ours.splitter._replace(split=counted)
  documents = [doc for doc, _ in _examples()]
  first = [AttributionExample(doc, f"claim {i}", "", "") for i, doc in enumerate(documents)]
  # As citations' premises are: the same documents joined, a line each, in
  # other combinations.
  lines = [line for doc in documents for line in doc.split("\n") if line.strip()]
  second = [AttributionExample("\n".join(lines[i::3]), "another claim", "", "")
            for i in range(3)] + first[::2]
  # Short lines: where each line break's own size counts towards a chunk.
  short = "\n".join(f"Line {i} is short." for i in range(16))
  second.append(AttributionExample(short, "a claim", "", ""))
  scores = ours.score(first, 0.5)
  # Each distinct block once, in the order met; the second call splits none.
  assert blocks == list(dict.fromkeys(block for doc in documents
                                      for block in doc.split("\n")))
  scores += ours.score(second, 0.5)
  assert len(blocks) == len(set(blocks))
  assert set(blocks) == {block for doc in documents + [short] for block in doc.split("\n")}
  fresh = load_minicheck(models[kind], max_input_tokens=length, chunk_size=chunk_size)
  # Exact: the fresh model scores the same chunks in the same batches on one
  # machine, so the same bits (a cache must not change what is computed).
  assert scores == fresh.score(first, 0.5) + fresh.score(second, 0.5)
  # The chunks equal those of the document split whole (the reference's way).
  for example in second:
    whole = []
    for block in example.premise.split("\n"):
      whole.extend(split(block))
      whole.append("\n")
    whole = whole[:-1] or [""]
    assert fresh.chunks(example.premise) == pack_sentences(
        whole, fresh._sizes(whole), chunk_size)  # pylint: disable=protected-access


def test_a_blank_document_fails_as_in_minicheck(models, monkeypatch):
  ours = load_minicheck(models["roberta"], max_input_tokens=64, chunk_size=30)
  reference = _reference_inferencer(monkeypatch, "roberta", models["roberta"],
                                    ours.splitter.split)
  for blank in ("", " \n\n "):
    with pytest.raises((RuntimeError, ValueError), match="non-empty list"):  # no chunk
      reference.inference_per_example(blank, "A claim.")
  scored = ours.score([AttributionExample("", "A claim.", "", ""),
                       AttributionExample("One sentence.", "A claim.", "", ""),
                       AttributionExample(" \n\n ", "A claim.", "", "")], 0.5)
  assert isinstance(scored[0], ScoringFailure) and isinstance(scored[2], ScoringFailure)
  assert "the document is blank" in scored[0].message
  assert scored[1].n_windows == 1
  # Its dead letter says the model refused it, not that an HTTP call failed.
  from autoais.transforms.scoring.attribution import scoring_failed  # pylint: disable=import-outside-toplevel
  dead = scoring_failed("c.jsonl", 3, "evidence", "claim 0", scored[0], {"id": "x"})
  assert dead.message == ("c.jsonl:3: field 'evidence': claim 0: the model cannot "
                          f"score it: {scored[0].message}")
  assert '"http_status": null' in dead.record


def test_pack_sentences_as_minicheck():
  # A sentence larger than the chunk leaves an empty chunk (dropped) behind;
  # a line break's spaces go; a chunk of only a line break is dropped.
  assert pack_sentences(["aa", "bb", "\n", "cc"], [2, 2, 0, 2], 4) == ["aa bb", "cc"]
  assert pack_sentences(["huge"], [9], 4) == ["huge"]
  assert pack_sentences(["a", "\n", "b"], [1, 0, 1], 5) == ["a\nb"]
  assert pack_sentences([""], [0], 4) == []


def test_syntok_sentences_keep_the_text():
  text = ('Dr. Smith moved to Washington, D.C. in 2010.  He said "Hi!" and left. '
          "It cost $3.50, didn't it? Yes")
  split = sentences.syntok_sentences(text)
  assert split == ["Dr. Smith moved to Washington, D.C. in 2010.",
                   'He said "Hi!" and left.', "It cost $3.50, didn't it?", "Yes"]
  assert sentences.syntok_sentences("") == sentences.syntok_sentences("   ") == []


@pytest.mark.parametrize("text, expected", [
    # Stacked citations before a full stop: syntok alone keeps one sentence.
    ("It is in Paris [1][2]. It has a tower [3].",
     ["It is in Paris [1][2].", "It has a tower [3]."]),
    # A citation right after a full stop goes with the next sentence, as in
    # punkt; one after the last full stop is a sentence of its own (ALCE's
    # oddity, docs/citations.md).
    ("It is in Paris.[1][2] It has.", ["It is in Paris.", "[1][2] It has."]),
    ("It is in Paris. [1] It has.", ["It is in Paris.", "[1] It has."]),
    ("It was built in 1902. [2]", ["It was built in 1902.", "[2]"]),
    # Brackets that are not citation markers are left to syntok.
    ("Values [1, 2]. Next.", ["Values [1, 2].", "Next."]),
])
def test_syntok_cuts_at_citation_markers_as_punkt(text, expected):
  split = sentences.syntok_sentences(text)
  assert split == expected
  assert "".join(split).replace(" ", "") == text.replace(" ", "")  # nothing lost


def test_punkt_is_used_where_its_data_is_installed(tmp_path, monkeypatch):
  import nltk
  monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])
  assert sentences.sentence_splitter().name == sentences.SYNTOK
  # English punkt parameters as nltk >= 3.9 reads them (empty: no abbreviations).
  english = tmp_path / "tokenizers" / "punkt_tab" / "english"
  english.mkdir(parents=True)
  for name in ("collocations.tab", "sent_starters.txt", "abbrev_types.txt",
               "ortho_context.tab"):
    (english / name).write_text("")
  splitter = sentences.sentence_splitter()
  assert (splitter.name, splitter.version) == (sentences.NLTK_PUNKT, nltk.__version__)
  assert splitter.split("One here. Two there.") == ["One here.", "Two there."]


def test_cache_identity_names_variant_chunks_and_splitter(models, monkeypatch):
  def key(kind, **options):
    info = describe_minicheck(models[kind], options.get("max_input_tokens"),
                              chunk_size=options.get("chunk_size"))
    return identity_key(MiniCheckScorer(models[kind], **options).cache_identity(info))

  base = key("roberta")
  assert base == key("roberta")
  others = {key("roberta", chunk_size=30), key("roberta", max_input_tokens=64),
            key("roberta", dtype="bfloat16"), key("deberta"), key("t5")}
  monkeypatch.setattr(sentences, "sentence_splitter", lambda: sentences.SentenceSplitter(
      "other", "1", str.split))
  monkeypatch.setattr("autoais.models.minicheck.sentence_splitter", sentences.sentence_splitter)
  others.add(key("roberta"))
  assert len(others | {base}) == 7


def test_agreement_end_to_end(models, tmp_path, monkeypatch):
  output = tmp_path / "agreement"
  assert run_job(agreement, "--input", EXAMPLES / "agreement" / "aggrefact.csv",
                 "--format", "aggrefact", "--output_dir", output, "--scorer",
                 "minicheck", "--model", models["deberta"], "--max_input_tokens", 64,
                 "--chunk_size", 12, "--score_cache", tmp_path / "cache",
                 "--bootstrap_samples", 20) == 0
  scorer = json.loads((output / "run.json").read_text())["scorer"]
  assert scorer["name"] == scorer["family"] == "minicheck"
  assert scorer["variant"] == "deberta-v3-large" and scorer["chunk_unit"] == "tokens"
  assert (scorer["chunk_size"], scorer["max_input_tokens"]) == (12, 64)
  assert scorer["sentence_splitter"]["name"] in (sentences.SYNTOK, sentences.NLTK_PUNKT)
  assert scorer["input_format"] == "{doc}[SEP]{claim}" and scorer["score_cache_key"]
  ours = load_minicheck(models["deberta"], max_input_tokens=64, chunk_size=12)
  reference = _reference_inferencer(monkeypatch, "deberta", models["deberta"],
                                    ours.splitter.split)
  reference.chunk_size = 12
  with open(EXAMPLES / "agreement" / "aggrefact.csv", newline="", encoding="utf-8") as f:
    expected = sorted(reference.inference_per_example(item["doc"], item["claim"])
                      ["max_support_prob"] for item in csv.DictReader(f))
  with open(output / "agreement_rows.csv", newline="", encoding="utf-8") as f:
    rows = list(csv.DictReader(f))
  np.testing.assert_allclose(sorted(float(row["nli_score"]) for row in rows), expected,
                             rtol=0, atol=1e-5)
  assert max(int(row["n_windows"]) for row in rows) > 1


def _evaluate(model, corpus, output, *extra):
  return run_job(evaluate, "--predictions", EXAMPLES / "predictions" / "*.csv",
                 "--corpus", corpus, "--gold", EXAMPLES / "gold.jsonl",
                 "--output_dir", output, "--scorer", "minicheck", "--model", model,
                 *extra)


def test_refusals_at_launch(models, example_corpus, tmp_path, capsys):
  from transformers import AutoModelForSequenceClassification
  out = tmp_path / "out"
  pickled = tmp_path / "pickled"
  shutil.copytree(models["roberta"], pickled)
  (pickled / "model.safetensors").unlink()
  torch.save(AutoModelForSequenceClassification.from_pretrained(
      models["roberta"]).state_dict(), pickled / "pytorch_model.bin")
  assert _evaluate(pickled, example_corpus, out) == 2
  err = capsys.readouterr().err
  assert f"--model {pickled}: only pickle checkpoints (pytorch_model.bin)" in err, err
  assert "safe_serialization=True" in err

  for kind, name, change, message in [
      ("roberta", "bert", {"architectures": ["BertForSequenceClassification"]},
       "(BertForSequenceClassification) are none of MiniCheck's"),
      ("roberta", "three", {"id2label": {"0": "a", "1": "b", "2": "c"}},
       "a head of 3 labels; MiniCheck's classifiers have two"),
      ("t5", "small_vocabulary", {"vocab_size": 200},
       "a vocabulary of 200 ids lacks the ids MiniCheck reads (3 and 209)")]:
    directory = tmp_path / name
    shutil.copytree(models[kind], directory)
    config = json.loads((directory / "config.json").read_text())
    (directory / "config.json").write_text(json.dumps(dict(config, **change)))
    assert _evaluate(directory, example_corpus, out) == 2
    err = capsys.readouterr().err
    assert f"--model {directory}: " in err and message in err, err
  assert _evaluate(tmp_path / "missing", example_corpus, out) == 2
  assert "no such model directory" in capsys.readouterr().err
  assert _evaluate(models["roberta"], example_corpus, out, "--chunk_size", 0) == 2
  assert "--chunk_size must be positive" in capsys.readouterr().err
  assert _evaluate(models["roberta"], example_corpus, out, "--decision", "decode") == 2
  assert "--decision is for --scorer t5, not --scorer minicheck" in capsys.readouterr().err
  assert run_job(evaluate, "--predictions", EXAMPLES / "predictions" / "*.csv",
                 "--corpus", example_corpus, "--gold", EXAMPLES / "gold.jsonl",
                 "--output_dir", out, "--chunk_size", 10) == 2
  assert "--chunk_size is for --scorer minicheck" in capsys.readouterr().err
  assert not out.exists()


def test_text_cache_keeps_the_most_recent_within_its_characters():
  from autoais.models.token_budget import TextCache  # pylint: disable=import-outside-toplevel
  cache = TextCache(max_chars=10)
  cache.put("aaaa", 1)
  cache.put("bbbb", 2)
  assert cache.found(["aaaa"]) == ({"aaaa": 1}, [])  # now the most recent
  cache.put("ccc", 3)  # 11 characters: "bbbb", the least recent, goes
  assert cache.found(["bbbb", "aaaa", "ccc", "aaaa"]) == ({"aaaa": 1, "ccc": 3}, ["bbbb"])
  cache.put("x" * 11, 4)  # longer than the cache: not kept, nothing dropped
  assert cache.found(["x" * 11, "ccc"]) == ({"ccc": 3}, ["x" * 11])
