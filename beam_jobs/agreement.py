"""agreement: score a human-labelled attribution set and measure how well the
scores agree with the human labels.

    autoais agreement --input PATH --format FORMAT --output_dir OUT \
        [--scorer string-match|t5 --model DIR ...] [--threshold 0.5] \
        [--scenario in-language|in-english] [--split train|test] \
        [--calibrate_on PATH] [--calibrate_split train|test] \
        [--calibrate_metric accuracy|balanced_accuracy] [--calibrate_per_dataset] \
        [--bootstrap_samples 1000] [--seed 0] [Beam options]
    python -m autoais.beam_jobs.agreement ...

Formats (transforms/labelled/readers.py): ratings, attributionbench, begin, wice,
expertqa, xor-attriqa, aggrefact (LLM-AggreFact), true (the TRUE benchmark),
training-data, and the hallucination benchmarks ragtruth, halubench and
faithbench (transforms/labelled/hallucination.py). Each item is scored with the chosen scorer (WiCE: the max
over a claim's chunks) and compared with its human label, overall and per group
(transforms/stats/agreement.py: accuracy, balanced accuracy, Cohen's kappa, ROC-AUC and
PR-AUC of nli_score, per-label counts). `--calibrate_on` scores a second set of
the same format and picks the threshold that maximises --calibrate_metric there;
the input's figures at that threshold are reported beside those at --threshold;
with --calibrate_per_dataset (aggrefact, true, ragtruth, halubench) each data
set gets a threshold tuned on its own calibration rows.
Where the groups are data sets (aggrefact, true, ragtruth: its task types,
halubench), agreement.json also holds
the unweighted mean over data sets of balanced accuracy and ROC-AUC, with
percentile-bootstrap CIs (--bootstrap_samples resamples of the items within each
data set, --seed).

Outputs in --output_dir: agreement_rows.parquet and .csv (one row per item,
sorted by source file, line and item id), agreement.json, agreement.md,
report.html, dead_letter.jsonl, with a scorer that finds unsupported spans
(--scorer lettucedetect) spans.jsonl (one line per item, counts.span_rows),
and run.json, written last, whose counts reconcile: read = scored + rejected +
unmatched (records: WiCE chunks count one each), + other_split with --split
(RAGTruth responses of another split, read and left out).
"""
if __name__ == "__main__":
  # Run the package module (Beam pickles DoFns by reference).
  import sys
  from autoais.beam_jobs.agreement import run
  sys.exit(run())

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from autoais.beam_jobs.options import (JobArguments, RowTableOptions, ScorerOptions,
                                       ViewsKept, check_bootstrap_flags, given_flags,
                                       row_table_shards, scorer_from_options,
                                       scorer_read_dirs)
from autoais.beam_jobs.running import is_local_runner, run_job
from autoais.beam_jobs.output_dir import OutputDir
from autoais.schemas import AgreementRow
from autoais.schemas.errors import ConfigError, require, require_choice
from autoais.transforms.agreement.steps import (CALIBRATION, INPUT, KeepFirstAnswers,
                                               ScoreItems, human_span_counts)
from autoais.transforms.agreement.summary import (MEAN_GROUPINGS, Calibrate,
                                          CountSharedItems, RowsFold,
                                          SummarizeAgreement, apply_threshold)
from autoais.transforms.io import span_rows
from autoais.transforms.io.inputs import match_files
from autoais.transforms.io.input_records import ReadRecords, left_out_counts
from autoais.transforms.labelled.readers import (FORMATS, SCENARIOS, check_labelled_file,
                                         labelled_reader)
from autoais.transforms.rows.merge import WriteMergedRows, row_table_files
from autoais.transforms.rows.run_record import RunRecord, WriteRunRecord, reconcile
from autoais.transforms.scoring.flags import boolean_flag
from autoais.transforms.stats.spans import SpanCounts
from autoais.transforms.stats.agreement import METRICS

OUTPUT_FILES = ("run.json", "agreement_rows.parquet", "agreement_rows.csv",
                "agreement.json", "agreement.md", "report.html", "dead_letter.jsonl")


class AgreementOptions(ViewsKept, PipelineOptions):
  """agreement's own flags; the scorer flags are beam_jobs.options.ScorerOptions."""

  # Listed in `--help` after the job's own flags (beam_jobs.parsing.job_help).
  SHARED_OPTIONS = (ScorerOptions, RowTableOptions)

  @classmethod
  def _add_argparse_args(cls, parser):
    group = JobArguments(parser, "agreement")
    group.add_argument("--input", help="The labelled set: path, glob or comma list, "
                       "local or gs://.")
    group.add_argument("--format", help="Format of --input (and --calibrate_on): "
                       + ", ".join(FORMATS) + ".")
    group.add_argument("--output_dir", help="Directory for the outputs.")
    group.add_argument("--scenario", default=None,
                       help="xor-attriqa only: in-language (default) or in-english "
                       "picks the premise and hypothesis fields.")
    group.add_argument("--split", default=None,
                       help="ragtruth only: score the responses of this `split` (train "
                       "or test); the others are read and left out, counted in "
                       "run.json (counts.other_split).")
    group.add_argument("--calibrate_on", default=None,
                       help="A labelled set of the same format on which to choose the "
                       "threshold.")
    group.add_argument("--calibrate_split", default=None,
                       help="ragtruth only: --split for --calibrate_on (the same file "
                       "may hold both: calibrate on train, score test).")
    group.add_argument("--calibrate_metric", default="accuracy",
                       help="What the calibrated threshold maximises: accuracy "
                       "(default) or balanced_accuracy.")
    group.add_argument("--calibrate_per_dataset", type=boolean_flag, nargs="?",
                       const=True, default=False,
                       help="true (or the bare flag), formats whose groups are data "
                       "sets (aggrefact, true, ragtruth, halubench): "
                       "tune a threshold on each data "
                       "set's rows of --calibrate_on and decide that data set's "
                       "input rows at it (as the LLM-AggreFact leaderboard does).")
    group.add_argument("--bootstrap_samples", type=int, default=1000,
                       help="Bootstrap resamples of the 95%% CIs of the means over "
                       "data sets (formats aggrefact, true, ragtruth, halubench; "
                       "default 1000).")
    group.add_argument("--seed", type=int, default=0,
                       help="Bootstrap seed (the same formats; default 0).")


def _dataset_formats():
  """The formats whose groups are data sets (means over them, per-data-set
  thresholds)."""
  return [name for name, spec in FORMATS.items() if spec.groupings[:1] == MEAN_GROUPINGS[:1]]


class _Plan:
  """What validation found: formats, files, scorer."""

  def __init__(self, options: AgreementOptions, runner):
    require(options, "input", "format", "output_dir")
    require_choice("--format", options.format, FORMATS)
    self.format = FORMATS[options.format]
    self.scenario = options.scenario
    if options.format == "xor-attriqa":
      self.scenario = self.scenario or SCENARIOS[0]
      require_choice("--scenario", self.scenario, SCENARIOS)
    elif self.scenario is not None:
      raise ConfigError("--scenario applies to --format xor-attriqa only")
    self.split = self._split(options, "--split", options.split)
    self.calibrate_split = self._split(options, "--calibrate_split",
                                       options.calibrate_split)
    if self.calibrate_split is not None and not options.calibrate_on:
      raise ConfigError("--calibrate_split picks the rows of --calibrate_on: give it")
    require_choice("--calibrate_metric", options.calibrate_metric, METRICS)
    given = given_flags(options, AgreementOptions)
    if "calibrate_metric" in given and not options.calibrate_on:
      raise ConfigError("--calibrate_metric is what the threshold chosen on "
                        "--calibrate_on maximises: give it")
    check_bootstrap_flags(options)
    over_datasets = self.format.groupings[:1] == MEAN_GROUPINGS[:1]
    unused = [f"--{name}" for name in ("bootstrap_samples", "seed") if name in given]
    if unused and not over_datasets:
      # The bootstrap is of the means over data sets: without them nothing
      # is resampled.
      raise ConfigError(f"{' and '.join(unused)}: the bootstrap resamples the means "
                        f"over data sets, and the groups of --format {options.format} "
                        f"are not data sets (formats whose are: "
                        f"{', '.join(_dataset_formats())})")
    if options.calibrate_on and options.view_as(ScorerOptions).decision == "decode":
      raise ConfigError("--calibrate_on chooses a threshold of nli_score, and with "
                        "--decision decode a decision is whether the generated text "
                        "reads '1', whatever nli_score is; drop one of them")
    self.scorer = scorer_from_options(options, is_local_runner(runner))
    self.input_files = match_files(options.input)
    if not self.input_files:
      raise ConfigError(f"--input {options.input!r} matches no files")
    self.calibration_files = []
    if options.calibrate_on:
      self.calibration_files = match_files(options.calibrate_on)
      if not self.calibration_files:
        raise ConfigError(f"--calibrate_on {options.calibrate_on!r} matches no files")
    self.per_dataset = bool(options.calibrate_per_dataset)
    if self.per_dataset and not self.calibration_files:
      raise ConfigError("--calibrate_per_dataset tunes thresholds on --calibrate_on: "
                        "give it")
    if self.per_dataset and not over_datasets:
      raise ConfigError(f"--calibrate_per_dataset: the groups of --format "
                        f"{options.format} are not data sets (formats whose are: "
                        f"{', '.join(_dataset_formats())})")
    self.num_shards = row_table_shards(options)
    self.output = OutputDir(
        "agreement", options.output_dir, row_table_files(
            OUTPUT_FILES + ((span_rows.FILE_NAME,) if self.scorer.gives_spans else ()),
            (RowsFold,), self.num_shards),
        reads={"--input": self.input_files, "--calibrate_on": self.calibration_files},
        read_dirs=scorer_read_dirs(options))
    self.output.check()
    for path in self.input_files + self.calibration_files:
      check_labelled_file(options.format, path, self.scenario)


  def _split(self, options: AgreementOptions, flag: str, value):
    """A --split value: one of the format's splits; refused for a format
    whose rows name none."""
    if value is None:
      return None
    if not self.format.splits:
      with_splits = [name for name, spec in FORMATS.items() if spec.splits]
      raise ConfigError(f"{flag}: the rows of --format {options.format} name no split "
                        f"(formats whose do: {', '.join(with_splits)})")
    require_choice(flag, value, self.format.splits)
    return value


class _AgreementRecord(RunRecord):
  job = "agreement"
  summed = ("read_counts", "calibration_read_counts", "calibration_rows")
  values = ("rows", "summary_info", "span_rows")

  def __init__(self, options, plan: _Plan):
    super().__init__(plan.scorer.describe())
    self.rows_from(INPUT, "read_counts", "--input", plan.input_files)
    self.rows_from(CALIBRATION, "calibration_read_counts", "--calibrate_on",
                   plan.calibration_files)
    self._inputs = {"input": plan.input_files, "format": options.format,
                    "scenario": plan.scenario,
                    "calibrate_on": plan.calibration_files or None,
                    "calibrate_per_dataset": plan.per_dataset}
    # Only where given: the run.json of a run without them is as it was.
    self._inputs.update({name: value for name, value in (
        ("split", plan.split), ("calibrate_split", plan.calibrate_split))
                         if value is not None})

  def fields(self, read_counts, rows, dead, scorer_stats, model_info, summary_info,
             span_rows=None, calibration_read_counts=None, calibration_rows=None):
    counts = _reconciled(read_counts, rows, dead[INPUT])
    counts["items"] = rows["items"]
    if span_rows is not None:  # a line of spans.jsonl per item
      counts["span_rows"] = span_rows
      if span_rows != rows["items"]:
        raise RuntimeError(f"{span_rows} lines of spans for {rows['items']} items")
    manifest = {"counts": counts}
    if calibration_rows is not None:
      manifest["calibration_counts"] = dict(
          _reconciled(calibration_read_counts, calibration_rows, dead[CALIBRATION]),
          items=calibration_rows.get("items", 0))
    manifest.update({
        "groups": summary_info["groups"],
        "inputs": dict(self._inputs),
        "scorer": self.scorer_fields(model_info, scorer_stats),
    })
    return manifest


def _reconciled(read_counts, rows, dead):
  """The counts block of one set: read = scored + rejected + unmatched, and
  where the reader left records out (--split: another split's responses),
  + those, each reason a count of its own (other_split)."""
  left_out = left_out_counts(read_counts)
  scored = rows.get("records", 0)
  counts = reconcile(read_counts.get("read", 0), scored + sum(left_out.values()), dead)
  counts["scored"] = scored
  counts.update(left_out)
  return counts


def _count_rows(row: AgreementRow):
  return {"items": 1, "records": row.n_premises}


def build_pipeline(pipeline: beam.Pipeline, options: PipelineOptions) -> OutputDir:
  """Validates the options, claims the output directory, adds the steps."""
  options = options.view_as(AgreementOptions)
  plan = _Plan(options, pipeline.runner)
  record = _AgreementRecord(options, plan)
  work_dir = plan.output.claim()
  decode = options.view_as(ScorerOptions).decision == "decode"
  reader = labelled_reader(options.format, plan.scenario, decode, plan.split)
  calibrating = bool(plan.calibration_files)
  roles = (INPUT, CALIBRATION) if calibrating else (INPUT,)
  threshold = options.view_as(ScorerOptions).threshold

  read = pipeline | "ReadInput" >> ReadRecords(plan.input_files, reader)
  items = read.records | "TagInput" >> beam.Map(lambda item: (INPUT, item))
  if calibrating:
    calibration_read = pipeline | "ReadCalibrationSet" >> ReadRecords(
        plan.calibration_files,
        labelled_reader(options.format, plan.scenario, decode, plan.calibrate_split))
    # One scoring step for both sets: the model loads once per worker.
    items = ((items, calibration_read.records
              | "TagCalibration" >> beam.Map(lambda item: (CALIBRATION, item)))
             | "FlattenSets" >> beam.Flatten())
  repeated = {}
  if plan.format.one_answer_per_question:
    kept = items | "KeepFirstAnswers" >> KeepFirstAnswers(
        FileSystems.join(work_dir, "answers"), roles)
    items, repeated = kept["items"], kept["dead_letter"]
  scored = items | "ScoreItems" >> ScoreItems(plan.scorer, plan.format.multi_premise,
                                             roles,
                                             FileSystems.join(work_dir, "scoring"),
                                             plan.format.span_labels)
  dead_letters = {INPUT: (read.dead_letter, scored["dead_letter"][INPUT])}
  counts = {"read_counts": read.counts, "calibration_read_counts": None,
            "calibration_rows": None}
  if calibrating:
    split = scored["rows"] | "SplitSets" >> beam.Partition(
        lambda keyed, _: 0 if keyed[0] == INPUT else 1, 2)
    input_rows = split[0] | "InputRows" >> beam.Values()
    calibration_rows = split[1] | "CalibrationRows" >> beam.Values()
    shared = (input_rows, calibration_rows) | "CountItemsInBothSets" >> CountSharedItems(
        FileSystems.join(work_dir, "shared"))
    calibration = (calibration_rows
                   | "Calibrate" >> Calibrate(options.calibrate_metric, threshold,
                                              plan.calibration_files, plan.per_dataset)
                   | "NoteSharedItems" >> beam.Map(
                       lambda chosen, n: dict(chosen, input_items_in_calibration_set=n),
                       beam.pvalue.AsSingleton(shared)))
    input_rows = input_rows | "ApplyCalibratedThreshold" >> beam.Map(
        apply_threshold, beam.pvalue.AsSingleton(calibration))
    dead_letters[CALIBRATION] = (calibration_read.dead_letter,
                                 scored["dead_letter"][CALIBRATION])
    counts["calibration_read_counts"] = calibration_read.counts
    counts["calibration_rows"] = calibration_rows | "CountCalibrationRows" >> beam.Map(
        _count_rows)
  else:
    input_rows = scored["rows"] | "InputRows" >> beam.Values()
    calibration = pipeline | "NoCalibration" >> beam.Create([None])

  for role, letters in repeated.items():
    dead_letters[role] += (letters,)
  rows_written = input_rows | "WriteRows" >> WriteMergedRows(
      RowsFold, options.output_dir, work_dir, plan.num_shards)
  header = {
      "job": "agreement", "format": options.format, "scenario": plan.scenario,
      "inputs": plan.input_files, "positive_label": plan.format.positive,
      "groupings": list(plan.format.groupings), "scorer": plan.scorer.describe(),
      "threshold": threshold,
      "decision": options.view_as(ScorerOptions).decision,
  }
  if plan.split is not None:
    header["split"] = plan.split
  spans = None
  if plan.scorer.gives_spans:
    input_spans = scored["spans"] | "InputSpanRows" >> beam.FlatMapTuple(
        lambda role, row: [row] if role == INPUT else [])
    counts["span_rows"] = input_spans | "WriteSpans" >> span_rows.WriteSpanRows(
        FileSystems.join(options.output_dir, span_rows.FILE_NAME), work_dir)
    span_counts = None
    if plan.format.span_labels:  # against the human's spans, in characters
      span_counts = beam.pvalue.AsSingleton(
          input_spans | "CountSpanCharacters" >> beam.Map(human_span_counts)
          | "SumSpanCharacters" >> beam.CombineGlobally(
              lambda counts: sum(counts, SpanCounts())))
    spans = (input_spans
             | "FirstSpanRows" >> span_rows.FirstSpanRows()
             | "WithSpanCounts" >> beam.Map(lambda shown, counts: (counts, shown),
                                            span_counts))
  else:
    counts["span_rows"] = pipeline | "NoSpans" >> beam.Create([None])
  summary_info = input_rows | "SummarizeAgreement" >> SummarizeAgreement(
      options.output_dir, plan.format.groupings, header, calibration,
      (options.bootstrap_samples, options.seed), spans)
  _ = dict(counts, dead=dead_letters, rows=rows_written["stats"], summary_info=summary_info,
           scorer_stats=scored["stats"]) | "WriteRunRecord" >> WriteRunRecord(
               options.output_dir, work_dir, record, scorer=plan.scorer)
  return plan.output


def run(argv=None) -> int:
  return run_job("agreement", argv, AgreementOptions, build_pipeline)
