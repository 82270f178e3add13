"""Entity linking by label and alias matching, for the SCK scores (seed 002 §2.1).

The seed identifies the entities of each answer sentence and looks them up in
Wikidata; this module is the simpler, documented linker that stands in for a
trained one (README: SCK answer quality):

* Text is cut into word tokens (runs of letters and digits; "Dodd-Frank" is two
  tokens) that are case-folded and stripped of accents for matching.
* A `Gazetteer` maps every entity label and alias, normalised the same way, to
  the ids that bear it. A sentence is linked greedily from left to right, the
  longest name first; matches never overlap. A name made only of function words
  ("it", "the who") is never linked; a name that several entities bear links
  them all (the mention is ambiguous, and counted once).
* Text entities that the graph does not know (for the VE-score, §2.1.1) are
  capitalised spans ("Galaxy S23", "Dodd-Frank Wall Street Reform"): runs of
  words with a capital letter, numbers after them, and lower-case connectors
  (of, the, and, ...) between them, trimmed of function words at either end. A
  one-word span that opens a sentence is dropped: a capital there says nothing.
* A sentence with a personal pronoun (he, she, his, her, ...) also refers to the
  topic entity: the first entity of the question, then of each later sentence
  that names entities without such a pronoun (the seed's Table 1 identifies
  Obama, Q76, in "He is the first African American ...").
"""
import re
import unicodedata
from typing import Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

_WORD = re.compile(r"[^\W_]+")
# Function words: never a name on their own, trimmed from capitalised spans, and
# left out of the Jaccard similarity of the ER-score.
FUNCTION_WORDS = frozenset("""
a about above after again against all also am an and any are as at be because
been before being below between both but by can could did do does doing don down
during each few for from further had has have having he her here hers herself him
himself his how i if in into is it its itself just me might more most must my
myself no nor not now of off on once only or other our ours ourselves out over own
same she should so some such than that the their theirs them themselves then there
these they this those through to too under until up very was we were what when
where which while who whom why will with would you your yours yourself yourselves
s t ll re ve d m
""".split())
# Lower-case words that may join the capitalised words of one name.
_CONNECTORS = frozenset({"of", "the", "and", "for", "de", "da", "del", "van", "von",
                         "du", "la", "le", "on", "in"})
# What may separate two words of one capitalised span.
_SPAN_GAP = re.compile(r"[ \t\-\u2010-\u2013]*")
TOPIC_PRONOUNS = frozenset({"he", "him", "his", "himself", "she", "her", "hers",
                            "herself"})
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def fold(word: str) -> str:
  """A word as matched: case-folded, accents removed."""
  decomposed = unicodedata.normalize("NFKD", word.casefold())
  return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


class Token(NamedTuple):
  text: str  # as written
  key: str  # fold(text)
  start: int  # character offsets in the text
  end: int


def tokenize(text: str) -> List[Token]:
  return [Token(m.group(), fold(m.group()), m.start(), m.end())
          for m in _WORD.finditer(text)]


def name_key(name: str) -> str:
  """The normalised form of a name or a span of text: its folded tokens."""
  return " ".join(token.key for token in tokenize(name))


def content_words(text: str) -> frozenset:
  """The folded words of a text, without function words (for Jaccard)."""
  return frozenset(token.key for token in tokenize(text)
                   if token.key not in FUNCTION_WORDS)


def split_sentences(text: str) -> List[str]:
  """Sentences end at ".", "!" or "?" followed by white space (as in
  transforms/claims/steps.py); line breaks inside a sentence are kept."""
  return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def linkable_name(key: str) -> bool:
  return bool(key) and not all(word in FUNCTION_WORDS for word in key.split())


class Gazetteer:
  """Normalised entity names -> the ids that bear them (sorted)."""

  def __init__(self, names: Dict[str, Tuple[str, ...]]):
    self.names = names
    self.max_tokens = max((key.count(" ") + 1 for key in names), default=0)

  def __len__(self):
    return len(self.names)


class Mention(NamedTuple):
  surface: str  # as written in the text
  ids: Tuple[str, ...]  # the entities bearing the name (several: ambiguous)
  first_token: int
  last_token: int  # inclusive


def link_tokens(tokens: Sequence[Token], gazetteer: Gazetteer) -> List[Mention]:
  """Greedy leftmost-longest matches of gazetteer names (module docstring)."""
  mentions = []
  position = 0
  names = gazetteer.names
  while position < len(tokens):
    longest = min(gazetteer.max_tokens, len(tokens) - position)
    for length in range(longest, 0, -1):
      key = " ".join(token.key for token in tokens[position:position + length])
      ids = names.get(key)
      if ids:
        mentions.append(Mention(_surface(tokens, position, position + length - 1),
                                ids, position, position + length - 1))
        position += length
        break
    else:
      position += 1
  return mentions


def _surface(tokens: Sequence[Token], first: int, last: int, text: str = None) -> str:
  if text is not None:
    return text[tokens[first].start:tokens[last].end]
  return " ".join(token.text for token in tokens[first:last + 1])


def _capitalised(token: Token) -> bool:
  return any(ch.isupper() for ch in token.text)


def capitalised_spans(text: str, tokens: Sequence[Token]) -> List[Tuple[int, int]]:
  """(first, last) token indexes of the capitalised spans of a sentence (module
  docstring)."""
  spans = []
  index = 0
  while index < len(tokens):
    if not _capitalised(tokens[index]) or tokens[index].text == "I":
      index += 1
      continue
    first = last = index
    index += 1
    while index < len(tokens):
      gap = text[tokens[index - 1].end:tokens[index].start]
      if not _SPAN_GAP.fullmatch(gap):
        break
      token = tokens[index]
      if _capitalised(token) or token.text.isdigit():
        last = index
        index += 1
        continue
      # A connector joins only if a capitalised word follows it.
      if (token.key in _CONNECTORS and index + 1 < len(tokens) and
          _capitalised(tokens[index + 1]) and
          _SPAN_GAP.fullmatch(text[token.end:tokens[index + 1].start])):
        index += 1
        continue
      break
    while first <= last and tokens[first].key in FUNCTION_WORDS:
      first += 1
    while last >= first and tokens[last].key in FUNCTION_WORDS:
      last -= 1
    if first > last or (first == 0 and last == 0):
      continue
    spans.append((first, last))
  return spans


class LinkedSentence(NamedTuple):
  text: str
  mentions: List[Mention]
  unlinked: List[str]  # capitalised spans that no mention covers
  pronoun: Optional[str]  # the first topic pronoun, if any
  topic: Tuple[str, ...]  # the topic entity the pronoun refers to (or ())


def link_sentence(text: str, gazetteer: Gazetteer) -> LinkedSentence:
  tokens = tokenize(text)
  mentions = [m for m in link_tokens(tokens, gazetteer)
              if linkable_name(" ".join(t.key for t in
                                        tokens[m.first_token:m.last_token + 1]))]
  covered = set()
  for mention in mentions:
    covered.update(range(mention.first_token, mention.last_token + 1))
  unlinked = [_surface(tokens, first, last, text)
              for first, last in capitalised_spans(text, tokens)
              if not covered.intersection(range(first, last + 1))]
  pronoun = next((token.text for token in tokens if token.key in TOPIC_PRONOUNS),
                 None)
  return LinkedSentence(text, mentions, unlinked, pronoun, ())


def link_text(text: str, gazetteer: Gazetteer) -> List[Mention]:
  """The mentions of a whole text (a question, a reference answer)."""
  mentions = []
  for sentence in split_sentences(text):
    mentions.extend(link_sentence(sentence, gazetteer).mentions)
  return mentions


def link_answer(answer: str, question_mentions: Sequence[Mention],
                gazetteer: Gazetteer) -> List[LinkedSentence]:
  """The answer's sentences, linked, each pronoun resolved to the topic entity."""
  topic = question_mentions[0].ids if question_mentions else ()
  sentences = []
  for text in split_sentences(answer):
    sentence = link_sentence(text, gazetteer)
    if sentence.pronoun is not None:
      sentence = sentence._replace(topic=topic)
    elif sentence.mentions:
      topic = sentence.mentions[0].ids
    sentences.append(sentence)
  return sentences


def sentence_entities(sentence: LinkedSentence) -> List[str]:
  """Every entity id a sentence refers to: its mentions and its topic."""
  ids = set(sentence.topic)
  for mention in sentence.mentions:
    ids.update(mention.ids)
  return sorted(ids)


def distinct_mentions(mentions: Iterable[Mention]) -> List[Tuple[str, ...]]:
  """The distinct entities of some mentions (an ambiguous mention is one entity:
  the tuple of its candidate ids), in order of first mention."""
  return list(dict.fromkeys(mention.ids for mention in mentions))
