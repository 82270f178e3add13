"""ais-annotations: the AIS paper's human-evaluation tables (Tables 3-6), recomputed
from the released annotations and compared with the printed cells.

    autoais ais-annotations --input 'AIS/ann_*.csv' \
        --output_dir OUT [--alpha 0.01] [--sampled_outputs 200] [Beam options]
    python -m autoais.beam_jobs.ais_annotations ...

Input: the release's consensus files (CSV, or JSONL / Parquet with the same
columns), one data set per file, named by the file: ann_qrecc.csv -> qrecc.
Each row is one model output: `model-name`, `Flagged`, `INT`, `INT & AIS` (0/1,
the raters' majority), `# agree (INT)`, `# agree (AIS)` (raters agreeing with
it; -1 for none) and `ex-idx`. Rows that are not such a row go to
dead_letter.jsonl with file, line, field and reason.

Per (data set, model), a mergeable accumulator
(transforms/ais_annotations/tally.py: AisTally) counts outputs by category and
agreement; the tables, significance marks (Fisher's exact test, one-sided,
p < --alpha) and the comparison with the paper's printed cells
(transforms/ais_annotations/paper.py) come from those counts. Outputs in
--output_dir: ais_tables.csv / .json / .md, ais_agreement.csv,
dead_letter.jsonl, and run.json, written last, whose counts reconcile:
read = used + rejected.
"""
if __name__ == "__main__":
  # `python -m autoais.beam_jobs.ais_annotations`: run the package module instead of
  # defining this one's classes a second time under __main__.
  import sys
  from autoais.beam_jobs.ais_annotations import run
  sys.exit(run())


import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from autoais.beam_jobs.options import JobArguments, ViewsKept, given_flags
from autoais.beam_jobs.running import run_job
from autoais.beam_jobs.output_dir import OutputDir
from autoais.schemas.errors import ConfigError, require
from autoais.transforms.ais_annotations import readers, shares
from autoais.transforms.ais_annotations.paper import (PAPER, SAMPLED_ITEMS,
                                                      SIGNIFICANCE_LEVEL, TABLES)
from autoais.transforms.ais_annotations.tables import WriteAisTables
from autoais.transforms.io.inputs import match_files
from autoais.transforms.io.input_records import ReadRecords
from autoais.transforms.rows.run_record import RunRecord, WriteRunRecord, reconcile

OUTPUT_FILES = ("run.json", "ais_tables.csv", "ais_tables.json", "ais_tables.md",
                "ais_agreement.csv", "dead_letter.jsonl")


class AisAnnotationsOptions(ViewsKept, PipelineOptions):

  @classmethod
  def _add_argparse_args(cls, parser):
    group = JobArguments(parser, "ais-annotations")
    group.add_argument("--input", help="Release files ann_{dataset}.csv: path, glob or "
                       "comma list (.csv, .jsonl, .parquet; compressed allowed), "
                       "local or gs://.")
    group.add_argument("--output_dir", help="Directory for the outputs.")
    group.add_argument("--alpha", type=float, default=SIGNIFICANCE_LEVEL,
                       help="Significance level of the marks (default %(default)s, the "
                       "paper's).")
    group.add_argument("--sampled_outputs", type=int, default=SAMPLED_ITEMS,
                       help="Outputs the paper sampled per model, for explaining cells "
                       "that differ (default %(default)s).")


class _Plan:
  """What validation found: the input files and their data sets."""

  def __init__(self, options: AisAnnotationsOptions):
    require(options, "input", "output_dir")
    if not 0.0 < options.alpha < 1.0:
      raise ConfigError(f"--alpha must be in (0, 1), got {options.alpha}")
    if options.sampled_outputs < 1:
      raise ConfigError("--sampled_outputs must be positive")
    self.files = match_files(options.input)
    if not self.files:
      raise ConfigError(f"--input {options.input!r} matches no files")
    self.output = OutputDir("ais-annotations", options.output_dir, OUTPUT_FILES,
                            reads={"--input": self.files})
    self.output.check()
    datasets = {}
    for path in self.files:
      readers.check_annotations_file(path)
      dataset = readers.dataset_of(path)
      if dataset in datasets:
        raise ConfigError(f"--input: {datasets[dataset]} and {path} both hold data set "
                          f"{dataset!r} (named by the file); give each data set once")
      datasets[dataset] = path
    self.datasets = datasets
    if ("sampled_outputs" in given_flags(options, AisAnnotationsOptions)
        and not set(datasets) & set(TABLES)):
      # It explains where our cells differ from the paper's: without a paper
      # table there is no cell to explain.
      raise ConfigError(
          f"--sampled_outputs explains the cells that differ from the paper's tables, "
          f"and none of the data sets read ({', '.join(sorted(datasets))}, named by "
          f"the files) has one (the paper's: {', '.join(sorted(TABLES))}); drop it")


class _AisAnnotationsRecord(RunRecord):
  job = "ais-annotations"
  summed = ("read_counts",)
  values = ("tables",)

  def __init__(self, options: AisAnnotationsOptions, plan: _Plan):
    super().__init__()
    self.rows_from("annotations", "read_counts", "--input", plan.files)
    self._inputs = {"input": plan.files, "datasets": plan.datasets}
    self._settings = {"alpha": options.alpha, "sampled_outputs": options.sampled_outputs,
                      "significance_test": shares.TEST_NAME, "paper": PAPER}

  def fields(self, read_counts, tables, dead):
    counts = reconcile(read_counts.get("read", 0), tables["used"], dead["annotations"])
    counts["used"] = counts.pop("scored")
    return {
        "counts": counts,
        "datasets": tables["datasets"],
        "models": tables["models"],
        "reproduction": tables["reproduction"],
        "inputs": dict(self._inputs),
        "settings": dict(self._settings),
    }


def build_pipeline(pipeline: beam.Pipeline, options: PipelineOptions) -> OutputDir:
  """Validates the options, claims the output directory, then adds the steps to
  `pipeline`; returns the claimed OutputDir."""
  options = options.view_as(AisAnnotationsOptions)
  plan = _Plan(options)
  record = _AisAnnotationsRecord(options, plan)
  work_dir = plan.output.claim()

  read = pipeline | "ReadAnnotations" >> ReadRecords(plan.files, readers.read_annotations)
  tables = read.records | "WriteAisTables" >> WriteAisTables(
      options.output_dir, options.alpha, options.sampled_outputs)
  _ = {"dead": {"annotations": read.dead_letter}, "read_counts": read.counts,
       "tables": tables} | "WriteRunRecord" >> WriteRunRecord(options.output_dir, work_dir,
                                                               record)
  return plan.output


def run(argv=None) -> int:
  return run_job("ais-annotations", argv, AisAnnotationsOptions, build_pipeline)
