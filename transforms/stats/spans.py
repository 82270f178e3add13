"""Character-level agreement of predicted hallucination spans with the spans a
human marked (RAGTruth's `labels`, FaithBench's annotations' summary spans:
LabelledItem.spans): precision, recall and F1
of the characters, counted over every item of a set (micro-averaged), so that a
long response weighs by its characters.

Spans are (start, end) character offsets, end exclusive; overlapping or touching
spans of one side count their characters once (FaithBench's annotators'
overlapping spans: their union). `agreement --format ragtruth|faithbench` with
a span scorer (--scorer lettucedetect) reports them (span_agreement).
"""
from typing import Iterable, List, NamedTuple, Optional, Sequence, Tuple

Span = Tuple[int, int]


def merged_spans(spans: Iterable[Sequence[int]]) -> List[Span]:
  """The spans as sorted, disjoint (start, end) intervals; empty ones dropped."""
  merged: List[List[int]] = []
  for start, end in sorted((int(s[0]), int(s[1])) for s in spans):
    if end <= start:
      continue
    if merged and start <= merged[-1][1]:
      merged[-1][1] = max(merged[-1][1], end)
    else:
      merged.append([start, end])
  return [(start, end) for start, end in merged]


def _length(spans: List[Span]) -> int:
  return sum(end - start for start, end in spans)


def overlap_characters(gold: List[Span], predicted: List[Span]) -> int:
  """Characters in both of two lists of disjoint sorted intervals."""
  total, i, j = 0, 0, 0
  while i < len(gold) and j < len(predicted):
    start = max(gold[i][0], predicted[j][0])
    end = min(gold[i][1], predicted[j][1])
    total += max(0, end - start)
    if gold[i][1] < predicted[j][1]:
      i += 1
    else:
      j += 1
  return total


class SpanCounts(NamedTuple):
  """Characters marked by both, by the prediction, by the human: they add up
  over items (and across workers)."""
  overlap: int = 0
  predicted: int = 0
  gold: int = 0

  def __add__(self, other):
    return SpanCounts(self.overlap + other.overlap, self.predicted + other.predicted,
                      self.gold + other.gold)

  def precision(self) -> Optional[float]:
    """Share of predicted characters a human marked; None with none predicted."""
    return self.overlap / self.predicted if self.predicted else None

  def recall(self) -> Optional[float]:
    """Share of marked characters predicted; None with none marked."""
    return self.overlap / self.gold if self.gold else None

  def f1(self) -> Optional[float]:
    """Harmonic mean of precision and recall; 0.0 where both are defined and
    no character overlaps; None where either is undefined."""
    precision, recall = self.precision(), self.recall()
    if precision is None or recall is None:
      return None
    if precision + recall == 0:
      return 0.0
    return 2 * precision * recall / (precision + recall)


def span_counts(gold: Iterable[Sequence[int]],
                predicted: Iterable[Sequence[int]]) -> SpanCounts:
  """SpanCounts of one item: its human spans against the predicted ones."""
  gold, predicted = merged_spans(gold), merged_spans(predicted)
  return SpanCounts(overlap_characters(gold, predicted), _length(predicted),
                    _length(gold))


def span_agreement(counts: SpanCounts) -> dict:
  """agreement.json's `span_agreement`: the characters counted and the
  precision, recall and F1 of them (None where undefined)."""
  return {"characters": counts._asdict(), "precision": counts.precision(),
          "recall": counts.recall(), "f1": counts.f1()}
