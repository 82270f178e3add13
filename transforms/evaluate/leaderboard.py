"""The leaderboard files of evaluate, from its per-system rows:
leaderboard.{csv,json,md}, scores.txt (the reference script's format),
agreement.json and, where rows carry human ratings, report.html.
"""
import json
from typing import Optional

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from autoais.schemas import LEADERBOARD_SCHEMA
from autoais.transforms.io.atomic import atomic_create, write_text_atomically
from autoais.transforms.io.tables import csv_bytes
from autoais.transforms.io.untyped_output import UntypedOutputDoFn
from autoais.transforms.rows.summary import percent
from autoais.transforms.scoring.label import (measure_name, named_figures, scored_by,
                                              scorer_id, scorer_naming)
from autoais.transforms.stats.agreement import (AUC_METHOD, AgreementCounts, agreement_statistics,
                                        system_level_agreement)
from autoais.transforms.stats.metrics import PERCENT, sorted_rows
from autoais.transforms.stats.report import leaderboard_report_html


def no_gold_note(measure: str) -> str:
  """Said in leaderboard.md and .json, and in run.json, of a run without
  --gold; `measure`: what the run's attribution figures are called."""
  return (f"no gold: EM/F1 not computed; {measure} over predicted questions "
          "(each system's own distinct questions)")
# The unit of each figure of leaderboard.csv / .json (docs/evaluate.md): rates
# in percent, statistics on their own scale; the n_ columns are counts.
UNITS = dict(
    {column: PERCENT for column in (
        "coverage", "autoais", "autoais_ci_low", "autoais_ci_high", "autoais_scored",
        "em", "em_ci_low", "em_ci_high", "f1", "f1_ci_low", "f1_ci_high", "human_ais",
        "human_agreement", "autoais_rated", "human_balanced_accuracy", "em_answered",
        "f1_answered")},
    human_kappa="Cohen's kappa (-1 to 1)", human_roc_auc="ROC-AUC (0 to 1)",
    human_pr_auc="average precision (0 to 1)")


def unanswered_rule(empty_matches: int) -> str:
  """How EM and F1 count an unanswered question (leaderboard.md, run.json);
  `empty_matches`: the gold questions the empty answer matches."""
  return ("EM and F1 count an unanswered question as the empty answer, as the "
          f"Attributed QA script does: {empty_matches} gold question(s) have an answer "
          "that normalises to nothing, which the empty answer matches; EM and F1 of "
          "answered are over the questions the system answered")


def leaderboard_markdown(rows, n_gold: int, graded: bool = True,
                         scorer: Optional[dict] = None, empty_matches: int = 0) -> str:
  """leaderboard.md's table; `scorer`: the run's scorer block (run.json's),
  which names the scorer on the first line and the attribution columns;
  `empty_matches`: the gold questions an empty answer matches (unanswered_rule)."""
  measure = measure_name(scorer)
  if graded:
    intro = (f"{measure} over {n_gold} gold questions (paper mode: unanswered or "
             "unattributed questions count as N); EM and F1 in %; 95% bootstrap CIs "
             f"in brackets. {unanswered_rule(empty_matches)}.")
  else:
    note = no_gold_note(measure)
    intro = (f"{note[0].upper()}{note[1:]}: unattributed questions count as N; 95% "
             "bootstrap CIs in brackets.")
  lines = [
      scored_by(scorer),
      "",
      intro,
      "",
      f"| system | predicted | scored | {measure} % | EM | F1 | EM of answered | "
      f"F1 of answered | coverage % | {measure} of scored % | human agreement % |",
      "|---|---:|---:|---|---|---|---:|---:|---:|---:|---:|",
  ]
  for row in rows:
    agreement = ("" if row.human_agreement is None else
                 f"{percent(row.human_agreement, scale=1)} (n={row.n_human_rated})")
    lines.append(
        f"| {row.system_name} | {row.n_predicted} | {row.n_scored} | "
        f"{percent(row.autoais, row.autoais_ci_low, row.autoais_ci_high, scale=1)} | "
        f"{percent(row.em, row.em_ci_low, row.em_ci_high, scale=1) or 'not computed'} | "
        f"{percent(row.f1, row.f1_ci_low, row.f1_ci_high, scale=1) or 'not computed'} | "
        f"{percent(row.em_answered, scale=1)} | {percent(row.f1_answered, scale=1)} | "
        f"{percent(row.coverage, scale=1)} | {percent(row.autoais_scored, scale=1)} | "
        f"{agreement} |")
  return "\n".join(lines) + "\n"


def agreement_markdown(content, measure: str = "AutoAIS") -> str:
  """leaderboard.md's section on agreement with human ratings; `measure`: what
  the run's attribution figures are called (transforms/scoring/label.py)."""
  overall = content["overall"]
  if not overall["n_rated"]:
    return ""

  def percent(value):
    return "" if value is None else f"{value * 100:.1f}"

  def figure(value):
    return "" if value is None else f"{value:.3f}"

  lines = ["", "## Agreement with human ratings", "",
           f"Rows with a human rating; {measure} on rated = share of those rows scored "
           "Y. ROC-AUC and PR-AUC of nli_score over the rated rows that were scored.", "",
           f"| system | rated | human AIS % | {measure} on rated % | accuracy % | "
           "balanced accuracy % | kappa | ROC-AUC | PR-AUC |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
  for name, entry in list(content["systems"].items()) + [("**all**", overall)]:
    if not entry.get("n_rated"):
      continue
    lines.append(
        f"| {name} | {entry['n_rated']} | {percent(entry['human_ais'])} | "
        f"{percent(entry['predicted_ais'])} | {percent(entry['accuracy'])} | "
        f"{percent(entry['balanced_accuracy'])} | {figure(entry['cohen_kappa'])} | "
        f"{figure(entry['roc_auc'])} | {figure(entry['pr_auc'])} |")
  level = content["system_level"]
  lines += ["", f"System level ({level['n_systems_rated']} rated systems; 95% "
            "percentile-bootstrap CIs, gold questions resampled, paired across "
            "systems):", "", "| comparison | Pearson | Spearman | Kendall tau |",
            "|---|---|---|---|"]
  for name in ("autoais_rated_vs_human_ais", "autoais_vs_human_ais"):
    entry = level[name]
    cells = []
    for method in ("pearson", "spearman", "kendall"):
      value, ci = entry[method]["statistic"], entry[method].get("ci")
      cells.append("" if value is None else f"{value:.3f}" + (
          f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""))
    lines.append(f"| {entry['description']} | " + " | ".join(cells) + " |")
  tests = level["neighbour_tests"]
  lines += ["", f"Neighbours in the {measure} ranking: {tests['test']}.", "",
            "| higher | lower | only higher Y | only lower Y | p-value |",
            "|---|---|---:|---:|---:|"]
  for test in tests["pairs"]:
    lines.append(f"| {test['higher']} | {test['lower']} | {test['only_higher']} | "
                 f"{test['only_lower']} | {test['p_value']:.3g} |")
  return "\n".join(lines) + "\n"


def agreement_content(systems, gold, bootstrap: dict, measure: str = "AutoAIS"):
  """agreement.json's content, and the merged counts of every rated row;
  `measure`: what the system-level descriptions call the systems' figure."""
  systems = sorted(systems, key=lambda system: system.system_name)
  overall = AgreementCounts()
  for system in systems:
    overall.merge(system.counts)
  return {
      "n_gold": gold.n if gold.graded else None,
      "auc_method": AUC_METHOD,
      "overall": agreement_statistics(overall),
      "systems": {system.system_name: agreement_statistics(system.counts)
                  for system in systems},
      "system_level": system_level_agreement(systems, bootstrap, gold.graded, measure),
  }, overall


def scores_text(scores, scorer: Optional[dict] = None) -> str:
  """The reference script's scores file, one block per system (`scores`:
  SummarizeSystems' reference_scores, sorted by system): the attribution figure
  a fraction, EM and F1 percents, as the script prints them, which a first
  `units:` line says. Each block names its scorer (`scorer:`), and the
  figure's line is `AutoAIS:` only where a model scored it (`string-match:`
  for the baseline). Without gold, the attribution line alone (over the
  system's own questions)."""
  measure = measure_name(scorer)
  graded = any(entry["em"] is not None for entry in scores)
  units = f"units: {measure} a fraction (0 to 1)"
  if graded:
    units += "; SQuAD (em) and SQuAD (f1) in percent (0 to 100)"
  blocks = [units + ", as the Attributed QA evaluation script writes them\n"]
  for entry in scores:
    block = (f"system_name: {entry['system_name']}\nscorer: {scorer_id(scorer)}\n"
             f"{measure}: {entry['autoais']}\n")
    if entry["em"] is not None:
      block += f"SQuAD (em): {entry['em']}\nSQuAD (f1): {entry['f1']}\n"
    blocks.append(block)
  return "\n".join(blocks)


class _WriteLeaderboardFilesFn(UntypedOutputDoFn):

  def __init__(self, output_dir: str, bootstrap_samples: int, seed: int, scorer: dict):
    self._output_dir = output_dir
    self._scorer = scorer
    self._bootstrap = {"method": "percentile", "level": 0.95,
                       "samples": bootstrap_samples, "seed": seed}

  def process(self, rows, gold, systems, reference_scores, span_rows=()):
    rows = sorted_rows(rows)
    bootstrap = dict(self._bootstrap, unit=(
        "gold question, paired across systems" if gold.graded else
        "question (the run's distinct questions), paired across systems"))
    content, overall = agreement_content(systems, gold, bootstrap,
                                         measure_name(self._scorer))
    join = FileSystems.join
    scorer, measure = self._scorer, measure_name(self._scorer)
    # The figure's columns and keys are named after the scorer (`string_match`
    # for the baseline): label.named_figures.
    with atomic_create(join(self._output_dir, "leaderboard.csv")) as sink:
      sink.write(csv_bytes(rows, named_figures(LEADERBOARD_SCHEMA, measure),
                           scorer=scorer_id(scorer)))
    board = {"n_gold": gold.n if gold.graded else None}
    if not gold.graded:
      board["note"] = no_gold_note(measure)
    else:
      board["unanswered"] = unanswered_rule(gold.empty_matches())
    board.update(**scorer_naming(scorer), measure=measure, units=UNITS,
                 bootstrap=bootstrap, systems=[row._asdict() for row in rows])
    write_text_atomically(join(self._output_dir, "leaderboard.json"), json.dumps(
        named_figures(board, measure), indent=2, ensure_ascii=False) + "\n")
    write_text_atomically(join(self._output_dir, "leaderboard.md"),
                          leaderboard_markdown(rows, gold.n, gold.graded, scorer,
                                               gold.empty_matches()) +
                          agreement_markdown(content, measure))
    write_text_atomically(join(self._output_dir, "scores.txt"), scores_text(
        sorted(reference_scores, key=lambda entry: entry["system_name"]), scorer))
    write_text_atomically(join(self._output_dir, "agreement.json"), json.dumps(
        named_figures(dict(**scorer_naming(scorer), **content), measure), indent=2,
        ensure_ascii=False) + "\n")
    if overall.n:
      write_text_atomically(join(self._output_dir, "report.html"),
                            leaderboard_report_html(rows, content, overall, scorer,
                                                    span_rows))
    yield {"systems": len(rows), "human_rated_rows": overall.n}



class WriteLeaderboard(beam.PTransform):
  """PCollection[LeaderboardRow] -> a singleton {"systems": n, "human_rated_rows":
  m} once the leaderboard files are written. `gold_index`: the singleton gold
  index; `summary`: SummarizeSystems' outputs (its agreement and
  reference_scores); `scorer`: the run's scorer block (Scorer.describe()), named
  on every file; `span_rows`, where the scorer finds unsupported spans: a
  singleton list of the SpanRows report.html shows."""

  def __init__(self, output_dir: str, gold_index, summary, bootstrap_samples: int,
               seed: int, scorer: dict, span_rows=None):
    super().__init__()
    self._fn = _WriteLeaderboardFilesFn(output_dir, bootstrap_samples, seed, scorer)
    self._gold_index = gold_index
    self._summary = summary
    self._span_rows = span_rows

  def expand(self, rows):
    spans = () if self._span_rows is None else (
        beam.pvalue.AsSingleton(self._span_rows),)
    return (rows
            | "ListSystems" >> beam.combiners.ToList()
            | "WriteFiles" >> beam.ParDo(
                self._fn, beam.pvalue.AsSingleton(self._gold_index),
                beam.pvalue.AsList(self._summary.agreement),
                beam.pvalue.AsList(self._summary.reference_scores), *spans))
