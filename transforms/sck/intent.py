"""Question intent and the Structure score of SCK (seed 002 §2.2, Tables 2 and 3).

Intents: NFQA's six non-factoid categories (instruction, reason, evidence-based,
comparison, experience, debate) and factoid.

`classify_intent(question)` is a transparent rule-based classifier over the
features the seed names for classification (§2.2: length, tense, keywords,
pronouns, format). Each rule is a pattern of the question with a weight and the
feature it reads; an intent's score is the sum of the weights of its rules that
fire, the highest score wins (ties in the order of INTENTS), and a question
that fires no rule is factoid when short (at most 8 words), evidence-based
otherwise. The rules that fired are returned as the evidence. (The seed
fine-tunes a classifier; a row may also give its intent, which then wins.)

`structure_score(answer, intent)` scores the answer's features against the
intent's expected answer structure of Table 2, one 0/1 score per feature, S =
their mean. Features (computed without a tagger; NLTK's taggers need data that
is not installable offline):

* length: words (white-space separated, with a letter or digit): short <= 20,
  moderate 21-100, long > 100;
* tense: the most frequent of present / past / future markers (auxiliaries and
  modals, irregular past forms, -ed words not after be/have; "will", "shall",
  "going to"); an answer without markers is present;
* keyword: any of Table 2's keywords of the intent (with their inflections);
* pronoun: the most frequent grammatical person of the personal pronouns; an
  answer without one is impersonal, which counts as 3rd person;
* format: list items (lines opening with -, *, a number or "Step n"), sentences,
  paragraphs (blocks between blank lines) and contrast markers, against the
  format of Table 2 (the rule of each format is in FORMAT_RULES).

Ties count for every tied value. Factoid is not in Table 2: its expected
structure here is a short, present or past, 3rd-person, one-sentence answer,
with no keyword feature (4 features, so S moves in quarters: the seed's Table 4
gives a factoid answer S = 0.25).
"""
import re
from typing import Dict, List, NamedTuple, Optional, Tuple

from autoais.transforms.sck.entity_linking import split_sentences, tokenize

INSTRUCTION, REASON, EVIDENCE, COMPARISON = ("instruction", "reason", "evidence-based",
                                             "comparison")
EXPERIENCE, DEBATE, FACTOID = "experience", "debate", "factoid"
INTENTS = (COMPARISON, INSTRUCTION, REASON, EXPERIENCE, DEBATE, EVIDENCE, FACTOID)

# Table 3: the weights (alpha, beta, gamma) of S, C and K in Eq. 5 per intent.
INTENT_WEIGHTS = {
    INSTRUCTION: (0.5, 0.2, 0.3),
    REASON: (0.5, 0.3, 0.2),
    EVIDENCE: (0.2, 0.3, 0.5),
    COMPARISON: (0.5, 0.3, 0.2),
    EXPERIENCE: (0.4, 0.5, 0.1),
    DEBATE: (0.4, 0.4, 0.2),
    FACTOID: (0.1, 0.1, 0.8),
}


def parse_intent(text: str) -> Optional[str]:
  """A given intent ("Evidence-based", "evidence_based", "FACTOID") or None."""
  key = re.sub(r"[\s_]+", "-", text.strip().lower())
  return key if key in INTENT_WEIGHTS else None


# ----------------------------------------------------------------------------
# The question classifier.

class _Rule(NamedTuple):
  intent: str
  feature: str  # the Table 2 feature the rule reads
  pattern: "re.Pattern"
  weight: int


def _rule(intent, feature, pattern, weight):
  return _Rule(intent, feature, re.compile(pattern), weight)


_QUESTION_RULES = (
    _rule(COMPARISON, "keyword",
          r"\bdifferen(ce|ces|t)\b|\bdiffers?\b|\bcompar(e|ed|ing|ison)\b|\bvs\b|"
          r"\bversus\b", 3),
    _rule(COMPARISON, "keyword", r"\b\w+er than\b|\b(more|less) \w+ than\b", 2),
    _rule(COMPARISON, "format", r"^which\b.*\bor\b|^\w+( \w+)? or \w+", 2),
    _rule(INSTRUCTION, "pronoun", r"^how (do|can|should|would|could) (i|we)\b", 3),
    _rule(INSTRUCTION, "keyword", r"\bhow to\b|\b(best|easiest|fastest|right) way to\b",
          3),
    _rule(INSTRUCTION, "format", r"\bsteps?\b|\bstep by step\b|\binstructions?\b|"
          r"\bguide\b", 2),
    _rule(INSTRUCTION, "pronoun", r"^how can you\b", 2),
    _rule(REASON, "keyword", r"^why\b|\bhow come\b|\bwhat (causes|caused|makes|made)\b|"
          r"\b(cause|causes|reason|reasons) (of|for|why)\b", 3),
    _rule(EXPERIENCE, "pronoun", r"\bhave you( ever)?\b|\bhas anyone\b|\banyone\b|"
          r"\byour (experience|first|favorite|favourite)\b|\bwhat (was|is) it like\b",
          3),
    _rule(EXPERIENCE, "tense", r"^(how|what) (was|were|did) (you|your)\b", 3),
    _rule(EXPERIENCE, "tense", r"\bdid you\b|\bi (\w+ed|felt|was|had|went|got)\b", 2),
    _rule(EXPERIENCE, "keyword", r"\b(recommend|recommendation|suggest)\b", 2),
    _rule(DEBATE, "pronoun", r"\b(do|does) (you|anyone) (think|believe|feel)\b", 3),
    _rule(DEBATE, "keyword", r"^should\b|\bis it (right|wrong|ethical|moral|fair|ok|"
          r"okay|acceptable)\b|\b(opinion|opinions|agree|disagree)\b", 3),
    _rule(DEBATE, "keyword", r"\b(ethical|unethical|moral|immoral)\b|"
          r"^(is|are) \w+( \w+)? (good|bad)\b", 2),
    _rule(DEBATE, "tense", r"^will\b", 2),
    _rule(EVIDENCE, "keyword", r"^(describe|explain|define)\b|^what does\b.*\bmean\b|"
          r"\b(effects?|symptoms?|meaning|definition|purpose|role|function|structure|"
          r"process|impact|benefits?) of\b", 2),
    _rule(EVIDENCE, "length", r"^what (is|are) (a |an )?\w+( \w+)?$", 2),
    _rule(EVIDENCE, "keyword", r"^how (does|do|did|is|are)\b|^what are\b", 1),
    _rule(FACTOID, "keyword", r"^(who|whom|whose|when|where)\b|"
          r"^how (many|much|old|tall|long|far|big|high|deep|fast)\b|"
          r"^what (year|time|date|day|month|century|colou?r)\b", 3),
    _rule(FACTOID, "format", r"^(what is|what s|whats) the\b", 2),
    _rule(FACTOID, "keyword", r"^which\b", 1),
)
_SHORT_QUESTION_WORDS = 8


def _question_text(question: str) -> str:
  return " ".join(token.key for token in tokenize(question))


class IntentDecision(NamedTuple):
  intent: str
  scores: Dict[str, int]
  fired: List[Tuple[str, str, str]]  # (intent, feature, matched text)


def classify_intent(question: str) -> IntentDecision:
  text = _question_text(question)
  scores = {intent: 0 for intent in INTENTS}
  fired = []
  for rule in _QUESTION_RULES:
    match = rule.pattern.search(text)
    if match:
      scores[rule.intent] += rule.weight
      fired.append((rule.intent, rule.feature, match.group().strip()))
  best = max(scores.values())
  if best == 0:
    words = len(text.split())
    intent = FACTOID if words <= _SHORT_QUESTION_WORDS else EVIDENCE
    fired.append((intent, "length", f"no rule fired; {words} words"))
  else:
    intent = next(intent for intent in INTENTS if scores[intent] == best)
  return IntentDecision(intent, scores, fired)


# ----------------------------------------------------------------------------
# Answer features and the Structure score.

SHORT_WORDS, MODERATE_WORDS = 20, 100
_PRESENT = frozenset("am is are isn aren do does don doesn has have hasn haven can "
                     "cannot may must need needs seem seems want wants would could "
                     "should might".split())
_IRREGULAR_PAST = frozenset("""
was were wasn weren had hadn did didn went came saw made took got gave found felt
thought told said knew became began left brought bought built caught chose drove
ate fell fought flew forgot grew heard held kept led lost met paid ran rose sat
sent sold spent spoke stood taught threw understood woke won wrote
""".split())
_NOT_PAST_ED = frozenset("need speed indeed hundred seed feed bed red shed breed "
                         "embed proceed succeed exceed bleed weed deed greed".split())
_PARTICIPLE_AUXILIARIES = frozenset("is are am be been being was were has have had "
                                    "s get gets got".split())
_FUTURE = frozenset({"will", "shall", "ll", "won"})
PERSONS = {
    "1st": frozenset("i me my mine myself we us our ours ourselves".split()),
    "2nd": frozenset("you your yours yourself yourselves".split()),
    "3rd": frozenset("he him his himself she her hers herself it its itself they them "
                     "their theirs themselves".split()),
}
# Table 2's keywords, with their inflections.
KEYWORDS = {
    INSTRUCTION: ("step", "steps", "follow", "follows", "followed", "following"),
    REASON: ("because", "due to", "since"),
    EVIDENCE: ("found", "indicate", "indicates", "indicated", "indicating"),
    COMPARISON: ("different", "difference", "differences", "compared to"),
    EXPERIENCE: ("noticed", "felt"),
    DEBATE: ("believe", "believes", "think", "thinks"),
}
_LIST_ITEM = re.compile(r"^\s*(?:[-*\u2022\u2013]|\d+[.)]|step\s+\d+\b|[a-z][.)])\s*",
                        re.IGNORECASE)
_SEQUENCE_LINE = re.compile(r"^\s*(first|second|third|then|next|after that|finally)\b",
                            re.IGNORECASE)
_CONTRAST = re.compile(r"\b(however|on the other hand|whereas|while|in contrast|unlike|"
                       r"but|although|compared (to|with)|versus|vs)\b")
_BLANK_LINE = re.compile(r"\n\s*\n")


class Expected(NamedTuple):
  """A row of Table 2 (factoid: README)."""
  length: Tuple[str, ...]
  tense: Tuple[str, ...]
  pronoun: Tuple[str, ...]
  format: str
  keywords: Tuple[str, ...]  # () : no keyword feature


TABLE_2 = {
    INSTRUCTION: Expected(("short", "moderate"), ("present", "future"), ("2nd",),
                          "step-by-step list", KEYWORDS[INSTRUCTION]),
    REASON: Expected(("short", "moderate"), ("present", "past"), ("3rd", "2nd"),
                     "sentences, short paragraph", KEYWORDS[REASON]),
    EVIDENCE: Expected(("moderate", "long"), ("past",), ("3rd",), "paragraph",
                       KEYWORDS[EVIDENCE]),
    COMPARISON: Expected(("moderate",), ("present", "past"), ("3rd",),
                         "side-by-side list", KEYWORDS[COMPARISON]),
    EXPERIENCE: Expected(("moderate", "long"), ("past",), ("1st",), "paragraphs",
                         KEYWORDS[EXPERIENCE]),
    DEBATE: Expected(("moderate", "long"), ("present", "past"), ("1st", "3rd"),
                     "point-counterpoint paragraphs", KEYWORDS[DEBATE]),
    FACTOID: Expected(("short",), ("present", "past"), ("3rd",), "short answer", ()),
}


class FormatFacts(NamedTuple):
  list_items: int
  sequence_lines: int
  sentences: int
  paragraphs: int
  contrast: Optional[str]  # the first contrast marker, if any


def format_facts(answer: str) -> FormatFacts:
  lines = [line for line in answer.splitlines() if line.strip()]
  # A "sentence" without a word of two characters (":P") is not one.
  sentences = [s for s in split_sentences(answer)
               if any(len(token.text) > 1 for token in tokenize(s))]
  contrast = _CONTRAST.search(" ".join(t.key for t in tokenize(answer)))
  return FormatFacts(
      sum(1 for line in lines if _LIST_ITEM.match(line) and tokenize(line)),
      sum(1 for line in lines if _SEQUENCE_LINE.match(line)),
      len(sentences),
      len([block for block in _BLANK_LINE.split(answer.strip()) if block.strip()]),
      contrast.group() if contrast else None)


def _is_list(facts: FormatFacts) -> bool:
  return facts.list_items >= 2 or facts.sequence_lines >= 2


FORMAT_RULES = {
    # Table 2 format -> (rule, test)
    "step-by-step list": ("at least 2 list items or sequenced lines", _is_list),
    "sentences, short paragraph": (
        "one paragraph of 1-5 sentences, not a list",
        lambda f: not _is_list(f) and f.paragraphs == 1 and 1 <= f.sentences <= 5),
    "paragraph": ("at least 2 sentences, not a list",
                  lambda f: not _is_list(f) and f.sentences >= 2),
    "side-by-side list": ("a list, or prose that contrasts (while, whereas, ...)",
                          lambda f: _is_list(f) or f.contrast is not None),
    "paragraphs": ("at least 2 sentences, not a list",
                   lambda f: not _is_list(f) and f.sentences >= 2),
    "point-counterpoint paragraphs": (
        "at least 2 sentences with a contrast marker",
        lambda f: f.sentences >= 2 and f.contrast is not None),
    "short answer": ("one sentence, not a list",
                     lambda f: not _is_list(f) and f.sentences == 1),
}


def word_count(text: str) -> int:
  return sum(1 for word in text.split() if any(ch.isalnum() for ch in word))


def length_class(words: int) -> str:
  if words <= SHORT_WORDS:
    return "short"
  return "moderate" if words <= MODERATE_WORDS else "long"


def tense_counts(answer: str) -> Dict[str, int]:
  keys = [token.key for token in tokenize(answer)]
  counts = {"present": 0, "past": 0, "future": 0}
  for index, key in enumerate(keys):
    previous = keys[max(0, index - 2):index]
    if key in _FUTURE or (key == "going" and index + 1 < len(keys) and
                          keys[index + 1] == "to" and index > 0 and
                          keys[index - 1] in ("is", "are", "am", "s", "m", "re")):
      counts["future"] += 1
    elif key in _IRREGULAR_PAST or (key.endswith("ed") and len(key) > 4 and
                                    key not in _NOT_PAST_ED):
      # A participle after be / have is a passive or perfect: that auxiliary
      # carries the tense.
      if not _PARTICIPLE_AUXILIARIES.intersection(previous) or key in (
          "was", "were", "had", "did"):
        counts["past"] += 1
    elif key in _PRESENT:
      counts["present"] += 1
  return counts


def _dominant(counts: Dict[str, int], default: str) -> Tuple[str, ...]:
  best = max(counts.values())
  if best == 0:
    return (default,)
  return tuple(name for name, count in counts.items() if count == best)


def person_counts(answer: str) -> Dict[str, int]:
  counts = {person: 0 for person in PERSONS}
  for token in tokenize(answer):
    for person, words in PERSONS.items():
      if token.key in words:
        counts[person] += 1
  return counts


def keywords_found(answer: str, keywords) -> List[str]:
  text = f" {' '.join(token.key for token in tokenize(answer))} "
  return [keyword for keyword in keywords if f" {keyword} " in text]


def structure_score(answer: str, intent: str) -> Tuple[float, Dict[str, dict]]:
  """(S, evidence): S is the mean of the intent's feature scores (module
  docstring); the evidence holds each feature's observed and expected values."""
  expected = TABLE_2[intent]
  words = word_count(answer)
  tenses = _dominant(tense_counts(answer), "present")
  persons = _dominant(person_counts(answer), "3rd")
  facts = format_facts(answer)
  rule, test = FORMAT_RULES[expected.format]
  features = {
      "length": {"observed": f"{length_class(words)} ({words} words)",
                 "expected": list(expected.length),
                 "score": float(length_class(words) in expected.length)},
      "tense": {"observed": list(tenses), "expected": list(expected.tense),
                "score": float(any(t in expected.tense for t in tenses))},
  }
  if expected.keywords:
    found = keywords_found(answer, expected.keywords)
    features["keyword"] = {"observed": found, "expected": list(expected.keywords),
                           "score": float(bool(found))}
  features["pronoun"] = {"observed": list(persons), "expected": list(expected.pronoun),
                         "score": float(any(p in expected.pronoun for p in persons))}
  features["format"] = {"observed": facts._asdict(), "expected": expected.format,
                        "rule": rule, "score": float(test(facts))}
  score = sum(feature["score"] for feature in features.values()) / len(features)
  return score, features
