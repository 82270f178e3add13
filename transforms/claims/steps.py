"""Claim-level attribution (ExpertQA; SPEC 5.8): the three ways of scoring a
claim against its evidence, and per-system figures. Evidence cleaning and
abstention, shared with `autoais agreement --format expertqa`:
transforms/labelled/expertqa.py.

Scoring follows ExpertQA's auto-attribution scripts (chaitanyamalaviya/ExpertQA,
modeling/auto_attribution/autoais.py: infer_autoais, stretch_nli_rerank),
re-implemented here: the evidence of a claim is its cleaned items joined with
spaces; a claim that cites no evidence is N.

Evidence modes (`--evidence_mode`):

* `concat` (default): one example, the joined evidence; a premise longer than
  the model's input is windowed by the scorer (max over windows);
* `max`: each evidence item scored on its own, the best item decides;
* `rerank`: as `concat`, but where the input is longer than the model's (the
  scorer flags the row `truncated`, as the reference tests the tokenised length
  against 512), the evidence is split into sentences, each sentence is scored,
  and the k = 2 most and k = 2 least entailed sentences, in that order, are
  joined and scored again: the reference's choice of evidence sentences.
  Two details of the reference are kept for parity: a sentence is scored with
  the input `premise: premise: {sentence} hypothesis: {claim} hypothesis:
  {claim}` (the reference wraps the input twice), and with fewer than four
  sentences the chosen ones repeat. Sentences are split at `.`, `!` or `?`
  followed by white space (the reference uses NLTK's Punkt model, which is not
  available offline; abbreviations such as "Dr." may split differently), and
  ties in the ordering go to the earlier sentence.
"""
import array
import re
from typing import List, Optional, Tuple

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystems import FileSystems

from autoais.schemas import (AttributionScore, ClaimInput, ClaimRow, ClaimsSystemRow,
                     DeadLetter, ScoringFailure)
from autoais.transforms.io.spilled_groups import SpilledGroupByKey
from autoais.transforms.labelled.expertqa import clean_text
from autoais.transforms.scoring.attribution import (ScoreAttribution, first_failure,
                                            score_columns, scoring_failed)
from autoais.transforms.scoring.examples import claim_example
from autoais.transforms.stats.agreement import AgreementCounts, agreement_statistics
from autoais.transforms.stats.metrics import (BootstrapWeights, percent_of, written,
                                               written_interval)

CONCAT, MAX, RERANK = "concat", "max", "rerank"
EVIDENCE_MODES = (CONCAT, MAX, RERANK)
RERANK_K = 2
# The sort key of claim rows: answers together, claims in answer order.
CLAIM_KEY = ("system_name", "question", "source_file", "answer_line", "claim_index",
             "source_line")

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_HUMAN_LABELS = {"complete": "Y", "partial": "N", "incomplete": "N", "missing": "N"}


def human_label(support: Optional[str]) -> Optional[str]:
  """Y for support Complete, N for Partial / Incomplete / Missing, None for
  anything else (N/A, absent): those claims leave the agreement figures."""
  if support is None:
    return None
  return _HUMAN_LABELS.get(support.strip().lower())


def split_sentences(text: str) -> List[str]:
  return [sentence for sentence in _SENTENCE_END.split(text.strip()) if sentence]


def rerank_choice(nli_scores: List[float], k: int = RERANK_K) -> List[int]:
  """Sentence indexes the reference keeps: the k most entailed, then the k least
  (ordered by P("0") ascending, i.e. nli_score descending; ties by index)."""
  order = sorted(range(len(nli_scores)), key=lambda i: (-nli_scores[i], i))
  return order[:k] + order[-k:]


def concat_premise(claim: ClaimInput) -> Optional[str]:
  if not claim.evidence:
    return None
  return " ".join(clean_text(item) for item in claim.evidence)


def claim_row(claim: ClaimInput, premise: Optional[str],
              score: Optional[AttributionScore], reranked: bool,
              scorer: str) -> ClaimRow:
  nli_score, auto_ais, n_windows, truncated = score_columns(score)
  return ClaimRow(
      claim.system_name, claim.question, claim.claim_index, clean_text(claim.claim),
      premise, len(claim.evidence), claim.support, human_label(claim.support),
      claim.abstained, auto_ais, nli_score, n_windows, truncated, reranked, scorer,
      claim.answer_line, claim.source_file, claim.source_line)


def _claim_id(claim: ClaimInput) -> Tuple[str, int, str, int]:
  return (claim.source_file, claim.source_line, claim.system_name, claim.claim_index)


def _concat_example(claim: ClaimInput):
  premise = concat_premise(claim)
  example = None if premise is None else claim_example(premise, clean_text(claim.claim))
  return (claim, premise), example


def _item_examples(claim: ClaimInput):
  if not claim.evidence:
    yield (claim, None, -1), None
    return
  hypothesis = clean_text(claim.claim)
  for index, item in enumerate(claim.evidence):
    premise = clean_text(item)
    yield (claim, premise, index), claim_example(premise, hypothesis)


def _item_rank(item):
  """A failed item first (the least failure), then by score, the earlier on ties."""
  index, _, _, outcome = item
  if isinstance(outcome, ScoringFailure):
    return (0, outcome, index)
  return (1, -(outcome.nli_score if outcome else -1.0), index)


def _key_item_by_claim(key, outcome):
  """((claim, premise, index), score or ScoringFailure) -> (claim id, (index,
  claim, premise, outcome))."""
  claim, premise, index = key
  return _claim_id(claim), (index, claim, premise, outcome)


def _best_item(claim_items):
  """A claim's items -> ((claim, premise), outcome) of the best-scored item, the
  earlier on ties; a failed item, if any (its claim is dead-lettered)."""
  _, items = claim_items
  _, claim, premise, outcome = min(items, key=_item_rank)
  return (claim, premise), outcome


class _RouteLongEvidenceFn(beam.DoFn):
  """Rerank mode: rows whose input fit the model (or whose scoring failed) are
  final; the others go on to sentence reranking."""

  def process(self, keyed_score):
    (claim, premise), score = keyed_score
    if isinstance(score, AttributionScore) and score.truncated:
      yield beam.pvalue.TaggedOutput("long", (claim, premise))
    else:
      yield keyed_score


def _claim_scoring_failed(claim: ClaimInput, failure: ScoringFailure) -> DeadLetter:
  return scoring_failed(
      claim.source_file, claim.source_line, "evidence",
      f"claim {claim.claim_index} of system {claim.system_name!r}", failure,
      {"system_name": claim.system_name, "question": claim.question,
       "claim_index": claim.claim_index, "claim": claim.claim})


def _dead_letter_failed(key, failure: ScoringFailure) -> DeadLetter:
  """((claim, premise), failure) -> the claim's dead letter."""
  return _claim_scoring_failed(key[0], failure)


def _key_sentence_by_claim(key, outcome):
  """((claim, sentence index), score or ScoringFailure) -> (claim id, (index,
  claim, outcome))."""
  claim, index = key
  return _claim_id(claim), (index, claim, outcome)


class _RateClaimsFn(beam.DoFn):
  """((claim, premise), score or ScoringFailure) -> its ClaimRow, or its dead
  letter where scoring its evidence failed."""

  def __init__(self, scorer: str):
    self._scorer = scorer

  def process(self, keyed_outcome):
    (claim, premise), outcome = keyed_outcome
    if isinstance(outcome, ScoringFailure):
      yield beam.pvalue.TaggedOutput("dead_letter", _claim_scoring_failed(claim, outcome))
    else:
      yield claim_row(claim, premise, outcome, False, self._scorer)


def _sentence_examples(claim_and_premise):
  claim, premise = claim_and_premise
  hypothesis = clean_text(claim.claim)
  for index, sentence in enumerate(split_sentences(premise)):
    # The reference's input for one sentence, wrapped twice (module docstring).
    yield (claim, index), claim_example(
        f"premise: {sentence} hypothesis: {hypothesis}", hypothesis)


class _ChooseSentencesFn(beam.DoFn):
  """A claim's scored sentences -> the reranked example; a claim one of whose
  sentences could not be scored -> ((claim, None), failure) on "failed" (a
  choice among the other sentences would not be the reference's)."""

  def process(self, grouped):
    _, scored = grouped
    scored = list(scored)
    failure = first_failure(outcome for _, _, outcome in scored)
    if failure is None:
      yield _reranked_example(scored)
    else:
      yield beam.pvalue.TaggedOutput("failed", ((scored[0][1], None), failure))


def _reranked_example(scored):
  scored = sorted(scored, key=lambda item: item[0])
  claim = scored[0][1]
  sentences = split_sentences(concat_premise(claim))
  chosen = rerank_choice([score.nli_score for _, _, score in scored])
  premise = " ".join(sentences[index] for index in chosen)
  return (claim, premise), claim_example(premise, clean_text(claim.claim))


class ScoreClaims(beam.PTransform):
  """PCollection[ClaimInput] -> {"rows": PCollection[ClaimRow] (in rerank mode a
  tuple of two, for WriteMergedRows to spill apart), "dead_letter":
  PCollection[DeadLetter] of the claims left out because scoring any of their
  evidence failed (a hosted model refused it, or kept failing), "stats":
  PCollection[dict] of the scorer's counts}, in one of EVIDENCE_MODES; a
  model's examples are grouped in runs under `work_dir`."""

  def __init__(self, scorer, work_dir: str, evidence_mode: str = CONCAT):
    super().__init__()
    if evidence_mode not in EVIDENCE_MODES:
      raise ValueError(f"evidence mode {evidence_mode!r}: choose from "
                       f"{', '.join(EVIDENCE_MODES)}")
    self._scorer = scorer
    self._work_dir = work_dir
    self._mode = evidence_mode
    self._name = scorer.describe()["name"]

  def expand(self, claims):
    name = self._name
    if self._mode == MAX:
      scored = (claims
                | "ExpandEvidenceItems" >> beam.FlatMap(_item_examples)
                | "ScoreEvidenceItems" >> ScoreAttribution(self._scorer, self._work_dir))
      # A claim's items meet in runs on disk, scores and failures spilled apart
      # where they are made: the FnApiRunner holds a Flatten's inputs, and a
      # combine's shuffle, whole.
      items = tuple(scored[part] | f"Key{part.title()}ItemsByClaim" >> beam.MapTuple(
          _key_item_by_claim) for part in ("scored", "failed"))
      rated = (items
               | "GroupItemsByClaim" >> SpilledGroupByKey(
                   FileSystems.join(self._work_dir, "claim_items"))
               | "KeepBestItem" >> beam.Map(_best_item)
               | "RateClaims" >> beam.ParDo(_RateClaimsFn(name)).with_outputs(
                   "dead_letter", main="rows"))
      return {"rows": rated.rows, "dead_letter": rated.dead_letter,
              "stats": scored["stats"]}
    scored = (claims
              | "JoinEvidence" >> beam.Map(_concat_example)
              | "ScoreJoinedEvidence" >> ScoreAttribution(self._scorer, self._work_dir))
    # The rows come from the scores alone, not from a Flatten of scores and
    # failures: the FnApiRunner holds a Flatten's inputs whole, and the rows
    # are spilled where they are made (WriteMergedRows).
    failed = scored["failed"] | "DeadLetterFailedClaims" >> beam.MapTuple(
        _dead_letter_failed)
    if self._mode == CONCAT:
      rows = scored["scored"] | "RateClaims" >> beam.MapTuple(
          lambda key, score: claim_row(key[0], key[1], score, False, name))
      return {"rows": rows, "dead_letter": failed, "stats": scored["stats"]}
    routed = scored["scored"] | "RouteLongEvidence" >> beam.ParDo(
        _RouteLongEvidenceFn()).with_outputs("long", main="fits")
    sentences = (routed.long
                 | "SplitEvidenceSentences" >> beam.FlatMap(_sentence_examples)
                 | "ScoreEvidenceSentences" >> ScoreAttribution(self._scorer,
                                                                  self._work_dir))
    # A claim's sentence scores and failures meet in runs on disk, each spilled
    # where it is made (the FnApiRunner holds a Flatten's inputs, and a
    # GroupByKey's, whole).
    sentence_outcomes = tuple(
        sentences[part] | f"Key{part.title()}SentencesByClaim" >> beam.MapTuple(
            _key_sentence_by_claim) for part in ("scored", "failed"))
    chosen = (sentence_outcomes
              | "GroupSentencesByClaim" >> SpilledGroupByKey(
                  FileSystems.join(self._work_dir, "claim_sentences"))
              | "ChooseSentences" >> beam.ParDo(_ChooseSentencesFn()).with_outputs(
                  "failed", main="examples"))
    reranked = chosen.examples | "ScoreChosenSentences" >> ScoreAttribution(
        self._scorer, self._work_dir)
    fitting = routed.fits | "RateFittingClaims" >> beam.MapTuple(
        lambda key, score: claim_row(key[0], key[1], score, False, name))
    rated = reranked["scored"] | "RateRerankedClaims" >> beam.MapTuple(
        lambda key, score: claim_row(key[0], key[1], score, True, name))
    # Two PCollections, not a Flatten of them: WriteMergedRows spills each where
    # it is made. The dead letters (a claim each, the few whose scoring failed)
    # are flattened.
    rows = (fitting, rated)
    dead = ((failed,
             reranked["failed"] | "DeadLetterFailedReranks" >> beam.MapTuple(
                 _dead_letter_failed),
             chosen.failed | "DeadLetterFailedSentences" >> beam.MapTuple(
                 _dead_letter_failed))
            | "MergeClaimDeadLetters" >> beam.Flatten())
    stats = ((scored["stats"], sentences["stats"], reranked["stats"])
             | "CollectScorerStats" >> beam.Flatten())
    return {"rows": rows, "dead_letter": dead, "stats": stats}


# ----------------------------------------------------------------------------
# Per-system figures.

_HUMAN_CODES = {None: -1, "N": 0, "Y": 1}


class ClaimOutcomes:
  """One system's kept claims as compact columns, answers numbered in order."""

  def __init__(self, system_name: str):
    self.system_name = system_name
    self.answer = array.array("i")  # the answer ordinal of each claim
    self.attributable = array.array("b")
    self.has_evidence = array.array("b")
    self.human = array.array("b")  # -1 no label, 0 N, 1 Y
    self.score = array.array("d")  # nli_score, 0 without evidence
    self.abstained = array.array("b")  # per answer

  def add(self, new_answer: bool, attributable: bool, has_evidence: bool,
          human: Optional[str], nli_score: Optional[float], abstained: bool) -> None:
    if new_answer or not self.abstained:
      self.abstained.append(abstained)
    elif abstained:
      self.abstained[-1] = 1
    self.answer.append(len(self.abstained) - 1)
    self.attributable.append(attributable)
    self.has_evidence.append(has_evidence)
    self.human.append(_HUMAN_CODES[human])
    self.score.append(0.0 if nli_score is None else nli_score)


def _macro_micro(per_answer_yes: np.ndarray, per_answer_claims: np.ndarray,
                 keep: np.ndarray) -> Tuple[Optional[float], Optional[float]]:
  """Macro and micro AutoAIS over the kept answers, in percent (micro a ratio of
  counts, macro a mean of ratios: transforms/stats/metrics.py's rounding)."""
  if not keep.any():
    return None, None
  macro = written(float(np.mean(per_answer_yes[keep] / per_answer_claims[keep])), 100)
  micro = percent_of(int(per_answer_yes[keep].sum()), int(per_answer_claims[keep].sum()))
  return macro, micro


def claims_system_row(outcomes: ClaimOutcomes, bootstrap_samples: int,
                      seed: int) -> ClaimsSystemRow:
  answer = np.frombuffer(outcomes.answer, dtype=np.int32)
  attributable = np.frombuffer(outcomes.attributable, dtype=np.int8).astype(bool)
  has_evidence = np.frombuffer(outcomes.has_evidence, dtype=np.int8).astype(bool)
  human = np.frombuffer(outcomes.human, dtype=np.int8)
  score = np.frombuffer(outcomes.score, dtype=np.float64)
  abstained = np.frombuffer(outcomes.abstained, dtype=np.int8).astype(bool)
  n_answers = len(abstained)
  claims = np.bincount(answer, minlength=n_answers).astype(np.float64)
  yes = np.bincount(answer, weights=attributable, minlength=n_answers)
  macro, micro = _macro_micro(yes, claims, np.ones(n_answers, dtype=bool))
  macro_kept, micro_kept = _macro_micro(yes, claims, ~abstained)
  # Two uses: drawn twice rather than cached (a cache of samples x answers
  # doubles, 66 MB for a system of 8,299 answers, was the peak of a million
  # claims).
  bootstrap = BootstrapWeights(n_answers, bootstrap_samples, seed, cache=False)
  (macro_ci,) = bootstrap.intervals([yes / claims])
  (micro_ci,) = bootstrap.ratio_intervals([(yes, claims)])

  labelled = human >= 0
  if labelled.any():
    counts = AgreementCounts()
    counts.add_arrays(human[labelled] == 1, attributable[labelled], score[labelled],
                      np.ones(int(labelled.sum()), dtype=bool))
    stats = agreement_statistics(counts)
    agreement = tuple(written(stats[name], 100) for name in (
        "human_ais", "accuracy", "balanced_accuracy")) + tuple(
            written(stats[name]) for name in ("cohen_kappa", "roc_auc"))
  else:
    agreement = (None,) * 5
  return ClaimsSystemRow(
      outcomes.system_name, n_answers, len(answer), int((~has_evidence).sum()),
      int(abstained.sum()), macro, *written_interval(macro_ci), micro,
      *written_interval(micro_ci), macro_kept, micro_kept, int(labelled.sum()),
      *agreement)
