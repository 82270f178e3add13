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
"""
import array
import math
from typing import Dict, Iterable, List, Optional, Tuple

import apache_beam as beam
import numpy as np

from autoais.schemas import GoldAnswer, LeaderboardRow
from autoais.transforms.stats.agreement import (AgreementCounts, SystemAgreement,
                                        agreement_statistics)
from autoais.schemas.errors import InputError
from autoais.transforms.stats.squad import (grade_normalized, normalize_answer,
                                    normalize_short_answer)

HUMAN_NONE, HUMAN_N, HUMAN_Y = -1, 0, 1


class GoldIndex:
  """Gold questions by text with their normalised answers, plus the EM/F1 an
  empty prediction gets on each."""

  def __init__(self, answers: List[GoldAnswer]):
    self.n = len(answers)
    if not self.n:
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
      self.empty_em[position], self.empty_f1[position] = grade_normalized(
          normalized, "")

  def grade(self, question: str, answer: str) -> Optional[Tuple[int, float, float]]:
    """(gold index, EM, F1) of an answer to a gold question; None if not gold."""
    entry = self._by_question.get(question)
    if entry is None:
      return None
    position, normalized = entry
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
    self.em.append(int(em))
    self.f1.append(f1)
    self.attributable.append(attributable)
    self.scored.append(scored)
    self.human.append(_HUMAN_CODES[human_rating])
    self.nli_score.append(math.nan if nli_score is None else nli_score)

  def __len__(self):
    return len(self.gold_index)


_HUMAN_CODES = {None: HUMAN_NONE, "N": HUMAN_N, "Y": HUMAN_Y}


_BOOTSTRAP_CHUNK = 50
_BOOTSTRAP_CACHE_ENTRIES = 8 * 1024 * 1024


class BootstrapWeights:
  """Percentile-bootstrap resamples of n questions, as weight matrices.

  Resample b draws n question indexes with replacement; its weights are how
  often each question was drawn, over n, so its mean of a per-question array is
  one matrix product. Resamples come from one seeded generator in fixed-size
  chunks: every system (and every run) sees the same resamples (a paired
  bootstrap), and results do not depend on whether chunks were cached.
  """

  def __init__(self, n: int, samples: int, seed: int):
    self.n, self.samples, self.seed = n, samples, seed
    self._cached = None
    if samples * n <= _BOOTSTRAP_CACHE_ENTRIES:
      self._cached = list(self._chunks())

  def _chunks(self):
    rng = np.random.default_rng(self.seed)
    for start in range(0, self.samples, _BOOTSTRAP_CHUNK):
      size = min(_BOOTSTRAP_CHUNK, self.samples - start)
      draws = rng.integers(0, self.n, size=(size, self.n), dtype=np.int64)
      weights = np.empty((size, self.n))
      for row, drawn in enumerate(draws):
        weights[row] = np.bincount(drawn, minlength=self.n)
      yield weights / self.n

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
    intervals = []
    for index in range(len(ratios)):
      numerator, denominator = means[:, 2 * index], means[:, 2 * index + 1]
      defined = denominator != 0
      if not defined.any():
        intervals.append(None)
        continue
      values = numerator[defined] / denominator[defined]
      low, high = np.percentile(values, [2.5, 97.5])
      intervals.append((float(low), float(high)))
    return intervals


def percentile_intervals(means: np.ndarray) -> List[Tuple[float, float]]:
  """95% percentile intervals of each column of resampled means."""
  return [(float(low), float(high))
          for low, high in np.percentile(means, [2.5, 97.5], axis=0).T]




def leaderboard_row(outcomes: SystemOutcomes, gold: GoldIndex,
                    bootstrap: BootstrapWeights) -> Tuple[LeaderboardRow,
                                                          SystemAgreement]:
  """A system's leaderboard row, and what the agreement statistics need of it
  (its counts against human ratings, per-resample means for the system-level
  correlation CIs, its AutoAIS per gold question for the paired tests)."""
  index = np.frombuffer(outcomes.gold_index, dtype=np.int32)
  attributable = np.frombuffer(outcomes.attributable, dtype=np.int8).astype(bool)
  scored = np.frombuffer(outcomes.scored, dtype=np.int8).astype(bool)
  human = np.frombuffer(outcomes.human, dtype=np.int8)
  nli_score = np.frombuffer(outcomes.nli_score, dtype=np.float64)

  em = gold.empty_em.copy()
  f1 = gold.empty_f1.copy()
  ais = np.zeros(gold.n)
  em[index] = np.frombuffer(outcomes.em, dtype=np.int8)
  f1[index] = np.frombuffer(outcomes.f1, dtype=np.float64)
  ais[index] = attributable
  n_scored = int(scored.sum())
  n_yes = int(attributable.sum())

  # Rated rows: decisions count whether scored or not (an attribution not in the
  # corpus is AutoAIS N); the AUCs use the rated rows that have a score.
  rated = human != HUMAN_NONE
  counts = AgreementCounts()
  counts.add_arrays(human[rated] == HUMAN_Y, attributable[rated], nli_score[rated],
                    scored[rated])
  metrics = [ais, em, f1]
  if counts.n:
    for values in (rated & attributable, rated & (human == HUMAN_Y), rated):
      per_question = np.zeros(gold.n)
      per_question[index] = values
      metrics.append(per_question)
  means = bootstrap.resample_means(metrics)
  autoais_ci, em_ci, f1_ci = percentile_intervals(means[:, :3])
  stats = agreement_statistics(counts) if counts.n else {}
  system = SystemAgreement(
      outcomes.system_name, counts, n_yes / gold.n, autoais_ci,
      means[:, [0, 3, 4, 5]] if counts.n else None, ais > 0)
  return LeaderboardRow(
      system_name=outcomes.system_name,
      n_gold=gold.n,
      n_predicted=len(index),
      n_scored=n_scored,
      n_unmatched_attribution=len(index) - n_scored,
      coverage=n_scored / gold.n,
      autoais=n_yes / gold.n,
      autoais_ci_low=autoais_ci[0],
      autoais_ci_high=autoais_ci[1],
      autoais_scored=n_yes / n_scored if n_scored else None,
      # np.mean over the gold-ordered array, then x100: the reference's arithmetic.
      em=float(np.mean(em) * 100),
      em_ci_low=em_ci[0] * 100,
      em_ci_high=em_ci[1] * 100,
      f1=float(np.mean(f1) * 100),
      f1_ci_low=f1_ci[0] * 100,
      f1_ci_high=f1_ci[1] * 100,
      n_human_rated=counts.n,
      human_ais=stats.get("human_ais"),
      human_agreement=stats.get("accuracy"),
      human_kappa=stats.get("cohen_kappa"),
      autoais_rated=stats.get("predicted_ais"),
      human_balanced_accuracy=stats.get("balanced_accuracy"),
      human_roc_auc=stats.get("roc_auc"),
      human_pr_auc=stats.get("pr_auc")), system


class _LeaderboardRowFn(beam.DoFn):

  def __init__(self, bootstrap_samples: int, seed: int):
    self._samples = bootstrap_samples
    self._seed = seed
    self._bootstrap = None

  def process(self, outcomes: SystemOutcomes, gold: GoldIndex):
    if self._bootstrap is None or self._bootstrap.n != gold.n:
      self._bootstrap = BootstrapWeights(gold.n, self._samples, self._seed)
    row, agreement = leaderboard_row(outcomes, gold, self._bootstrap)
    yield row
    yield beam.pvalue.TaggedOutput("agreement", agreement)


class SummarizeSystems(beam.PTransform):
  """PCollection[SystemOutcomes] -> outputs `rows` (one LeaderboardRow per
  system) and `agreement` (one transforms.stats.agreement.SystemAgreement per
  system).

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
            "agreement", main="rows")


def sorted_rows(rows: Iterable[LeaderboardRow]) -> List[LeaderboardRow]:
  return sorted(rows, key=lambda row: row.system_name)
