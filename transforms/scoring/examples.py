"""The model inputs of attributed answers and claims (SPEC 5.2), and the key
of one input (`example_digest`)."""
import hashlib
from typing import Optional

from autoais.schemas import QA_HYPOTHESIS, AttributionExample
from autoais.transforms.corpus.passages import ParsedPassage, nli_premise, reference_premise


def qa_hypothesis(question: str, answer: str) -> str:
  return QA_HYPOTHESIS.format(question=question, answer=answer)


def qa_example(question: str, answer: str, passage: ParsedPassage,
               reference: bool = False) -> AttributionExample:
  """The AutoAIS example of an attributed answer (SPEC 5.2); with `reference`
  (`--decision decode`), its premise as the Attributed QA script builds it."""
  if passage.title is None:
    searchable = passage.text
  else:
    searchable = f"{passage.title} {passage.headings} {passage.text}"
  premise = reference_premise(passage) if reference else nli_premise(passage)
  return AttributionExample(premise, qa_hypothesis(question, answer), answer, searchable)


def claim_example(evidence: str, claim: str) -> AttributionExample:
  """The claim-level input (SPEC 5.2): premise = evidence, hypothesis = claim."""
  return AttributionExample(evidence, claim, claim, evidence)


def example_digest(premise: str, hypothesis: str, question: Optional[str] = None) -> bytes:
  """The key of one (premise, hypothesis) pair, and of the question apart
  (AttributionExample.question) where an example has one: for deduplication
  within a run and for the score cache across runs. An example without a
  question keeps the key it always had (the cache's entries stay valid); one
  with a question gets a key of its own, so that two examples with the same
  pair and different questions never share a score."""
  digest = hashlib.blake2b(digest_size=16)
  for part in (premise, hypothesis):
    digest.update(part.encode("utf-8"))
    digest.update(b"\0")
  if question is not None:
    digest.update(b"\1question\0")
    digest.update(question.encode("utf-8"))
    digest.update(b"\0")
  return digest.digest()


def digest_of(example: AttributionExample) -> bytes:
  """example_digest of an example: its pair and its question."""
  return example_digest(example.premise, example.hypothesis, example.question)
