"""Per-system aggregates, computed inside the pipeline with combiners.
(Agreement with human ratings: transforms/stats/agreement.py.)

The gold questions define the denominator (SPEC 5.2, 5.3): a question a system
did not answer counts as an empty prediction for EM/F1 and as N for AutoAIS. To
make EM and F1 bit-identical to `t5.evaluation.metrics.squad`, a system's
outcomes keep one value per answered gold question in compact arrays, and the
final mean is taken over the full gold-ordered array with numpy, as the
reference does.
Confidence intervals come from a percentile bootstrap over gold questions, with
the same resamples for every system (paired): see BootstrapWeights.
Without gold (QuestionIndexFromPredictions) the questions are the predictions'
own, and a system's AutoAIS is over the questions it answers. Leaderboard rates
are percents, written as `percent_of` and `written` say (docs/evaluate.md#units).
"""
import array
import hashlib
import json
import math
from typing import Dict, Iterable, List, Optional, Tuple

import apache_beam as beam
import numpy as np

from autoais.schemas import GoldAnswer, LeaderboardRow
from autoais.transforms.stats.agreement import (AgreementCounts, SystemAgreement,
                                                agreement_statistics, ratio_or_nan)
from autoais.schemas.errors import InputError
from autoais.transforms.stats.squad import (grade_normalized, normalize_answer,
                                    normalize_short_answer)

HUMAN_NONE, HUMAN_N, HUMAN_Y = -1, 0, 1


class GoldIndex:
  """Gold questions by text with their normalised answers, plus the EM/F1 an
  empty prediction gets on each. `graded` is False for the index of
  QuestionIndexFromPredictions (evaluate without --gold): its questions have no
  answers, and `grade` gives no EM / F1. `digest` identifies the gold's
  content: a BLAKE2b-128 of the questions with their answers as read, in
  question order (so whatever the source's format, compression or record
  order), for run.json and compare."""

  def __init__(self, answers: List[GoldAnswer], graded: bool = True):
    self.n = len(answers)
    self.graded = graded
    digest = hashlib.blake2b(digest_size=16)
    for gold in sorted(answers, key=lambda gold: gold.question):
      digest.update(json.dumps([gold.question, list(gold.answers)],
                               ensure_ascii=False).encode("utf-8"))
      digest.update(b"\n")
    self.digest = digest.hexdigest()
    if not self.n and graded:
      raise InputError("the gold source has no questions")
    self._by_question: Dict[str, Tuple[int, List[str]]] = {}
    self.empty_em = np.zeros(self.n)
    self.empty_f1 = np.zeros(self.n)
    for position, gold in enumerate(answers):
      if gold.gold_index != position:
        raise ValueError(f"gold indexes are not dense at {position}")
      if gold.question in self._by_question:
        first = self._by_question[gold.question][0]
        raise InputError(f"gold question {gold.question!r} appears twice "
                         f"(records {first + 1} and {position + 1})")
      normalized = [normalize_answer(answer) for answer in gold.answers]
      self._by_question[gold.question] = (position, normalized)
      if graded:
        self.empty_em[position], self.empty_f1[position] = grade_normalized(
            normalized, "")

  def empty_matches(self) -> int:
    """The gold questions an empty answer gets EM 1 on (an alias such as '---'
    or 'A+' normalises to nothing): what a system gains on each question it
    leaves unanswered, as the reference script counts them."""
    return int(self.empty_em.sum())

  def grade(self, question: str, answer: str
            ) -> Optional[Tuple[int, Optional[float], Optional[float]]]:
    """(gold index, EM, F1) of an answer to a gold question (EM and F1 None
    where the index is not graded); None if not gold."""
    entry = self._by_question.get(question)
    if entry is None:
      return None
    position, normalized = entry
    if not self.graded:
      return position, None, None
    return (position,) + grade_normalized(normalized, normalize_short_answer(answer))


class BuildGoldIndex(beam.CombineFn):
  """GoldAnswer elements -> one GoldIndex (a few thousand questions)."""

  def create_accumulator(self):
    return []

  def add_input(self, accumulator, gold: GoldAnswer):
    accumulator.append(gold)
    return accumulator

  def merge_accumulators(self, accumulators):
    return [gold for accumulator in accumulators for gold in accumulator]

  def extract_output(self, accumulator):
    return GoldIndex(sorted(accumulator, key=lambda gold: gold.gold_index))


class QuestionIndexFromPredictions(beam.PTransform):
  """PCollection[Prediction] -> a singleton ungraded GoldIndex of the distinct
  questions the predictions ask, in sorted order (evaluate without --gold: every
  question is kept, and a question's position pairs the systems' answers to it
  in the bootstrap and the paired tests)."""

  def expand(self, predictions):
    return (predictions
            | "Questions" >> beam.Map(lambda prediction: prediction.question)
            | "Distinct" >> beam.Distinct()
            | "ListQuestions" >> beam.combiners.ToList()
            | "Index" >> beam.Map(_question_index))


def _question_index(questions: List[str]) -> GoldIndex:
  return GoldIndex([GoldAnswer(question, [], position)
                    for position, question in enumerate(sorted(questions))],
                   graded=False)


class SystemOutcomes:
  """One system's kept predictions, as compact columns (24 bytes a row): what the
  leaderboard needs of each, in the order they were added."""

  def __init__(self, system_name: str):
    self.system_name = system_name
    self.gold_index = array.array("i")
    self.em = array.array("b")  # EM is 0 or 1
    self.f1 = array.array("d")
    self.attributable = array.array("b")
    self.scored = array.array("b")
    self.human = array.array("b")  # HUMAN_NONE / HUMAN_N / HUMAN_Y
    self.nli_score = array.array("d")  # NaN where not scored

  def add(self, gold_index: int, em: float, f1: float, attributable: bool,
          scored: bool, human_rating: Optional[str],
          nli_score: Optional[float] = None) -> None:
    self.gold_index.append(gold_index)
    self.em.append(int(em or 0))  # None without gold: no EM to keep
    self.f1.append(f1 or 0.0)
    self.attributable.append(attributable)
    self.scored.append(scored)
    self.human.append(_HUMAN_CODES[human_rating])
    self.nli_score.append(math.nan if nli_score is None else nli_score)

  def __len__(self):
    return len(self.gold_index)


_HUMAN_CODES = {None: HUMAN_NONE, "N": HUMAN_N, "Y": HUMAN_Y}


_BOOTSTRAP_CHUNK = 50
_BOOTSTRAP_CACHE_ENTRIES = 8 * 1024 * 1024
# Weights a chunk holds at most (8 MiB of doubles): past about 21,000
# questions a chunk has fewer than _BOOTSTRAP_CHUNK resamples, so that its
# memory stays flat however many questions a run has (50 resamples of 109,000
# answers were 44 MB at a million claims).
_BOOTSTRAP_CHUNK_ENTRIES = 1024 * 1024


def bootstrap_chunk_rows(n: int) -> int:
  """Resamples per chunk for n questions. A chunk is one matrix product, whose
  last bits depend on its number of rows, so this is a function of n alone:
  results are the same whatever else a run holds."""
  return max(1, min(_BOOTSTRAP_CHUNK, _BOOTSTRAP_CHUNK_ENTRIES // max(n, 1)))


class BootstrapWeights:
  """Percentile-bootstrap resamples of n questions, as weight matrices.

  Resample b draws n question indexes with replacement; its weights are how
  often each question was drawn, over n, so its mean of a per-question array is
  one matrix product. Resamples come from one seeded generator in chunks whose
  size depends on n alone (bootstrap_chunk_rows): every system (and every run) sees the same resamples (a paired
  bootstrap), and results do not depend on whether chunks were cached.
  """

  def __init__(self, n: int, samples: int, seed: int, cache: bool = True):
    """cache=False: every use draws the resamples again (for a caller that
    uses them once or a few times, with n large: the cache would hold
    samples x n doubles to the end)."""
    self.n, self.samples, self.seed = n, samples, seed
    self._cached = None
    if cache and samples * n <= _BOOTSTRAP_CACHE_ENTRIES:
      self._cached = list(self._chunks())

  def _chunks(self):
    rng = np.random.default_rng(self.seed)
    rows = bootstrap_chunk_rows(self.n)
    for start in range(0, self.samples, rows):
      size = min(rows, self.samples - start)
      weights = np.empty((size, self.n))
      # One resample's draws at a time (the generator's stream is the same as
      # one (size, n) draw), and the division in place: a chunk's memory is
      # its weights alone.
      for row in range(size):
        weights[row] = np.bincount(rng.integers(0, self.n, size=self.n, dtype=np.int64),
                                   minlength=self.n)
      weights /= self.n
      yield weights

  def resample_means(self, metrics: List[np.ndarray]) -> np.ndarray:
    """The mean of each per-question array in each resample: (samples, metrics)."""
    values = np.stack(metrics, axis=1)
    chunks = self._cached if self._cached is not None else self._chunks()
    return np.concatenate([weights @ values for weights in chunks])

  def intervals(self, metrics: List[np.ndarray]) -> List[Tuple[float, float]]:
    """95% intervals of the mean of each per-question array."""
    return percentile_intervals(self.resample_means(metrics))

  def ratio_intervals(self, ratios: List[Tuple[np.ndarray, np.ndarray]]
                      ) -> List[Optional[Tuple[float, float]]]:
    """95% intervals of sum(numerator) / sum(denominator) over resampled
    questions, for each (numerator, denominator) pair of per-question arrays (a
    rate over a subset of the questions, claims per answer, a relative gain).
    Resamples whose denominator is 0 are left out; None if all are."""
    flat = [array for pair in ratios for array in pair]
    means = self.resample_means(flat)
    return [ratio_interval(means[:, 2 * index], means[:, 2 * index + 1])
            for index in range(len(ratios))]


def percentile_intervals(means: np.ndarray) -> List[Tuple[float, float]]:
  """95% percentile intervals of each column of resampled means."""
  return [(float(low), float(high))
          for low, high in np.percentile(means, [2.5, 97.5], axis=0).T]


def ratio_interval(numerator: np.ndarray, denominator: np.ndarray
                   ) -> Optional[Tuple[float, float]]:
  """The 95% percentile interval of the ratio of resampled means, over the
  resamples where it is defined; None if it is in none."""
  values = ratio_or_nan(numerator, denominator)
  values = values[~np.isnan(values)]
  if not len(values):
    return None
  low, high = np.percentile(values, [2.5, 97.5])
  return float(low), float(high)


# Leaderboard figures. Rates (AutoAIS, coverage, EM, F1, shares of rated rows)
# are percents, as the Attributed QA paper reports AutoAIS and the SQuAD script
# EM and F1. A rate that is a ratio of counts is 100 * count / n, one rounding
# (93.90625, where np.mean(...) * 100 gives 93.90624999999986); every other
# figure (F1, bootstrap bounds, agreement statistics) keeps WRITTEN_DIGITS
# significant digits: more than any count of questions determines, fewer than the
# 16th and 17th where float arithmetic leaves its noise.
WRITTEN_DIGITS = 12
# How a summary file names the unit of its rates.
PERCENT = "percent (0-100)"


def percent_of(count: int, n: int) -> Optional[float]:
  """100 * count / n, the double nearest the exact ratio; None if n is 0."""
  return 100 * count / n if n else None


def written(value: Optional[float], scale: float = 1.0) -> Optional[float]:
  """value * scale with WRITTEN_DIGITS significant digits; None stays None."""
  return None if value is None else float(f"{value * scale:.{WRITTEN_DIGITS}g}")


def written_interval(interval: Optional[Tuple[float, float]]
                      ) -> Tuple[Optional[float], Optional[float]]:
  """A 95% interval of a fraction, as written: percents."""
  return (None, None) if interval is None else (written(interval[0], 100),
                                                written(interval[1], 100))




def leaderboard_row(outcomes: SystemOutcomes, gold: GoldIndex,
                    bootstrap: BootstrapWeights
                    ) -> Tuple[LeaderboardRow, SystemAgreement, Dict[str, object]]:
  """A system's leaderboard row; what the agreement statistics need of it (its
  counts against human ratings, per-resample means for the system-level
  correlation CIs, its AutoAIS per question for the paired tests); and its
  scores with the reference script's arithmetic, for scores.txt (`autoais` a
  fraction, `em` and `f1` np.mean(...) * 100, None without gold).

  AutoAIS and coverage are over every gold question (paper mode) or, where the
  index is not graded (no gold), over the system's own distinct questions; EM
  and F1 need gold."""
  index = np.frombuffer(outcomes.gold_index, dtype=np.int32)
  attributable = np.frombuffer(outcomes.attributable, dtype=np.int8).astype(bool)
  scored = np.frombuffer(outcomes.scored, dtype=np.int8).astype(bool)
  human = np.frombuffer(outcomes.human, dtype=np.int8)
  nli_score = np.frombuffer(outcomes.nli_score, dtype=np.float64)

  ais = np.zeros(gold.n)
  ais[index] = attributable
  n_scored = int(scored.sum())
  n_yes = int(attributable.sum())
  n_questions = gold.n if gold.graded else len(index)
  columns = {"ais": ais}
  if gold.graded:
    columns["em"] = gold.empty_em.copy()
    columns["f1"] = gold.empty_f1.copy()
    columns["em"][index] = np.frombuffer(outcomes.em, dtype=np.int8)
    columns["f1"][index] = np.frombuffer(outcomes.f1, dtype=np.float64)
  else:
    columns["answered"] = np.zeros(gold.n)
    columns["answered"][index] = 1

  # Rated rows: decisions count whether scored or not (an attribution not in the
  # corpus is AutoAIS N); the AUCs use the rated rows that have a score.
  rated = human != HUMAN_NONE
  counts = AgreementCounts()
  counts.add_arrays(human[rated] == HUMAN_Y, attributable[rated], nli_score[rated],
                    scored[rated])
  if counts.n:
    for name, values in (("rated_auto", rated & attributable),
                         ("rated_human", rated & (human == HUMAN_Y)), ("rated", rated)):
      columns[name] = np.zeros(gold.n)
      columns[name][index] = values
  means = dict(zip(columns, bootstrap.resample_means(list(columns.values())).T))
  if gold.graded:
    autoais_resampled = means["ais"]
    autoais_ci, em_ci, f1_ci = percentile_intervals(
        np.stack([means["ais"], means["em"], means["f1"]], axis=1))
  else:
    autoais_resampled = ratio_or_nan(means["ais"], means["answered"])
    autoais_ci, em_ci, f1_ci = ratio_interval(means["ais"], means["answered"]), None, None
  stats = agreement_statistics(counts) if counts.n else {}
  system = SystemAgreement(
      outcomes.system_name, counts, n_yes / n_questions if n_questions else 0.0,
      autoais_ci, np.stack([autoais_resampled, means["rated_auto"], means["rated_human"],
                            means["rated"]], axis=1) if counts.n else None, ais > 0)
  reference = {"system_name": outcomes.system_name,
               "autoais": n_yes / n_questions if n_questions else None,
               "em": None, "f1": None}
  if gold.graded:
    # np.mean over the gold-ordered array, then x100: the reference's arithmetic.
    reference["em"] = float(np.mean(columns["em"]) * 100)
    reference["f1"] = float(np.mean(columns["f1"]) * 100)
  (autoais_low, autoais_high), (em_low, em_high), (f1_low, f1_high) = (
      written_interval(interval) for interval in (autoais_ci, em_ci, f1_ci))
  em_answered = f1_answered = None
  if gold.graded and len(index):
    # Over the questions the system answered: no empty answer is graded, so an
    # empty-normalising gold alias gives nothing for free (docs/evaluate.md).
    em_answered = percent_of(int(np.frombuffer(outcomes.em, dtype=np.int8).sum()),
                             len(index))
    f1_answered = written(float(np.mean(np.frombuffer(outcomes.f1, dtype=np.float64))
                                * 100))
  return LeaderboardRow(
      system_name=outcomes.system_name,
      n_gold=gold.n if gold.graded else None,
      n_predicted=len(index),
      n_scored=n_scored,
      n_unmatched_attribution=len(index) - n_scored,
      coverage=percent_of(n_scored, n_questions),
      autoais=percent_of(n_yes, n_questions),
      autoais_ci_low=autoais_low,
      autoais_ci_high=autoais_high,
      autoais_scored=percent_of(n_yes, n_scored),
      # EM is 0 or 1 per question: a ratio of counts.
      em=percent_of(int(columns["em"].sum()), gold.n) if gold.graded else None,
      em_ci_low=em_low,
      em_ci_high=em_high,
      f1=written(reference["f1"]),
      f1_ci_low=f1_low,
      f1_ci_high=f1_high,
      n_human_rated=counts.n,
      human_ais=written(stats.get("human_ais"), 100),
      human_agreement=written(stats.get("accuracy"), 100),
      human_kappa=written(stats.get("cohen_kappa")),
      autoais_rated=written(stats.get("predicted_ais"), 100),
      human_balanced_accuracy=written(stats.get("balanced_accuracy"), 100),
      human_roc_auc=written(stats.get("roc_auc")),
      human_pr_auc=written(stats.get("pr_auc")),
      em_answered=em_answered,
      f1_answered=f1_answered), system, reference


class _LeaderboardRowFn(beam.DoFn):

  def __init__(self, bootstrap_samples: int, seed: int):
    self._samples = bootstrap_samples
    self._seed = seed
    self._bootstrap = None

  def process(self, outcomes: SystemOutcomes, gold: GoldIndex):
    if self._bootstrap is None or self._bootstrap.n != gold.n:
      self._bootstrap = BootstrapWeights(gold.n, self._samples, self._seed)
    row, agreement, reference = leaderboard_row(outcomes, gold, self._bootstrap)
    yield row
    yield beam.pvalue.TaggedOutput("agreement", agreement)
    yield beam.pvalue.TaggedOutput("reference_scores", reference)


class SummarizeSystems(beam.PTransform):
  """PCollection[SystemOutcomes] -> outputs `rows` (one LeaderboardRow per
  system), `agreement` (one transforms.stats.agreement.SystemAgreement per
  system) and `reference_scores` (a dict per system: leaderboard_row).

  Each element must hold all of a system's kept predictions: the ratings writer
  sees rows sorted by system and emits one SystemOutcomes per system, so only one
  system's columns are in memory at a time (a CombinePerKey would hold every
  system's until the end of the bundle).
  """

  def __init__(self, gold_index, bootstrap_samples: int = 1000, seed: int = 0):
    super().__init__()
    self._gold_index = gold_index
    self._samples = bootstrap_samples
    self._seed = seed

  def expand(self, outcomes):
    return outcomes | "ComputeLeaderboardRows" >> beam.ParDo(
        _LeaderboardRowFn(self._samples, self._seed),
        beam.pvalue.AsSingleton(self._gold_index)).with_outputs(
            "agreement", "reference_scores", main="rows")


def sorted_rows(rows: Iterable[LeaderboardRow]) -> List[LeaderboardRow]:
  return sorted(rows, key=lambda row: row.system_name)
