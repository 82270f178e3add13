"""Citation recall and precision (ALCE; SPEC 5.10) at leaderboard scale: the
model pairs of every item asked in three rounds, each distinct (premise,
hypothesis) scored once in the whole run, and each item's sentence rows and
figures assembled from the answers.

Rounds (ALCE asks the later ones only where the earlier answers call for them):
  1. recall: each cited sentence against its cited documents joined (and, for
     ELI5 items with `claims`, each gold claim against the answer);
  2. precision, alone: for a supported sentence with several citations, each
     cited document alone;
  3. precision, without: where a document alone does not entail the sentence,
     the other cited documents without it (the citation is not needed if they
     do).
A pair asked in an earlier round (another sentence's, another system's) is not
asked again: each round's pairs are grouped by their digest, with the answers
of the rounds before it, and only the others go to the scorer, each distinct
pair once under the keys of the pairs that asked for it (so the scorer's
grouping, its fan-out and the answers known to the later rounds are one entry
a distinct pair, not one an asked pair). The scorer's model calls are
therefore the distinct pairs of the run. Each item's
`reference_calls` counts the calls ALCE's eval.py makes for it (one per pair
asked, repeats included), for comparison.
"""
from typing import Dict, List, Optional, Tuple

import apache_beam as beam

from autoais.schemas import (AttributionScore, CitationItem, CitationItemRow,
                     CitationSentenceRow)
from autoais.transforms.citations import alce
from autoais.transforms.io.counts import SumInBundles
from autoais.transforms.io.spilled_groups import SpilledCoGroupByKey
from autoais.transforms.io.untyped_output import UntypedOutputDoFn
from autoais.transforms.scoring.attribution import (ScoreAttribution, first_failure,
                                            scoring_failed)
from autoais.transforms.scoring.examples import claim_example, digest_of

RECALL, CLAIM, ALONE, WITHOUT = "recall", "claim", "alone", "without"

# What each grouping's spill step buffers before it writes a run. A round's
# merge feeds four spill steps in one fused stage (the next rounds' questions
# and answers, each item's answers), and what they buffer, interleaved with
# the scorer's caches, is what the process's heap grows to: at 4 MiB, not
# spilled_groups' 16, a 30,000-item run peaked about 90 MiB lower in that
# stage. More, smaller runs to merge in exchange.
_MAX_RUN_BYTES = 4 * 1024 * 1024


def item_id(item: CitationItem) -> Tuple[str, int]:
  return (item.source_file, item.item_index)


def _split_answer(item: CitationItem) -> Tuple[CitationItem, List[str]]:
  """(item, the units of its answer): split once, for the questions and for
  the item's assembly (splitting is most of an item's own cost)."""
  return item, alce.answer_units(item.question, alce.scored_output(item.output),
                                 item.qampari)


def _recall_examples(split_item: Tuple[CitationItem, List[str]],
                     at_most_citations: Optional[int]):
  """((item id, RECALL, sentence, checks), example) per cited sentence, where
  checks = (hypothesis, [(alone, without), ...]) for a sentence with several
  used citations (the later rounds' premises), else None; ((item id, CLAIM,
  claim, None), example) per gold claim."""
  item, units = split_item
  key = item_id(item)
  output = alce.scored_output(item.output)
  for plan in alce.plan_sentences(item, output, at_most_citations, units):
    if plan.status != alce.SCORED:
      continue
    checks = None
    if len(plan.used) > 1:
      checks = (plan.hypothesis, tuple(alce.precision_pairs(item, plan)))
    yield (key, RECALL, plan.index, checks), claim_example(plan.premise, plan.hypothesis)
  if item.claims:
    premise = alce.remove_citations(output)
    for index, claim in enumerate(item.claims):
      yield (key, CLAIM, index, None), claim_example(premise, claim)


def _alone_examples(keyed_outcome):
  (key, kind, index, checks), outcome = keyed_outcome
  if kind != RECALL or checks is None or not _supported(outcome):
    return
  hypothesis, pairs = checks
  for position, (alone, without) in enumerate(pairs):
    yield ((key, ALONE, (index, position), (hypothesis, without)),
           claim_example(alone, hypothesis))


def _without_examples(keyed_outcome):
  (key, _, where, (hypothesis, without)), outcome = keyed_outcome
  if isinstance(outcome, AttributionScore) and not outcome.attributable:
    yield (key, WITHOUT, where, None), claim_example(without, hypothesis)


def _supported(outcome) -> bool:
  return isinstance(outcome, AttributionScore) and outcome.attributable


def _key_by_digest(pair):
  return digest_of(pair[1]), pair


# What a distinct pair and a pair an earlier round answered add to a round's
# counts (read, never changed: SumCounts copies what it adds).
_ONE_PAIR = {"unique_pairs": 1}
_ONE_REUSED = {"pairs_reused": 1}


class _SplitKnownFn(beam.DoFn):
  """(digest, {"asked": [(key, example)], "known": [outcome]}) -> (key, outcome)
  where an earlier round answered the pair, else, once per digest, ((keys,
  digest), example) on "new", keys the tuple of every key that asked for it,
  and {"unique_pairs": 1} on "unique"."""

  def process(self, grouped):
    digest, groups = grouped
    asked, known = groups["asked"], groups.get("known")
    if known:
      for key, _ in asked:
        yield key, known[0]
      return
    if asked:
      yield beam.pvalue.TaggedOutput("unique", _ONE_PAIR)
      yield beam.pvalue.TaggedOutput(
          "new", ((tuple(key for key, _ in asked), digest), asked[0][1]))


def _keys_asking(keys_digest) -> int:
  """How many asked pairs a new pair's (keys, digest) stands for."""
  return len(keys_digest[0])


def _to_each_key(keyed_outcome):
  """((keys, digest), outcome) -> (key, outcome) for each key that asked."""
  (keys, _), outcome = keyed_outcome
  for key in keys:
    yield key, outcome


def _each(parts, label: str, transform_of):
  """`transform_of()` applied to each PCollection of `parts` (labels `label0`,
  `label1`, ...): the parts stay apart, as a Flatten of them would be a buffer
  that the DirectRunner holds whole."""
  return tuple(part | f"{label}{index}" >> transform_of()
               for index, part in enumerate(parts))


class _ScoreRound(beam.PTransform):
  """Parts (a tuple of PCollections) of (key, example) -> {"outcomes": parts of
  (key, AttributionScore or ScoringFailure), "known": parts of (digest,
  outcome), one per distinct pair scored in this round, "stats": parts of count
  dicts to be summed: the scorer's counts, {"unique_pairs": distinct pairs
  scored in this round} and, with `known` (the earlier rounds' answers, whose
  pairs are not scored again), {"pairs_reused": asked pairs they answered}}.
  The pairs are grouped by digest on disk (SpilledCoGroupByKey under
  `work_dir`)."""

  def __init__(self, scorer, work_dir: str, known=()):
    super().__init__()
    self._scorer = scorer
    self._work_dir = work_dir
    self._known = tuple(known)

  def expand(self, asked):
    groups = {"asked": _each(asked, "KeyByDigest", lambda: beam.Map(_key_by_digest))}
    if self._known:
      groups["known"] = self._known
    split = (groups
             | "JoinEarlierAnswers" >> SpilledCoGroupByKey(
                 self._work_dir, max_run_bytes=_MAX_RUN_BYTES)
             | "SplitKnown" >> beam.ParDo(_SplitKnownFn()).with_outputs(
                 "new", "unique", main="reused"))
    # Each distinct pair goes to the scorer once, under the keys of all the
    # pairs that asked for it (a key per asked pair would be grouped by
    # digest again there, and spilled once more as an answer known to the
    # later rounds); the scorer counts a key as its asked pairs.
    scored = split.new | "ScorePairs" >> ScoreAttribution(
        self._scorer, self._work_dir, rows_of=_keys_asking)
    answered = (scored["scored"], scored["failed"])
    known = _each(answered, "KnownByDigest", lambda: beam.MapTuple(
        lambda keys_digest, outcome: (keys_digest[1], outcome)))
    outcomes = _each(answered, "AnswerEachKey", lambda: beam.FlatMap(_to_each_key))
    # The round's counts, summed per bundle where they are made: the job sums
    # its scorer's counts once (WriteRunRecord), whatever the PCollections.
    zero = {"unique_pairs": 0}
    stats = (scored["stats"], split.unique | "CountPairs" >> SumInBundles())
    if self._known:
      zero["pairs_reused"] = 0
      stats += (split.reused
                | "MarkReused" >> beam.Map(lambda _: _ONE_REUSED)
                | "CountReused" >> SumInBundles(),)
      outcomes += (split.reused,)
    stats += (split.unique.pipeline | "StartStats" >> beam.Create([zero]),)
    return {"outcomes": outcomes, "known": known, "stats": stats}


# ----------------------------------------------------------------------------
# One item's rows and figures from its answers.


def _citation_list(numbers) -> str:
  return ",".join(str(number) for number in numbers)


ALIGNED, NO_JUDGEMENTS = "aligned", "no_judgements"
SENTENCE_COUNT_DIFFERS, CITATION_COUNT_DIFFERS = ("sentence_count_differs",
                                                  "citation_count_differs")
HUMAN_CHECKS = (ALIGNED, NO_JUDGEMENTS, SENTENCE_COUNT_DIFFERS, CITATION_COUNT_DIFFERS)


def human_check(item: CitationItem, plans) -> str:
  """Whether the item's human judgements can be read against its sentences:
  one judged sentence per sentence split here, and per sentence one judged
  citation per used citation (ALCE's judges rated every valid citation: in
  range and among the first --at_most_citations). A splitter that cuts the
  answer otherwise than the judges' does not align."""
  if item.human_recall is None:
    return NO_JUDGEMENTS
  if len(item.human_recall) != len(plans):
    return SENTENCE_COUNT_DIFFERS
  if any(len(scores) != len(plan.used)
         for scores, plan in zip(item.human_citations, plans)):
    return CITATION_COUNT_DIFFERS
  return ALIGNED


def human_figures(human_recall, human_citations) -> Tuple[Optional[float], Optional[float]]:
  """(citation recall, citation precision) of an answer from its judgements, as
  ALCE's analysis of them: recall the mean of the sentences' scores; a judged
  citation counts for precision where its sentence is supported and the
  document supports it fully or partly (score 1 or 2), over the answer's
  judged citations (0 without any); None, None without sentences."""
  if not human_recall:
    return None, None
  counted = [min(score, 1) if supported else 0
             for supported, scores in zip(human_recall, human_citations)
             for score in scores]
  return (sum(human_recall) / len(human_recall),
          sum(counted) / len(counted) if counted else 0)


def assemble_item(item: CitationItem, answers: Dict[tuple, AttributionScore],
                  at_most_citations: Optional[int], scorer: str,
                  units: Optional[List[str]] = None
                  ) -> Tuple[List[CitationSentenceRow], CitationItemRow]:
  """`answers`: {(kind, where): outcome} of the item's pairs (all scored);
  `units`: its answer's units where already split (_split_answer)."""
  output = alce.scored_output(item.output)
  plans = alce.plan_sentences(item, output, at_most_citations, units)
  check = human_check(item, plans)
  aligned = check == ALIGNED
  rows, supported, needed = [], [], []
  n_multi = n_multi_supported = n_overcited = calls = 0
  for plan in plans:
    score = answers[(RECALL, plan.index)] if plan.status == alce.SCORED else None
    ok = score is not None and score.attributable
    calls += score is not None
    flags = None
    # ALCE counts a sentence as multi-citation by its citations as found: the
    # used ones where scored, every one where out of range.
    n_multi += (len(plan.used) if plan.status == alce.SCORED else len(plan.cited)) > 1
    if ok and len(plan.used) > 1:
      n_multi_supported += 1
      flags = []
      for position in range(len(plan.used)):
        calls += 1
        if answers[(ALONE, (plan.index, position))].attributable:
          flags.append(True)
        else:
          calls += 1
          flags.append(not answers[(WITHOUT, (plan.index, position))].attributable)
      n_overcited += flags.count(False)
    supported.append(ok)
    needed.append(flags)
    credit = sum(flags) if flags is not None else int(ok)
    rows.append(CitationSentenceRow(
        item.system_name, item.question, item.item_index, plan.index, plan.sentence,
        plan.hypothesis, _citation_list(plan.cited),
        _citation_list(doc + 1 for doc in plan.used), plan.status, ok,
        None if score is None else score.nli_score,
        "" if flags is None else ",".join("Y" if flag else "N" for flag in flags),
        credit, bool(item.human_recall[plan.index]) if aligned else None,
        _citation_list(item.human_citations[plan.index]) if aligned else "",
        scorer, item.source_file, item.source_line))
  credit, total = alce.item_precision(plans, supported, needed)
  n = len(plans)
  normalized = alce.remove_citations(output)
  em = hit = None
  if item.qa_pairs:
    em, hit = alce.str_em(normalized, item.qa_pairs)
  qampari = (None,) * 6
  if item.qampari and item.answers:
    qampari = tuple(alce.qampari_figures(normalized, item.answers))
  claims_nli = None
  if item.claims:
    entailed = sum(answers[(CLAIM, index)].attributable
                   for index in range(len(item.claims)))
    claims_nli = entailed / len(item.claims)
    calls += len(item.claims)
  row = CitationItemRow(
      item.system_name, item.question, item.item_index, n, total, sum(supported),
      sum(supported) / n if n else None,
      (credit / total if total > 0 else 0) if n else None,
      n_multi, n_multi_supported, n_overcited, em, hit, *qampari,
      len(item.claims or ()), claims_nli, alce.length(normalized), calls, check,
      *(human_figures(item.human_recall, item.human_citations) if aligned
        else (None, None)),
      item.source_file, item.source_line)
  return rows, row


class _AssembleItemFn(UntypedOutputDoFn):
  """(item id, {"item": [(CitationItem, units)], "answers": [(kind, where,
  outcome)]}) -> its CitationSentenceRows, its CitationItemRow on "items", or its dead
  letter where scoring one of its pairs failed."""

  def __init__(self, at_most_citations: Optional[int], scorer: str):
    self._at_most = at_most_citations
    self._scorer = scorer

  def process(self, grouped):
    _, groups = grouped
    ((item, units),) = groups["item"]
    answers = {(kind, where): outcome for kind, where, outcome in groups["answers"]}
    failure = first_failure(answers.values())
    if failure is not None:
      yield beam.pvalue.TaggedOutput("dead_letter", scoring_failed(
          item.source_file, item.source_line, "output",
          f"item {item.item_index} of system {item.system_name!r}", failure,
          {"system_name": item.system_name, "question": item.question,
           "item_index": item.item_index}))
      return
    rows, row = assemble_item(item, answers, self._at_most, self._scorer, units)
    yield from rows
    yield beam.pvalue.TaggedOutput("items", row)


def _by_item(keyed_outcome):
  (key, kind, where, _), outcome = keyed_outcome
  return key, (kind, where, outcome)


class ScoreCitations(beam.PTransform):
  """PCollection[CitationItem] -> {"sentences": PCollection[CitationSentenceRow],
  "items": PCollection[CitationItemRow], "dead_letter": PCollection[DeadLetter]
  of items one of whose pairs could not be scored, "stats": PCollection[dict] of
  the scorer's counts over the three rounds (model_calls: distinct pairs sent
  to the model) and pairs_reused (pairs an earlier round had answered)}. Pairs
  and items are grouped on disk, in runs under `work_dir`."""

  def __init__(self, scorer, at_most_citations: Optional[int], work_dir: str):
    super().__init__()
    self._scorer = scorer
    self._at_most = at_most_citations
    self._work_dir = work_dir
    self._name = scorer.describe()["name"]

  def expand(self, items):
    split = items | "SplitAnswers" >> beam.Map(_split_answer)
    recall = ((split | "AskRecall" >> beam.FlatMap(_recall_examples, self._at_most),)
              | "ScoreRecall" >> _ScoreRound(self._scorer, self._work_dir))
    alone = (_each(recall["outcomes"], "AskAlone", lambda: beam.FlatMap(_alone_examples))
             | "ScoreAlone" >> _ScoreRound(self._scorer, self._work_dir,
                                           recall["known"]))
    without = (_each(alone["outcomes"], "AskWithout",
                     lambda: beam.FlatMap(_without_examples))
               | "ScoreWithout" >> _ScoreRound(self._scorer, self._work_dir,
                                               recall["known"] + alone["known"]))
    answers = _each(recall["outcomes"] + alone["outcomes"] + without["outcomes"],
                    "KeyAnswersByItem", lambda: beam.Map(_by_item))
    assembled = ({"item": split | "KeyItems" >> beam.Map(
        lambda split_item: (item_id(split_item[0]), split_item)),
                  "answers": answers}
                 | "GroupByItem" >> SpilledCoGroupByKey(
                     self._work_dir, max_run_bytes=_MAX_RUN_BYTES)
                 | "AssembleItems" >> beam.ParDo(
                     _AssembleItemFn(self._at_most, self._name)).with_outputs(
                         "items", "dead_letter", main="sentences"))
    stats = ((*recall["stats"], *alone["stats"], *without["stats"])
             | "CollectScorerStats" >> beam.Flatten())
    return {"sentences": assembled.sentences, "items": assembled.items,
            "dead_letter": assembled.dead_letter, "stats": stats}
