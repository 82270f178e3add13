"""report.html: one self-contained page (plots embedded as PNG data URIs, no
script, no external resource) of the agreement of attribution scores with human
labels, written by `autoais agreement` and by `autoais evaluate` when rows carry
human ratings.

Plots (matplotlib, Agg canvas, no global pyplot state): the ranking with 95%
intervals (forest plot), per-system (or per-group) AutoAIS against human AIS with
the least-squares fit and the correlations, the ROC curve of nli_score, its
reliability diagram, and its histograms by human label. Every figure is drawn
from the merged accumulators of transforms/stats/agreement.py, never from rows.
"""
import base64
import html
import io
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from autoais.transforms.scoring.label import compared_measure, measure_name, scored_by
from autoais.transforms.stats.agreement import AgreementCounts

_DPI = 100


def _figure(width: float = 6.4, height: float = 4.0):
  from matplotlib.backends.backend_agg import FigureCanvasAgg  # pylint: disable=import-outside-toplevel
  from matplotlib.figure import Figure  # pylint: disable=import-outside-toplevel
  figure = Figure(figsize=(width, height), dpi=_DPI)
  FigureCanvasAgg(figure)
  return figure


def _png(figure) -> str:
  """The figure as a base64 PNG (no metadata: the bytes depend on the plot only)."""
  buffer = io.BytesIO()
  figure.tight_layout()
  figure.savefig(buffer, format="png", metadata={"Software": None})
  return base64.b64encode(buffer.getvalue()).decode("ascii")


def forest_plot(labels: Sequence[str], values, lows, highs, xlabel: str,
                markers: Optional[Sequence[Optional[float]]] = None,
                marker_label: str = "", top: float = 1.0,
                limits: Optional[Tuple[float, float]] = None) -> str:
  """Estimates with their intervals, first label on top, on an axis from 0 to
  `top` (1 for fractions, 100 for percents), or over `limits` with a line at 0
  (changes)."""
  figure = _figure(6.4, max(2.0, 0.32 * len(labels) + 1.2))
  axes = figure.add_subplot()
  positions = np.arange(len(labels))[::-1]
  values = np.asarray(values, dtype=float)
  errors = np.array([values - np.asarray(lows, dtype=float),
                     np.asarray(highs, dtype=float) - values])
  axes.errorbar(values, positions, xerr=errors, fmt="o", color="tab:blue",
                ecolor="tab:blue", capsize=3, label="estimate, 95% interval")
  if markers is not None:
    shown = [(p, m) for p, m in zip(positions, markers) if m is not None]
    if shown:
      axes.scatter([m for _, m in shown], [p for p, _ in shown], marker="D",
                   color="tab:orange", zorder=3, label=marker_label)
  axes.set_yticks(positions)
  axes.set_yticklabels(labels, fontsize=8)
  # Half a row of room above the first and below the last: their intervals
  # are not drawn on the frame.
  axes.set_ylim(-0.6, len(labels) - 0.4)
  axes.set_xlabel(xlabel)
  if limits is None:
    axes.set_xlim(-0.02 * top, 1.02 * top)
  else:
    axes.set_xlim(*limits)
    axes.axvline(0.0, color="0.4", linewidth=0.8)
  axes.grid(axis="x", alpha=0.3)
  # Above the axes: inside, it sat over the lowest rows' intervals.
  axes.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, fontsize=8,
              frameon=False)
  return _png(figure)


def scatter_plot(names: Sequence[str], x, y, correlations: Dict, xlabel: str,
                 ylabel: str) -> str:
  """Points, the least-squares line (scipy.stats.linregress) and the
  correlations in the title."""
  from scipy import stats  # pylint: disable=import-outside-toplevel
  figure = _figure(6.4, 4.8)
  axes = figure.add_subplot()
  x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
  axes.scatter(x, y, color="tab:blue")
  middle = (x.min() + x.max()) / 2 if len(x) else 0.0
  for name, px, py in zip(names, x, y):
    # Labels readable (8 pt) and inside the axes: those of the right half
    # point left, so none runs past the frame.
    right = px > middle
    axes.annotate(name, (px, py), fontsize=8, xytext=(-4 if right else 4, 4),
                  textcoords="offset points", ha="right" if right else "left",
                  annotation_clip=True)
  axes.margins(0.12)
  if len(x) >= 2 and np.ptp(x) > 0:
    fit = stats.linregress(x, y)
    line = np.linspace(x.min(), x.max(), 2)
    axes.plot(line, fit.intercept + fit.slope * line, color="tab:gray",
              label=f"least squares: y = {fit.slope:.2f} x {fit.intercept:+.2f}")
    axes.legend(loc="lower right", fontsize=8)
  parts = []
  for name, symbol in (("pearson", "r"), ("spearman", "ρ"), ("kendall", "τ")):
    entry = correlations.get(name) or {}
    if entry.get("statistic") is not None:
      text = f"{symbol} = {entry['statistic']:.3f}"
      if entry.get("ci"):
        text += f" [{entry['ci'][0]:.2f}, {entry['ci'][1]:.2f}]"
      parts.append(text)
  axes.set_title(", ".join(parts) or "correlations undefined", fontsize=9)
  axes.set_xlabel(xlabel)
  axes.set_ylabel(ylabel)
  axes.grid(alpha=0.3)
  return _png(figure)


def roc_plot(counts: AgreementCounts) -> Optional[str]:
  scores = counts.scores
  if not scores.both_classes():
    return None
  fpr, tpr = scores.roc_curve()
  figure = _figure(4.8, 4.4)
  axes = figure.add_subplot()
  # Rates in percent, as every rate of the page; the AUC on its own scale.
  axes.plot(np.asarray(fpr) * 100, np.asarray(tpr) * 100, color="tab:blue",
            label=f"ROC-AUC {scores.roc_auc():.3f}")
  axes.plot([0, 100], [0, 100], linestyle=":", color="tab:gray")
  axes.set_xlabel("false positive rate %")
  axes.set_ylabel("true positive rate %")
  axes.legend(loc="lower right", fontsize=8)
  axes.grid(alpha=0.3)
  return _png(figure)


def reliability_plot(counts: AgreementCounts) -> Optional[str]:
  if not counts.scores.n_positive + counts.scores.n_negative:
    return None
  mean_score, share, rows = counts.scores.reliability(10)
  figure = _figure(4.8, 4.4)
  axes = figure.add_subplot()
  # nli_score is a score (0 to 1); the share of a bin's rows a rate, in percent.
  share = np.asarray(share, dtype=float) * 100
  axes.plot([0, 1], [0, 100], linestyle=":", color="tab:gray", label="calibrated")
  axes.plot(mean_score, share, marker="o", color="tab:blue", label="nli_score")
  for px, py, n in zip(mean_score, share, rows):
    # Counts readable (8 pt) and inside the axes: those of the right half
    # point left, those near the top below the point.
    right, top = px > 0.5, py > 85
    axes.annotate(f"{int(n)}", (px, py), fontsize=8, xytext=(-5 if right else 5,
                                                            -11 if top else 5),
                  textcoords="offset points", ha="right" if right else "left",
                  annotation_clip=True)
  axes.set_xlabel("mean nli_score in bin (10 equal-width bins)")
  axes.set_ylabel("human-attributable % of the bin's rows")
  # A little room past 0 and 1: a bin's point on the edge is drawn whole.
  axes.set_xlim(-0.03, 1.03)
  axes.set_ylim(-3, 103)
  axes.legend(loc="upper left", fontsize=8)
  axes.grid(alpha=0.3)
  return _png(figure)


def histogram_plot(counts: AgreementCounts) -> Optional[str]:
  if not counts.scores.n_positive + counts.scores.n_negative:
    return None
  edges, positives, negatives = counts.scores.histogram(20)
  figure = _figure(6.4, 3.6)
  axes = figure.add_subplot()
  centres = (edges[:-1] + edges[1:]) / 2
  width = edges[1] - edges[0]
  axes.bar(centres - width / 4, negatives, width=width / 2, color="tab:red",
           label="human: not attributable")
  axes.bar(centres + width / 4, positives, width=width / 2, color="tab:green",
           label="human: attributable")
  axes.set_xlabel("nli_score")
  axes.set_ylabel("rows")
  axes.legend(fontsize=8)
  axes.grid(axis="y", alpha=0.3)
  return _png(figure)


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
  head = "".join(f"<th>{html.escape(str(cell))}</th>" for cell in header)
  body = "".join("<tr>" + "".join(f"<td>{html.escape(_cell(cell))}</td>" for cell in row)
                 + "</tr>" for row in rows)
  return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _cell(value) -> str:
  if value is None:
    return ""
  if isinstance(value, float):
    return f"{value:.3f}"
  return str(value)


def _p_value(value) -> Optional[str]:
  return None if value is None else f"{value:.3g}"


_STYLE = """
body { font-family: sans-serif; margin: 2em; max-width: 70em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
figure { display: inline-block; margin: 1em 1em 1em 0; vertical-align: top; }
figcaption { font-size: 0.85em; color: #555; max-width: 40em; }
p.answer { margin: 0.4em 0; line-height: 1.6; }
p.answer small { color: #777; margin-right: 0.6em; }
mark.unsupported { background: #ffd166; }
.human { text-decoration: underline wavy #c1121f; }
"""


def highlighted(text: str, spans, human_spans=None) -> str:
  """`text` as HTML, the characters of `spans` (start, end, probability) in
  <mark> (its largest probability as the title), those of `human_spans`
  (start, end) underlined."""
  cuts = sorted({0, len(text)} | {int(s[i]) for s in list(spans) + list(human_spans or ())
                                  for i in (0, 1) if 0 <= int(s[i]) <= len(text)})
  parts = []
  for start, end in zip(cuts, cuts[1:]):
    piece = html.escape(text[start:end])
    inside = [s for s in spans if s[0] <= start and end <= s[1]]
    if any(s[0] <= start and end <= s[1] for s in human_spans or ()):
      piece = f'<span class="human">{piece}</span>'
    if inside:
      piece = (f'<mark class="unsupported" title="unsupported, p = '
               f'{max(s[2] for s in inside):.2f}">{piece}</mark>')
    parts.append(piece)
  return "".join(parts)


def spans_block(rows) -> str:
  """Each row of `rows` (SpanRow) as a paragraph: where it came from and what
  names it (an item id, or a system and question), then its text with the
  spans highlighted."""
  def spans_of(values, names):
    return [tuple(v[n] if isinstance(v, dict) else getattr(v, n) for n in names)
            for v in values or ()]

  def name(row):
    if row.item_id is not None:
      return row.item_id
    return f"{row.system_name}: {row.question}"
  return "".join(
      f'<p class="answer"><small>{html.escape(row.source_file.rsplit("/", 1)[-1])}:'
      f'{row.source_line} {html.escape(name(row))}</small>'
      + highlighted(row.text, spans_of(row.spans, ("start", "end", "probability")),
                    spans_of(row.human_spans, ("start", "end")))
      + "</p>" for row in rows)


def spans_table(rows) -> Tuple[str, str]:
  """The (caption, HTML) of a report's section showing `rows` (SpanRows, the
  first by source) with their unsupported spans."""
  return (f"Unsupported spans of the first {len(rows)} rows by source "
          "(highlighted: the scorer's; underlined: the humans', where the input has "
          "them)", spans_block(rows))


def _page(title: str, intro: List[str], tables: List[Tuple[str, str]],
          figures: List[Tuple[str, Optional[str]]],
          more_tables: Sequence[Tuple[str, str]] = ()) -> str:
  """The page: intro, the main tables, the figures, then the longer tables."""
  parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
           f"<h1>{html.escape(title)}</h1>"]
  parts += [f"<p>{html.escape(line)}</p>" for line in intro]
  parts += [f"<h2>{html.escape(caption)}</h2>{table}" for caption, table in tables]
  for caption, png in figures:
    if png is None:
      continue
    parts.append(f'<figure><img alt="{html.escape(caption)}" '
                 f'src="data:image/png;base64,{png}"><figcaption>{html.escape(caption)}'
                 "</figcaption></figure>")
  parts += [f"<h2>{html.escape(caption)}</h2>{table}" for caption, table in more_tables]
  parts.append("</body></html>")
  return "\n".join(parts) + "\n"


# Rates in percent, as every plot and the Markdown pages show them; kappa and
# the AUCs on their own scale (agreement.json keeps the fractions).
_ROW_HEADER = ("group", "n", "human AIS %", "predicted AIS %", "accuracy %",
               "balanced accuracy %", "Cohen's kappa", "ROC-AUC", "PR-AUC")


def _percent(value: Optional[float]) -> Optional[str]:
  return None if value is None else f"{value * 100:.1f}"


def _stats_row(name, entry):
  return (name, entry["n_rated"], *(_percent(entry[key]) for key in (
      "human_ais", "predicted_ais", "accuracy", "balanced_accuracy")),
          entry["cohen_kappa"], entry["roc_auc"], entry["pr_auc"])


def _score_figures(overall: AgreementCounts) -> List[Tuple[str, Optional[str]]]:
  return [
      ("ROC curve of nli_score against the human labels.", roc_plot(overall)),
      ("Reliability of nli_score: human-attributable rows in percent of each score "
       "bin's rows (row counts beside the points).", reliability_plot(overall)),
      ("nli_score by human label.", histogram_plot(overall)),
  ]


def agreement_report_html(content: Dict, overall: AgreementCounts,
                          span_rows: Sequence = ()) -> str:
  """The page of `autoais agreement` (content: agreement.json's; `span_rows`:
  the first rows, by source, of a scorer that finds unsupported spans)."""
  from scipy import stats  # pylint: disable=import-outside-toplevel
  tables = [("Overall", _table(_ROW_HEADER, [_stats_row("overall", content["overall"])]))]
  for grouping, means in content.get("group_means", {}).items():
    tables.append((
        f"Unweighted mean over the {grouping} groups, 95% percentile bootstrap CI "
        f"({means['bootstrap']['samples']} resamples, seed {means['bootstrap']['seed']})",
        _table(("figure", "mean", "CI low", "CI high", f"{grouping}s", "left out"), [
            (metric, entry["mean"], *(entry["ci"] or (None, None)), entry["n_groups"],
             ", ".join(entry["left_out"]))
            for metric, entry in means.items() if metric != "bootstrap"])))
  figures = []
  more_tables = [(f"By {grouping}", _table(
      _ROW_HEADER, [_stats_row(name, entry) for name, entry in table.items()]))
                 for grouping, table in content["groups"].items()]
  if content["groupings"]:
    # The grouping with the most groups (BEGIN: model_name over data_source).
    grouping = max(content["groupings"], key=lambda name: len(content["groups"][name]))
    table = content["groups"][grouping]
    ranked = sorted(((name, entry) for name, entry in table.items() if entry["n_rated"]),
                    key=lambda item: (-item[1]["predicted_ais"], item[0]))
    if ranked:
      intervals = [stats.binomtest(round(entry["predicted_ais"] * entry["n_rated"]),
                                   entry["n_rated"]).proportion_ci(method="exact")
                   for _, entry in ranked]
      figures.append((
          f"Predicted AIS per {grouping}, ranked, with exact (Clopper-Pearson) 95% "
          "intervals; diamonds: human AIS.",
          forest_plot([name for name, _ in ranked],
                      [entry["predicted_ais"] * 100 for _, entry in ranked],
                      [ci.low * 100 for ci in intervals],
                      [ci.high * 100 for ci in intervals],
                      "% decided attributable",
                      [entry["human_ais"] * 100 for _, entry in ranked], "human AIS %",
                      top=100)))
      level = content["group_level"][grouping]
      if len(ranked) >= 2:
        figures.append((
            f"Per-{grouping} predicted AIS against human AIS.",
            scatter_plot([name for name, _ in ranked],
                         [entry["predicted_ais"] * 100 for _, entry in ranked],
                         [entry["human_ais"] * 100 for _, entry in ranked], level,
                         "predicted AIS %", "human AIS %")))
  figures += _score_figures(overall)
  calibration = content.get("calibration")
  intro = [f"Format {content['format']}"
           + (f" ({content['scenario']})" if content.get("scenario") else "")
           + f"; input {', '.join(content['inputs'])}.",
           f"Attributable: {content['positive_label']}.",
           scored_by(content["scorer"]),
           f"Decision {content['decision']}, threshold {content['threshold']}."]
  if calibration:
    calibrated = content["overall"].get("at_calibrated_threshold", {})
    intro.append(
        f"Calibrated threshold {calibration['threshold']!r} (maximises "
        f"{calibration['metric']} on {', '.join(calibration['calibrate_on'])}); "
        f"accuracy on the input {_percent(content['overall']['accuracy'])}% at "
        f"threshold {content['threshold']!r}, {_percent(calibrated.get('accuracy'))}% at "
        "the calibrated threshold.")
    per_group = calibration.get("per_dataset")
    if per_group:
      tables.append((f"Thresholds tuned per {per_group['grouping']} on the calibration set",
                     _table((per_group["grouping"], "threshold",
                             f"{calibration['metric']} there", "note"),
                            [(name, entry["threshold"], entry["value"], "")
                             for name, entry in per_group["thresholds"].items()]
                            + [(name, None, None, f"not tuned: {reason}")
                               for name, reason in per_group["not_tuned"].items()]
                            + [(name, calibration["threshold"], None,
                                "decided at the overall threshold")
                               for name in per_group.get(
                                   "decided_at_overall_threshold", ())
                               if name not in per_group["not_tuned"]])))
  spans = content.get("span_agreement")
  if spans:
    tables.append(("Unsupported spans against the humans' spans (characters)", _table(
        ("both marked", "predicted", "human", "precision %", "recall %", "F1 %"),
        [(*spans["characters"].values(), _percent(spans["precision"]),
          _percent(spans["recall"]), _percent(spans["f1"]))])))
  if span_rows:
    more_tables.append(spans_table(span_rows))
  return _page(f"Agreement with human labels: {content['format']}", intro, tables,
               figures, more_tables)


def leaderboard_report_html(rows, content: Dict, overall: AgreementCounts,
                            scorer: Optional[Dict] = None,
                            span_rows: Sequence = ()) -> str:
  """The page of `autoais evaluate` with human ratings (rows: LeaderboardRows;
  content: agreement.json's; scorer: the run's scorer block, named at the top
  and in every caption: transforms/scoring/label.py; `span_rows`: the first
  rated rows, by source, of a scorer that finds unsupported spans)."""
  measure = measure_name(scorer)
  ranked = sorted(rows, key=lambda row: (-row.autoais, row.system_name))
  level = content["system_level"]
  comparison = level["autoais_rated_vs_human_ais"]
  figures = [
      (f"{measure} ranking (paper mode, over all gold questions) with 95% bootstrap "
       "intervals; diamonds: human AIS on the rated rows.",
       forest_plot([row.system_name for row in ranked], [row.autoais for row in ranked],
                   [row.autoais_ci_low for row in ranked],
                   [row.autoais_ci_high for row in ranked], f"{measure} %",
                   [row.human_ais for row in ranked], "human AIS %", top=100)),
  ]
  if comparison["systems"]:
    figures.append((
        f"Per-system {measure} on the human-rated rows against human AIS on the same "
        "rows; correlations with 95% bootstrap intervals (questions resampled, paired "
        "across systems).",
        scatter_plot(comparison["systems"], np.asarray(comparison["x"]) * 100,
                     np.asarray(comparison["y"]) * 100, comparison,
                     f"{measure} on rated rows %", "human AIS %")))
  figures += _score_figures(overall)
  # The per-system statistics of agreement.json, rates in percent as above.
  system_rows = [_stats_row(row.system_name, content["systems"][row.system_name])
                 for row in ranked]
  tables = [
      ("Overall (all rated rows)",
       _table(_ROW_HEADER, [_stats_row("all systems", content["overall"])])),
  ]
  more_tables = [
      ("Per system", _table(("system", "n rated", "human AIS %", f"{measure} on rated %",
                             "accuracy %", "balanced accuracy %", "Cohen's kappa",
                             "ROC-AUC", "PR-AUC"), system_rows)),
  ]
  correlation_rows = []
  for name in ("autoais_rated_vs_human_ais", "autoais_vs_human_ais"):
    entry = level[name]
    for method in ("pearson", "spearman", "kendall"):
      ci = entry[method].get("ci")
      # The comparison as leaderboard.md says it (it names the scorer's figure).
      correlation_rows.append((entry["description"], method, entry[method]["statistic"],
                               None if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]",
                               _p_value(entry[method]["p_value"]),
                               entry[method].get("p_value_method")))
  tables.append(("System-level correlation", _table(
      ("comparison", "method", "value", "95% CI", "p-value", "p-value from"),
      correlation_rows)))
  more_tables.append((
      f"Neighbours in the {measure} ranking: " + level["neighbour_tests"]["test"],
      _table(("higher", "lower", f"{measure} higher %", f"{measure} lower %",
              "questions only higher Y", "questions only lower Y", "p-value"),
             [(t["higher"], t["lower"], _percent(t["autoais_higher"]),
               _percent(t["autoais_lower"]),
               t["only_higher"], t["only_lower"], _p_value(t["p_value"]))
              for t in level["neighbour_tests"]["pairs"]])))
  if span_rows:
    more_tables.append(spans_table(span_rows))
  over = (f"over {content['n_gold']} gold questions" if content["n_gold"] is not None
          else f"without gold ({measure} over each system's predicted questions)")
  intro = [scored_by(scorer), f"{len(rows)} systems {over}; "
           f"{content['overall']['n_rated']} rows carry a human rating."]
  return _page(f"{measure} leaderboard and agreement with human ratings", intro, tables,
               figures, more_tables)


def compare_report_html(header: Dict, systems: Sequence,
                        flipped_rows: Optional[int] = None) -> str:
  """report.html of `autoais compare`: each system's AutoAIS change in points
  (agreement: each group's balanced accuracy change) with its paired-bootstrap
  interval (forest plot), and the table of changes."""
  agreement = header["job"] == "agreement"
  scorers = header.get("scorers") or {}
  rate = compared_measure(scorers.get("baseline"), scorers.get("candidate"))
  name, measure = (("balanced_accuracy", "balanced accuracy") if agreement
                   else ("autoais", f"citation recall ({rate})")
                   if header["job"] == "citations" else ("autoais", rate))

  def change(row, suffix=""):
    return getattr(row, f"{name}_change{suffix}")
  changed = [row for row in systems
             if change(row) is not None and change(row, "_low") is not None]
  figures = []
  if changed:
    reach = max(max(abs(change(row, "_low")), abs(change(row, "_high")))
                for row in changed)
    reach = max(1.0, 1.1 * reach)
    unit = "the items" if agreement else "the questions"
    title = f"{measure[0].upper()}{measure[1:]} change"
    figures.append((f"{title}, candidate - baseline, in points over {unit} "
                    "both runs scored, with 95% paired-bootstrap intervals",
                    forest_plot([row.system_name for row in changed],
                                [change(row) for row in changed],
                                [change(row, "_low") for row in changed],
                                [change(row, "_high") for row in changed],
                                f"{title} (points)",
                                limits=(-reach, reach))))
  if agreement:
    rows = [(row.system_name, row.status, row.n_paired, row.autoais_baseline,
             row.autoais_change, row.accuracy_baseline, row.accuracy_change,
             row.balanced_accuracy_baseline, row.balanced_accuracy_change,
             row.balanced_accuracy_change_low, row.balanced_accuracy_change_high,
             row.flipped_to_y, row.flipped_to_n, _p_value(row.mcnemar_p_value),
             "yes" if row.regression else "")
            for row in systems]
    table = _table(("group", "status", "paired items", f"{rate} baseline %",
                    f"{rate} change (points)", "accuracy baseline %",
                    "accuracy change (points)", "balanced accuracy baseline %",
                    "balanced accuracy change (points)", "low", "high", "N to Y",
                    "Y to N", "McNemar p (agreement with humans)", "regression"), rows)
  else:
    # citations: citation precision beside recall (its AutoAIS); evaluate: the
    # EM and F1 changes, as compare.md shows them.
    precision = header["job"] == "citations"
    graded = header["job"] == "evaluate"
    rows = [(row.system_name, row.status, row.n_paired, row.autoais_baseline,
             row.autoais_candidate, row.autoais_change, row.autoais_change_low,
             row.autoais_change_high)
            + ((row.citation_prec_baseline, row.citation_prec_candidate,
                row.citation_prec_change, row.citation_prec_change_low,
                row.citation_prec_change_high) if precision else ())
            + ((row.em_change, row.em_change_low, row.em_change_high, row.f1_change,
                row.f1_change_low, row.f1_change_high) if graded else ())
            + (row.flipped_to_y, row.flipped_to_n, _p_value(row.mcnemar_p_value),
               "yes" if row.regression else "")
            for row in systems]
    rate = "citation_rec" if precision else rate
    table = _table((("system", "status", "paired questions", f"{rate} baseline %",
                     f"{rate} candidate %", "change (points)", "low", "high")
                    + (("citation_prec baseline %", "citation_prec candidate %",
                        "change (points)", "low", "high") if precision else ())
                    + (("EM change (points)", "low", "high", "F1 change (points)", "low",
                        "high") if graded else ())
                    + ("N to Y", "Y to N", "McNemar p", "regression")), rows)
  intro = [f"Baseline: {header['baseline']}. {scored_by(scorers.get('baseline'))}",
           f"Candidate: {header['candidate']}. {scored_by(scorers.get('candidate'))}"]
  if flipped_rows is not None:
    intro.append(f"{flipped_rows} row(s) flipped decision between the runs: compare.csv "
                 "lists each, the most lowered score first.")
  if header["job"] == "claims":
    intro.append(f"{rate} is the claims' macro {rate} (the mean over answers of the "
                 "share of their claims rated attributable); N to Y and Y to N count "
                 "claims of the same text in both runs.")
  if header["job"] == "citations":
    intro.append("citation_rec is ALCE's citation recall (the mean over answers of the "
                 "share of their sentences that their cited documents support), "
                 "shown with citation precision; N to Y and Y to N count sentences "
                 "of the same text (citations removed) in both runs.")
  if agreement:
    intro.append(f"Each group of items and all items: {rate} is the share decided "
                 "attributable, accuracy and balanced accuracy are against the human "
                 "labels, and McNemar's test is on whether each decision agrees with "
                 "the human label.")
  if header.get("scorer_changed"):
    intro.append("The scorers differ (--allow_changed_scorer): the change of model is "
                 "the subject of this comparison: " + "; ".join(header["scorer_changed"]))
  return _page(f"Changes between two {header['job']} runs", intro,
               [("Changes by group" if agreement else "Changes by system", table)],
               figures)