"""Training examples of `autoais training-data` (SPEC 5.12): a labelled item in
the input form of the family it will train, its split and its key.

* Family forms: t5 is TRUE's text-to-text form (`premise: {premise} hypothesis:
  {hypothesis}`, targets "1" / "0": what `--scorer t5` reads and what it
  renormalises over); nli-classifier is the (premise, hypothesis) pair and a
  label 1 / 0 (what `--scorer nli-classifier` encodes as a text pair).
* Splits: a hash of the item's question (the claim where the item answers no
  question) as split_key spells it, with --seed: every item of one question
  falls in one split, whatever the order, the runner or the spelling.
* Duplicates: an example is its digest, blake2b-128 of the family's input and
  the label; the split tables are sorted by it, and only the first row of a
  digest (by source file and line) is kept.
"""
import hashlib
import unicodedata
from typing import Optional, Tuple

from autoais.schemas import LabelledItem, TrainingExample

T5_FAMILY = "t5"
NLI_CLASSIFIER_FAMILY = "nli-classifier"
TARGETS = {True: "1", False: "0"}


def t5_inputs(premise: str, hypothesis: str) -> str:
  """TRUE's input text (SPEC 5.2)."""
  return f"premise: {premise} hypothesis: {hypothesis}"


def split_key(question: str) -> str:
  """The question as the split reads it: NFKC-normalised and case folded,
  punctuation and invisible format characters (zero-width spaces, soft
  hyphens, byte-order marks) dropped, whitespace collapsed. The same question
  is written many ways across sources (composed or decomposed accents,
  full-width "？", "X?" and "X ?"): spelt any of them, it falls in one split,
  where the raw text put them apart and a test question leaked into train."""
  folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", question).casefold())
  kept = "".join(character for character in folded
                 if not unicodedata.category(character).startswith(("P", "Cf")))
  return " ".join(kept.split())


def split_of(question: str, seed: int, fractions: Tuple[float, float]) -> str:
  """train, validation or test by a hash of the question (`fractions`: the
  shares of validation and test)."""
  digest = hashlib.blake2b(f"{seed}\0{split_key(question)}".encode("utf-8"),
                           digest_size=8).digest()
  point = int.from_bytes(digest, "big") / float(1 << 64)
  validation, test = fractions
  if point < test:
    return "test"
  if point < test + validation:
    return "validation"
  return "train"


def example_key(family: str, premise: str, hypothesis: str, label: int) -> str:
  digest = hashlib.blake2b(digest_size=16)
  for part in (family, premise, hypothesis, str(label)):
    digest.update(part.encode("utf-8"))
    digest.update(b"\0")
  return digest.hexdigest()


def training_example(family: str, split: str, source: str, item_id: str,
                     question: str, premise: str, hypothesis: str, label: bool,
                     hard_negative: bool, source_file: str,
                     source_line: int) -> TrainingExample:
  t5 = family == T5_FAMILY
  return TrainingExample(
      split, example_key(family, premise, hypothesis, int(label)), source, item_id,
      question, premise, hypothesis, t5_inputs(premise, hypothesis) if t5 else None,
      TARGETS[bool(label)] if t5 else None, int(label), hard_negative, source_file,
      source_line)


def item_question(item: LabelledItem) -> str:
  """What an item's split is drawn by: its question, else its claim."""
  return item.question or item.example.hypothesis


def example_of(item: LabelledItem, source: str, family: str, seed: int,
               fractions: Tuple[float, float]) -> TrainingExample:
  question = item_question(item)
  return training_example(family, split_of(question, seed, fractions), source,
                          item.item_id, question, item.example.premise,
                          item.example.hypothesis, item.human_attributable, False,
                          item.source_file, item.source_line)


def negative_rank(seed: int, positive_digest: str, passage_id: str) -> str:
  """The order in which a positive's candidate negatives are taken: a hash, so
  that the passages kept are a sample of the article fixed by --seed."""
  return hashlib.blake2b(f"{seed}\0{positive_digest}\0{passage_id}".encode("utf-8"),
                         digest_size=8).hexdigest()


def hard_negative(positive: TrainingExample, family: str, passage_id: str,
                  premise: str) -> TrainingExample:
  """The negative made of a positive's hypothesis and another passage of its
  article, in the positive's split."""
  return training_example(family, positive.split, positive.source,
                          f"{positive.item_id}#negative:{passage_id}", positive.question,
                          premise, positive.hypothesis, False, True,
                          positive.source_file, positive.source_line)


def parse_input_spec(entry: str, default_format: Optional[str], formats) -> Tuple[str, str]:
  """(format, path or glob) of one --input entry, `FORMAT:PATH` or `PATH` (then
  --format's). A prefix that is no format is part of the path (gs://...)."""
  prefix, colon, rest = entry.partition(":")
  if colon and prefix in formats:
    return prefix, rest
  return default_format, entry
