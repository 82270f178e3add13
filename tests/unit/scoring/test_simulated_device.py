"""The simulated accelerator (models/simulated_device.py): a model directory
with its marker loads as its family loads it, tokenises the same inputs,
waits for each padded batch at the named card's rate with the GIL released,
answers scores that depend on the input alone, records its busy share, is
named in run.json, and refuses what it cannot simulate.

Models: the tiny random T5 and RoBERTa classifier of tests/support, each
copied with a marker (a directory without one must load as before).
"""
import json
import shutil
import threading
import time

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from autoais.beam_jobs import evaluate  # pylint: disable=wrong-import-position
from autoais.models import (lettucedetect, minicheck, nli_classifier,  # pylint: disable=wrong-import-position
                            simulated_device, t5_nli)
from autoais.schemas import AttributionExample  # pylint: disable=wrong-import-position
from autoais.schemas.errors import ModelError  # pylint: disable=wrong-import-position
from tests.support.jobs import run_job  # pylint: disable=wrong-import-position
from tests.support.lettucedetect_models import build_tiny_lettucedetect  # pylint: disable=wrong-import-position
from tests.support.nli_classifiers import build_tiny_classifier  # pylint: disable=wrong-import-position
from tests.support.paths import EXAMPLES  # pylint: disable=wrong-import-position
from tests.support.t5_models import build_random_t5  # pylint: disable=wrong-import-position
from tests.support.vocab import example_texts  # pylint: disable=wrong-import-position

# A rate slow enough that the waits dominate a small batch's host work.
RATE = "h100-true-11b"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
  root = tmp_path_factory.mktemp("simulated")
  texts = example_texts()
  return {"t5": build_random_t5(str(root / "t5"), texts, seed=5),
          "roberta": build_tiny_classifier(str(root / "roberta"), "roberta",
                                           {0: "entailment", 1: "neutral",
                                            2: "contradiction"}, texts, 64)}


def _marked(directory, tmp_path, name, **marker):
  copy = tmp_path / name
  shutil.copytree(directory, copy)
  (copy / simulated_device.MARKER).write_text(json.dumps({"rate": RATE, **marker}))
  return str(copy)


def _examples(n=24):
  passages = [json.loads(line)["contents"] for line in
              (EXAMPLES / "corpus" / "wiki_sample.jsonl").read_text().splitlines()]
  return [AttributionExample(passages[i % len(passages)] * (1 + i % 3),
                             f"The answer is {i}", "", "") for i in range(n)]


def _padded_tokens(batches):
  return sum(len(batch) * max(lengths) for batch, lengths in batches)


@pytest.mark.parametrize("family", ["t5", "nli-classifier", "minicheck"])
def test_the_simulated_device_tokenises_as_the_model_and_waits_at_the_rate(
    models, tmp_path, family):
  record = tmp_path / "busy.jsonl"
  real_dir = models["roberta" if family == "nli-classifier" else "t5"]
  marked = _marked(real_dir, tmp_path, "marked", record=str(record))
  if family == "t5":
    real, fake = (t5_nli.load_t5_nli(d, max_input_tokens=64, token_budget=512)
                  for d in (real_dir, marked))
    encode = lambda model, examples: model.encode_many(examples)
    score = lambda model, examples: model.score(examples, "threshold", 0.5)
  elif family == "nli-classifier":
    real, fake = (nli_classifier.load_nli_classifier(d, max_input_tokens=64,
                                                     token_budget=512)
                  for d in (real_dir, marked))
    encode = lambda model, examples: model.encode_many(examples)
    score = lambda model, examples: model.score(examples, 0.5)
  else:
    # A T5 v1.0 vocabulary holds MiniCheck's ids 3 and 209; the variant is
    # read from config.json's architectures.
    real, fake = (minicheck.load_minicheck(d, max_input_tokens=64, token_budget=512,
                                           chunk_size=20) for d in (real_dir, marked))
    encode = lambda model, examples: model.chunks_of([e.premise for e in examples])
    score = lambda model, examples: model.score(examples, 0.5)
  examples = _examples()
  assert real.scorer.simulated_device is None if family == "minicheck" else (
      real.simulated_device is None)
  device = (fake.scorer if family == "minicheck" else fake).simulated_device
  assert device is not None
  assert encode(fake, examples) == encode(real, examples)
  started = time.monotonic()
  first = score(fake, examples)
  wall = time.monotonic() - started
  waited = sum(end - start for start, end in device.intervals)
  # Every padded token of every batch was waited for, at the rate.
  lines = [json.loads(line) for line in record.read_text().splitlines()]
  assert len(lines) == len(device.intervals) >= 1
  tokens = sum(line["tokens"] for line in lines)
  assert waited == pytest.approx(device.seconds(tokens), rel=0.2, abs=0.01)
  assert wall >= device.seconds(tokens)
  assert 0 < device.busy_share() <= 1
  assert simulated_device.busy_share(str(record)) == pytest.approx(device.busy_share())
  # The scores depend on the inputs alone: the same scores in other batches,
  # and a spread of them, not one value.
  again = score(fake, examples[::-1])[::-1]
  assert [s.nli_score for s in again] == [s.nli_score for s in first]
  assert len({round(s.nli_score, 6) for s in first}) > 3
  assert {s.n_windows for s in first} == {s.n_windows for s in score(real, examples)}


def test_the_wait_releases_the_gil(models, tmp_path):
  model = t5_nli.load_t5_nli(_marked(models["t5"], tmp_path, "marked"), token_budget=512)
  examples = _examples(8)
  counted, done = [0], threading.Event()

  def count():
    while not done.is_set():
      counted[0] += 1

  counter = threading.Thread(target=count)
  counter.start()
  try:
    model.score(examples, "threshold", 0.5)
    during = counted[0]
  finally:
    done.set()
    counter.join()
  # Python ran in another thread while the device waited.
  assert during > 1000


def test_a_marker_is_refused_where_it_cannot_simulate(models, tmp_path):
  marked = _marked(models["t5"], tmp_path, "marked")
  with pytest.raises(ModelError, match="threshold only"):
    t5_nli.load_t5_nli(marked, decision="decode")
  with pytest.raises(ModelError, match="simulated device"):
    simulated_device.simulated(marked, "cuda")
  (tmp_path / "marked" / simulated_device.MARKER).write_text('{"rate": "a100-unknown"}')
  with pytest.raises(ModelError, match="h100-true-11b"):
    t5_nli.load_t5_nli(marked)
  (tmp_path / "marked" / simulated_device.MARKER).write_text(
      json.dumps({"rate": RATE, "cards": 2}))
  with pytest.raises(ModelError, match="unknown keys"):
    t5_nli.load_t5_nli(marked)
  # A family whose model gives a probability per answer token refuses the
  # marker rather than loading the real model beside it.
  detector = _marked(build_tiny_lettucedetect(str(tmp_path / "detector"), example_texts()),
                     tmp_path, "marked_detector")
  with pytest.raises(ModelError, match="cannot use"):
    lettucedetect.load_lettucedetect(detector)


def test_busy_share_counts_overlapping_batches_once():
  # Two processes' batches: busy 0-2 and 3-4 of a 0-5 window.
  share = simulated_device._busy_share([(0, 1), (0.5, 2), (3, 4), (4.5, 5)])  # pylint: disable=protected-access
  assert share == pytest.approx(3.5 / 5)


def test_evaluate_with_a_simulated_device_names_it_in_run_json(models, example_corpus,
                                                                tmp_path):
  marked = _marked(models["t5"], tmp_path, "marked", record=str(tmp_path / "busy.jsonl"))
  out = tmp_path / "out"
  assert run_job(evaluate, "--predictions", EXAMPLES / "predictions" / "*.csv",
                 "--corpus", example_corpus, "--gold", EXAMPLES / "gold.jsonl",
                 "--output_dir", out, "--scorer", "t5", "--model", marked,
                 "--bootstrap_samples", 20) == 0
  record = json.loads((out / "run.json").read_text())
  text = json.dumps(record)
  assert '"simulated_device"' in text and RATE in text
  assert (tmp_path / "busy.jsonl").read_text().count("\n") >= 1
