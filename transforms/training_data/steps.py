"""The composites of `autoais training-data`: hard negatives mined from the
corpus (MineHardNegatives), and the split tables written from the merged,
deduplicated examples (ExamplesFold, for transforms/rows/merge.py's
WriteMergedRows).
"""
import json
import unicodedata
from typing import NamedTuple, Tuple

import apache_beam as beam

from autoais.schemas import (SPLITS, TRAINING_EXAMPLE_SCHEMA, UNMATCHED, DeadLetter,
                             TrainingExample)
from autoais.transforms.corpus import store
from autoais.transforms.corpus.passages import nli_premise, parse_passage
from autoais.transforms.io.spilled_groups import SpilledGroupByKey
from autoais.transforms.rows.merge import RowFold, RowTable
from autoais.transforms.scoring.examples import qa_example
from autoais.transforms.scoring.string_match import (answer_is_searchable,
                                                     string_match_attributable)
from autoais.transforms.training_data.examples import hard_negative, negative_rank

# Hard-negative counts in run.json, always present.
NEGATIVE_STATS = ("positives_with_passage_id", "positives_without_searchable_answer",
                  "articles_not_found", "positives_without_other_passages",
                  "candidates", "candidates_rated_attributable",
                  "candidates_not_in_corpus", "candidates_with_answer",
                  "positives_with_negatives", "negatives_mined")


class NegativeSeed(NamedTuple):
  """A positive example whose article hard negatives are mined from."""
  example: TrainingExample
  answer: str
  attribution: str  # the passage id the positive cites
  # Every passage a human rated attributable for the same hypothesis (this
  # one's included): none of them is a negative of it.
  rated_attributable: Tuple[str, ...] = ()


def _stats(**counts):
  return dict(dict.fromkeys(NEGATIVE_STATS, 0), **counts)


def _searchable_seeds(seed):
  """Seeds whose answer string match can look for, keyed by their hypothesis;
  a yes/no answer, or one with nothing left once normalised, is in no passage
  by that test, so every passage of its article would pass for one that does
  not answer: it is counted, and gets no negatives."""
  if not answer_is_searchable(seed.answer):
    yield beam.pvalue.TaggedOutput("stats", _stats(positives_without_searchable_answer=1))
    return
  yield seed.example.hypothesis, seed


def _with_rated_passages(grouped):
  """(hypothesis, its seeds) -> each seed with every passage the group's
  humans rated attributable."""
  _, seeds = grouped
  rated = tuple(sorted({seed.attribution for seed in seeds}))
  for seed in seeds:
    yield seed._replace(rated_attributable=rated)


class _CandidatesFn(beam.DoFn):
  """(seed, the article's passage ids or None) -> (seed, passage id) for each
  other passage of the article that no human rated attributable for the
  seed's hypothesis (a negative of it would contradict that rating)."""

  def process(self, looked_up):
    seed, passage_ids = looked_up
    if passage_ids is None:
      yield beam.pvalue.TaggedOutput("stats", _stats(articles_not_found=1))
      return
    others = [pid for pid in passage_ids if pid != seed.attribution]
    rated = set(seed.rated_attributable)
    candidates = [pid for pid in others if pid not in rated]
    if len(candidates) < len(others):
      yield beam.pvalue.TaggedOutput("stats", _stats(
          candidates_rated_attributable=len(others) - len(candidates)))
    if not candidates:
      yield beam.pvalue.TaggedOutput("stats",
                                     _stats(positives_without_other_passages=1))
      return
    yield beam.pvalue.TaggedOutput("stats", _stats(candidates=len(candidates)))
    for passage_id in candidates:
      yield seed, passage_id


class _KeepWithoutAnswerFn(beam.DoFn):
  """((seed, passage id), contents) -> (positive's digest, (rank, passage id,
  premise, seed)) where the passage does not contain the answer (SPEC 5.4's
  string match, the paper's "does not answer the question")."""

  def __init__(self, seed: int):
    self._seed = seed

  def process(self, joined):
    (seed, passage_id), contents = joined
    if contents is None:
      yield beam.pvalue.TaggedOutput("stats", _stats(candidates_not_in_corpus=1))
      return
    parsed = parse_passage(contents)
    # The premise and searchable text exactly as evaluate builds them; both
    # sides NFKC-normalised, which SQuAD's normalisation is not: a passage
    # spelling the answer with decomposed accents holds it all the same, and
    # must not become a negative.
    example = qa_example("", seed.answer, parsed)
    if string_match_attributable(unicodedata.normalize("NFKC", seed.answer),
                                 unicodedata.normalize("NFKC", example.passage_text)):
      yield beam.pvalue.TaggedOutput("stats", _stats(candidates_with_answer=1))
      return
    digest = seed.example.digest
    yield digest, (negative_rank(self._seed, digest, passage_id), passage_id,
                   nli_premise(parsed), seed)


class _TakeNegativesFn(beam.DoFn):
  """(positive's digest, candidates) -> its first `per_positive` candidates by
  rank, as TrainingExamples."""

  def __init__(self, family: str, per_positive: int):
    self._family = family
    self._per_positive = per_positive

  def process(self, grouped):
    _, candidates = grouped
    chosen = sorted(candidates, key=lambda candidate: candidate[:2])[:self._per_positive]
    yield beam.pvalue.TaggedOutput("stats", _stats(positives_with_negatives=1,
                                                   negatives_mined=len(chosen)))
    for _, passage_id, premise, seed in chosen:
      yield hard_negative(seed.example, self._family, passage_id, premise)


class MineHardNegatives(beam.PTransform):
  """PCollection[NegativeSeed] -> {"negatives": PCollection[TrainingExample],
  "stats": count dicts (NEGATIVE_STATS), "join_stats": the corpus reads}.

  As XOR-AttriQA mines them (§4, after Garg et al.): for a positive, the other
  passages of the article its passage belongs to (the corpus's article index),
  less those that contain the answer and those a human rated attributable for
  the same hypothesis; `per_positive` of them, in an order fixed by `seed`.
  Each negative pairs the positive's hypothesis with such a passage, label 0,
  in the positive's split. A positive whose answer cannot be looked for in a
  passage (yes/no, or nothing once normalised) gets none. The seeds are
  grouped by hypothesis, and the candidates per positive, through runs on disk
  under `work_dir`."""

  def __init__(self, corpus_dir: str, work_dir: str, family: str, per_positive: int,
               seed: int):
    super().__init__()
    self._corpus_dir = corpus_dir
    self._work_dir = work_dir
    self._family = family
    self._per_positive = per_positive
    self._seed = seed

  def expand(self, seeds):
    counted = seeds | "CountSeeds" >> beam.Map(
        lambda _: _stats(positives_with_passage_id=1))
    searchable = seeds | "KeepSearchableAnswers" >> beam.FlatMap(
        _searchable_seeds).with_outputs("stats", main="seeds")
    seeds = (searchable.seeds
             | "GroupSeedsByHypothesis" >> SpilledGroupByKey(self._work_dir)
             | "ShareRatedPassages" >> beam.FlatMap(_with_rated_passages))
    articles = seeds | "LookUpArticles" >> store.LookupArticles(
        self._corpus_dir, lambda seed: store.article_of(seed.attribution))
    candidates = articles["joined"] | "ListCandidates" >> beam.ParDo(
        _CandidatesFn()).with_outputs("stats", main="candidates")
    passages = candidates.candidates | "LookUpCandidatePassages" >> store.LookupPassages(
        self._corpus_dir, lambda candidate: candidate[1])
    kept = passages["joined"] | "DropPassagesWithAnswer" >> beam.ParDo(
        _KeepWithoutAnswerFn(self._seed)).with_outputs("stats", main="kept")
    grouped = kept.kept | "GroupCandidates" >> SpilledGroupByKey(self._work_dir)
    taken = grouped | "TakeNegatives" >> beam.ParDo(
        _TakeNegativesFn(self._family, self._per_positive)).with_outputs(
            "stats", main="negatives")
    return {"negatives": taken.negatives,
            "stats": (counted, searchable.stats, candidates.stats, kept.stats,
                      taken.stats),
            "join_stats": (articles["stats"], passages["stats"])}


class _Merged(NamedTuple):
  """What ExamplesFold reads of a row."""
  split: str
  digest: str
  source: str
  label: int
  hard_negative: bool
  item_id: str
  source_file: str
  source_line: int


def _zero_counts():
  return {"examples": 0, "positive": 0, "negative": 0, "hard_negatives": 0}


class ExamplesFold(RowFold):
  """Writes each split's examples, sorted by digest, to {split}.parquet, the
  first of each digest only: a later input row of a digest already written is
  dead-lettered (unmatched, duplicate_example), a later hard negative counted.
  Stats: examples, labels and hard negatives per split and per source."""
  row_type = TrainingExample
  merged_type = _Merged
  # An input row sorts before a mined negative of the same digest: it is kept.
  sort_key = ("digest", "hard_negative", "source_file", "source_line", "item_id")
  run_name = "examples"
  tables = tuple(RowTable(split, TRAINING_EXAMPLE_SCHEMA, write_csv=False)
                 for split in SPLITS)
  by_system = False

  def __init__(self):
    self._last = None
    self._splits = {split: dict(_zero_counts(), by_source={}) for split in SPLITS}
    self._counts = {"input_examples": 0, "duplicates": 0,
                    "hard_negative_duplicates": 0}

  def add(self, row, ref, tables):
    if row.digest == self._last:
      if row.hard_negative:
        self._counts["hard_negative_duplicates"] += 1
        return ()
      self._counts["duplicates"] += 1
      return (DeadLetter(
          row.source_file, row.source_line, UNMATCHED, "duplicate_example", None,
          f"{row.source_file}:{row.source_line}: the same example (premise, "
          "hypothesis and label) as an earlier row; kept once",
          json.dumps({"item_id": row.item_id, "source": row.source,
                      "digest": row.digest}, ensure_ascii=False)),)
    self._last = row.digest
    tables[row.split].add(ref)
    if not row.hard_negative:
      self._counts["input_examples"] += 1
    split = self._splits[row.split]
    source = split["by_source"].setdefault(row.source, _zero_counts())
    for counts in (split, source):
      counts["examples"] += 1
      counts["positive" if row.label else "negative"] += 1
      counts["hard_negatives"] += int(row.hard_negative)
    return ()

  def stats(self):
    for split in self._splits.values():
      split["by_source"] = dict(sorted(split["by_source"].items()))
    return dict(self._counts, splits=self._splits)
