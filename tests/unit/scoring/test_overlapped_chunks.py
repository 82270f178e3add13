"""Chunks overlapped on an accelerator (transforms/scoring/fanout.py
_ChunkHandler; models/token_budget.py chunks_in_flight): while one chunk's
batches are on the device, the next is tokenised beside them. The overlapped
path must give what one chunk at a time gives, in the same order, and fail as
it fails when the device fails mid-batch.

Each chunk is one call of the model with the same examples either way, so
the same padded batches: scores are compared exactly (one torch thread per
test process: tests/conftest.py). Models: the tiny random T5 of tests/support
on this CPU (forced to overlap, to compare floats that depend on their batch)
and the same model with the simulated accelerator's marker.
"""
import json
import shutil
import threading

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline

pytest.importorskip("torch")
pytest.importorskip("transformers")

from autoais.models import simulated_device, token_budget  # pylint: disable=wrong-import-position
from autoais.models.t5_nli import T5NliModel, T5NliModelHandler  # pylint: disable=wrong-import-position
from autoais.schemas import AttributionExample  # pylint: disable=wrong-import-position
from autoais.schemas.errors import ModelError  # pylint: disable=wrong-import-position
from autoais.transforms.scoring import fanout  # pylint: disable=wrong-import-position
from autoais.transforms.scoring.examples import example_digest  # pylint: disable=wrong-import-position
from tests.support.paths import EXAMPLES  # pylint: disable=wrong-import-position
from tests.support.t5_models import build_random_t5  # pylint: disable=wrong-import-position
from tests.support.vocab import example_texts  # pylint: disable=wrong-import-position

POISON = "the device fails on the batch that holds this hypothesis"


@pytest.fixture(scope="module")
def t5_dirs(tmp_path_factory):
  root = tmp_path_factory.mktemp("overlap")
  real = build_random_t5(str(root / "t5"), example_texts(), seed=5)
  marked = root / "t5-simulated"
  shutil.copytree(real, marked)
  # A fast card: the test's waits stay short.
  (marked / simulated_device.MARKER).write_text(json.dumps({"rate": "h100-roberta-large"}))
  return {"cpu": real, "simulated": str(marked)}


def _examples(n=40):
  passages = [json.loads(line)["contents"] for line in
              (EXAMPLES / "corpus" / "wiki_sample.jsonl").read_text().splitlines()]
  return [AttributionExample(passages[i % len(passages)] * (1 + i % 3),
                             f"The answer is {i}", "", "") for i in range(n)]


def _packed(examples, per_chunk):
  return [fanout.pack_chunk([(example_digest(e.premise, e.hypothesis), e)
                             for e in examples[i:i + per_chunk]])
          for i in range(0, len(examples), per_chunk)]


def _handler(model_dir):
  return T5NliModelHandler(model_dir, max_input_tokens=64, token_budget=256)


def _in_flight(monkeypatch, count):
  monkeypatch.setattr(token_budget.LocalModelHandler, "chunks_in_flight",
                      lambda self, model: count)


def test_an_accelerated_model_has_two_chunks_in_flight_and_a_cpu_one(t5_dirs):
  for name, expected in (("simulated", 2), ("cpu", 1)):
    handler = _handler(t5_dirs[name])
    assert handler.chunks_in_flight(handler.load_model()) == expected, name


def test_overlapped_chunks_score_exactly_as_one_at_a_time(t5_dirs, monkeypatch):
  handler = _handler(t5_dirs["cpu"])
  model = handler.load_model()
  packed = _packed(_examples(), 7)
  _in_flight(monkeypatch, 1)
  serial = fanout._ChunkHandler(handler).run_inference(packed, model)  # pylint: disable=protected-access
  threads = set()
  real_score = type(model).score

  def score(self, *args):
    threads.add(threading.current_thread().name)
    return real_score(self, *args)

  monkeypatch.setattr(type(model), "score", score)
  _in_flight(monkeypatch, 2)
  overlapped = fanout._ChunkHandler(handler).run_inference(packed, model)  # pylint: disable=protected-access
  # The chunks ran on the pool's two threads, not the caller's.
  assert len(threads) == 2 and all(name.startswith("autoais-chunk") for name in threads)
  assert len(overlapped) == len(packed) == 6
  # Same chunks, same batches: the same floats, in the same order.
  assert overlapped == serial


def test_the_next_chunk_is_tokenised_while_one_is_on_the_device(t5_dirs, monkeypatch):
  handler = _handler(t5_dirs["simulated"])
  model = handler.load_model()
  events, lock = [], threading.Lock()
  real_encode, real_run = type(model).encode_many, simulated_device.SimulatedDevice.run

  def encode_many(self, examples, windowed=True):
    with lock:
      events.append(("encode", examples[0].hypothesis))
    return real_encode(self, examples, windowed)

  def run(self, ids, mask):
    with lock:
      events.append(("device start", None))
    result = real_run(self, ids, mask)
    with lock:
      events.append(("device end", None))
    return result

  monkeypatch.setattr(type(model), "encode_many", encode_many)
  monkeypatch.setattr(simulated_device.SimulatedDevice, "run", run)
  fanout._ChunkHandler(handler).run_inference(_packed(_examples(), 10), model)  # pylint: disable=protected-access
  encodes = [index for index, (kind, _) in enumerate(events) if kind == "encode"]
  # The third chunk is tokenised after the device has started on the first
  # chunks and before it has finished the last batch of the second.
  last_device_end = max(index for index, (kind, _) in enumerate(events)
                        if kind == "device end")
  first_device_start = events.index(("device start", None))
  assert len(encodes) == 4
  assert first_device_start < encodes[2] < last_device_end


def _poisoned_run(monkeypatch, model, poisoned, seen):
  """SimulatedDevice.run failing on the batch that holds an input of the
  example `poisoned`."""
  inputs = {tuple(window) for window in model.encode_many([poisoned])[0].windows}
  real_run = simulated_device.SimulatedDevice.run

  def run(self, ids, mask):
    rows, masks = ids.cpu().numpy(), mask.cpu().numpy()
    seen.append(len(rows))
    if any(tuple(row[row_mask == 1].tolist()) in inputs for row, row_mask in zip(rows, masks)):
      raise ModelError("the simulated device failed mid-batch")
    return real_run(self, ids, mask)

  monkeypatch.setattr(simulated_device.SimulatedDevice, "run", run)


def test_a_device_failing_mid_batch_fails_the_call_as_one_at_a_time(t5_dirs, monkeypatch):
  handler = _handler(t5_dirs["simulated"])
  model = handler.load_model()
  examples = _examples()
  examples[13] = AttributionExample(examples[13].premise, POISON, "", "")
  packed = _packed(examples, 7)
  errors = {}
  for count in (1, 2):
    seen = []
    _in_flight(monkeypatch, count)
    _poisoned_run(monkeypatch, model, examples[13], seen)
    with pytest.raises(ModelError) as raised:
      fanout._ChunkHandler(handler).run_inference(packed, model)  # pylint: disable=protected-access
    errors[count] = str(raised.value)
    assert seen, "the device ran no batch"
    # Nothing is left running after the call has raised.
    assert not [t for t in threading.enumerate() if t.name.startswith("autoais-chunk")]
  assert errors[1] == errors[2] == "the simulated device failed mid-batch"


# What the pipelines below output, by (run, output name): the in-process
# runner unpickles the collecting function, which finds this by module.
_COLLECTED = {}


def _collect(item, run, name):
  _COLLECTED.setdefault((run, name), []).append(item)


def _score_rows(pipeline, handler, rows, tmp_path, run):
  result = (pipeline | beam.Create(rows, reshuffle=False)
            | fanout.ScoreUniqueExamples(handler, model_id="t5", work_dir=str(tmp_path),
                                         max_examples_per_call=5))
  for name in ("scored", "failed", "stats"):
    _ = result[name] | f"Collect{name.title()}" >> beam.Map(_collect, run, name)


def test_score_unique_examples_overlapped_gives_the_serial_outputs(t5_dirs, tmp_path,
                                                                   monkeypatch):
  examples = _examples(30)
  # Rows share examples (dedup) and one has no passage (unscored).
  rows = [(f"row-{i}", examples[i % 23]) for i in range(30)] + [("row-none", None)]
  _COLLECTED.clear()
  threads = set()
  real_score = T5NliModel.score

  def score(self, *args):
    threads.add(threading.current_thread().name)
    return real_score(self, *args)

  monkeypatch.setattr(T5NliModel, "score", score)
  for count in (1, 2):
    _in_flight(monkeypatch, count)
    with TestPipeline() as pipeline:
      _score_rows(pipeline, _handler(t5_dirs["simulated"]), rows, tmp_path / str(count),
                  count)
  serial, overlapped = ({name: _COLLECTED.get((run, name), [])
                         for name in ("scored", "failed", "stats")} for run in (1, 2))
  # Several chunks, and the overlapped run scored them on the pool's threads.
  assert serial["stats"][0]["inference_calls"] >= 5
  assert len([name for name in threads if name.startswith("autoais-chunk")]) == 2
  assert len(serial["scored"]) == 31 and not serial["failed"]
  assert sorted(overlapped["scored"], key=repr) == sorted(serial["scored"], key=repr)
  assert overlapped["stats"] == serial["stats"] and not overlapped["failed"]
