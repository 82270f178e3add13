"""Pins the behaviour of the Beam and argparse internals beam_jobs/options.py
relies on where no public API does the same (its docstring lists them), and
the text of a worker's failure that beam_jobs/running.py reads, and the output
type Beam infers for the DoFns of transforms/io/untyped_output.py: an upgrade of
Beam or Python that changes one fails here, not in a job.

    .venv/bin/python -m pytest -q -n 0 tests/unit/test_beam_internals.py
"""
import argparse

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from autoais.beam_jobs import evaluate
from autoais.beam_jobs.options import (JobArguments, ScorerOptions, given_flags, option_dests,
                                       options_parser)
from autoais.beam_jobs.running import run_job
from autoais.schemas.errors import InputError


class _ValueProviderOptions:  # pylint: disable=too-few-public-methods
  """A class declaring its flags as a template's options do (not a
  PipelineOptions subclass: one would join every job's flags in this process)."""

  @classmethod
  def _add_argparse_args(cls, parser):
    parser.add_value_provider_argument("--templated_input", default="in")


def test_beams_parser_takes_value_provider_flags_which_argparses_lacks():
  # A PipelineOptions subclass imported in the process (a user's, a template's)
  # is parsed with every job's flags, and may declare value-provider flags.
  assert not hasattr(argparse.ArgumentParser, "add_value_provider_argument")
  parsed, unknown = options_parser(_ValueProviderOptions).parse_known_args(
      ["--templated_input", "gs://b/x"])
  assert unknown == [] and parsed.templated_input.get() == "gs://b/x"


def test_add_argparse_args_declares_the_flags_the_options_parse():
  parser = options_parser(evaluate.EvaluateOptions, ScorerOptions)
  parsed, unknown = parser.parse_known_args(["--threshold", "0.25", "--corpus", "c"])
  assert unknown == []
  options = evaluate.EvaluateOptions(["--threshold", "0.25", "--corpus", "c"])
  assert (parsed.threshold, parsed.corpus) == (
      options.view_as(ScorerOptions).threshold, options.corpus) == (0.25, "c")
  # No abbreviations: `--thresh` is not --threshold.
  assert parser.parse_known_args(["--thresh", "0.3"])[1] == ["--thresh", "0.3"]


class _RequiredFlagOptions:  # pylint: disable=too-few-public-methods
  @classmethod
  def _add_argparse_args(cls, parser):
    parser.add_argument("--pinned_required", required=True)
    parser.add_argument("--pinned_optional", default=None)


def test_actions_list_every_flag_even_a_required_one_a_parse_of_nothing_refuses():
  with pytest.raises(SystemExit):
    options_parser(_RequiredFlagOptions).parse_known_args([])
  assert option_dests(_RequiredFlagOptions) == {"pinned_required", "pinned_optional"}
  assert option_dests(ScorerOptions) == frozenset(
      vars(options_parser(ScorerOptions).parse_known_args([])[0]))
  assert "help" not in option_dests(ScorerOptions)


def test_options_keep_the_flags_they_were_made_from_through_views():
  argv = ["--threshold", "0.5", "--runner", "DirectRunner", "--corpus", "c"]
  options = evaluate.EvaluateOptions(argv)
  assert options._flags == argv  # pylint: disable=protected-access
  assert options.view_as(StandardOptions)._flags == argv  # pylint: disable=protected-access
  # Given with its default value, --threshold is given; the public API cannot
  # tell it from one left out.
  assert "threshold" not in options.get_all_options(drop_default=True)
  assert given_flags(options, ScorerOptions) == {"threshold"}
  assert given_flags(options.view_as(ScorerOptions), ScorerOptions) == {"threshold"}
  assert given_flags(PipelineOptions([]), ScorerOptions) == frozenset()


def test_a_flag_two_classes_declare_is_added_once_and_must_agree():
  parser = options_parser()
  JobArguments(parser, "one").add_argument("--pinned_shared", type=int, default=3)
  JobArguments(parser, "two").add_argument("--pinned_shared", type=int, default=3)
  assert vars(parser.parse_known_args(["--pinned_shared", "4"])[0]) == {"pinned_shared": 4}
  with pytest.raises(ValueError, match="--pinned_shared"):
    JobArguments(options_parser(), "three").add_argument("--pinned_shared", default=3)
  # A flag another options class (not a JobArguments) declared: defaults agree.
  parser = options_parser(ScorerOptions)
  JobArguments(parser, "four").add_argument("--threshold", type=float, default=0.5)
  with pytest.raises(ValueError, match="--device"):
    JobArguments(parser, "five").add_argument("--device", default="cuda")


def _unusable(row):
  raise InputError(f"rows.jsonl line {row}: field 'answer' is missing")


@pytest.mark.parametrize("mode", ["in_memory", "multi_processing"])
def test_an_input_error_raised_on_a_worker_reaches_the_launcher(mode, capsys):
  """running.py finds an InputError behind a failed run in the exception chain
  (in-process runs) or, where the runner reports a worker's exception as text
  only (worker processes), in that text: 'InputError: message' with Beam's
  ' [while running ...]' appended. Both give exit 2 and the bare message."""
  def build(pipeline, options):
    _ = pipeline | "CreateRows" >> beam.Create([7]) | "ReadRows" >> beam.Map(_unusable)

  argv = [f"--direct_running_mode={mode}", "--direct_num_workers=2", "--progress_interval=0"]
  assert run_job("pinned", argv, ScorerOptions, build) == 2
  assert capsys.readouterr().err.strip().splitlines()[-1] == (
      "autoais pinned: error: rows.jsonl line 7: field 'answer' is missing")


def test_beam_infers_any_for_the_dofns_whose_output_is_declared_any(example_corpus, tmp_path,
                                                                    monkeypatch):
  # transforms/io/untyped_output.py spares Beam's reading of these DoFns'
  # bytecode on the ground that it concludes Any: here Beam reads them again,
  # with the input types every job gives them, and must conclude Any.
  import importlib  # pylint: disable=import-outside-toplevel
  from apache_beam import typehints  # pylint: disable=import-outside-toplevel
  from autoais.beam_jobs.cli import JOBS  # pylint: disable=import-outside-toplevel
  from autoais.transforms.io.untyped_output import UntypedOutputDoFn  # pylint: disable=import-outside-toplevel
  from tests.support import jobs  # pylint: disable=import-outside-toplevel
  applied = []

  def recorded(fn, input_type):
    applied.append((fn, input_type))
    return typehints.Any

  monkeypatch.setattr(UntypedOutputDoFn, "infer_output_type", recorded)
  for job in jobs.SCORING_JOBS:
    assert jobs.run_job(importlib.import_module(JOBS[job]),
                        *jobs.scoring_job_flags(job, example_corpus),
                        "--output_dir", tmp_path / job) == 0, job
  assert {type(fn).__name__ for fn, _ in applied} == {
      "_ReadRecordsFn", "_SpillRunsFn", "_CombineBundleFn", "_WriteLeaderboardFilesFn",
      "_AssembleItemFn"}
  for fn, input_type in applied:
    assert beam.DoFn.infer_output_type(fn, input_type) == typehints.Any, (fn, input_type)
