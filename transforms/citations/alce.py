"""ALCE's definitions (Gao et al. 2023; princeton-nlp/ALCE eval.py), re-implemented
as plain functions over one item: the answer as scored, its sentences and their
citations, the model inputs of citation recall and precision, and the figures
that need no model (STR-EM / STR-Hit, QAMPARI precision / recall / F1, length).
docs/citations.md lists the oddities of ALCE's code kept here for parity.

    output = scored_output(item.output)               # first line, stripped
    plans = plan_sentences(item, output, at_most_citations=3)
    plan.premise, plan.hypothesis                      # the recall pair
    precision_pairs(item, plan)                        # [(alone, without it)] per citation
"""
import functools
import re
from typing import List, NamedTuple, Optional, Sequence, Tuple

from autoais.models.sentences import sentence_splitter
from autoais.schemas import CitationItem
from autoais.transforms.stats.squad import normalize_answer

# What ALCE removes from an output before anything else.
_END_OF_TURN = "<|im_end|>"
# A citation: "[" and digits. The closing bracket is not part of it: ALCE finds
# "[12" and removes every "]" of the sentence apart.
_CITATION = re.compile(r"\[\d+")
_SPACED_CITATION = re.compile(r" \[\d+")

SCORED, NO_CITATION, OUT_OF_RANGE = "scored", "no_citation", "out_of_range"
QAMPARI_TOP = 5

# The project's splitter (NLTK's punkt, ALCE's own, where its data is installed,
# else syntok), chosen once per worker process.
splitter = functools.lru_cache(maxsize=None)(sentence_splitter)


def format_document(title: str, text: str) -> str:
  """A cited document as the premise shows it."""
  return f"Title: {title}\n{text}"


def scored_output(output: str) -> str:
  """The answer ALCE scores: stripped, cut at its first line break, the
  end-of-turn marker of on-the-fly search outputs removed (in that order, so
  that a marker does not bring back white space)."""
  return output.strip().split("\n")[0].replace(_END_OF_TURN, "")


def remove_citations(text: str) -> str:
  """The text without its citations: " [n" and "[n" dropped, then every " |" and
  every "]" (ALCE's rule, whatever the brackets held)."""
  text = _CITATION.sub("", _SPACED_CITATION.sub("", text))
  return text.replace(" |", "").replace("]", "")


def cited_numbers(sentence: str) -> List[int]:
  """The citation numbers of a sentence as written, in order, repeats kept."""
  return [int(found[1:]) for found in _CITATION.findall(sentence)]


def answer_units(question: str, output: str, qampari: bool) -> List[str]:
  """The units cited and scored: the sentences of the answer, or for QAMPARI
  its comma-separated list items, each prefixed by the question and a space
  (the trailing white space, then full stops, then commas trimmed first)."""
  if qampari:
    items = output.rstrip().rstrip(".").rstrip(",").split(",")
    return [f"{question} {item.strip()}" for item in items]
  return splitter().split(output)


class SentencePlan(NamedTuple):
  """One unit of an answer and what citation recall asks of it."""
  index: int
  sentence: str
  hypothesis: str
  cited: Tuple[int, ...]  # the numbers as written
  used: Tuple[int, ...]  # 0-based indexes of the documents scored
  status: str  # SCORED / NO_CITATION / OUT_OF_RANGE
  premise: Optional[str]  # the used documents joined by line breaks


def plan_sentences(item: CitationItem, output: str, at_most_citations: Optional[int],
                   units: Optional[List[str]] = None) -> List[SentencePlan]:
  """The plans of the answer's units (`units`: answer_units of the output,
  where already split)."""
  if units is None:
    units = answer_units(item.question, output, item.qampari)
  plans = []
  for index, sentence in enumerate(units):
    hypothesis = remove_citations(sentence).strip()
    cited = tuple(cited_numbers(sentence))
    # ALCE's range test is `n - 1 >= len(docs)` over every citation, before the
    # cut to the first `at_most_citations`: "[0]" passes it and, as index -1,
    # cites the last document (with no documents, it is out of range here).
    if not cited:
      plans.append(SentencePlan(index, sentence, hypothesis, cited, (), NO_CITATION, None))
      continue
    if any(number - 1 >= len(item.docs) for number in cited) or not item.docs:
      plans.append(SentencePlan(index, sentence, hypothesis, cited, (), OUT_OF_RANGE,
                                None))
      continue
    kept = cited if at_most_citations is None else cited[:at_most_citations]
    used = tuple((number - 1) % len(item.docs) for number in kept)
    premise = "\n".join(item.docs[doc] for doc in used)
    plans.append(SentencePlan(index, sentence, hypothesis, cited, used, SCORED, premise))
  return plans


def precision_pairs(item: CitationItem, plan: SentencePlan) -> List[Tuple[str, str]]:
  """For a sentence with several used citations, per citation: (the premise of
  that document alone, the premise of the others: the used list without its
  first occurrence of that document)."""
  pairs = []
  for doc in plan.used:
    others = list(plan.used)
    others.remove(doc)
    pairs.append((item.docs[doc], "\n".join(item.docs[other] for other in others)))
  return pairs


def item_precision(plans: Sequence[SentencePlan], supported: Sequence[bool],
                   needed: Sequence[Optional[List[bool]]]) -> Tuple[int, int]:
  """(needed citations, citations) of an answer: a single-citation sentence
  adds 1 if supported; a multi-citation one adds its needed citations if
  supported, else 0; a sentence not scored adds nothing."""
  credit = total = 0
  for plan, ok, flags in zip(plans, supported, needed):
    total += len(plan.used)
    if flags is not None:
      credit += sum(flags)
    else:
      credit += int(ok)
  return credit, total


# ----------------------------------------------------------------------------
# Figures without a model (on the output with its citations removed).


def str_em(output: str, qa_pairs: List[List[str]]) -> Tuple[float, bool]:
  """(share of QA pairs one of whose short answers occurs in the output, all
  do): normalised substring tests, as ALCE's STR-EM (not whole words)."""
  context = normalize_answer(output)
  found = [any(normalize_answer(answer) in context for answer in short_answers)
           for short_answers in qa_pairs]
  share = sum(found) / len(found)
  return share, share == 1


class QampariFigures(NamedTuple):
  num_preds: int
  precision: float
  recall: float
  recall_top5: float
  f1: float
  f1_top5: float


def _f1(precision: float, recall: float) -> float:
  return 0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def qampari_figures(output: str, answers: List[List[str]]) -> QampariFigures:
  """ALCE's QAMPARI figures of one answer: its comma-separated predictions
  (normalised, empty ones dropped) against the gold answers' aliases."""
  items = output.rstrip().rstrip(".").rstrip(",").split(",")
  predictions = [normalize_answer(item.strip()) for item in items]
  predictions = [p for p in predictions if p]
  gold = [[normalize_answer(alias) for alias in aliases] for aliases in answers]
  every_alias = {alias for aliases in gold for alias in aliases}
  precision = (sum(p in every_alias for p in predictions) / len(predictions)
               if predictions else 0)
  hits = sum(any(alias in predictions for alias in aliases) for aliases in gold)
  recall = hits / len(gold)
  recall_top5 = min(QAMPARI_TOP, hits) / min(QAMPARI_TOP, len(gold))
  return QampariFigures(len(predictions), precision, recall, recall_top5,
                        _f1(precision, recall), _f1(precision, recall_top5))


def length(output: str) -> int:
  return len(output.split())
