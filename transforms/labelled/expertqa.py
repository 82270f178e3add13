"""ExpertQA's claim records, shared by `autoais claims` and `autoais agreement
--format expertqa` so that both jobs see the same claims: the reader, and the
cleaning of claim and evidence texts.

    read_expertqa(path)       ExpertQA records: one JSON line per question,
                              {"question", "answers": {system: {"answer_string",
                              "claims": [{"claim_string", "evidence": [...],
                              "support", ...}]}}}

It yields, per claim, a `ClaimInput` or a `DeadLetter` naming the file, the line
and the field (`answers.<system>.claims[<i>].evidence`); a line that is not a
JSON object, or whose question or answers are unusable, is one dead letter. An
answer without claims is an `unmatched` dead letter: it has nothing to score.
Like transforms/io/input_records.py's readers, a bad record never raises. The checks of
a claim's fields (`claim_fields`) also serve the claims job's one-claim-per-line
reader (transforms/claims/readers.py).

Cleaning and abstention follow ExpertQA's auto-attribution scripts
(chaitanyamalaviya/ExpertQA, modeling/auto_attribution/autoais.py:
cleanup_claim_and_evidence; and compute_autoais_score.py: did_abstain),
re-implemented here:

* a claim or evidence text loses its one-digit citation markers `[n]` (with one
  following space); it is then cut at blank lines, and if the first part is a
  URL it is dropped; the parts are joined with spaces. The reference's pattern
  matches one digit only, so `[12]` stays (and a URL after it is kept): kept
  here for parity;
* an answer abstains if its text contains one of the reference's phrases.
"""
import re
from typing import Dict, Iterator, List, NamedTuple, Optional, Tuple, Union

from autoais.schemas import UNMATCHED, ClaimInput, DeadLetter
from autoais.transforms.io.fields import has_surrogates, json_record, rejected, surrogate_field
from autoais.transforms.io.input_records import jsonl_records

_CITATION_MARKER = re.compile(r"\[\d\]\s?")
# The phrases by which the reference recognises an answer that declines to answer.
ABSTENTION_PHRASES = (
    "The context does not", "I don't know", "The context provided does not",
    "The context provided doesn't", "The context doesn't", "not sure if I understand",
    "I'm sorry, but I can't", "The given context does not",
    "I couldn't find any relevant information")
# What every ExpertQA record needs (checked in its first record at launch).
EXPERTQA_FIELDS = ("question", "answers")
# An evidence item that is only a URL, cited or not ("[10] https://...").
_BARE_URL = re.compile(r"\s*(?:\[\d+\]\s*)?https?://\S*\s*")


def usable_text(value) -> Optional[str]:
  """A usable string, or None (missing, not a string, not UTF-8)."""
  if not isinstance(value, str) or has_surrogates(value):
    return None
  return value


def _evidence(value) -> Optional[List[str]]:
  """The evidence list ([] for a missing or null one), or None if malformed."""
  if value is None:
    return []
  if not isinstance(value, list) or not all(
      isinstance(item, str) and not has_surrogates(item) for item in value):
    return None
  return list(value)


# ExpertQA's support labels (N/A: judged, no label); the claims job reads them
# in any case.
SUPPORT_VALUES = ("Complete", "Partial", "Incomplete", "Missing", "N/A")
_SUPPORT_VALUES = tuple(value.lower() for value in SUPPORT_VALUES)


def _support(value) -> Union[Optional[str], bool]:
  """The human support label (None where absent), or False if malformed (not a
  string, or not UTF-8: it is written to the claims table)."""
  if value is None:
    return None
  if usable_text(value) is None:
    return False
  return value.strip() or None


def bad_type_reason(value) -> str:
  return "missing_field" if value is None else "wrong_type"


NOT_UTF8 = ("non_utf8", "bytes that are not UTF-8")


def text_fault(value, message: str) -> Tuple[str, str]:
  """(reason, message) of a field that is not usable text: text holding bytes
  that are not UTF-8 says so (NOT_UTF8); anything else is missing_field or
  wrong_type, with `message`."""
  if isinstance(value, str) and has_surrogates(value):
    return NOT_UTF8
  return bad_type_reason(value), message


def read_expertqa(path: str) -> Iterator[Union[ClaimInput, DeadLetter]]:
  for item in jsonl_records(path):
    if isinstance(item, DeadLetter):
      yield item
      continue
    line, fields = item
    question = usable_text(fields.get("question"))
    if question is None or not question.strip():
      yield rejected(path, line, *text_fault(
          fields.get("question"), "the question is missing, empty or not a string"),
                     json_record(fields), "question")
      continue
    answers = fields.get("answers")
    if not isinstance(answers, dict) or not answers:
      yield rejected(path, line, bad_type_reason(answers),
                     "expected an object of answers by system name",
                     json_record({"question": question, "answers": answers}),
                     "answers")
      continue
    kept: Dict[str, str] = {}  # system name -> the key it was read from
    for system in sorted(answers):
      name = system.strip()
      if name and name in kept:
        # Keys that differ only in white space name one system, which
        # answers a question once.
        yield rejected(path, line, "duplicate_answer",
                       f"system {name!r} already answered this question in this "
                       f"record (key {kept[name]!r}); the first is kept",
                       json_record({"question": question.strip(), "system_name": system}),
                       f"answers.{system}")
        continue
      kept.setdefault(name, system)
      yield from _expertqa_answer(path, line, question.strip(), system,
                                  answers[system])


def _expertqa_answer(path, line, question, system, answer):
  field = f"answers.{system}"
  context = {"question": question, "system_name": system}
  if not system.strip() or has_surrogates(system):
    yield rejected(path, line, *(NOT_UTF8 if system.strip() else (
        "empty_system_name", "the system name is empty")), json_record(context), field)
    return
  if not isinstance(answer, dict):
    yield rejected(path, line, "wrong_type", "expected an answer object",
                   json_record(dict(context, answer=answer)), field)
    return
  answer_string = answer.get("answer_string")
  if answer_string is not None and usable_text(answer_string) is None:
    yield rejected(path, line, *text_fault(answer_string, "expected a string"),
                   json_record(dict(context, answer_string=answer_string)),
                   f"{field}.answer_string")
    return
  claims = answer.get("claims")
  if not isinstance(claims, list):
    yield rejected(path, line, bad_type_reason(claims), "expected a list of claims",
                   json_record(dict(context, claims=claims)), f"{field}.claims")
    return
  if not claims:
    yield DeadLetter(path, line, UNMATCHED, "answer_without_claims",
                     f"{field}.claims",
                     f"{path}:{line}: field '{field}.claims': the answer has no "
                     "claims; nothing to score",
                     json_record(dict(context, answer_string=answer_string)))
    return
  abstained = did_abstain(answer_string or "")
  for index, claim in enumerate(claims):
    claim_field = f"{field}.claims[{index}]"
    record = json_record(dict(context, claim_index=index, claim=claim))
    if not isinstance(claim, dict):
      yield rejected(path, line, "wrong_type", "expected a claim object", record,
                     claim_field)
      continue
    parsed = claim_fields(claim.get("claim_string"), claim.get("evidence"),
                          claim.get("support"))
    if isinstance(parsed, BadField):
      yield rejected(path, line, parsed.reason, parsed.message, record,
                     f"{claim_field}.{parsed.name}")
      continue
    text, evidence, support = parsed
    yield ClaimInput(system.strip(), question, index, text, evidence, support,
                     abstained, line, path, line)


class BadField(NamedTuple):
  name: str
  reason: str
  message: str


def claim_fields(claim, evidence, support, claim_name: str = "claim_string"):
  """(claim, evidence, support), or the BadField at fault."""
  text = usable_text(claim)
  if text is None:
    return BadField(claim_name, *text_fault(claim, "expected the claim, a string"))
  if not text.strip():
    return BadField(claim_name, "empty_claim", "the claim is empty")
  items = _evidence(evidence)
  if items is None:
    unreadable = surrogate_field(evidence, "evidence")
    if unreadable is not None:
      return BadField(unreadable, *NOT_UTF8)
    return BadField("evidence", "wrong_type", "expected a list of strings")
  label = _support(support)
  if label is False:
    return BadField("support", *text_fault(support, "expected a string of UTF-8 text"))
  if label is not None and label.lower() not in _SUPPORT_VALUES:
    # A label misspelt would otherwise leave the agreement figures unseen.
    return BadField("support", "invalid_value", f"support must be "
                    f"{', '.join(SUPPORT_VALUES)} (any case) or absent, found {label!r}")
  return text, items, label


# ----------------------------------------------------------------------------
# Cleaning and abstention.


def clean_text(raw: str) -> str:
  """A claim or evidence text as the reference cleans it (module docstring)."""
  parts = _CITATION_MARKER.sub("", raw).split("\n\n")
  if parts[0].startswith("http"):
    parts = parts[1:]
  return " ".join(parts)


def did_abstain(answer: str) -> bool:
  return any(phrase in answer for phrase in ABSTENTION_PHRASES)


def evidence_text(claim: ClaimInput) -> Optional[str]:
  """The passages a claim's evidence holds, cleaned as the claims job's
  concat_premise (transforms/claims/steps.py) cleans them, leaving out items that
  are only a URL (the reference keeps those, and the claims job does for parity;
  a set of human judgements of the evidence text does not). None without
  evidence; "" when every item is a bare URL."""
  if not claim.evidence:
    return None
  return " ".join(clean_text(item) for item in claim.evidence
                  if not _BARE_URL.fullmatch(item))
