"""training-data: human-labelled attribution sets into training examples of a
detector family, split by question, with hard negatives mined from the corpus
(docs/finetune.md).

    autoais training-data --input [FORMAT:]PATH[,...] [--format FORMAT] \
        --family t5|nli-classifier --output_dir OUT \
        [--validation_fraction 0.1] [--test_fraction 0.1] [--seed 0] \
        [--negatives_per_positive N --corpus DIR] [--scenario ...] [Beam options]
    python -m autoais.beam_jobs.training_data ...

Inputs: any labelled set `autoais agreement` reads, by the same readers
(transforms/labelled/readers.py), several at once: each --input entry is a
path, glob or comma list, prefixed `FORMAT:` where it is not of --format's
format. Evaluate's rated rows are --format ratings: its ratings.parquet (or
.csv), whose passages were joined from the corpus, with the human ratings of
--human_ratings.

Examples (transforms/training_data/examples.py) are in the input form of
--family, deduplicated (the same input and label once), and split into train,
validation and test by a hash of their question (the claim where there is
none) and --seed. With --negatives_per_positive N, each positive that cites a
passage of --corpus (ratings rows) adds up to N hard negatives: other passages
of its article that do not contain the answer (transforms/training_data/steps.py).

Outputs in --output_dir: train.parquet, validation.parquet, test.parquet (rows
sorted by their digest: a shuffle fixed by the data); with --family t5 also
train.tfrecord, validation.tfrecord, test.tfrecord and seqio_task.py (a seqio
Task over them, for T5X); training_data.md (sizes and label balance);
dead_letter.jsonl; run.json, written last, with the sizes and label balance
per split and per source, and counts that reconcile: read = examples +
rejected + unmatched (duplicates are unmatched).
"""
if __name__ == "__main__":
  # Run the package module (Beam pickles DoFns by reference).
  import sys
  from autoais.beam_jobs.training_data import run
  sys.exit(run())

import hashlib
import re

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from autoais.beam_jobs.options import JobArguments, ViewsKept, given_flags
from autoais.beam_jobs.running import run_job
from autoais.beam_jobs.output_dir import OutputDir
from autoais.schemas import FAMILIES, SPLITS
from autoais.schemas.errors import ConfigError, require, require_choice
from autoais.transforms.corpus.store import read_article_index
from autoais.transforms.io.atomic import write_text_atomically
from autoais.transforms.io.inputs import match_files
from autoais.transforms.io.input_records import ReadRecords
from autoais.transforms.labelled.readers import (FORMATS, SCENARIOS, check_labelled_file,
                                                 labelled_reader)
from autoais.transforms.rows.merge import WriteMergedRows
from autoais.transforms.rows.run_record import RunRecord, WriteRunRecord, reconcile
from autoais.transforms.training_data.examples import (T5_FAMILY, example_of,
                                                       parse_input_spec)
from autoais.transforms.training_data.steps import (NEGATIVE_STATS, ExamplesFold,
                                                    MineHardNegatives, NegativeSeed)
from autoais.transforms.training_data.t5x import WriteT5XFiles, t5x_outputs

INPUT = "input"
SUMMARY = "training_data.md"
OUTPUT_FILES = ("run.json",) + tuple(f"{split}.parquet" for split in SPLITS) + (
    SUMMARY, "dead_letter.jsonl")


class TrainingDataOptions(ViewsKept, PipelineOptions):
  """training-data's own flags."""

  @classmethod
  def _add_argparse_args(cls, parser):
    group = JobArguments(parser, "training-data")
    group.add_argument("--input", help="The labelled sets: path, glob or comma list, "
                       "local or gs://; an entry FORMAT:PATH is of that format.")
    group.add_argument("--format", help="Format of the --input entries without a "
                       "FORMAT: prefix: " + ", ".join(FORMATS) + ".")
    group.add_argument("--output_dir", help="Directory for the outputs.")
    group.add_argument("--family", default=None,
                       help="The detector family the examples train: t5 (TRUE's "
                       "text-to-text form, targets 1 / 0) or nli-classifier "
                       "(premise/hypothesis pairs and a label).")
    group.add_argument("--validation_fraction", type=float, default=0.1,
                       help="Share of the questions in the validation split "
                       "(default 0.1).")
    group.add_argument("--test_fraction", type=float, default=0.1,
                       help="Share of the questions in the test split (default 0.1).")
    group.add_argument("--seed", type=int, default=0,
                       help="Seed of the split's hash and of the hard negatives' "
                       "sample (default 0).")
    group.add_argument("--negatives_per_positive", type=int, default=0,
                       help="Hard negatives mined per positive from its article in "
                       "--corpus (ratings rows; default 0: none).")
    group.add_argument("--corpus", default=None, help="Corpus directory from "
                       "build-corpus (with --negatives_per_positive).")
    group.add_argument("--scenario", default=None,
                       help="xor-attriqa only: in-language (default) or in-english "
                       "picks the premise and hypothesis fields.")


def _label(format_name: str) -> str:
  return "".join(part.title() for part in re.split(r"[-_]", format_name))


class _Plan:
  """What validation found: the inputs per format, the family, the files."""

  def __init__(self, options: TrainingDataOptions):
    require(options, "input", "output_dir", "family")
    require_choice("--family", options.family, FAMILIES)
    if options.format is not None:
      require_choice("--format", options.format, FORMATS)
    if not (0 <= options.validation_fraction < 1 and 0 <= options.test_fraction < 1
            and options.validation_fraction + options.test_fraction < 1):
      raise ConfigError(
          f"--validation_fraction {options.validation_fraction} and --test_fraction "
          f"{options.test_fraction}: each in [0, 1), together below 1 (train keeps "
          "the rest)")
    if options.seed < 0:
      raise ConfigError("--seed must be a non-negative integer")
    if options.negatives_per_positive < 0:
      raise ConfigError("--negatives_per_positive must be 0 or more")
    if ("seed" in given_flags(options, TrainingDataOptions)
        and options.validation_fraction == options.test_fraction == 0
        and not options.negatives_per_positive):
      # Only the split and the negatives are drawn: the seed would change nothing
      # but the task's name.
      raise ConfigError("--seed draws the validation and test splits and the negatives: "
                        "with --validation_fraction 0, --test_fraction 0 and no "
                        "--negatives_per_positive nothing is drawn")
    self.inputs = {}  # format -> files
    takes_format = False  # an entry without a FORMAT: prefix reads --format
    for entry in (part.strip() for part in options.input.split(",")):
      if not entry:
        continue
      format_name, pattern = parse_input_spec(entry, options.format, FORMATS)
      takes_format |= pattern == entry
      if format_name is None:
        raise ConfigError(f"--input {entry!r}: no format: prefix it FORMAT: or give "
                          f"--format (one of {', '.join(FORMATS)})")
      files = match_files(pattern)
      if not files:
        raise ConfigError(f"--input {entry!r} matches no files")
      self.inputs.setdefault(format_name, [])
      self.inputs[format_name] = sorted(set(self.inputs[format_name]) | set(files))
    if not self.inputs:
      raise ConfigError("--input names no file")
    if options.format is not None and not takes_format:
      raise ConfigError(f"--format {options.format}: every --input entry names its own "
                        "format (FORMAT:PATH), so --format would read none; drop it")
    every_file = [path for files in self.inputs.values() for path in files]
    if len(every_file) != len(set(every_file)):
      raise ConfigError("--input names a file under two formats")
    self.files = sorted(every_file)
    self.scenario = options.scenario
    if "xor-attriqa" in self.inputs:
      self.scenario = self.scenario or SCENARIOS[0]
      require_choice("--scenario", self.scenario, SCENARIOS)
    elif self.scenario is not None:
      raise ConfigError("--scenario applies to xor-attriqa inputs only")
    self.negatives = options.negatives_per_positive
    if self.negatives:
      if not options.corpus:
        raise ConfigError("--negatives_per_positive mines the articles of --corpus: "
                          "give it")
      if "ratings" not in self.inputs:
        raise ConfigError("--negatives_per_positive needs rows that cite a passage "
                          "of the corpus (--format ratings: evaluate's ratings); no "
                          "input is of that format")
      read_article_index(options.corpus)
    elif options.corpus:
      raise ConfigError("--corpus is read for hard negatives only: give "
                        "--negatives_per_positive N (N > 0), or leave --corpus out")
    outputs = OUTPUT_FILES + (t5x_outputs() if options.family == T5_FAMILY else ())
    self.output = OutputDir("training-data", options.output_dir, outputs,
                            reads={"--input": self.files},
                            read_dirs={"--corpus": options.corpus})
    self.output.check()
    for format_name, files in self.inputs.items():
      for path in files:
        check_labelled_file(format_name, path, self.scenario)
    # What names this data set: its seqio Task and finetune's model card.
    self.task_name = "autoais_attribution_" + hashlib.blake2b(
        repr((options.family, sorted(self.inputs.items()), options.seed,
              options.validation_fraction, options.test_fraction,
              self.negatives)).encode("utf-8"), digest_size=4).hexdigest()


class _TrainingDataRecord(RunRecord):
  job = "training-data"
  summed = ("read_counts", "negative_stats", "join_stats")
  values = ("written", "t5x")

  def __init__(self, options, plan: _Plan):
    super().__init__()
    self.rows_from(INPUT, "read_counts", "--input", plan.files)
    self._inputs = {"input": {name: files for name, files in sorted(plan.inputs.items())},
                    "scenario": plan.scenario}
    self._settings = {
        "family": options.family, "seed": options.seed,
        "validation_fraction": options.validation_fraction,
        "test_fraction": options.test_fraction,
        "split_by": "blake2b-64 of the question (else the claim), NFKC-normalised "
                    "and case folded, punctuation and format characters dropped, "
                    "whitespace collapsed, with the seed",
        "negatives_per_positive": plan.negatives, "corpus": options.corpus,
        "task_name": plan.task_name}

  def fields(self, read_counts, written, dead, negative_stats, join_stats, t5x):
    counts = reconcile(read_counts.get("read", 0), written["input_examples"],
                       dead[INPUT])
    counts["examples"] = counts.pop("scored")
    counts["duplicates"] = written["duplicates"]
    manifest = {"counts": counts, "inputs": self._inputs, "settings": self._settings,
                "splits": written["splits"]}
    if self._settings["negatives_per_positive"]:
      manifest["hard_negatives"] = dict(
          {name: negative_stats.get(name, 0) for name in NEGATIVE_STATS},
          duplicates=written["hard_negative_duplicates"], corpus_reads=join_stats)
    if t5x is not None:
      manifest.update(t5x)
    return manifest


def summary_markdown(written, family: str) -> str:
  lines = [f"# Training data ({family})", "",
           "| split | examples | positive | negative | hard negatives |",
           "|---|---:|---:|---:|---:|"]
  for split in SPLITS:
    entry = written["splits"][split]
    lines.append(f"| {split} | {entry['examples']} | {entry['positive']} | "
                 f"{entry['negative']} | {entry['hard_negatives']} |")
  lines += ["", "| split | source | examples | positive | negative | hard negatives |",
            "|---|---|---:|---:|---:|---:|"]
  for split in SPLITS:
    for source, entry in sorted(written["splits"][split]["by_source"].items()):
      lines.append(f"| {split} | {source} | {entry['examples']} | {entry['positive']} | "
                   f"{entry['negative']} | {entry['hard_negatives']} |")
  return "\n".join(lines) + "\n"


def _write_summary(written, path: str, family: str):
  write_text_atomically(path, summary_markdown(written, family))
  return written


def build_pipeline(pipeline: beam.Pipeline, options: PipelineOptions) -> OutputDir:
  """Validates the options, claims the output directory, adds the steps."""
  options = options.view_as(TrainingDataOptions)
  plan = _Plan(options)
  record = _TrainingDataRecord(options, plan)
  work_dir = plan.output.claim()
  fractions = (options.validation_fraction, options.test_fraction)
  read_counts, dead_letters, parts, seeds = [], [], [], []
  for format_name, files in sorted(plan.inputs.items()):
    label = _label(format_name)
    read = pipeline | f"Read{label}" >> ReadRecords(
        files, labelled_reader(format_name, plan.scenario))
    read_counts.append(read.counts)
    dead_letters.append(read.dead_letter)
    parts.append(read.records | f"Make{label}Examples" >> beam.Map(
        example_of, format_name, options.family, options.seed, fractions))
    if plan.negatives and format_name == "ratings":
      seeds.append(
          read.records
          | f"Pair{label}Examples" >> beam.Map(
              lambda item, name=format_name: (item, example_of(
                  item, name, options.family, options.seed, fractions)))
          | f"Keep{label}Positives" >> beam.Filter(
              lambda pair: pair[0].human_attributable and bool(pair[0].attribution))
          | f"Seed{label}Negatives" >> beam.MapTuple(
              lambda item, example: NegativeSeed(example, item.example.answer,
                                                 item.attribution)))
  negative_stats, join_stats = (), ()
  if seeds:
    mined = seeds[0] | "MineHardNegatives" >> MineHardNegatives(
        options.corpus, FileSystems.join(work_dir, "negatives"), options.family,
        plan.negatives, options.seed)
    parts.append(mined["negatives"])
    negative_stats, join_stats = mined["stats"], mined["join_stats"]
  written = tuple(parts) | "WriteSplits" >> WriteMergedRows(
      ExamplesFold, options.output_dir, work_dir)
  dead_letters.append(written["dead_letter"])
  stats = written["stats"] | "WriteSummary" >> beam.Map(
      _write_summary, FileSystems.join(options.output_dir, SUMMARY), options.family)
  t5x = None
  if options.family == T5_FAMILY:
    t5x = pipeline | "WriteT5XFiles" >> WriteT5XFiles(options.output_dir,
                                                       plan.task_name, stats)
  _ = {"dead": {INPUT: tuple(dead_letters)}, "read_counts": tuple(read_counts),
       "negative_stats": tuple(negative_stats), "join_stats": tuple(join_stats),
       "written": stats, "t5x": t5x} | "WriteRunRecord" >> WriteRunRecord(
           options.output_dir, work_dir, record)
  return plan.output


def run(argv=None) -> int:
  return run_job("training-data", argv, TrainingDataOptions, build_pipeline)
