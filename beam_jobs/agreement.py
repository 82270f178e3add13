"""agreement: score a human-labelled attribution set and measure how well the
scores agree with the human labels (SPEC 5.5).

    autoais agreement --input PATH --format FORMAT --output_dir OUT \
        [--scorer string-match|t5 --model DIR ...] [--threshold 0.5] \
        [--scenario in-language|in-english] \
        [--calibrate_on PATH] [--calibrate_metric accuracy|balanced_accuracy] \
        [Beam options]
    python -m beam_jobs.agreement ...

Formats (transforms/labelled/readers.py): ratings, attributionbench, begin, wice,
expertqa, xor-attriqa. Each item is scored with the chosen scorer (WiCE: the max
over a claim's chunks) and compared with its human label, overall and per group
(transforms/stats/agreement.py: accuracy, balanced accuracy, Cohen's kappa, ROC-AUC and
PR-AUC of nli_score, per-label counts). `--calibrate_on` scores a second set of
the same format and picks the threshold that maximises --calibrate_metric there;
the input's figures at that threshold are reported beside those at --threshold.

Outputs in --output_dir: agreement_rows.parquet and .csv (one row per item,
sorted by source file, line and item id), agreement.json, agreement.md,
report.html, dead_letter.jsonl, and run.json, written last, whose counts
reconcile: read = scored + rejected + unmatched (records: WiCE chunks count one
each).
"""
if __name__ == "__main__":
  # Run the package module (Beam pickles DoFns by reference).
  import sys
  from beam_jobs.agreement import run
  sys.exit(run())

import hashlib
import json
from typing import Iterable, List, NamedTuple, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from beam_jobs.common import (JobArguments, ScorerOptions, is_local_runner, require,
                              run_job, scorer_from_options)
from schemas.errors import ConfigError
from beam_jobs.output_dir import OutputDir
from schemas import (AGREEMENT_ROW_SCHEMA, REJECTED, AgreementRow, AttributionScore,
                     DeadLetter, LabelledItem, ScoringFailure)
from transforms.io.atomic import write_text_atomically
from transforms.io.dead_letters import WriteDeadLetters
from transforms.io.inputs import match_files
from transforms.io.manifest import (SumCounts, WriteManifest, reconcile)
from transforms.io.records import ReadRecords
from transforms.labelled.readers import (FORMATS, SCENARIOS, check_labelled_file,
                                         labelled_reader)
from transforms.rows.merge import RowFold, RowTable, WriteMergedRows
from transforms.rows.record import RunRecord, scorer_side_inputs
from transforms.rows.summary import percent
from transforms.scoring.attribution import (ScoreAttribution, first_failure,
                                            scored_or_failed, scoring_failed)
from transforms.stats import agreement as stats
from transforms.stats.report import agreement_report_html

OUTPUT_FILES = ("run.json", "agreement_rows.parquet", "agreement_rows.csv",
                "agreement.json", "agreement.md", "report.html", "dead_letter.jsonl")
ROW_KEY = ("source_file", "source_line", "item_id")
INPUT, CALIBRATION = "input", "calibration"
NO_GROUP = "(none)"
_ROWS_PER_BATCH = 4096


class AgreementOptions(PipelineOptions):
  """agreement's own flags; the scorer flags are beam_jobs.common.ScorerOptions."""

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
    group.add_argument("--calibrate_on", default=None,
                       help="A labelled set of the same format on which to choose the "
                       "threshold.")
    group.add_argument("--calibrate_metric", default="accuracy",
                       help="What the calibrated threshold maximises: accuracy "
                       "(default) or balanced_accuracy.")


class _Plan:
  """What validation found: formats, files, scorer."""

  def __init__(self, options: AgreementOptions, runner):
    require(options, "input", "format", "output_dir")
    if options.format not in FORMATS:
      raise ConfigError(f"--format {options.format!r}: choose from "
                        f"{', '.join(FORMATS)}")
    self.format = FORMATS[options.format]
    self.scenario = options.scenario
    if options.format == "xor-attriqa":
      self.scenario = self.scenario or SCENARIOS[0]
      if self.scenario not in SCENARIOS:
        raise ConfigError(f"--scenario {self.scenario!r}: choose from "
                          f"{', '.join(SCENARIOS)}")
    elif self.scenario is not None:
      raise ConfigError("--scenario applies to --format xor-attriqa only")
    if options.calibrate_metric not in stats.METRICS:
      raise ConfigError(f"--calibrate_metric {options.calibrate_metric!r}: choose from "
                        f"{', '.join(stats.METRICS)}")
    self.scorer = scorer_from_options(options, is_local_runner(runner))
    self.input_files = match_files(options.input)
    if not self.input_files:
      raise ConfigError(f"--input {options.input!r} matches no files")
    self.calibration_files = []
    if options.calibrate_on:
      self.calibration_files = match_files(options.calibrate_on)
      if not self.calibration_files:
        raise ConfigError(f"--calibrate_on {options.calibrate_on!r} matches no files")
    self.output = OutputDir(
        "agreement", options.output_dir, OUTPUT_FILES,
        reads={"--input": self.input_files, "--calibrate_on": self.calibration_files},
        read_dirs={"--model": options.view_as(ScorerOptions).model})
    self.output.check()
    for path in self.input_files + self.calibration_files:
      check_labelled_file(options.format, path, self.scenario)


# ----------------------------------------------------------------------------
# Items to rows.


def premise_digest(premises: Iterable[str]) -> str:
  digest = hashlib.blake2b(digest_size=16)
  for premise in premises:
    digest.update(premise.encode("utf-8"))
    digest.update(b"\0")
  return digest.hexdigest()


def agreement_row(chunks: List[Tuple[LabelledItem, AttributionScore]]) -> AgreementRow:
  """One item's row from its scored premise chunks (one, except WiCE): the max
  score, attributable if any chunk is."""
  chunks = sorted(chunks, key=lambda chunk: (chunk[0].source_file, chunk[0].source_line))
  item = chunks[0][0]
  scores = [score for _, score in chunks]
  return AgreementRow(
      item.group, item.secondary_group, item.item_id,
      premise_digest(chunk.example.premise for chunk, _ in chunks),
      item.example.hypothesis, item.human_label, item.human_attributable,
      max(score.nli_score for score in scores),
      "Y" if any(score.attributable for score in scores) else "N", None,
      len(chunks), sum(score.n_windows for score in scores),
      any(score.truncated for score in scores), item.source_file, item.source_line)


def _scoring_failed(item: LabelledItem, failure: ScoringFailure, what: str) -> DeadLetter:
  return scoring_failed(item.source_file, item.source_line, None, what, failure,
                        {"item_id": item.item_id})


class RoleItem(NamedTuple):
  """An item to score and the input it belongs to (INPUT or CALIBRATION)."""
  role: str
  item: LabelledItem


class _DeadLetterFailedItemsFn(beam.DoFn):
  """(RoleItem, ScoringFailure) -> the item's DeadLetter, in its role's
  output: a scorer (a hosted model) refused it or kept failing."""

  def process(self, keyed_failure):
    (role, item), failure = keyed_failure
    yield beam.pvalue.TaggedOutput(role, _scoring_failed(item, failure, "the item"))


class _CombineChunksFn(beam.DoFn):
  """((role, item_id), [(item, score or ScoringFailure), ...]) -> (role,
  AgreementRow); chunks of one id that disagree on the claim or the label are
  rejected, each; an item one of whose chunks could not be scored is rejected,
  every chunk (its max would be over the others only)."""

  def process(self, grouped):
    (role, item_id), chunks = grouped
    chunks = list(chunks)
    failure = first_failure(score for _, score in chunks)
    if failure is not None:
      for item, _ in chunks:
        yield beam.pvalue.TaggedOutput(role, _scoring_failed(
            item, failure, f"a premise chunk of item {item_id!r}"))
      return
    first = chunks[0][0]
    if any((item.example.hypothesis, item.human_label) !=
           (first.example.hypothesis, first.human_label) for item, _ in chunks):
      for item, _ in chunks:
        yield beam.pvalue.TaggedOutput(role, DeadLetter(
            item.source_file, item.source_line, REJECTED, "inconsistent_chunks",
            "item_id", f"{item.source_file}:{item.source_line}: field 'item_id': "
            f"the chunks of item {item_id!r} differ in claim or label",
            json.dumps({"item_id": item_id, "claim": item.example.hypothesis,
                        "label": item.human_label}, ensure_ascii=False)))
      return
    yield role, agreement_row(chunks)


class ScoreItems(beam.PTransform):
  """PCollection[(role, LabelledItem)] -> {"rows": PCollection[(role,
  AgreementRow)], "dead_letter": {role: PCollection[DeadLetter]}, "stats": scorer
  counts}: each premise scored once by the scorer; multi-premise items (WiCE)
  grouped by id and maxed."""

  def __init__(self, scorer, multi_premise: bool, roles: Tuple[str, ...]):
    super().__init__()
    self._scorer = scorer
    self._multi_premise = multi_premise
    self._roles = roles

  def expand(self, items):
    scores = (items
              | "KeyExamples" >> beam.MapTuple(
                  lambda role, item: (RoleItem(role, item), item.example))
              | "ScoreAttribution" >> ScoreAttribution(self._scorer))
    if not self._multi_premise:
      rows = scores["scored"] | "MakeRows" >> beam.MapTuple(
          lambda key, score: (key.role, agreement_row([(key.item, score)])))
      failed = scores["failed"] | "DeadLetterFailedItems" >> beam.ParDo(
          _DeadLetterFailedItemsFn()).with_outputs(*self._roles)
      return {"rows": rows, "dead_letter": {role: failed[role] for role in self._roles},
              "stats": scores["stats"]}
    combined = (scored_or_failed(scores, "CollectChunkScores")
                | "KeyByItem" >> beam.MapTuple(
                    lambda key, score: ((key.role, key.item.item_id),
                                        (key.item, score)))
                | "GroupChunks" >> beam.GroupByKey()
                | "CombineChunks" >> beam.ParDo(_CombineChunksFn()).with_outputs(
                    *self._roles, main="rows"))
    return {"rows": combined.rows,
            "dead_letter": {role: combined[role] for role in self._roles},
            "stats": scores["stats"]}


# ----------------------------------------------------------------------------
# Statistics.


def counted(row: AgreementRow) -> tuple:
  """What a row adds to AgreementCounts: (human, decision, score, calibrated
  decision, human label)."""
  return (row.human_attributable, row.decision == "Y", row.nli_score,
          None if row.calibrated_decision is None else row.calibrated_decision == "Y",
          row.human_label)


def stats_inputs(row: AgreementRow, groupings: Tuple[str, ...]):
  """The (grouping, group) keys a row counts under, with what it counts."""
  value = counted(row)
  yield ("overall", ""), value
  for grouping, group in zip(groupings, (row.group, row.secondary_group)):
    yield (grouping, NO_GROUP if group is None else group), value


def apply_threshold(row: AgreementRow, calibration) -> AgreementRow:
  return row._replace(
      calibrated_decision="Y" if row.nli_score > calibration["threshold"] else "N")


def _figure(value) -> str:
  return "" if value is None else f"{value:.3f}"


def summary(grouped_counts, groupings, header, calibration):
  """agreement.json's content from ((grouping, group), AgreementCounts) pairs."""
  by_key = dict(grouped_counts)
  overall = by_key.pop(("overall", ""), stats.AgreementCounts())
  groups = {grouping: {} for grouping in groupings}
  for (grouping, group), counts in sorted(by_key.items()):
    groups[grouping][group] = stats.agreement_statistics(counts)
  group_level = {}
  for grouping, table in groups.items():
    named = [(name, entry) for name, entry in table.items() if entry["n_rated"]]
    group_level[grouping] = {
        "description": f"per-{grouping} predicted AIS (share decided attributable) "
                       "against human AIS",
        "groups": [name for name, _ in named],
        **stats.correlations([entry["predicted_ais"] for _, entry in named],
                             [entry["human_ais"] for _, entry in named])}
  return dict(header, auc_method=stats.AUC_METHOD,
              overall=stats.agreement_statistics(overall), groups=groups,
              group_level=group_level, calibration=calibration), overall


def agreement_markdown(content) -> str:
  lines = [f"# Agreement with human labels: {content['format']}", "",
           f"Attributable: {content['positive_label']}. Scorer: "
           f"{content['scorer']['name']}, decision {content['decision']} at threshold "
           f"{content['threshold']}. Percentages; ROC-AUC and PR-AUC (average "
           "precision) of nli_score.", ""]
  header = ("| group | n | human AIS | predicted AIS | accuracy | balanced accuracy | "
            "Cohen's kappa | ROC-AUC | PR-AUC |")

  def line(name, entry):
    return (f"| {name} | {entry['n_rated']} | {percent(entry['human_ais'])} | "
            f"{percent(entry['predicted_ais'])} | {percent(entry['accuracy'])} | "
            f"{percent(entry['balanced_accuracy'])} | {_figure(entry['cohen_kappa'])} | "
            f"{_figure(entry['roc_auc'])} | {_figure(entry['pr_auc'])} |")

  separator = "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
  lines += [header, separator, line("overall", content["overall"])]
  for grouping, table in content["groups"].items():
    lines += ["", f"By {grouping}:", "", header, separator]
    lines += [line(name, entry) for name, entry in table.items()]
  lines += ["", "Human labels as written in the source:", "",
            "| label | n | decided attributable |", "|---|---:|---:|"]
  for label, entry in content["overall"]["by_human_label"].items():
    lines.append(f"| {label} | {entry['n']} | {entry['predicted_attributable']} |")
  calibration = content["calibration"]
  if calibration:
    default = content["overall"]
    calibrated = default.get("at_calibrated_threshold", {})
    lines += ["", f"Calibration: threshold {calibration['threshold']!r} maximises "
              f"{calibration['metric']} on {', '.join(calibration['calibrate_on'])} "
              f"({percent(calibration['value'])}%, {calibration['candidates']} "
              "candidate thresholds).", "",
              "| on the input | at the default threshold | at the calibrated threshold |",
              "|---|---:|---:|"]
    for name in ("predicted_ais", "accuracy", "balanced_accuracy"):
      lines.append(f"| {name} | {percent(default[name])} | "
                   f"{percent(calibrated.get(name))} |")
    lines.append(f"| cohen_kappa | {_figure(default['cohen_kappa'])} | "
                 f"{_figure(calibrated.get('cohen_kappa'))} |")
  overall = content["overall"]
  if not overall["auc_exact"]:
    lines += ["", f"AUCs over a 1/{stats.GRID_BINS} score grid: ROC-AUC within "
              f"{overall['roc_auc_error_bound']:.2g}, PR-AUC within "
              f"{overall['pr_auc_error_bound']:.2g} of the exact values."]
  return "\n".join(lines) + "\n"


class _RowsFold(RowFold):
  """Writes the merged rows to agreement_rows.parquet and .csv; counts the
  items and their records for run.json."""
  row_type = AgreementRow
  merged_type = AgreementRow
  sort_key = ROW_KEY
  run_name = "rows"
  tables = (RowTable("agreement_rows", AGREEMENT_ROW_SCHEMA,
                     row_group_size=_ROWS_PER_BATCH),)
  by_system = False

  def __init__(self):
    self._counts = {"items": 0, "records": 0}

  def add(self, row, ref, tables):
    tables["agreement_rows"].add_row(row)
    self._counts["items"] += 1
    self._counts["records"] += row.n_premises
    return ()

  def stats(self):
    return self._counts


class _WriteSummaryFn(beam.DoFn):
  """agreement.json, agreement.md and report.html from the merged counts."""

  def __init__(self, output_dir: str, groupings, header):
    self._output_dir = output_dir
    self._groupings = groupings
    self._header = header

  def process(self, grouped_counts, calibration):
    content, overall = summary(grouped_counts, self._groupings, self._header,
                               calibration)
    join = FileSystems.join
    write_text_atomically(join(self._output_dir, "agreement.json"),
                          json.dumps(content, indent=2, ensure_ascii=False) + "\n")
    write_text_atomically(join(self._output_dir, "agreement.md"),
                          agreement_markdown(content))
    write_text_atomically(join(self._output_dir, "report.html"),
                          agreement_report_html(content, overall))
    yield {"groups": {grouping: len(table) for grouping, table in
                      content["groups"].items()}}


def _calibration_summary(counts, metric, default, files):
  if not counts.n:
    raise ValueError(f"--calibrate_on {', '.join(files)}: no item could be scored")
  chosen = stats.best_threshold(counts.scores.flush(), metric, default)
  return dict(chosen, calibrate_on=files)


class _AgreementRecord(RunRecord):
  job = "agreement"

  def __init__(self, options, plan: _Plan):
    super().__init__(plan.scorer.describe())
    self._inputs = {"input": plan.input_files, "format": options.format,
                    "scenario": plan.scenario,
                    "calibrate_on": plan.calibration_files or None}

  def fields(self, read_counts, rows, dead, scorer_stats, model_info, summary_info,
               calibration_read_counts=None, calibration_rows=None):
    counts = reconcile(read_counts.get("read", 0), rows.get("records", 0), dead[INPUT])
    counts["items"] = rows["items"]
    manifest = {"counts": counts}
    if calibration_rows is not None:
      manifest["calibration_counts"] = dict(
          reconcile(calibration_read_counts.get("read", 0),
                    calibration_rows.get("records", 0), dead[CALIBRATION]),
          items=calibration_rows.get("items", 0))
    manifest.update({
        "groups": summary_info["groups"],
        "inputs": dict(self._inputs),
        "scorer": self.scorer_fields(model_info, scorer_stats),
    })
    return manifest


def _count_rows(row: AgreementRow):
  return {"items": 1, "records": row.n_premises}


def build_pipeline(pipeline: beam.Pipeline, options: PipelineOptions) -> OutputDir:
  """Validates the options, claims the output directory, adds the steps."""
  options = options.view_as(AgreementOptions)
  plan = _Plan(options, pipeline.runner)
  record = _AgreementRecord(options, plan)
  work_dir = plan.output.claim()
  reader = labelled_reader(options.format, plan.scenario,
                           options.view_as(ScorerOptions).decision == "decode")
  calibrating = bool(plan.calibration_files)
  roles = (INPUT, CALIBRATION) if calibrating else (INPUT,)

  read = pipeline | "ReadInput" >> ReadRecords(plan.input_files, reader)
  items = read.records | "TagInput" >> beam.Map(lambda item: (INPUT, item))
  if calibrating:
    calibration_read = pipeline | "ReadCalibrationSet" >> ReadRecords(
        plan.calibration_files, reader)
    # One scoring step for both sets: the model loads once per worker.
    items = ((items, calibration_read.records
              | "TagCalibration" >> beam.Map(lambda item: (CALIBRATION, item)))
             | "FlattenSets" >> beam.Flatten())
  scored = items | "ScoreItems" >> ScoreItems(plan.scorer, plan.format.multi_premise,
                                             roles)
  threshold = options.view_as(ScorerOptions).threshold
  if calibrating:
    split = scored["rows"] | "SplitSets" >> beam.Partition(
        lambda keyed, _: 0 if keyed[0] == INPUT else 1, 2)
    input_rows = split[0] | "InputRows" >> beam.Values()
    calibration_rows = split[1] | "CalibrationRows" >> beam.Values()
    calibration = (
        calibration_rows
        | "CalibrationCounts" >> beam.Map(counted)
        | "MergeCalibrationCounts" >> beam.CombineGlobally(stats.MergeAgreementCounts())
        | "ChooseThreshold" >> beam.Map(
            _calibration_summary, options.calibrate_metric, threshold,
            plan.calibration_files))
    input_rows = input_rows | "ApplyCalibratedThreshold" >> beam.Map(
        apply_threshold, beam.pvalue.AsSingleton(calibration))
  else:
    input_rows = scored["rows"] | "InputRows" >> beam.Values()
    calibration = pipeline | "NoCalibration" >> beam.Create([None])

  rows_written = input_rows | "WriteRows" >> WriteMergedRows(
      _RowsFold, options.output_dir, work_dir)
  header = {
      "job": "agreement", "format": options.format, "scenario": plan.scenario,
      "inputs": plan.input_files, "positive_label": plan.format.positive,
      "groupings": list(plan.format.groupings), "scorer": plan.scorer.describe(),
      "threshold": threshold,
      "decision": options.view_as(ScorerOptions).decision,
  }
  summary_info = (
      input_rows
      | "KeyByGroup" >> beam.FlatMap(stats_inputs, plan.format.groupings)
      | "CountPerGroup" >> beam.CombinePerKey(stats.MergeAgreementCounts())
      | "ListGroups" >> beam.combiners.ToList()
      | "WriteSummary" >> beam.ParDo(
          _WriteSummaryFn(options.output_dir, plan.format.groupings, header),
          beam.pvalue.AsSingleton(calibration)))
  dead_letters = {INPUT: (read.dead_letter, scored["dead_letter"][INPUT])}
  manifest_inputs = {
      "read_counts": read.counts | "SumReadCounts" >> beam.CombineGlobally(SumCounts()),
      "rows": rows_written["stats"],
      **scorer_side_inputs(pipeline, plan.scorer, scored["stats"]),
      "summary_info": summary_info,
  }
  if calibrating:
    dead_letters[CALIBRATION] = (calibration_read.dead_letter,
                                 scored["dead_letter"][CALIBRATION])
    manifest_inputs["calibration_read_counts"] = (
        calibration_read.counts
        | "SumCalibrationReadCounts" >> beam.CombineGlobally(SumCounts()))
    manifest_inputs["calibration_rows"] = (
        calibration_rows
        | "CountCalibrationRows" >> beam.Map(_count_rows)
        | "SumCalibrationRows" >> beam.CombineGlobally(SumCounts()))
  manifest_inputs["dead"] = dead_letters | "WriteDeadLetters" >> WriteDeadLetters(
      FileSystems.join(options.output_dir, "dead_letter.jsonl"), work_dir)
  _ = pipeline | "WriteRunManifest" >> WriteManifest(
      FileSystems.join(options.output_dir, "run.json"),
      record, manifest_inputs,
      work_dir=work_dir)
  return plan.output


def run(argv=None) -> int:
  return run_job("agreement", argv, AgreementOptions, build_pipeline)
