"""agreement's outputs: agreement_rows.{parquet,csv} (RowsFold, the job
skeleton of transforms/rows/), the threshold chosen on a calibration set
(Calibrate), and agreement.json / .md / report.html from the rows counted per
grouping (SummarizeAgreement).
"""
import json
from typing import Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from autoais.schemas import AGREEMENT_ROW_SCHEMA, AgreementRow
from autoais.transforms.io.atomic import write_text_atomically
from autoais.transforms.io.spilled_groups import SpilledCoGroupByKey
from autoais.transforms.rows.merge import RowFold, RowTable
from autoais.transforms.rows.summary import percent
from autoais.transforms.scoring.label import scored_by, scorer_naming
from autoais.transforms.stats import agreement as stats
from autoais.transforms.stats.report import agreement_report_html
from autoais.transforms.stats.spans import span_agreement

ROW_KEY = ("source_file", "source_line", "item_id")
NO_GROUP = "(none)"
# Groupings whose groups are the data sets of a benchmark: agreement.json adds
# the unweighted mean over them of balanced accuracy and ROC-AUC, with CIs.
MEAN_GROUPINGS = ("dataset",)
_ROWS_PER_BATCH = 4096


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


def calibrated_threshold(calibration, group) -> float:
  """The threshold a row of `group` is decided at: its data set's own where
  thresholds were tuned per data set and its data set had one, else the one
  tuned on the whole calibration set."""
  per_group = calibration.get("per_dataset")
  if per_group and group in per_group["thresholds"]:
    return per_group["thresholds"][group]["threshold"]
  return calibration["threshold"]


def apply_threshold(row: AgreementRow, calibration) -> AgreementRow:
  threshold = calibrated_threshold(calibration, row.group)
  return row._replace(calibrated_decision="Y" if row.nli_score > threshold else "N")


def _figure(value) -> str:
  return "" if value is None else f"{value:.3f}"


def summary(grouped_counts, groupings, header, calibration, bootstrap):
  """agreement.json's content from ((grouping, group), AgreementCounts) pairs;
  `bootstrap`: (samples, seed) of the CIs of the means over data sets."""
  by_key = dict(grouped_counts)
  overall = by_key.pop(("overall", ""), stats.AgreementCounts())
  groups = {grouping: {} for grouping in groupings}
  for (grouping, group), counts in sorted(by_key.items()):
    groups[grouping][group] = stats.agreement_statistics(counts)
  if calibration and calibration.get("per_dataset"):
    # Data sets of the input that the calibration set had no threshold for:
    # decided at the threshold tuned on the whole calibration set.
    tuned = calibration["per_dataset"]["thresholds"]
    calibration = dict(calibration, per_dataset=dict(
        calibration["per_dataset"], decided_at_overall_threshold=sorted(
            set(groups.get(MEAN_GROUPINGS[0], {})) - set(tuned))))
  group_means = {
      grouping: stats.mean_over_groups(
          {group: counts for (name, group), counts in by_key.items()
           if name == grouping}, groups[grouping], *bootstrap)
      for grouping in groupings if grouping in MEAN_GROUPINGS}
  group_level = {}
  for grouping, table in groups.items():
    named = [(name, entry) for name, entry in table.items() if entry["n_rated"]]
    group_level[grouping] = {
        "description": f"per-{grouping} predicted AIS (share decided attributable) "
                       "against human AIS",
        "groups": [name for name, _ in named],
        **stats.correlations([entry["predicted_ais"] for _, entry in named],
                             [entry["human_ais"] for _, entry in named])}
  return dict(header, **scorer_naming(header.get("scorer")), auc_method=stats.AUC_METHOD,
              overall=stats.agreement_statistics(overall), groups=groups,
              group_level=group_level,
              # Only formats whose groups are data sets have means over them.
              **({"group_means": group_means} if group_means else {}),
              calibration=calibration), overall


def agreement_markdown(content) -> str:
  lines = [f"# Agreement with human labels: {content['format']}", "",
           scored_by(content["scorer"]), "",
           f"Attributable: {content['positive_label']}. Decision {content['decision']} "
           f"at threshold {content['threshold']}. Percentages; ROC-AUC and PR-AUC "
           "(average precision) of nli_score.", ""]
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
  for grouping, means in content.get("group_means", {}).items():
    lines += ["", f"Unweighted mean over the {grouping} groups (each {grouping} "
              "counts once, as the leaderboards print it), 95% percentile bootstrap "
              f"CI ({means['bootstrap']['samples']} resamples of the items within "
              f"each {grouping}, seed {means['bootstrap']['seed']}):", "",
              f"| figure | mean | 95% CI | {grouping}s | left out |",
              "|---|---:|---:|---:|---|"]
    for metric in (*stats.MEAN_METRICS, stats.CALIBRATED_MEAN):
      if metric not in means:
        continue
      entry = means[metric]
      show = _figure if metric == "roc_auc" else percent
      interval = ("" if entry["ci"] is None else
                  f"{show(entry['ci'][0])}–{show(entry['ci'][1])}")
      lines.append(f"| {metric} | {show(entry['mean'])} | {interval} | "
                   f"{entry['n_groups']} | {', '.join(entry['left_out'])} |")
  spans = content.get("span_agreement")
  if spans:
    lines += ["", "Unsupported spans against the spans the humans marked, in characters "
              "of the responses (summed over the items):", "",
              "| characters both marked | predicted | human | precision | recall | F1 |",
              "|---:|---:|---:|---:|---:|---:|",
              f"| {spans['characters']['overlap']} | {spans['characters']['predicted']} | "
              f"{spans['characters']['gold']} | {percent(spans['precision'])} | "
              f"{percent(spans['recall'])} | {percent(spans['f1'])} |"]
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
              "candidate thresholds).", ""]
    shared = calibration.get("input_items_in_calibration_set")
    if shared:
      lines += [f"{shared} of the input's {content['overall']['n_rated']} items are in "
                "the calibration set too (the same premise and hypothesis): the "
                "threshold was tuned on them, and their figures at it are not held "
                "out.", ""]
    lines += [f"| on the input | at threshold {content['threshold']!r} | at the "
              "calibrated threshold |", "|---|---:|---:|"]
    for name in ("predicted_ais", "accuracy", "balanced_accuracy"):
      lines.append(f"| {name} | {percent(default[name])} | "
                   f"{percent(calibrated.get(name))} |")
    lines.append(f"| cohen_kappa | {_figure(default['cohen_kappa'])} | "
                 f"{_figure(calibrated.get('cohen_kappa'))} |")
    per_group = calibration.get("per_dataset")
    if per_group:
      lines += ["", f"Thresholds tuned per {per_group['grouping']} (each maximises "
                f"{calibration['metric']} on its own rows of the calibration set; the "
                "row \"calibrated\" above and the calibrated columns decide each "
                f"{per_group['grouping']} at its own threshold):", "",
                f"| {per_group['grouping']} | threshold | {calibration['metric']} on the "
                "calibration set | candidates |", "|---|---:|---:|---:|"]
      for name, chosen in per_group["thresholds"].items():
        lines.append(f"| {name} | {chosen['threshold']!r} | {percent(chosen['value'])} | "
                     f"{chosen['candidates']} |")
      for name, reason in per_group["not_tuned"].items():
        lines.append(f"| {name} | not tuned: {reason} | | |")
      if per_group.get("decided_at_overall_threshold"):
        lines += ["", f"Decided at the overall threshold {calibration['threshold']!r} "
                  f"(no threshold of their own): "
                  f"{', '.join(per_group['decided_at_overall_threshold'])}."]
  overall = content["overall"]
  if not overall["auc_exact"]:
    lines += ["", f"AUCs over a 1/{stats.GRID_BINS} score grid: ROC-AUC within "
              f"{overall['roc_auc_error_bound']:.2g}, PR-AUC within "
              f"{overall['pr_auc_error_bound']:.2g} of the exact values."]
  return "\n".join(lines) + "\n"


class RowsFold(RowFold):
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

  def __init__(self, output_dir: str, groupings, header, bootstrap):
    self._output_dir = output_dir
    self._groupings = groupings
    self._header = header
    self._bootstrap = bootstrap

  def process(self, grouped_counts, calibration, spans=None):
    content, overall = summary(grouped_counts, self._groupings, self._header,
                               calibration, self._bootstrap)
    counts, shown = spans or (None, ())
    if counts is not None:
      content["span_agreement"] = span_agreement(counts)
    join = FileSystems.join
    write_text_atomically(join(self._output_dir, "agreement.json"),
                          json.dumps(content, indent=2, ensure_ascii=False) + "\n")
    write_text_atomically(join(self._output_dir, "agreement.md"),
                          agreement_markdown(content))
    write_text_atomically(join(self._output_dir, "report.html"),
                          agreement_report_html(content, overall, shown))
    yield {"groups": {grouping: len(table) for grouping, table in
                      content["groups"].items()}}


def _calibration_summary(counts, metric, default, files, per_group=None):
  if not counts.n:
    raise ValueError(f"--calibrate_on {', '.join(files)}: no item could be scored")
  chosen = dict(stats.best_threshold(counts.scores.flush(), metric, default),
                calibrate_on=files)
  if per_group is not None:
    thresholds, not_tuned = {}, {}
    for group, group_counts in sorted(per_group):
      try:
        thresholds[group] = stats.best_threshold(group_counts.scores.flush(), metric,
                                                 default)
      except ValueError as error:  # balanced accuracy of a one-label data set
        not_tuned[group] = str(error)
    chosen["per_dataset"] = {"grouping": MEAN_GROUPINGS[0], "thresholds": thresholds,
                             "not_tuned": not_tuned}
  return chosen


def _item_key(row: AgreementRow) -> Tuple[str, str]:
  return (row.premise_digest, row.hypothesis)


def _shared(joined) -> int:
  """An item key's input rows where the calibration set holds it too, else 0."""
  _, sets = joined
  return len(list(sets["input"])) if list(sets["calibration"]) else 0


class CountSharedItems(beam.PTransform):
  """(PCollection[AgreementRow] of the input, of the calibration set) -> a
  singleton: how many of the input's items the calibration set holds too (the
  same premises and hypothesis), joined through runs on disk under
  `work_dir`. A threshold tuned on them has seen them: at it, their figures
  are not held out."""

  def __init__(self, work_dir: str):
    super().__init__()
    self._work_dir = work_dir

  def expand(self, sets):
    input_rows, calibration_rows = sets
    keyed = {"input": input_rows | "KeyInputItems" >> beam.Map(
                 lambda row: (_item_key(row), None)),
             "calibration": calibration_rows | "KeyCalibrationItems" >> beam.Map(
                 lambda row: (_item_key(row), None))}
    return (keyed
            | "JoinSetsByItem" >> SpilledCoGroupByKey(self._work_dir)
            | "CountShared" >> beam.Map(_shared)
            | "SumShared" >> beam.CombineGlobally(sum))


class Calibrate(beam.PTransform):
  """PCollection[AgreementRow] of the calibration set -> a singleton: the
  threshold that maximises `metric` there (stats.best_threshold), with the
  calibration files; with `per_dataset`, also the threshold that maximises it
  on each data set's rows (the rows' `group`), under "per_dataset"."""

  def __init__(self, metric: str, default: float, files, per_dataset: bool = False):
    super().__init__()
    self._metric = metric
    self._default = default
    self._files = files
    self._per_dataset = per_dataset

  def expand(self, rows):
    per_group = []
    if self._per_dataset:
      per_group = [beam.pvalue.AsSingleton(
          rows
          | "KeyCalibrationByDataset" >> beam.Map(lambda row: (row.group, counted(row)))
          | "CountCalibrationPerDataset" >> beam.CombinePerKey(
              stats.MergeAgreementCounts())
          | "ListCalibrationDatasets" >> beam.combiners.ToList())]
    return (rows
            | "CalibrationCounts" >> beam.Map(counted)
            | "MergeCalibrationCounts" >> beam.CombineGlobally(
                stats.MergeAgreementCounts())
            | "ChooseThreshold" >> beam.Map(_calibration_summary, self._metric,
                                            self._default, self._files, *per_group))


class SummarizeAgreement(beam.PTransform):
  """PCollection[AgreementRow] -> agreement.json / .md and report.html, the rows
  counted overall and per group of each of `groupings`; `header`: the fields
  agreement.json opens with; `calibration`: Calibrate's singleton, or a
  singleton None; `bootstrap`: (samples, seed) of the CIs of the means over
  the groups of MEAN_GROUPINGS; `spans`, with a span scorer, a singleton
  (SpanCounts against the human's spans or None, the SpanRows report.html
  shows). Returns a singleton {"groups": {grouping:
  groups}}."""

  def __init__(self, output_dir: str, groupings: Tuple[str, ...], header: dict,
               calibration, bootstrap: Tuple[int, int], spans=None):
    super().__init__()
    self._spans = spans
    self._output_dir = output_dir
    self._groupings = groupings
    self._header = header
    self._calibration = calibration
    self._bootstrap = tuple(bootstrap)

  def expand(self, rows):
    return (rows
            | "KeyByGroup" >> beam.FlatMap(stats_inputs, self._groupings)
            | "CountPerGroup" >> beam.CombinePerKey(stats.MergeAgreementCounts())
            | "ListGroups" >> beam.combiners.ToList()
            | "WriteSummary" >> beam.ParDo(
                _WriteSummaryFn(self._output_dir, self._groupings, self._header,
                                self._bootstrap),
                beam.pvalue.AsSingleton(self._calibration),
                *([] if self._spans is None else [beam.pvalue.AsSingleton(self._spans)])))
