"""citations: ALCE citation recall and precision of long answers with inline
citations, per system, at leaderboard scale.

    autoais citations --input 'runs/*.json' --output_dir out/ \
        [--format alce|jsonl|human_eval] [--qampari auto|true|false] [--at_most_citations 3] \
        [--scorer string-match|t5 --model DIR --decision decode ...] \
        [--bootstrap_samples 1000] [--seed 0]
    python -m autoais.beam_jobs.citations ...

Input: ALCE result files ({"data": [{question, output, docs, qa_pairs?, answers?,
claims?}]}, one system a file, named by the file stem) or their JSON Lines
variant (one item a line, `system_name` or the file stem), or ALCE's
human_eval layout ({dataset: {system file: {question id: item}}}); see
transforms/citations/readers.py. Items may carry human citation judgements
(ALCE's human_eval format), checked against the automatic ones
(transforms/citations/human.py). The definitions are ALCE's eval.py's
(transforms/citations/alce.py); every distinct (premise, hypothesis) pair is
scored once in the run, across sentences, precision checks and systems
(transforms/citations/steps.py).

Outputs in --output_dir: citations_rows.parquet / .csv (one row per sentence),
citations_items.parquet / .csv (one row per answer), citations.csv / .json /
.md (per system: citation_rec, citation_prec, STR-EM / STR-Hit, QAMPARI figures,
claims NLI, length, with 95% bootstrap CIs over questions, paired across
systems), citations_human.csv / .json / .md (the human check),
dead_letter.jsonl, and run.json, written last, whose item counts
reconcile (read = scored + rejected + unmatched) and which gives the sentences,
citations, model calls (the distinct pairs scored) and the calls ALCE's eval.py
would make.
"""
if __name__ == "__main__":
  # `python -m autoais.beam_jobs.citations`: run the package module (Beam pickles DoFns
  # by reference).
  import sys
  from autoais.beam_jobs.citations import run
  sys.exit(run())

import functools
import os

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from autoais.beam_jobs.options import (JobArguments, RowTableOptions, ScorerOptions,
                                       ViewsKept, check_bootstrap_flags, row_table_shards,
                                       scorer_from_options, scorer_read_dirs)
from autoais.beam_jobs.running import is_local_runner, run_job
from autoais.beam_jobs.output_dir import OutputDir
from autoais.schemas.errors import ConfigError, require, require_choice
from autoais.transforms.citations.alce import splitter
from autoais.transforms.citations.human import CheckAgainstHumans
from autoais.transforms.citations.readers import (ITEM_FIELDS, read_alce_document,
                                          read_alce_human_eval, read_alce_lines)
from autoais.transforms.citations.steps import ScoreCitations
from autoais.transforms.citations.tables import ItemsFold, SentencesFold, SummarizeCitations
from autoais.transforms.io.inputs import (check_input_file, data_format, match_files,
                                  uncompressed_name)
from autoais.transforms.io.input_records import ReadRecords, read_columns
from autoais.transforms.rows.merge import WriteMergedRows, row_table_files
from autoais.transforms.rows.run_record import RunRecord, WriteRunRecord, reconcile

OUTPUT_FILES = ("run.json", "citations_rows.parquet", "citations_rows.csv",
                "citations_items.parquet", "citations_items.csv", "citations.csv",
                "citations.json", "citations.md", "citations_human.csv",
                "citations_human.json", "citations_human.md", "dead_letter.jsonl")
FORMATS = ("alce", "jsonl", "human_eval")
_READERS = {"alce": read_alce_document, "jsonl": read_alce_lines,
            "human_eval": read_alce_human_eval}
QAMPARI = {"auto": None, "true": True, "false": False}


def file_format(path: str, chosen: str) -> str:
  """--format, or by the file's name: .jsonl / .ndjson are JSON Lines, a name
  holding "human_eval" ALCE's human evaluation file (as it publishes it), others
  an ALCE result file (compression suffixes aside)."""
  if chosen:
    return chosen
  name = uncompressed_name(path).lower()
  if name.endswith((".jsonl", ".ndjson")):
    return "jsonl"
  return "human_eval" if "human_eval" in os.path.basename(name) else "alce"


class _ReadItems:
  """read_file for ReadRecords: each file by its format (picklable)."""

  def __init__(self, formats, qampari):
    self._formats = dict(formats)
    self._qampari = qampari

  def __call__(self, path):
    return _READERS[self._formats[path]](path, self._qampari)


class CitationsOptions(ViewsKept, PipelineOptions):
  """citations' own flags; the scorer flags are beam_jobs.options.ScorerOptions."""

  # Listed in `--help` after the job's own flags (beam_jobs.parsing.job_help).
  SHARED_OPTIONS = (ScorerOptions, RowTableOptions)

  @classmethod
  def _add_argparse_args(cls, parser):
    group = JobArguments(parser, "citations")
    group.add_argument("--input", help="ALCE result files: path, glob or comma list "
                       "(.json, or .jsonl for one item a line; optionally "
                       "compressed), local or gs://.")
    group.add_argument("--output_dir", help="Directory for the outputs.")
    # No argparse default: other jobs share --format, without one.
    group.add_argument("--format", help="alce: ALCE's result file {\"data\": [...]}; "
                       "jsonl: one item a line with an optional system_name; "
                       "human_eval: ALCE's human evaluation file {dataset: {system "
                       "file: {question id: item}}} (default: by suffix, .jsonl / "
                       ".ndjson are jsonl, a name holding human_eval human_eval, "
                       "others alce).")
    group.add_argument("--qampari", default="auto",
                       help="true: split answers into comma-separated list items "
                       "(QAMPARI); false: into sentences; auto: QAMPARI where the "
                       "file name holds 'qampari', as ALCE decides "
                       "(default %(default)s).")
    group.add_argument("--at_most_citations", type=int, default=3,
                       help="Documents scored per sentence: its first N citations "
                       "(ALCE's default %(default)s).")
    group.add_argument("--bootstrap_samples", type=int, default=1000,
                       help="Bootstrap resamples for 95%% CIs (default 1000).")
    group.add_argument("--seed", type=int, default=0, help="Bootstrap seed.")


class _Plan:

  def __init__(self, options: CitationsOptions, runner):
    require(options, "input", "output_dir")
    if options.format is not None:
      require_choice("--format", options.format, FORMATS)
    require_choice("--qampari", options.qampari, tuple(QAMPARI))
    if options.at_most_citations < 1:
      raise ConfigError("--at_most_citations must be positive")
    check_bootstrap_flags(options)
    self.scorer = scorer_from_options(options, is_local_runner(runner))
    self.files = match_files(options.input)
    if not self.files:
      raise ConfigError(f"--input {options.input!r} matches no files")
    self.formats = {}
    for path in self.files:
      if data_format(path) != "jsonl":
        raise ConfigError(f"{path}: ALCE results are read from .json or .jsonl files")
      check_input_file(path)
      self.formats[path] = file_format(path, options.format)
      if self.formats[path] == "jsonl":
        read_columns(path).require(ITEM_FIELDS)
    self.num_shards = row_table_shards(options)
    self.output = OutputDir(
        "citations", options.output_dir, row_table_files(
            OUTPUT_FILES, (SentencesFold, ItemsFold), self.num_shards), reads={"--input": self.files},
        read_dirs=scorer_read_dirs(options))


class _CitationsRecord(RunRecord):
  job = "citations"
  summed = ("read_counts",)
  values = ("items", "sentences", "summary", "sentence_splitter", "human_check")

  def __init__(self, options: CitationsOptions, plan: _Plan):
    super().__init__(plan.scorer.describe())
    self.rows_from("items", "read_counts", "--input", plan.files)
    self._inputs = {"input": plan.files,
                    "formats": [plan.formats[path] for path in plan.files],
                    "qampari": options.qampari,
                    "at_most_citations": options.at_most_citations}

  def fields(self, read_counts, items, sentences, dead, summary, scorer_stats,
             model_info, sentence_splitter, human_check):
    return {
        "counts": reconcile(read_counts.get("read", 0), items["scored"],
                            dead["items"]),
        "systems": summary["systems"],
        "sentences": sentences["sentences"],
        "citations": items["citations"],
        "model_calls": scorer_stats.get("model_calls", 0),
        "unique_pairs": scorer_stats.get("unique_pairs", 0),
        "reference_model_calls": items["reference_model_calls"],
        "human_check": human_check,
        # As a worker chose it (punkt where its data is installed there).
        "inputs": dict(self._inputs, sentence_splitter=sentence_splitter),
        "scorer": self.scorer_fields(model_info, scorer_stats),
    }


def _describe_splitter(unused_impulse):
  return splitter().describe()


def build_pipeline(pipeline: beam.Pipeline, options: PipelineOptions) -> OutputDir:
  """Validates the options, claims the output directory, then adds the
  citations steps to `pipeline`; returns the claimed OutputDir."""
  options = options.view_as(CitationsOptions)
  plan = _Plan(options, pipeline.runner)
  record = _CitationsRecord(options, plan)
  work_dir = plan.output.claim()

  read = pipeline | "ReadItems" >> ReadRecords(
      plan.files, _ReadItems(plan.formats, QAMPARI[options.qampari]))
  scored = read.records | "ScoreCitations" >> ScoreCitations(
      plan.scorer, options.at_most_citations, FileSystems.join(work_dir, "groups"))
  sentences = scored["sentences"] | "WriteSentenceRows" >> WriteMergedRows(
      SentencesFold, options.output_dir, work_dir, plan.num_shards)
  items = scored["items"] | "WriteItemRows" >> WriteMergedRows(
      functools.partial(ItemsFold, FileSystems.join(work_dir, "item_tables")),
      options.output_dir, work_dir, plan.num_shards)
  summary = items["outcomes"] | "SummarizeCitations" >> SummarizeCitations(
      options.output_dir, {"at_most_citations": options.at_most_citations},
      options.bootstrap_samples, options.seed, plan.scorer.describe())
  human_check = ({"sentences": scored["sentences"], "systems": items["outcomes"]}
                 | "CheckAgainstHumans" >> CheckAgainstHumans(options.output_dir,
                                                               plan.scorer.describe()))
  sentence_splitter = (pipeline
                       | "StartSplitterInfo" >> beam.Create([None])
                       | "DescribeSplitter" >> beam.Map(_describe_splitter))
  _ = {"dead": {"items": (read.dead_letter, scored["dead_letter"], items["dead_letter"],
                          sentences["dead_letter"])},
       "read_counts": read.counts, "items": items["stats"], "sentences": sentences["stats"],
       "summary": summary, "sentence_splitter": sentence_splitter,
       "human_check": human_check, "scorer_stats": scored["stats"]
       } | "WriteRunRecord" >> WriteRunRecord(options.output_dir, work_dir, record,
                                              scorer=plan.scorer)
  return plan.output


def run(argv=None) -> int:
  return run_job("citations", argv, CitationsOptions, build_pipeline)
