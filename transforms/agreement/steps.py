"""agreement's scoring step: each labelled item's premise (or premises: WiCE's
chunks) scored once by the scorer, and made one AgreementRow with the human
label beside the decision.
"""
import hashlib
import json
from typing import Iterable, List, NamedTuple, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from autoais.schemas import (REJECTED, AgreementRow, AttributionScore, DeadLetter, LabelledItem,
                             ScoringFailure, SpanRow)
from autoais.transforms.io.spilled_groups import SpilledGroupByKey
from autoais.transforms.stats.spans import SpanCounts, span_counts
from autoais.transforms.scoring.attribution import (ScoreAttribution, first_failure,
                                            scoring_failed)

# The input roles: the set measured and the set a threshold is calibrated on.
INPUT, CALIBRATION = "input", "calibration"


def premise_digest(premises: Iterable[str]) -> str:
  digest = hashlib.blake2b(digest_size=16)
  for premise in premises:
    digest.update(premise.encode("utf-8"))
    digest.update(b"\0")
  return digest.hexdigest()


def agreement_row(chunks: List[Tuple[LabelledItem, AttributionScore]]) -> AgreementRow:
  """One item's row from its scored premise chunks (one, except WiCE): the max
  score, attributable if any chunk is."""
  chunks = sorted(chunks, key=lambda chunk: (chunk[0].source_file, chunk[0].source_line))
  item = chunks[0][0]
  scores = [score for _, score in chunks]
  return AgreementRow(
      item.group, item.secondary_group, item.item_id,
      premise_digest(chunk.example.premise for chunk, _ in chunks),
      item.example.hypothesis, item.human_label, item.human_attributable,
      max(score.nli_score for score in scores),
      "Y" if any(score.attributable for score in scores) else "N", None,
      len(chunks), sum(score.n_windows for score in scores),
      any(score.truncated for score in scores), item.source_file, item.source_line)


def span_rows(role: str, chunks: List[Tuple[LabelledItem, AttributionScore]],
              span_labels: bool = False):
  """(role, SpanRow) of an item whose scores carry spans, under the row's
  source: the spans of the chunk whose score is the row's (the highest); with
  `span_labels`, the human's spans beside them."""
  chunks = sorted(chunks, key=lambda chunk: (chunk[0].source_file, chunk[0].source_line))
  first, best = chunks[0][0], max(chunks, key=lambda chunk: chunk[1].nli_score)
  if best[1].spans is not None:
    from autoais.models.lettucedetect import checked_text  # pylint: disable=import-outside-toplevel
    yield role, SpanRow(first.source_file, first.source_line, first.item_id,
                        checked_text(best[0].example)[1], list(best[1].spans),
                        list(first.spans) if span_labels else None)


def human_span_counts(row: SpanRow) -> SpanCounts:
  """The characters of a row's spans against those a human marked (see
  transforms/stats/spans.py)."""
  return span_counts(row.human_spans or (), row.spans)


def _scoring_failed(item: LabelledItem, failure: ScoringFailure, what: str) -> DeadLetter:
  return scoring_failed(item.source_file, item.source_line, None, what, failure,
                        {"item_id": item.item_id})


class RoleItem(NamedTuple):
  """An item to score and the input it belongs to (INPUT or CALIBRATION)."""
  role: str
  item: LabelledItem


class _DeadLetterFailedItemsFn(beam.DoFn):
  """(RoleItem, ScoringFailure) -> the item's DeadLetter, in its role's
  output: a scorer (a hosted model) refused it or kept failing."""

  def process(self, keyed_failure):
    (role, item), failure = keyed_failure
    yield beam.pvalue.TaggedOutput(role, _scoring_failed(item, failure, "the item"))


class _KeepFirstAnswerFn(beam.DoFn):
  """((role, system, question), [LabelledItem, ...]) -> (role, item) of the
  first answer (the least (source_file, source_line)); each item of a later
  one is its role's DeadLetter (rejected, duplicate_answer)."""

  def process(self, grouped):
    (role, _, _), items = grouped
    items = sorted(items, key=lambda item: (item.source_file, item.source_line,
                                            item.item_id))
    kept_file, kept_line = items[0].source_file, items[0].source_line
    for item in items:
      if (item.source_file, item.source_line) == (kept_file, kept_line):
        yield role, item
        continue
      yield beam.pvalue.TaggedOutput(role, DeadLetter(
          item.source_file, item.source_line, REJECTED, "duplicate_answer", "question",
          f"{item.source_file}:{item.source_line}: field 'question': item "
          f"{item.item_id!r}: system {item.group!r} already answered this question at "
          f"{kept_file}:{kept_line}; the first answer is kept",
          json.dumps({"item_id": item.item_id, "system": item.group,
                      "question": item.question, "claim": item.example.hypothesis},
                     ensure_ascii=False)))


class KeepFirstAnswers(beam.PTransform):
  """PCollection[(role, LabelledItem)] -> {"items": PCollection[(role, item)],
  "dead_letter": {role: PCollection[DeadLetter]}}: of the answers of one system
  to one question (an item's `group` and `question`), the first (by file, then
  line) is kept and each item of a later one is rejected, as `autoais claims`
  keeps the first answer. ExpertQA's rand_val and domain_val are two splits of
  the same answers: read together, 507 of their labelled claims were counted
  twice. Grouped through runs under `work_dir`."""

  def __init__(self, work_dir: str, roles: Tuple[str, ...]):
    super().__init__()
    self._work_dir = work_dir
    self._roles = roles

  def expand(self, items):
    kept = (items
            | "KeyByAnswer" >> beam.MapTuple(
                lambda role, item: ((role, item.group, item.question), item))
            | "GroupAnswers" >> SpilledGroupByKey(self._work_dir)
            | "KeepFirstAnswer" >> beam.ParDo(_KeepFirstAnswerFn()).with_outputs(
                *self._roles, main="items"))
    return {"items": kept.items, "dead_letter": {role: kept[role] for role in self._roles}}


class _CombineChunksFn(beam.DoFn):
  """((role, item_id), [(item, score or ScoringFailure), ...]) -> (role,
  AgreementRow); chunks of one id that disagree on the claim or the label are
  rejected, each; an item one of whose chunks could not be scored is rejected,
  every chunk (its max would be over the others only)."""

  def process(self, grouped):
    (role, item_id), chunks = grouped
    chunks = list(chunks)
    failure = first_failure(score for _, score in chunks)
    if failure is not None:
      for item, _ in chunks:
        yield beam.pvalue.TaggedOutput(role, _scoring_failed(
            item, failure, f"a premise chunk of item {item_id!r}"))
      return
    first = chunks[0][0]
    if any((item.example.hypothesis, item.human_label) !=
           (first.example.hypothesis, first.human_label) for item, _ in chunks):
      for item, _ in chunks:
        yield beam.pvalue.TaggedOutput(role, DeadLetter(
            item.source_file, item.source_line, REJECTED, "inconsistent_chunks",
            "item_id", f"{item.source_file}:{item.source_line}: field 'item_id': "
            f"the chunks of item {item_id!r} differ in claim or label",
            json.dumps({"item_id": item_id, "claim": item.example.hypothesis,
                        "label": item.human_label}, ensure_ascii=False)))
      return
    yield role, agreement_row(chunks)
    for spans in span_rows(role, chunks):
      yield beam.pvalue.TaggedOutput("spans", spans)


class ScoreItems(beam.PTransform):
  """PCollection[(role, LabelledItem)] -> {"rows": PCollection[(role,
  AgreementRow)], "dead_letter": {role: PCollection[DeadLetter]}, "stats": scorer
  counts, "spans": PCollection[(role, SpanRow)] (span_rows)}: each premise
  scored once by the scorer; multi-premise items (WiCE) grouped by id (through runs on disk) and maxed; a model's examples are
  grouped in runs under `work_dir`."""

  def __init__(self, scorer, multi_premise: bool, roles: Tuple[str, ...],
               work_dir: str, span_labels: bool = False):
    super().__init__()
    self._span_labels = span_labels
    self._scorer = scorer
    self._work_dir = work_dir
    self._multi_premise = multi_premise
    self._roles = roles

  def expand(self, items):
    scores = (items
              | "KeyExamples" >> beam.MapTuple(
                  lambda role, item: (RoleItem(role, item), item.example))
              | "ScoreAttribution" >> ScoreAttribution(self._scorer, self._work_dir))
    if not self._multi_premise:
      rows = scores["scored"] | "MakeRows" >> beam.MapTuple(
          lambda key, score: (key.role, agreement_row([(key.item, score)])))
      labels = self._span_labels
      spans = scores["scored"] | "MakeSpanRows" >> beam.FlatMapTuple(
          lambda key, score: span_rows(key.role, [(key.item, score)], labels))
      failed = scores["failed"] | "DeadLetterFailedItems" >> beam.ParDo(
          _DeadLetterFailedItemsFn()).with_outputs(*self._roles)
      return {"rows": rows, "dead_letter": {role: failed[role] for role in self._roles},
              "stats": scores["stats"], "spans": spans}
    # An item's chunks meet in runs on disk, scores and failures spilled apart
    # where each is made: a Flatten and a GroupByKey would be held whole by the
    # DirectRunner.
    keyed = tuple(
        scores[part] | f"Key{part.title()}ChunksByItem" >> beam.MapTuple(
            lambda key, score: ((key.role, key.item.item_id), (key.item, score)))
        for part in ("scored", "failed"))
    combined = (keyed
                | "GroupChunks" >> SpilledGroupByKey(
                    FileSystems.join(self._work_dir, "chunks"))
                | "CombineChunks" >> beam.ParDo(_CombineChunksFn()).with_outputs(
                    *self._roles, "spans", main="rows"))
    return {"rows": combined.rows,
            "dead_letter": {role: combined[role] for role in self._roles},
            "stats": scores["stats"], "spans": combined.spans}
