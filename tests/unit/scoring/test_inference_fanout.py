"""Model work fans out: bounded groups and calls, byte-identical scores.

20k distinct triples of similar length (one 512-character band, the case where
the old code put every example under one key) plus rows that repeat some of
them, through ScoreUniqueExamples with a test handler whose score depends on
the example alone and that reports each call's size. Groups and calls are a
quarter of the defaults (256 examples a group, 128 a call), so that the run
has nearly as many groups and calls to bound (about 79 groups and 156 or more
calls; 100k examples under the defaults: 98 and 196) at a fifth of the work.
"""
import json

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from autoais.schemas import AttributionExample
from tests.support.scorers import DigestHandler, hash_score
from autoais.transforms.scoring import fanout

N_DISTINCT = 20_000
N_REPEATED_ROWS = 2_000
BOUND = fanout.DEFAULT_MAX_EXAMPLES_PER_CALL // 4
PER_GROUP = fanout.DEFAULT_EXAMPLES_PER_GROUP // 4
_WORDS = ["attribution", "passage", "answer", "question", "system", "wikipedia",
          "entailment", "premise", "hypothesis", "model", "score", "leaderboard"]


def _example(index: int) -> AttributionExample:
  """Premise and hypothesis of 120-130 characters together (one length band)."""
  premise = " ".join(_WORDS[(index * step) % len(_WORDS)] for step in (1, 5, 7, 11))
  premise = f"{premise} {index}".ljust(80, ".")
  hypothesis = f"The answer to the question 'q{index}' is 'a{index % 997}'"
  return AttributionExample(premise, hypothesis, f"a{index % 997}", premise)


def _rows():
  """(row key, example): every distinct example once, then repeats."""
  for index in range(N_DISTINCT):
    yield f"row-{index}", index
  for extra in range(N_REPEATED_ROWS):
    yield f"repeat-{extra}", (extra * 7919) % N_DISTINCT
  yield "no-passage", None


class _ExpandRowsFn(beam.DoFn):
  """Builds the examples on the workers (the driver never holds them all)."""

  def process(self, unused_impulse):
    for key, index in _rows():
      yield key, None if index is None else _example(index)


def _line(key_and_score):
  key, score = key_and_score
  return json.dumps([key, None if score is None else list(score)])


def _run(output_dir, flags):
  options = PipelineOptions(flags)
  with beam.Pipeline(runner=FnApiRunner(), options=options) as pipeline:
    rows = (pipeline | beam.Create([None]) | beam.ParDo(_ExpandRowsFn())
            | "SpreadRows" >> beam.Reshuffle())
    scores = rows | fanout.ScoreUniqueExamples(DigestHandler(), model_id="digest",
                                               work_dir=str(output_dir / "work"),
                                               max_examples_per_call=BOUND,
                                               examples_per_group=PER_GROUP)
    _ = (scores["scored"] | "Format" >> beam.Map(_line)
         | "WriteScores" >> beam.io.WriteToText(str(output_dir / "scores"),
                                                num_shards=1))
    _ = (scores["stats"] | "FormatStats" >> beam.Map(json.dumps)
         | "WriteStats" >> beam.io.WriteToText(str(output_dir / "stats"), num_shards=1))
  lines = sorted((output_dir / "scores-00000-of-00001").read_text().splitlines())
  stats = json.loads((output_dir / "stats-00000-of-00001").read_text())
  return lines, stats


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
  root = tmp_path_factory.mktemp("fanout")
  one = _run(root / "one", ["--direct_num_workers=1"])
  two = _run(root / "two", ["--direct_running_mode=multi_processing",
                            "--direct_num_workers=2"])
  return one, two


def test_groups_and_calls_are_bounded(runs):
  (_, stats), _ = runs
  assert stats["unique_triples"] == N_DISTINCT
  assert stats["model_calls"] == N_DISTINCT
  assert stats["rows_scored_by_model"] == N_DISTINCT + N_REPEATED_ROWS
  # One length band, spread over ~N/PER_GROUP digest shards: no key holds the band.
  assert stats["inference_groups"] >= N_DISTINCT // PER_GROUP
  assert stats["largest_group_examples"] < 1.25 * PER_GROUP
  assert stats["largest_call_examples"] <= BOUND
  assert stats["inference_calls"] >= N_DISTINCT // BOUND


def test_every_row_gets_its_examples_score(runs):
  (lines, _), _ = runs
  by_key = {key: score for key, score in map(json.loads, lines)}
  assert len(by_key) == N_DISTINCT + N_REPEATED_ROWS + 1
  assert by_key.pop("no-passage") is None
  call_sizes = set()
  for key, index in _rows():
    if index is None:
      continue
    example = _example(index)
    nli_score, attributable, call_size, truncated, spans = by_key[key]
    assert spans is None  # a scorer that finds no spans (lettucedetect's do)
    # The score the handler gives this example on its own: the scores of the
    # code before the fan-out, whose chunks were whole length bands.
    assert nli_score == hash_score(example.premise, example.hypothesis), key
    assert attributable == (nli_score > 0.5) and not truncated
    call_sizes.add(call_size)
  assert max(call_sizes) <= BOUND and len(call_sizes) > 1


def test_one_and_two_workers_give_identical_scores_and_calls(runs):
  (lines_one, stats_one), (lines_two, stats_two) = runs
  # n_windows carries the size of the call that scored each example: equal
  # lines mean the same chunks, whatever the number of workers.
  assert lines_one == lines_two
  assert stats_one == stats_two
