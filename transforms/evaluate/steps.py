"""evaluate's row-level steps: each prediction is matched to a gold question
(and graded), given its human rating and its passage, scored and made a
RatingRow. The predictions' readers are shared (transforms/io/predictions.py).
"""
import functools
import json
from typing import NamedTuple, Optional, Tuple

import apache_beam as beam

from autoais.schemas import (REJECTED, UNMATCHED, AttributionScore, DeadLetter, GoldMatch,
                     RatingRow, ScoringFailure, SpanRow)
from autoais.transforms.corpus import store
from autoais.transforms.corpus.passages import ParsedPassage, display_passage, parse_passage
from autoais.transforms.io.fields import rejected
from autoais.transforms.labelled.items import unmatched
from autoais.transforms.scoring.attribution import (ScoreAttribution, first_failure,
                                            score_columns, scoring_failed_message)
from autoais.transforms.scoring.examples import qa_example


class _MatchGoldFn(beam.DoFn):
  """Keeps predictions whose question is in gold, grading their answer."""

  def process(self, prediction, gold):
    graded = gold.grade(prediction.question, prediction.answer)
    if graded is None:
      yield beam.pvalue.TaggedOutput("unmatched", DeadLetter(
          prediction.source_file, prediction.source_line, UNMATCHED,
          "question_not_in_gold", "question",
          f"{prediction.source_file}:{prediction.source_line}: field 'question': "
          "not a gold question; discarded",
          prediction_json(prediction)))
      return
    yield GoldMatch(prediction, *graded)


class _AttachHumanRatingsFn(beam.DoFn):
  """((system, question), {"matches": [GoldMatch], "ratings": [HumanRating]})
  -> the matches carrying the rating. The first rating (by file and line) of a
  (system, question) counts; later ones are rejected; a rating with no
  gold-matched prediction is dead-lettered as unmatched."""

  def process(self, keyed):
    (system, question), grouped = keyed
    matches = list(grouped["matches"])
    ratings = sorted(grouped["ratings"], key=lambda r: (r.source_file, r.source_line))
    if not ratings:
      yield from matches
      return
    kept = ratings[0]
    for duplicate in ratings[1:]:
      yield beam.pvalue.TaggedOutput("dead_letter", rejected(
          duplicate.source_file, duplicate.source_line, "duplicate_human_rating",
          f"system {system!r} already has a rating of this question at "
          f"{kept.source_file}:{kept.source_line}", _rating_json(duplicate),
          "question"))
    if not matches:
      yield beam.pvalue.TaggedOutput("dead_letter", unmatched(
          kept.source_file, kept.source_line, "no_prediction",
          f"no prediction of system {system!r} answers this gold question",
          _rating_json(kept), "question"))
      return
    replaced = sum(1 for match in matches if match.prediction.human_rating not in (
        None, kept.human_rating))
    yield beam.pvalue.TaggedOutput("stats", {"joined": 1, "replaced_column_value":
                                             replaced})
    for match in matches:
      yield match._replace(prediction=match.prediction._replace(
          human_rating=kept.human_rating))


def _rating_json(rating) -> str:
  return json.dumps({"system_name": rating.system_name, "question": rating.question,
                     "human_rating": rating.human_rating}, ensure_ascii=False)


class AttachHumanRatings(beam.PTransform):
  """PCollection[GoldMatch] + PCollection[HumanRating] -> outputs main (GoldMatch
  with the rating), dead_letter (ratings not used) and stats ({"joined": n}):
  a CoGroupByKey on (system, question)."""

  def __init__(self, ratings):
    super().__init__()
    self._ratings = ratings

  def expand(self, matches):
    keyed_matches = matches | "KeyMatches" >> beam.Map(
        lambda match: ((match.prediction.system_name, match.prediction.question),
                       match))
    keyed_ratings = self._ratings | "KeyRatings" >> beam.Map(
        lambda rating: ((rating.system_name, rating.question), rating))
    return ({"matches": keyed_matches, "ratings": keyed_ratings}
            | "JoinRatings" >> beam.CoGroupByKey()
            | "AttachRatings" >> beam.ParDo(_AttachHumanRatingsFn()).with_outputs(
                "dead_letter", "stats", main="matched"))


def prediction_json(prediction, **extra) -> str:
  return json.dumps({"system_name": prediction.system_name,
                     "question": prediction.question, "answer": prediction.answer,
                     "attribution": prediction.attribution, **extra},
                    ensure_ascii=False)


class RatedMatch(NamedTuple):
  """What a rating row needs of a prediction besides its score: the graded
  prediction and the passage shown beside it (None: no passage); of a row
  that lists its passages, one of them and its place in the list."""
  match: GoldMatch
  passage: Optional[str]
  position: Optional[int] = None


def failed_row_dead_letter(rated: RatedMatch, failure: ScoringFailure) -> DeadLetter:
  """A row the scorer could not score (a remote endpoint refused it, or failed
  after every retry): rejected, with the HTTP status in the record."""
  prediction = rated.match.prediction
  return DeadLetter(
      prediction.source_file, prediction.source_line, REJECTED, "scoring_failed", None,
      f"{prediction.source_file}:{prediction.source_line}: "
      f"{scoring_failed_message(failure)}",
      prediction_json(prediction, http_status=failure.status))


def _carries_passage(prediction) -> bool:
  return prediction.passage is not None or bool(prediction.passages)


def attribution_to_look_up(match: GoldMatch) -> Optional[str]:
  """The corpus id a row needs, or None where no lookup is needed (the row
  carries its passage, or a list of them) or possible (no attribution)."""
  prediction = match.prediction
  if not _carries_passage(prediction) and prediction.attribution:
    return prediction.attribution
  return None


def own_passage_counts(match):
  """run.json's `passages` counts of a row that carries its own passage (or a
  list of them): it is scored, and its attribution, where it names one too,
  is not looked up."""
  prediction = match.prediction
  if _carries_passage(prediction):
    listed = len(prediction.passages or ())
    yield {"from_rows": 1, "from_rows_over_attribution": int(bool(prediction.attribution)),
           "from_row_lists": int(bool(listed)), "listed_passages": listed}


class AttachPassages(beam.PTransform):
  """PCollection[GoldMatch] -> {'joined': (GoldMatch, corpus passage or None),
  'stats': join read statistics, 'own': count dicts of the rows that carry
  their own passage (own_passage_counts)}. Rows that carry their own `passage`
  skip the lookup (see prepare_examples)."""

  def __init__(self, corpus_dir: Optional[str], join: Optional[str]):
    super().__init__()
    self._corpus_dir = corpus_dir
    self._join = join

  def expand(self, matches):
    own = matches | "CountOwnPassages" >> beam.FlatMap(own_passage_counts)
    if self._corpus_dir is None:
      joined = matches | "SkipCorpus" >> beam.Map(lambda match: (match, None))
      stats = matches.pipeline | "NoJoinStats" >> beam.Create([{}])
      return {"joined": joined, "stats": stats, "own": own}
    if self._join == "shuffle":
      joined = matches | "ShuffleJoinCorpus" >> store.ShuffleJoinPassages(
          self._corpus_dir, attribution_to_look_up)
    else:
      joined = matches | "LookUpCorpus" >> store.LookupPassages(
          self._corpus_dir, attribution_to_look_up)
    return {"joined": joined["joined"], "stats": joined["stats"], "own": own}


def prepare_examples(match: GoldMatch, corpus_passage: Optional[str],
                     reference_premise: bool = False):
  """-> (RatedMatch, AttributionExample or None): one, or one per passage of a
  row that lists them (RatedMatch.position its place in the list).

  The row's own `passage` column wins over the corpus passage. Each passage of
  a list goes through the formatting a corpus passage goes through. With
  `reference_premise` (--decision decode) the premise is the reference
  script's (its text ends at the first line break); the display passage stays
  whole.
  """
  prediction = match.prediction
  if prediction.passages:
    for position, passage in enumerate(prediction.passages):
      parsed, display = _passage_forms(passage)
      yield (RatedMatch(match, display, position),
             qa_example(prediction.question, prediction.answer, parsed, reference_premise))
    return
  passage = prediction.passage or corpus_passage
  if passage is None:
    yield RatedMatch(match, None), None
    return
  parsed, display = _passage_forms(passage)
  yield (RatedMatch(match, display),
         qa_example(prediction.question, prediction.answer, parsed, reference_premise))


# How a row that lists its passages is rated (run.json's passages.list_rule).
LISTED_PASSAGES_RULE = (
    "a row whose passage is a list has each passage scored as a corpus passage is, "
    "and is rated on the one audit's reranking chooses: the highest nli_score, ties "
    "to the first in the list (with a threshold: Y where any passage is Y); one "
    "passage that cannot be scored leaves the row out (scoring_failed); an empty "
    "list is no passage; the scorer's counts count each listed passage as a row")


def _listed(keyed_outcome, partitions: int) -> int:
  """Partition 1: the outcome of a passage of a row that lists its passages."""
  del partitions
  return int(keyed_outcome[0].position is not None)


def _row_of_listed(rated: RatedMatch, outcome):
  prediction = rated.match.prediction
  return (prediction.source_file, prediction.source_line), (rated, outcome)


class _ChoosePassageFn(beam.DoFn):
  """(row, [(RatedMatch, AttributionScore or ScoringFailure)] of each of its
  passages) -> (RatedMatch, score) of the passage the row is rated on, or
  "failed" (RatedMatch, ScoringFailure) of a row one of whose passages could
  not be scored (left out whole, as audit leaves out an answer: its decision
  would be over the other passages). The passage is audit's reranked choice:
  the highest nli_score, ties to the first in the list (docs/audit.md); with
  a threshold its decision is Y exactly where any passage's is."""

  def process(self, keyed):
    _, outcomes = keyed
    outcomes = sorted(outcomes, key=lambda outcome: outcome[0].position)
    failure = first_failure(outcome for _, outcome in outcomes)
    if failure is not None:
      rated = next(rated for rated, outcome in outcomes if outcome == failure)
      yield beam.pvalue.TaggedOutput("failed", (rated, failure))
      return
    yield max(outcomes, key=lambda outcome: (_nli_score(outcome[1]), -outcome[0].position))


def _nli_score(score) -> float:
  # A passage the scorer found no evidence in has no score: below any other.
  return float("-inf") if score is None else score.nli_score


# The systems of a leaderboard cite the same passages: parse and render each once
# (the corpus lookup hands out the same string objects, so hits hash nothing).
# 16k recent passages hold about 25 MB.
@functools.lru_cache(maxsize=16384)
def _passage_forms(passage: str) -> Tuple[ParsedPassage, str]:
  parsed = parse_passage(passage)
  return parsed, display_passage(parsed)


def rating_row(match: GoldMatch, passage: Optional[str],
               score: Optional[AttributionScore], scorer: str) -> RatingRow:
  prediction = match.prediction
  nli_score, auto_ais, n_windows, truncated = score_columns(score)
  # Positional: this runs once per row.
  return RatingRow(prediction.system_name, prediction.question, prediction.answer,
                   prediction.attribution, passage, prediction.human_rating, auto_ais,
                   nli_score, match.em, match.f1, match.gold_index, scorer, n_windows,
                   truncated, prediction.source_file, prediction.source_line)


def span_row(rated: RatedMatch, score: Optional[AttributionScore]):
  """The SpanRow of a row whose score carries spans (--scorer lettucedetect),
  named by its source, system and question; its text the answer, which a span
  scorer checks of a question's hypothesis (models/lettucedetect.py
  checked_text). A row without a score (no passage) has none."""
  if score is not None and score.spans is not None:
    prediction = rated.match.prediction
    yield SpanRow(prediction.source_file, prediction.source_line, None, prediction.answer,
                  list(score.spans), None, prediction.system_name, prediction.question)


def _source(row):
  return row.source_file, row.source_line


class KeepRatedSpans(beam.PTransform):
  """PCollection[SpanRow] of the scored rows -> those of the rows ratings.csv
  rates: a row RatingsFold rejects (a later answer of a system to a question
  it answered: `duplicate_prediction`) has its spans dropped. `dead_letter`:
  the fold's dead letters; a CoGroupByKey on each row's source (file, line)."""

  def __init__(self, dead_letter):
    super().__init__()
    self._dead_letter = dead_letter

  def expand(self, span_rows):
    rejected = self._dead_letter | "KeyRejectedRows" >> beam.FlatMap(
        lambda dead: [(_source(dead), None)] if dead.reason == "duplicate_prediction"
        else [])
    keyed = span_rows | "KeySpanRows" >> beam.Map(lambda row: (_source(row), row))
    return ({"rows": keyed, "rejected": rejected}
            | "JoinRejectedRows" >> beam.CoGroupByKey()
            | "DropRejectedRows" >> beam.FlatMap(
                lambda joined: [] if joined[1]["rejected"] else joined[1]["rows"]))


class MatchGoldQuestions(beam.PTransform):
  """PCollection[Prediction] -> outputs matched (GoldMatch: the prediction with
  its EM / F1 against the gold question it asks) and unmatched (DeadLetter:
  questions not in gold). `gold_index`: the singleton BuildGoldIndex gives."""

  def __init__(self, gold_index):
    super().__init__()
    self._gold_index = gold_index

  def expand(self, predictions):
    return predictions | "GradeAgainstGold" >> beam.ParDo(
        _MatchGoldFn(), beam.pvalue.AsSingleton(self._gold_index)).with_outputs(
            "unmatched", main="matched")


class ScoreAnswers(beam.PTransform):
  """PCollection[(GoldMatch, corpus passage or None)] -> {"rows": a tuple of
  PCollection[RatingRow] of every row the scorer answered (a row without a
  passage is rated N, unscored; a row that lists passages on the one
  _ChoosePassageFn chooses),
  "dead_letter": rows the scorer could not score, "stats": its counters, and
  with a scorer that gives spans "spans": PCollection[SpanRow] of each scored
  row (span_row; of a row that lists passages, the chosen passage's)}; a
  model's examples are grouped in runs under `work_dir`."""

  def __init__(self, scorer, reference_premise: bool, work_dir: str):
    super().__init__()
    self._scorer = scorer
    self._work_dir = work_dir
    self._reference_premise = reference_premise

  def expand(self, joined):
    scorer_name = self._scorer.describe()["name"]
    scores = (joined
              | "PrepareExamples" >> beam.FlatMapTuple(
                  prepare_examples, reference_premise=self._reference_premise)
              | "ScoreAttribution" >> ScoreAttribution(self._scorer, self._work_dir))
    # The rows that list their passages are grouped by row and rated on one;
    # the others go straight on (no shuffle).
    scored = scores["scored"] | "SplitListedScores" >> beam.Partition(_listed, 2)
    failed = scores["failed"] | "SplitListedFailures" >> beam.Partition(_listed, 2)
    chosen = ((scored[1], failed[1])
              | "JoinListedOutcomes" >> beam.Flatten()
              | "KeyByRow" >> beam.MapTuple(_row_of_listed)
              | "GroupPassagesOfRow" >> beam.GroupByKey()
              | "ChoosePassage" >> beam.ParDo(_ChoosePassageFn()).with_outputs(
                  "failed", main="scored"))

    def rate(rated, score):
      return rating_row(rated.match, rated.passage, score, scorer_name)

    # Rated apart, and handed to WriteMergedRows as a tuple: a Flatten of
    # every row would be held whole by the FnApiRunner.
    rows = (scored[0] | "RateAnswers" >> beam.MapTuple(rate),
            chosen.scored | "RateListedAnswers" >> beam.MapTuple(rate))
    failed = ((failed[0], chosen.failed)
              | "JoinScoringFailures" >> beam.Flatten()
              | "DeadLetterScoringFailures" >> beam.MapTuple(failed_row_dead_letter))
    outputs = {"rows": rows, "dead_letter": failed, "stats": scores["stats"]}
    if self._scorer.gives_spans:
      outputs["spans"] = ((scored[0] | "MakeSpanRows" >> beam.FlatMapTuple(span_row),
                           chosen.scored
                           | "MakeListedSpanRows" >> beam.FlatMapTuple(span_row))
                          | "JoinSpanRows" >> beam.Flatten())
    return outputs
