"""ratings.csv / .parquet: evaluate's fold over the merged rating rows (the
job skeleton, transforms/rows/): the first prediction per (system, question)
is kept, a row without a scored passage is dead-lettered as unmatched, and
each system's outcomes go on to the leaderboard.
"""
from typing import NamedTuple, Optional

from autoais.schemas import RATING_SCHEMA, REJECTED, UNMATCHED, DeadLetter, RatingRow
from autoais.transforms.evaluate.steps import prediction_json
from autoais.transforms.io.sorted_runs import RowRef
from autoais.transforms.rows.merge import RowFold, RowTable
from autoais.transforms.stats.metrics import SystemOutcomes

RATING_KEY = ("system_name", "question", "source_file", "source_line")


class _MergedRow(NamedTuple):
  """The fields of a rating row that the ratings writer reads as Python values."""
  system_name: str
  question: str
  source_file: str
  source_line: int
  gold_index: int
  em: Optional[float]
  f1: Optional[float]
  auto_ais: str
  nli_score: Optional[float]
  human_rating: Optional[str]


class RatingsFold(RowFold):
  """Keeps the first prediction per (system, question), writes
  ratings.csv/.parquet, and gives one SystemOutcomes per system."""
  row_type = RatingRow
  merged_type = _MergedRow
  sort_key = RATING_KEY
  run_name = "ratings"
  tables = (RowTable("ratings", RATING_SCHEMA),)
  unique = ("system_name", "question")

  def __init__(self, has_corpus: bool):
    self._has_corpus = has_corpus
    self._counts = {"kept": 0, "scored": 0}
    self._outcomes = None

  def start_system(self, system_name):
    self._outcomes = SystemOutcomes(system_name)

  def add(self, row, ref, tables):
    self._counts["kept"] += 1
    self._outcomes.add(row.gold_index, row.em, row.f1, row.auto_ais == "Y",
                       row.nli_score is not None, row.human_rating, row.nli_score)
    if row.nli_score is None:
      yield self._unmatched(ref)
      return
    self._counts["scored"] += 1
    tables["ratings"].add(ref)

  def end_system(self, tables):
    yield self._outcomes

  def stats(self):
    return self._counts

  def _unmatched(self, ref: RowRef) -> DeadLetter:
    row = ref.row(RatingRow)
    if not row.attribution:
      reason, message = "missing_attribution", "no attribution given"
    elif self._has_corpus:
      reason, message = "attribution_not_in_corpus", (
          f"attribution {row.attribution!r} is not in the corpus")
    else:
      reason, message = "no_passage", "no passage column value and no --corpus"
    return DeadLetter(
        row.source_file, row.source_line, UNMATCHED, reason, "attribution",
        f"{row.source_file}:{row.source_line}: field 'attribution': {message}; "
        "counted as not attributable",
        prediction_json(row))

  def duplicate(self, ref: RowRef, kept) -> DeadLetter:
    row = ref.row(RatingRow)
    return DeadLetter(
        row.source_file, row.source_line, REJECTED, "duplicate_prediction", "question",
        f"{row.source_file}:{row.source_line}: field 'question': system "
        f"{row.system_name!r} already answered this question at "
        f"{kept.source_file}:{kept.source_line}",
        prediction_json(row))

