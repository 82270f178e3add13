"""T5 / mT5 NLI attribution scorer (AutoAIS; SPEC 5.2), as a Beam ModelHandler.

    autoais evaluate ... --scorer t5 --model PATH [--tokenizer PATH]
        [--dtype float32|bfloat16] [--device cpu|cuda]
        [--decision threshold|decode] [--threshold 0.5]

The model reads `premise: {premise} hypothesis: {hypothesis}` and was trained to
answer "1" (entailed) or "0". `nli_score` is P(first label piece of "1")
renormalised over the first pieces of "1" and "0", from one encoder pass and one
decoder step, in batches formed by token budget over length-sorted examples
(little padding). The label pieces are the *first* piece of the tokenizer's
encoding of each label, resolved at load time, never assumed: T5's vocabulary
has `▁1` (id 209) but no `▁0`, so "0" is `▁` (id 3) then `0` (id 632) and the
pair is (209, 3), as MiniCheck's Flan-T5 code reads it.

Decision modes: `threshold` (auto_ais = nli_score > threshold; premises past
the model's length are windowed, see below) and `decode` (the Attributed QA
script's rule, for parity: the whole input however long, `generate()` with the
model's own generation config, decoded text == "1").

Tokenisation is batched: the inputs of a chunk in one tokenizer call, and
where the tokenizer splits at whitespace (T5's and mT5's, as transformers
builds them from spiece.model) a premise is tokenised once while its pieces
are in the worker's cache of recent premises (PieceCache) and joined to each
hypothesis' pieces: the same ids as the whole input
(tests/unit/scoring/test_t5_scorer.py). A premise is cut at its line breaks
and each distinct line tokenised once while it is in the cache of recent
lines: a citations premise joins the same documents, a line each, in many
combinations, so a document is tokenised once, not once per premise. A
premise's encoding (pieces, offsets, and its words once windowed) is put
together once while it is in the cache of recent premises (_PremiseEncoding),
not once per pair that shares it.

In threshold mode, inputs longer than the model's length are never cut in the
hypothesis: the premise is split into overlapping windows that each fit with
the whole hypothesis, every window is scored, and the row takes the best window
and is flagged. A window's ids are those of its text tokenised whole; where
the tokenizer tokenises words apart they are joined from the premise's own
pieces, and only a word cut at the window's edge is tokenised again
(_CutPremise).

Checkpoints load as they are published (models/checkpoints.py):
`model.safetensors`, or shards named by `model.safetensors.index.json` (every
shard must be present); the tokenizer from `tokenizer.json`, or from
`spiece.model` + `tokenizer_config.json` alone (transformers builds the fast
tokenizer from it, once per worker), or from another directory (`--tokenizer`).
Local directories or gs:// (copied once per machine to a local cache);
safetensors only, without trust_remote_code; float16 is refused (T5 activations
overflow in float16). Weights stored in float32 load into `--dtype bfloat16`
tensor by tensor from the memory-mapped files: no float32 copy of the model is
held (bench/model_load.py measures it).
"""
import itertools
import json
import os
import re
import unicodedata
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from autoais.models.checkpoints import (check_model_and_tokenizer, checkpoint_checksums,
                                        file_in, list_dir, local_model_dir, open_tokenizer,
                                        read_json)
from autoais.models import simulated_device
from autoais.models.token_budget import (DEFAULT_TOKEN_BUDGET, LocalModelHandler,
                                         PieceCache, TokenBudgetModel, check_device,
                                         check_dtype, resolve_max_input_tokens)
from autoais.schemas import AttributionExample, AttributionScore
from autoais.schemas.errors import ModelError

DECISIONS = ("threshold", "decode")
SUPPORTED_MODEL_TYPES = ("t5", "mt5")
_WINDOW_OVERLAP = 0.25
_MIN_WINDOW_TOKENS = 16
FLOAT16_REFUSED = ("--dtype float16 is refused: T5 activations overflow in float16 "
                   "(inf/NaN); use bfloat16 or float32")


class LabelPieces(NamedTuple):
  """The first pieces of the tokenizer's encodings of "1" and "0"."""
  one_id: int
  zero_id: int
  one_piece: str
  zero_piece: str


def label_pieces(tokenizer, model_path: str) -> LabelPieces:
  """The first piece of "1" and of "0" (SPEC 5.2): they must be known pieces
  and must differ, or the two answers cannot be told apart at the first step."""
  first = {}
  for label in ("1", "0"):
    encoded = tokenizer(label, add_special_tokens=False)["input_ids"]
    pieces = tokenizer.convert_ids_to_tokens(encoded)
    if not encoded or encoded[0] == tokenizer.unk_token_id:
      raise ModelError(
          f"--model {model_path}: its tokenizer encodes {label!r} as {pieces}: the "
          "first piece is not a known piece, so the model cannot answer "
          f"{label!r}; an NLI model answers with '1' and '0'")
    first[label] = (encoded[0], pieces[0], pieces)
  if first["1"][0] == first["0"][0]:
    raise ModelError(
        f"--model {model_path}: its tokenizer starts '1' ({first['1'][2]}) and '0' "
        f"({first['0'][2]}) with the same piece {first['1'][1]!r}, so the first "
        "decoder step cannot tell the two answers apart; an NLI model needs labels "
        "whose first pieces differ")
  return LabelPieces(first["1"][0], first["0"][0], first["1"][1], first["0"][1])


def refuse_sampling(do_sample: Any, model_path: str) -> None:
  """Decode mode calls `generate()` with the model's generation config, as the
  reference script does: a config that samples would make decisions random."""
  if do_sample:
    raise ModelError(f"--model {model_path}: --decision decode runs generate() with "
                     "the model's generation config, and generation_config.json "
                     "samples (do_sample true): decisions would be random. Use "
                     "--decision threshold")


def check_decode_generation(model_path: str) -> None:
  """refuse_sampling on the model directory's generation_config.json, read
  without loading the model (at launch, also on gs://)."""
  files = list_dir(model_path, "--model")
  if "generation_config.json" in files:
    generation = read_json(file_in(model_path, "generation_config.json", "--model"),
                            "--model", model_path)
    refuse_sampling(isinstance(generation, dict) and generation.get("do_sample"),
                    model_path)


def _weight(linear):
  """A linear layer's weight matrix, dequantised for int8 dynamic layers."""
  weight = linear.weight
  return weight().dequantize() if callable(weight) else weight


def _tokenises_words_apart(tokenizer) -> Any:
  """(prefix, suffix): the special tokens the tokenizer puts around a text's
  pieces, where the input ids of "A B" are always prefix + pieces of A +
  pieces of B + suffix; else False. That holds where nothing crosses the space
  between A and B: the normaliser maps grapheme by grapheme (a SentencePiece
  charsmap, or none), the first pre-tokenizer splits at whitespace and drops
  it, every later one is a Metaspace that marks each word alike (prepend
  "always"), and the special tokens are the same around any text (TemplateProcessing
  of one sequence). The fast tokenizers transformers builds from T5's and mT5's
  spiece.model are of that kind; any other tokenizer takes the whole text."""
  try:
    state = json.loads(tokenizer.backend_tokenizer.to_str())
  except (AttributeError, TypeError, ValueError):
    return False
  normalizer = state.get("normalizer") or {"type": "Precompiled"}
  pre = state.get("pre_tokenizer") or {}
  steps = pre.get("pretokenizers", []) if pre.get("type") == "Sequence" else [pre]
  post = state.get("post_processor") or {}
  template = post.get("single", []) if post.get("type") == "TemplateProcessing" else None
  if (normalizer.get("type") != "Precompiled" or not steps
      or steps[0].get("type") != "WhitespaceSplit"
      or any(step.get("type") != "Metaspace" or step.get("prepend_scheme") != "always"
             for step in steps[1:])
      or template is None
      or sum("Sequence" in item for item in template) != 1):
    return False
  probe = "premise: a hypothesis: b"
  whole = tokenizer(probe, verbose=False)["input_ids"]
  pieces = tokenizer(probe, add_special_tokens=False, verbose=False)["input_ids"]
  start = next((i for i in range(len(whole) - len(pieces) + 1)
                if whole[i:i + len(pieces)] == pieces), None)
  if not pieces or start is None:
    return False
  return whole[:start], whole[start + len(pieces):]


# Characters after which Unicode does not always end a grapheme cluster
# (Grapheme_Cluster_Break=Prepend lies in these blocks): a premise ending in
# one is tokenised whole with its hypothesis, so no grapheme spans the join.
_PREPEND_BLOCKS = ((0x0600, 0x08FF), (0x0D4E, 0x0D4E), (0x11000, 0x11FFF))


def _ends_clear_of_the_next_character(text: str) -> bool:
  last = ord(text[-1])
  return not any(low <= last <= high for low, high in _PREPEND_BLOCKS)


# Tokens of premise pieces a loaded T5 model keeps (int32: 16 MiB, plus the
# texts): about 13,000 passages of 320 tokens.
PREMISE_CACHE_TOKENS = 1 << 22
# Values of premises' encodings kept (five int32 a piece once windowed: 16
# MiB, plus the texts): about 2,600 premises of 320 tokens.
PREMISE_ENCODING_CACHE_VALUES = 1 << 22
# Values of premise lines' pieces and offsets kept (three int32 a piece: 16 MiB,
# plus the texts): about 17,000 documents of 100 words.
LINE_CACHE_VALUES = 1 << 22
# Words whose pieces are kept (_WordPieces), and their pieces in all: the
# cache is emptied when either is reached (about 200 bytes a word and 12 a
# piece: some 15 MiB at most). A word of more pieces than
# WORD_CACHE_LONGEST (a URL, a run of digits) is not kept.
WORD_CACHE_WORDS = 1 << 16
WORD_CACHE_PIECES = 1 << 18
WORD_CACHE_LONGEST = 32


def _lines_of(premise: str) -> Optional[List[str]]:
  """The premise cut at its line breaks, where each line tokenised on its own
  gives the premise's pieces (a tokenizer that tokenises words apart: a line
  break is white space between words), that is where no grapheme cluster
  spans a break; else None."""
  lines = premise.split("\n")
  for before, after in zip(lines, lines[1:]):
    if ((before and not _ends_clear_of_the_next_character(before))
        or (after and _joins_the_previous_character(after[0]))):
      return None
  return lines


def _packed(ids: Sequence[int], offsets: Sequence[Tuple[int, int]]) -> np.ndarray:
  """A line's pieces, then their start offsets, then their end offsets, as one
  int32 array (what the cache of lines keeps)."""
  spans = np.fromiter(itertools.chain.from_iterable(offsets), dtype=np.int32,
                      count=2 * len(offsets)).reshape(-1, 2)
  return np.concatenate((np.asarray(ids, dtype=np.int32), spans[:, 0], spans[:, 1]))


def _lines_found(cuts: Dict[str, List[str]], stored: Callable[[str], Any]
                 ) -> Tuple[Dict[str, Any], List[str]]:
  """({line: stored(line)} of each distinct line of the cut premises, the
  lines that stored() has not, in order): what a chunk's lines need
  tokenised."""
  found: Dict[str, Any] = {}
  missing: List[str] = []
  for lines in cuts.values():
    for line in lines:
      if line not in found:
        found[line] = stored(line)
        if found[line] is None:
          missing.append(line)
  return found, missing


class _PremiseEncoding:
  """A premise tokenised without special tokens: its pieces and each piece's
  start and end offset in the premise (int32 arrays) and, once a window needs
  them, its words (_CutPremise.of: the first and last piece of each piece's
  word, or False where the window's ids cannot be joined from its pieces).
  Kept per distinct premise (T5NliModel._premises): a premise that several
  pairs share, in one chunk or in the chunks that follow, is put together
  from its lines and cut into words once, not once a pair."""
  __slots__ = ("pieces", "starts", "ends", "words")

  def __init__(self, pieces: np.ndarray, starts: np.ndarray, ends: np.ndarray):
    self.pieces, self.starts, self.ends = pieces, starts, ends
    self.words: Any = None

  @staticmethod
  def of(ids: Sequence[int], offsets: Sequence[Tuple[int, int]]) -> "_PremiseEncoding":
    return _PremiseEncoding.unpacked(_packed(ids, offsets))

  @staticmethod
  def unpacked(values: np.ndarray) -> "_PremiseEncoding":
    """From _packed's array (views of it)."""
    count = len(values) // 3
    return _PremiseEncoding(values[:count], values[count:2 * count], values[2 * count:])

  def __len__(self) -> int:
    # What the cache counts: the values of the three arrays and the words'.
    return 5 * len(self.pieces)

  def offsets(self) -> List[Tuple[int, int]]:
    return list(zip(self.starts.tolist(), self.ends.tolist()))


# White space that T5's normaliser (SentencePiece's nmt_nfkc charsmap) turns
# into a plain space, one character for one.
_TO_SPACE = str.maketrans(dict.fromkeys(
    "\t\n\x0c\r\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000", " "))
_SPACE_THEN_OTHER = re.compile(r"\s[^\x00-\x7f]")


# The characters of Grapheme_Cluster_Break Extend, ZWJ or SpacingMark that are
# not marks: the zero-width non-joiner and joiner, the half-width katakana
# voiced and semi-voiced sound marks (Lm, Extend), and Thai SARA AM and Lao
# AM (Lo, SpacingMark).
_JOINING_LETTERS = frozenset((0x200C, 0x200D, 0xFF9E, 0xFF9F, 0x0E33, 0x0EB3))


def _joins_the_previous_character(character: str) -> bool:
  """Whether Unicode never ends a grapheme cluster before `character` (marks,
  joiners, emoji modifiers and tags: Grapheme_Cluster_Break Extend, ZWJ,
  SpacingMark), so that a space before it and it are one cluster."""
  code = ord(character)
  return (unicodedata.category(character) in ("Mn", "Mc", "Me")
          or code in _JOINING_LETTERS or 0x1F3FB <= code <= 0x1F3FF
          or 0xE0020 <= code <= 0xE007F)


def _plain(text: str) -> bool:
  """Whether `text` holds only _ASCII_KEPT's characters (printable ASCII, and
  white space that T5's normaliser makes a space; no carriage return)."""
  return text.isascii() and "\r" not in text and text.translate(_TO_SPACE).isprintable()


# A word: what lies between the white space T5's normaliser makes a space.
_WORD = re.compile(r"[^ \t\n\x0c]+")


# The first and the last character of a word (_WORD) where it is not one of
# _ASCII_KEPT's (_WordPieces._words_in checks those alone).
_FIRST_NOT_PLAIN = re.compile(r"(?:^|(?<=[ \t\n\x0c]))[^\x20-\x7e\t\n\x0c]")
_LAST_NOT_PLAIN = re.compile(r"[^\x20-\x7e\t\n\x0c](?=[ \t\n\x0c]|$)")

# In words joined by spaces (_WordPieces._tokenised): what makes a word not plain.
_NOT_PRINTABLE_ASCII = re.compile(r"[^\x20-\x7e]")


def _spaced_starts(lengths: np.ndarray) -> np.ndarray:
  """Where each word of `lengths` starts were each followed by one character."""
  return np.cumsum(lengths + 1) - (lengths + 1)


class _WordPieces:
  """Texts tokenised word by word, each distinct word once, for a tokenizer
  that tokenises words apart (_tokenises_words_apart) and whose normaliser
  keeps _ASCII_KEPT's characters (ascii_kept): the pieces of a text are then
  its words' pieces in order (_words_in says for which texts), each word
  tokenised alone, and each piece's offsets its word's own moved to where
  the word starts (tests/unit/scoring/test_t5_scorer.py holds both against
  the tokenizer, on plain texts and on texts of non-ASCII words and
  characters the normaliser changes or removes). Text is mostly words seen
  before (the citations bench's premise lines and hypotheses: 91% of their
  words), and a word in the cache costs a look-up, where the fast tokenizer
  runs its lattice over every word of every text again. The texts _words_in
  refuses go to the tokenizer whole. Shared by a worker's threads: a call
  reads each word's entry from the cache once, so another thread emptying
  the cache only costs it look-ups."""

  def __init__(self, tokenizer, normalizer, max_words: int = WORD_CACHE_WORDS,
               max_pieces: int = WORD_CACHE_PIECES):
    self._tokenizer = tokenizer
    self._normalizer = normalizer
    # character -> whether the normaliser leaves something of it (_words_in)
    self._kept: Dict[str, bool] = {}
    self._max_words = max_words
    self._max_pieces = max_pieces
    # word -> int32 array (3, pieces): its ids, start and end offsets (from
    # the word's first character); and the pieces they hold in all.
    self._words: Dict[str, np.ndarray] = {}
    self._pieces = 0

  def ids(self, texts: Sequence[str]) -> List[List[int]]:
    """The pieces of each text (no special tokens)."""
    return self._pieces_of(texts, offsets=False)

  def packed(self, texts: Sequence[str]) -> List[np.ndarray]:
    """_packed(ids, offsets) of each text (no special tokens)."""
    return self._pieces_of(texts, offsets=True)

  def _pieces_of(self, texts: Sequence[str], offsets: bool) -> List[Any]:
    """ids() or (`offsets`) packed(): texts from their words (_words_in), the
    others from one tokenizer call."""
    results: List[Any] = [None] * len(texts)
    plain = self._assemble(texts, results, offsets)
    others = [text for text, words in zip(texts, plain) if words is None]
    if others:
      found = iter(self._tokenizer.input_ids(others, add_special_tokens=False,
                                             offsets=offsets))
      for index, words in enumerate(plain):
        if words is None:
          results[index] = _packed(*next(found)) if offsets else next(found)
    return results

  def _assemble(self, texts: Sequence[str], results: List[Any],
                offsets: bool) -> List[Optional[List[str]]]:
    """Fills `results` for the texts put together from their words (their
    ids as lists, or with `offsets` their packed arrays); returns each
    text's words, None for a text to tokenise whole. A call's words are put
    together at once: each occurrence of a word is an index into the call's
    distinct words, whose pieces are gathered by numpy."""
    split = [self._words_in(text) for text in texts]
    words = list(itertools.chain.from_iterable(
        found for found in split if found is not None))
    if not words:
      for index, found in enumerate(split):
        if found is not None:
          results[index] = (np.zeros(0, dtype=np.int32) if offsets else [])
      return split
    distinct = list(dict.fromkeys(words))
    vocabulary = dict(zip(distinct, range(len(distinct))))
    occurrences = np.fromiter(map(vocabulary.__getitem__, words), dtype=np.int64,
                              count=len(words))
    entries = self._entries(distinct)
    counts = np.array([entry.shape[1] for entry in entries], dtype=np.int64)
    flat = np.concatenate(entries, axis=1)
    firsts = np.cumsum(counts) - counts
    per_word = counts[occurrences]
    bounds = np.concatenate(([0], np.cumsum(per_word)))
    gather = (np.repeat(firsts[occurrences] - bounds[:-1], per_word)
              + np.arange(bounds[-1], dtype=np.int64))
    pieces = flat[:, gather] if offsets else flat[0, gather]
    if offsets:
      pieces[1:] += np.repeat(self._word_starts(texts, split, words), per_word).astype(np.int32)
    word_index = 0
    for index, found in enumerate(split):
      if found is None:
        continue
      first, last = bounds[word_index], bounds[word_index + len(found)]
      word_index += len(found)
      results[index] = (pieces[:, first:last].reshape(-1) if offsets
                        else pieces[first:last].tolist())
    return split

  def _words_in(self, text: str) -> Optional[List[str]]:
    """The words of `text` (_WORD), where the text's pieces are its words'
    pieces in order, each word tokenised alone; else None. The white space
    between words is then a space that no piece crosses (the normaliser
    keeps _ASCII_KEPT's characters, the tokenizer tokenises words apart).
    That holds for a plain text, and for another unless
      * a grapheme cluster spans white space: a carriage return (its line
        feed), a word that starts with a character that joins the one before
        it or ends with one that may join the next (the checks _lines_of makes
        at line breaks, made here at each word's edges, the text's own
        included);
      * a word starts with a character the normaliser removes (a control
        character): the tokenizer's offsets of a text that starts so are
        shifted by the characters removed, so such a word alone is not
        placed as it is after white space, nor is the rest of a text that
        starts with it.
    Characters the normaliser changes, and white space it does not make a
    space (a no-break space), lie inside a word and are tokenised with it."""
    if _plain(text):
      return text.split()
    if "\r" in text:
      return None
    kept = self._kept
    for found in _FIRST_NOT_PLAIN.finditer(text):
      first = found.group()
      if first not in kept:
        kept[first] = (self._normalizer is None
                       or self._normalizer.normalize_str(first) != "")
      if not kept[first] or _joins_the_previous_character(first):
        return None
    if any(not _ends_clear_of_the_next_character(found.group())
           for found in _LAST_NOT_PLAIN.finditer(text)):
      return None
    return _WORD.findall(text)

  @staticmethod
  def _word_starts(texts: Sequence[str], split: Sequence[Optional[List[str]]],
                   words: List[str]) -> np.ndarray:
    """Where each word (_WORD) of the texts split into words starts in its text."""
    lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    starts = _spaced_starts(lengths)
    word_index = 0
    for text, found in zip(texts, split):
      if not found:
        continue
      first, last = word_index, word_index + len(found)
      word_index = last
      origin = starts[first]
      starts[first:last] -= origin
      if len(text) != starts[last - 1] + lengths[last - 1]:
        # White space around the words or more than one character between two.
        starts[first:last] = [match.start() for match in _WORD.finditer(text)]
    return starts

  def _entries(self, words: List[str]) -> List[np.ndarray]:
    """Each word's entry, from the cache or, for the words not in it, from one
    tokenizer call, and added to it."""
    cache = self._words
    entries = list(map(cache.get, words))
    missing = [word for word, entry in zip(words, entries) if entry is None]
    if not missing:
      return entries
    tokenised = self._tokenised(missing)
    self._keep(missing, tokenised)
    fresh = iter(tokenised)
    return [next(fresh) if entry is None else entry for entry in entries]

  def _keep(self, words: List[str], entries: List[np.ndarray]) -> None:
    """Adds words' entries to the cache, emptied first where it is full. An
    entry is an array of its own or a view of one that holds no word too
    long to be kept (_joined_apart), so no kept entry holds memory that the
    cache does not count for long: at most one call's words' pieces past an
    emptying."""
    cache = self._words
    longest = min(WORD_CACHE_LONGEST, self._max_pieces)
    for word, entry in zip(words, entries):
      pieces = entry.shape[1]
      if pieces > longest:
        continue
      if len(cache) >= self._max_words or self._pieces + pieces > self._max_pieces:
        cache.clear()
        self._pieces = 0
      cache[word] = entry
      self._pieces += pieces

  def _tokenised(self, words: List[str]) -> List[np.ndarray]:
    """The entries of `words`, in one tokenizer call: the plain words from
    the tokenisation of them joined by spaces (one text: one encoding to
    convert, not one a word; _joined_apart), the others (a non-ASCII
    character, which may normalise to white space or to nothing) each
    tokenised alone."""
    joined = " ".join(words)
    odd = [found.start() for found in _NOT_PRINTABLE_ASCII.finditer(joined)]
    if not odd:
      ((ids, spans),) = self._tokenizer.input_ids([joined], add_special_tokens=False,
                                                  offsets=True)
      return self._joined_apart(words, ids, spans)
    # A word (no white space of _ASCII_KEPT's in it) is plain unless it holds
    # a character found here.
    lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    is_plain = [True] * len(words)
    for index in np.searchsorted(_spaced_starts(lengths), odd, side="right").tolist():
      is_plain[index - 1] = False
    plain = list(itertools.compress(words, is_plain))
    others = [word for word, flag in zip(words, is_plain) if not flag]
    found = self._tokenizer.input_ids(([" ".join(plain)] if plain else []) + others,
                                      add_special_tokens=False, offsets=True)
    alone = iter([_packed(ids, spans).reshape(3, -1) for ids, spans in found[bool(plain):]])
    together = iter(self._joined_apart(plain, *found[0]) if plain else [])
    return [next(together) if flag else next(alone) for flag in is_plain]

  def _joined_apart(self, words: List[str], ids: List[int],
                    spans: List[Tuple[int, int]]) -> List[np.ndarray]:
    """The entries of plain `words` from the pieces and offsets of the words
    joined by spaces, cut where each word starts: every piece lies inside its
    word, a word's leading "▁" at its first character. Where a word would get
    no piece, each word is tokenised on its own instead (never seen; a
    guard)."""
    lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    word_starts = _spaced_starts(lengths)
    values = _packed(ids, spans).reshape(3, -1).astype(np.int64)
    owner = np.searchsorted(word_starts, values[1], side="right") - 1
    counts = np.bincount(owner, minlength=len(words)) if len(owner) else np.zeros(
        len(words), dtype=np.int64)
    if (len(counts) != len(words) or not counts.all()
        or (values[2] > (word_starts + lengths)[owner]).any()):
      return [_packed(ids, spans).reshape(3, -1) for ids, spans in self._tokenizer.input_ids(
          words, add_special_tokens=False, offsets=True)]
    values[1:] -= word_starts[owner]
    values = values.astype(np.int32)
    ends = np.cumsum(counts).tolist()
    long = counts > WORD_CACHE_LONGEST
    if not long.any():
      return [values[:, start:end] for start, end in zip([0] + ends[:-1], ends)]
    # The words to be kept as views of an array without the long words'
    # pieces, which the cache does not keep (_keep).
    kept = values[:, np.repeat(~long, counts)]
    kept_ends = np.cumsum(np.where(long, 0, counts)).tolist()
    return [values[:, end - count:end] if is_long else kept[:, kept_end - count:kept_end]
            for end, kept_end, count, is_long in zip(ends, kept_ends, counts.tolist(),
                                                     long.tolist())]


class _CutPremise:
  """A premise's pieces grouped into its words, from which a window's ids are
  joined (T5NliModel._windows_of).

  Made only for a tokenizer that tokenises words apart (_tokenises_words_apart)
  and a premise that its normaliser changes in nothing but white space (each
  white-space character to a space) and in which no grapheme cluster spans
  white space (`of` checks both). Then every piece lies inside one word of the
  premise, a word is tokenised alike wherever it stands, and two pieces belong
  to different words exactly where text lies between them (the white space the
  pre-tokenizer drops; a word's first piece may share its offsets with the "▁"
  before it). So the window from piece `start` to piece `end - 1`, tokenised
  whole as "premise: TEXT hypothesis: H", is `before` + TEXT's pieces +
  `after`, and TEXT's pieces are the premise's for each word inside it; a
  word cut by the window's edge is a word of its own in TEXT, so its part in
  the window is tokenised again."""

  def __init__(self, premise: str, encoding: _PremiseEncoding,
               before: List[int], after: List[int]):
    self.premise, self.pieces = premise, encoding.pieces
    self.starts, self.ends = encoding.starts, encoding.ends
    # first[i], last[i]: the first and last piece of piece i's word.
    self.first, self.last = encoding.words
    self.before, self.after = before, after

  @staticmethod
  def of(premise: str, normalizer, encoding: _PremiseEncoding,
         before: List[int], after: List[int],
         keeps_ascii: bool = False) -> Optional["_CutPremise"]:
    """The premise cut into words, or None where its windows must be tokenised
    whole (see the class). The words are found once per encoding (_words_of)."""
    if encoding.words is None:
      encoding.words = _words_of(premise, normalizer, encoding, keeps_ascii)
    if encoding.words is False:
      return None
    return _CutPremise(premise, encoding, before, after)

  def parts(self, start: int, end: int) -> Optional[List[Any]]:
    """The pieces of the window [start, end): arrays of ids, and the text of
    a word cut by an edge (to be tokenised); None where the window must be
    tokenised whole (it starts inside a cluster)."""
    first, last, starts, ends, premise = (self.first, self.last, self.starts, self.ends,
                                          self.premise)
    if first[start] != start and _joins_the_previous_character(premise[starts[start]]):
      return None
    if first[start] == first[end - 1]:  # inside one word
      if first[start] == start and last[end - 1] == end - 1:
        return [self.pieces[start:end]]
      return [premise[starts[start]:ends[end - 1]]]
    parts: List[Any] = []
    if first[start] == start:
      parts.append(self.pieces[start:last[start] + 1])
    else:
      parts.append(premise[starts[start]:ends[last[start]]])
    parts.append(self.pieces[last[start] + 1:first[end - 1]])
    if last[end - 1] == end - 1:
      parts.append(self.pieces[first[end - 1]:end])
    else:
      parts.append(premise[starts[first[end - 1]]:ends[end - 1]])
    return parts


# The ASCII characters a premise may hold for _words_of's short cut: the
# printable ones and the white space T5's normaliser makes a space, but not the
# carriage return ("\r\n" is one grapheme cluster).
_ASCII_KEPT = "".join(map(chr, range(0x20, 0x7f))) + "\t\n\x0c"


def ascii_kept(normalizer) -> bool:
  """Whether the normaliser keeps each character of _ASCII_KEPT (its white
  space made a space): then it keeps any text of them alone, as it maps
  grapheme cluster by cluster (a SentencePiece charsmap, the only normaliser
  _tokenises_words_apart accepts) and each of them is a cluster of its own."""
  return normalizer is None or all(
      normalizer.normalize_str(character) == character.translate(_TO_SPACE)
      for character in _ASCII_KEPT)


def _words_of(premise: str, normalizer, encoding: _PremiseEncoding,
              keeps_ascii: bool) -> Any:
  """(first, last): the first and last piece of each piece's word (a word
  starts where text lies between a piece and the one before it), or False
  where the premise's windows must be tokenised whole: no pieces, a
  normaliser that changes more than white space, or a grapheme cluster that
  spans white space (_CutPremise). `keeps_ascii`: ascii_kept(normalizer), so a
  premise of _ASCII_KEPT's characters alone is not normalised to be checked."""
  if not len(encoding.pieces):
    return False
  if not (keeps_ascii and _plain(premise)):
    if (normalizer is not None
        and normalizer.normalize_str(premise) != premise.translate(_TO_SPACE)):
      return False
    if any(_joins_the_previous_character(found.group()[1])
           for found in _SPACE_THEN_OTHER.finditer(premise)):
      return False
  starts, ends = encoding.starts, encoding.ends
  word_starts = np.flatnonzero(np.concatenate(([True], starts[1:] > ends[:-1])))
  word_ends = np.append(word_starts[1:], len(starts))
  return (np.repeat(word_starts, word_ends - word_starts),
          np.repeat(word_ends - 1, word_ends - word_starts))


class EncodedExample(NamedTuple):
  windows: List[List[int]]  # input ids of each window, EOS included
  truncated: bool  # the premise had to be windowed


class T5NliModel(TokenBudgetModel):
  """A loaded NLI model: tokenisation with premise windows, batched scoring."""

  def __init__(self, model, tokenizer, model_path: str, device: str,
               max_input_tokens: int, token_budget: int,
               label_ids: Optional[Tuple[int, int]] = None,
               decoder_start_id: Optional[int] = None):
    """`label_ids` (the "1" and "0" ids) and `decoder_start_id`, where given,
    replace the tokenizer's label pieces and the config's start id (MiniCheck's
    Flan-T5 reads fixed ids from a fixed start: models/minicheck.py)."""
    super().__init__(model, tokenizer, device, max_input_tokens, token_budget)
    if label_ids is None:
      self.labels = label_pieces(tokenizer, model_path)
    else:
      self.labels = LabelPieces(*label_ids, *tokenizer.convert_ids_to_tokens(list(label_ids)))
    self.one_id, self.zero_id = self.labels.one_id, self.labels.zero_id
    self.decoder_start_id = (model.config.decoder_start_token_id
                             if decoder_start_id is None else decoder_start_id)
    config = model.config
    # T5 v1.0 scales the last decoder state by d_model^-0.5 before its tied
    # output layer; v1.1 and mT5 do not (transformers 5 says so in
    # scale_decoder_outputs, earlier releases in tie_word_embeddings).
    self._scales_decoder_output = config.model_type == "t5" and getattr(
        config, "scale_decoder_outputs", config.tie_word_embeddings)
    # (prefix, suffix) special tokens where premise and hypothesis can be
    # tokenised apart, else False; found on first use.
    self._words_apart: Any = None
    self._premise_pieces = PieceCache(PREMISE_CACHE_TOKENS)
    self._line_pieces = PieceCache(LINE_CACHE_VALUES)
    self._premises = PieceCache(PREMISE_ENCODING_CACHE_VALUES)
    # Lines tokenised for their ids alone (_premise_ids), and how many of the
    # premises put together from lines turned out too long (windowed).
    self._line_ids = PieceCache(LINE_CACHE_VALUES)
    self._premises_seen = 0
    self._premises_windowed = 0
    self._keeps_ascii: Optional[bool] = None  # ascii_kept of the normaliser, on first use
    self._word_pieces: Any = None  # a _WordPieces where they apply, else False; on first use
    self._check_first_step()

  def _check_first_step(self) -> None:
    """label_logits re-implements the first decoder step: check it against the
    model's own forward on a probe input, so that a transformers release that
    changes the architecture's details stops the load instead of skewing every
    score."""
    torch = self._torch
    ids, mask = self._pad([self._ids("premise: probe. hypothesis: probe")])
    start = torch.full((1, 1), self.decoder_start_id, dtype=torch.long, device=ids.device)
    with torch.inference_mode():
      ours = self.label_logits(ids, mask).float()
      theirs = self.model(input_ids=ids, attention_mask=mask, decoder_input_ids=start,
                          use_cache=False).logits[:, 0, [self.one_id, self.zero_id]].float()
    # Relative to the logits' size: bfloat16 keeps 8 bits of mantissa, and the
    # reordered arithmetic rounds differently; a wrong architecture detail (a
    # missing d_model^-0.5, the wrong output layer) is off by far more.
    precise = next(self.model.parameters()).dtype == torch.float32
    tolerance = (1e-3 if precise else 5e-2) * max(1.0, float(theirs.abs().max()))
    if not torch.allclose(ours, theirs, rtol=0, atol=tolerance):
      raise ModelError(
          f"the one-step scorer disagrees with the model's forward pass on a probe "
          f"({ours.tolist()} vs {theirs.tolist()}): this transformers release "
          f"computes {type(self.model).__name__} differently; please report it")

  # -- tokenisation ---------------------------------------------------------

  def _pieces_known(self, texts: Sequence[str], known: Dict[str, List[int]]) -> List[List[int]]:
    """_ids_of(texts, special_tokens=False), the texts not in `known` (text ->
    pieces) tokenised in one call, each distinct one once, and added to it."""
    missing = [text for text in dict.fromkeys(texts) if text not in known]
    known.update(zip(missing, self._ids_of(missing, special_tokens=False)))
    return [known[text] for text in texts]

  def _ids(self, text: str) -> List[int]:
    return self._ids_of([text])[0]

  def _ids_of(self, texts: Sequence[str], special_tokens: bool = True) -> List[List[int]]:
    """The input ids of each text (`special_tokens`: with the tokenizer's
    special tokens around them), from one call of the fast tokenizer
    (LockedTokenizer.input_ids), which encodes a list in one pass: what a call
    costs besides the encoding is paid once per list, not once per text.
    Without special tokens, texts are put together from their words' pieces
    where that gives the same (_WordPieces)."""
    if not texts:
      return []
    words = None if special_tokens else self._words()
    if words is not None:
      return words.ids(texts)
    return self.tokenizer.input_ids(texts, special_tokens)

  def _ascii_is_kept(self) -> bool:
    if self._keeps_ascii is None:
      self._keeps_ascii = ascii_kept(self.tokenizer.backend_tokenizer.normalizer)
    return self._keeps_ascii

  def _words(self) -> Optional[_WordPieces]:
    """The model's _WordPieces, or None where its tokenizer does not tokenise
    words apart or its normaliser changes plain text."""
    if self._word_pieces is None:
      self._word_pieces = (_WordPieces(self.tokenizer,
                                       self.tokenizer.backend_tokenizer.normalizer)
                           if self._tokenises_apart() and self._ascii_is_kept() else False)
    return self._word_pieces or None

  def encode(self, example: AttributionExample, windowed: bool = True) -> EncodedExample:
    """The model input(s) of an example: one, or (`windowed`, past the model's
    length) one per premise window."""
    return self.encode_many([example], windowed)[0]

  def encode_many(self, examples: Sequence[AttributionExample],
                  windowed: bool = True) -> List[EncodedExample]:
    """encode() of each example; only the inputs past the model's length are
    windowed one by one. Where the tokenizer allows it (_tokenises_words_apart),
    each distinct "premise: ..." and "hypothesis: ..." of the examples is
    tokenised once and the input ids joined: a passage that many pairs share
    is tokenised once, not once a pair; else the whole inputs, in one call."""
    # What the whole inputs found, for the windows: premises' encodings, and
    # the pieces (no special tokens) of texts tokenised ("hypothesis: H").
    encodings: Dict[str, _PremiseEncoding] = {}
    known: Dict[str, List[int]] = {}
    if self._tokenises_apart():
      whole = self._joined_ids(examples, *self._words_apart, encodings, known)
    else:
      whole = self._ids_of([f"premise: {example.premise} hypothesis: {example.hypothesis}"
                            for example in examples])
    encoded = [EncodedExample([ids], False) for ids in whole]
    if windowed:
      long = [i for i, ids in enumerate(whole) if len(ids) > self.max_input_tokens]
      self._premises_seen += len(examples)
      self._premises_windowed += len(long)
      for i, item in zip(long, self._windows_of([examples[i] for i in long],
                                                [whole[i] for i in long], encodings,
                                                known)):
        encoded[i] = item
    return encoded

  def _premise_encodings(self, premises: Sequence[str],
                         known: Optional[Dict[str, Any]] = None) -> List[_PremiseEncoding]:
    """The encoding of each premise tokenised without special tokens (pieces
    and offsets), as one tokenizer call gives them. Where the tokenizer
    tokenises words apart, each premise is cut at its line breaks (_lines_of)
    and each distinct line is tokenised once, in one call, and kept in the
    cache of recent lines; a premise's pieces are its lines' pieces in order
    and its offsets theirs moved to where each line starts: the same
    (tests/unit/scoring/test_t5_scorer.py). Each distinct premise's encoding
    is kept in the cache of recent premises. `known`: premises' encodings
    found earlier for the same chunk, used, and added to."""
    if not premises:
      return []
    if known is not None:
      fresh = list(dict.fromkeys(p for p in premises if p not in known))
      known.update(zip(fresh, self._premise_encodings(fresh)))
      return [known[premise] for premise in premises]
    if not self._tokenises_apart():
      return [_PremiseEncoding.of(ids, offsets) for ids, offsets in
              self.tokenizer.input_ids(premises, add_special_tokens=False, offsets=True)]
    results, cuts = self._cut_premises(premises, lambda encoding: encoding)
    found, missing = _lines_found(cuts, self._line_pieces.get_stored)
    words = self._words()
    if words is not None:
      encoded = words.packed(missing)
    else:
      encoded = [_packed(ids, offsets) for ids, offsets in self.tokenizer.input_ids(
          missing, add_special_tokens=False, offsets=True)]
    for line, packed in zip(missing, encoded):
      found[line] = packed
      self._line_pieces.put(line, packed)
    for premise, lines in cuts.items():
      if len(lines) == 1:
        encoding = _PremiseEncoding.unpacked(found[lines[0]])
      else:
        ids, starts, ends, position = [], [], [], 0
        for line in lines:
          line_encoding = _PremiseEncoding.unpacked(found[line])
          ids.append(line_encoding.pieces)
          starts.append(line_encoding.starts + position)
          ends.append(line_encoding.ends + position)
          position += len(line) + 1
        encoding = _PremiseEncoding(np.concatenate(ids), np.concatenate(starts),
                                    np.concatenate(ends))
      self._premises.put(premise, encoding)
      results[premise] = encoding
    return [results[premise] for premise in premises]

  def _cut_premises(self, premises: Sequence[str], of_cached: Callable[[Any], Any]
                    ) -> Tuple[Dict[str, Any], Dict[str, List[str]]]:
    """({premise: of_cached(its encoding)} of the distinct premises in the
    cache of premises, {premise: its lines} of the others)."""
    results: Dict[str, Any] = {}
    cuts: Dict[str, List[str]] = {}
    for premise in premises:
      if premise not in results and premise not in cuts:
        cached = self._premises.get_stored(premise)
        if cached is not None:
          results[premise] = of_cached(cached)
        else:
          cuts[premise] = _lines_of(premise) or [premise]
    return results, cuts

  def _line_ids_stored(self, line: str) -> Optional[np.ndarray]:
    """A line's ids from the cache of lines with offsets, else from the cache
    of lines' ids; None where in neither."""
    packed = self._line_pieces.get_stored(line)
    if packed is not None:
      return packed[:len(packed) // 3]
    return self._line_ids.get_stored(line)

  def _offsets_first(self) -> bool:
    """Whether a premise's lines are tokenised with their offsets from the
    start: where more than a quarter of the premises so far were windowed
    (their offsets were needed), else for their ids alone, the offsets
    found later for the few premises that turn out too long (their lines
    then tokenised twice). With their offsets, lines cost about 1.4 times
    the CPU of their ids alone (bench/README.md: claims' single-line premises
    are hardly ever windowed, the citations bench's recall premises nearly
    always). The ids are the same either way."""
    return self._premises_windowed * 4 > self._premises_seen

  def _premise_ids(self, premises: Sequence[str], encodings: Dict[str, Any]) -> List[List[int]]:
    """The ids of each premise tokenised without special tokens (all of them
    cut at line breaks: _joined_ids' premises). With _offsets_first, from
    their encodings (added to `encodings`); else from the caches of premises
    and of lines where there, the other lines tokenised for their ids alone,
    in one call, and kept in the cache of lines' ids."""
    if self._offsets_first():
      return [encoding.pieces.tolist()
              for encoding in self._premise_encodings(premises, encodings)]
    results, cuts = self._cut_premises(premises, lambda encoding: encoding.pieces.tolist())
    found, missing = _lines_found(cuts, self._line_ids_stored)
    for line, ids in zip(missing, self._ids_of(missing, special_tokens=False)):
      found[line] = np.asarray(ids, dtype=np.int32)
      self._line_ids.put(line, found[line])
    for premise, lines in cuts.items():
      results[premise] = np.concatenate([found[line] for line in lines]).tolist()
    return [results[premise] for premise in premises]

  def _tokenises_apart(self) -> bool:
    if self._words_apart is None:
      self._words_apart = _tokenises_words_apart(self.tokenizer)
    return bool(self._words_apart)

  def _joined_ids(self, examples: Sequence[AttributionExample], prefix: List[int],
                  suffix: List[int], encodings: Dict[str, Any],
                  known: Dict[str, List[int]]) -> List[List[int]]:
    """The input ids of each example's "premise: P hypothesis: H" as the
    special tokens around the pieces of "premise: P" and of "hypothesis: H":
    each distinct text tokenised once, and a premise's pieces kept for the
    chunks that follow (PieceCache). The pieces of "premise: P" are those of
    "premise:" then P's, from its lines (_premise_encodings), unless P's first
    character joins the space before it; their encodings are added to
    `encodings`, and the texts tokenised here and their pieces to `known`."""
    texts: Dict[str, int] = {}  # to tokenise, in one call: text -> position
    premises: Dict[str, List[int]] = {}
    missed = []
    from_lines: Dict[str, str] = {}  # "premise: P" -> P
    parts = []
    for example in examples:
      premise = f"premise: {example.premise}"
      if not _ends_clear_of_the_next_character(premise):
        whole = f"{premise} hypothesis: {example.hypothesis}"
        parts.append((None, texts.setdefault(whole, len(texts))))
        continue
      if premise not in premises and premise not in texts and premise not in from_lines:
        cached = self._premise_pieces.get(premise)
        if cached is not None:
          premises[premise] = cached
        elif example.premise and _joins_the_previous_character(example.premise[0]):
          texts[premise] = len(texts)
          missed.append(premise)
        else:
          from_lines[premise] = example.premise
      parts.append((premise, texts.setdefault(f"hypothesis: {example.hypothesis}",
                                              len(texts))))
    if from_lines:
      texts.setdefault("premise:", len(texts))
    pieces = self._ids_of(list(texts), special_tokens=False)
    known.update(zip(texts, pieces))
    for premise in missed:
      premises[premise] = pieces[texts[premise]]
      self._premise_pieces.put(premise, premises[premise])
    if from_lines:
      head = pieces[texts["premise:"]]
      for premise, ids in zip(from_lines, self._premise_ids(
          list(from_lines.values()), encodings)):
        premises[premise] = head + ids
        self._premise_pieces.put(premise, premises[premise])
    return [prefix + (premises[premise] if premise is not None else []) + pieces[rest] + suffix
            for premise, rest in parts]

  def _windows_of(self, examples: Sequence[AttributionExample],
                  whole: Sequence[List[int]],
                  encodings: Optional[Dict[str, Any]] = None,
                  known: Optional[Dict[str, List[int]]] = None) -> List[EncodedExample]:
    """The premise windows of examples whose whole inputs (`whole`) are past
    the model's length: each window fits with the whole hypothesis.

    A window is the premise's text from one of its pieces to another, put
    between "premise: " and " hypothesis: H" and tokenised as a whole input.
    Where the tokenizer tokenises words apart and leaves the premise as it is
    (_CutPremise), a window's ids are joined from the premise's own pieces
    instead: only a word cut at the window's edge is tokenised again (as the
    whole window's tokenisation would see it, a word of its own), in one call
    for the chunk; else each window is tokenised whole. The ids are the same
    either way (tests/unit/scoring/test_t5_scorer.py). `encodings` and `known`:
    the premises' encodings and texts' pieces the whole inputs found."""
    if not examples:
      return []
    premise_encodings = self._premise_encodings([example.premise for example in examples],
                                                {} if encodings is None else encodings)
    apart, normalizer, keeps_ascii = self._tokenises_apart(), None, False
    if apart:
      prefix, suffix = self._words_apart
      head, *tails = self._pieces_known(
          ["premise:"] + [f"hypothesis: {example.hypothesis}" for example in examples],
          {} if known is None else known)
      normalizer = self.tokenizer.backend_tokenizer.normalizer
      keeps_ascii = self._ascii_is_kept()
    plans = []
    for i, (example, ids, encoding) in enumerate(zip(examples, whole, premise_encodings)):
      cut = _CutPremise.of(example.premise, normalizer, encoding, prefix + head,
                           tails[i] + suffix, keeps_ascii) if apart else None
      plans.append((example, ids, encoding, cut))
    # The words cut at the windows' edges, tokenised in one call (a window that
    # has to shrink may cut one more: _pieces tokenises it then).
    edges: Dict[str, List[int]] = {}
    for example, _, encoding, cut in plans:
      if cut is not None:
        for start, end, _ in self._window_spans(example, encoding, cut, edges, dry_run=True):
          for part in cut.parts(start, end) or ():
            if isinstance(part, str):
              edges.setdefault(part, [])
    for text, pieces in zip(list(edges), self._ids_of(list(edges), special_tokens=False)):
      edges[text] = pieces
    return [EncodedExample([ids], True) if not len(encoding.pieces)
            else EncodedExample([window for _, _, window in
                                 self._window_spans(example, encoding, cut, edges)], True)
            for example, ids, encoding, cut in plans]

  def _window_spans(self, example: AttributionExample, encoding: _PremiseEncoding,
                    cut: Optional["_CutPremise"], edges: Dict[str, List[int]],
                    dry_run: bool = False):
    """(start, end, ids) of each window of the premise's pieces [start, end);
    `dry_run`: the spans as they are before any window shrinks, ids None."""
    if cut is not None:
      fixed = len(cut.before) + len(cut.after)
    else:
      fixed = len(self._ids(f"premise:  hypothesis: {example.hypothesis}"))
    size = max(_MIN_WINDOW_TOKENS, self.max_input_tokens - fixed - 2)
    stride = max(1, int(size * (1 - _WINDOW_OVERLAP)))
    premise, starts, ends = example.premise, encoding.starts, encoding.ends
    count = len(encoding.pieces)
    start = 0
    while True:
      end = min(start + size, count)
      window = None
      while not dry_run:
        text = premise[starts[start]:ends[end - 1]]
        window = (self._pieces(cut, start, end, edges)
                  if cut is not None and _ends_clear_of_the_next_character(text) else None)
        if window is None:
          window = self._ids(f"premise: {text} hypothesis: {example.hypothesis}")
        # Re-tokenising at the cut can add a piece or two: shrink until it fits.
        if len(window) <= self.max_input_tokens or end - start <= _MIN_WINDOW_TOKENS:
          break
        end -= 1
      yield start, end, window
      if end >= count:
        break
      start = min(start + stride, end)

  def _pieces(self, cut: "_CutPremise", start: int, end: int,
              edges: Dict[str, List[int]]) -> Optional[List[int]]:
    """The ids of the window [start, end) joined from the premise's pieces,
    `edges` the pieces of the words cut at windows' edges; None where the
    window must be tokenised whole."""
    parts = cut.parts(start, end)
    if parts is None:
      return None
    ids = list(cut.before)
    for part in parts:
      if isinstance(part, str):
        if part not in edges:
          edges[part] = self._ids_of([part], special_tokens=False)[0]
        ids.extend(edges[part])
      else:
        ids.extend(part.tolist())
    ids.extend(cut.after)
    return ids

  # -- scoring --------------------------------------------------------------

  def encoder_states(self, ids, mask):
    """The encoder's last hidden states, as the model computes them."""
    return self.model.get_encoder()(input_ids=ids, attention_mask=mask).last_hidden_state

  def label_logits(self, ids, mask, encoded=None):
    """Logits of "1" and "0" at the first decoder step: [batch, 2], from the
    encoder states `encoded` (computed here when not given).

    The encoder runs as the model defines it. The one decoder step is written
    out so that it does only what one step needs: self-attention over the lone
    start token is V then O (softmax over one key is 1); cross-attention folds
    the key and value projections into the query and the weighted sum, so the
    encoder states are never projected (that would cost 2 d^2 per token and
    layer, about a sixth of the encoder); and only the two label rows of the
    output layer are computed. The arithmetic is the model's, reordered.
    """
    torch = self._torch
    model = self.model
    if encoded is None:
      encoded = self.encoder_states(ids, mask)
    decoder = model.get_decoder()
    batch = ids.shape[0]
    start = torch.full((batch, 1), self.decoder_start_id, dtype=torch.long,
                       device=ids.device)
    hidden = decoder.embed_tokens(start)
    blocked = (mask == 0)[:, None, :]
    for block in decoder.block:
      self_attention, cross_attention, feed_forward = block.layer
      attention = self_attention.SelfAttention
      hidden = hidden + attention.o(attention.v(self_attention.layer_norm(hidden)))
      attention = cross_attention.EncDecAttention
      heads, width = attention.n_heads, attention.key_value_proj_dim
      query = attention.q(cross_attention.layer_norm(hidden)).view(batch, heads, width)
      keys = _weight(attention.k).view(heads, width, -1)
      scores = torch.einsum("bhd,bld->bhl", torch.einsum("bhk,hkd->bhd", query, keys),
                            encoded) * attention.scaling
      scores = scores.masked_fill(blocked, torch.finfo(scores.dtype).min)
      weights = torch.softmax(scores.float(), dim=-1).type_as(scores)
      context = torch.einsum("bhl,bld->bhd", weights, encoded)
      values = torch.einsum("bhd,hkd->bhk", context,
                            _weight(attention.v).view(heads, width, -1))
      hidden = hidden + attention.o(values.reshape(batch, 1, heads * width))
      hidden = feed_forward(hidden)
    hidden = decoder.final_layer_norm(hidden)[:, 0, :]
    if self._scales_decoder_output:
      hidden = hidden * (model.model_dim ** -0.5)
    rows = _weight(model.lm_head)[[self.one_id, self.zero_id]]
    return hidden @ rows.T

  def probabilities(self, sequences: Sequence[List[int]]) -> np.ndarray:
    """P("1") renormalised over {"1", "0"} at the first decoder step, per sequence."""
    return self._run(sequences, decode=False)[0]

  def decode_is_one(self, sequences: Sequence[List[int]]) -> np.ndarray:
    """`generate()` with the model's own generation config (greedy for TRUE's
    checkpoint), as the reference script calls it; decoded text == "1"."""
    return self._run(sequences, decode=True)[1]

  def _run(self, sequences: Sequence[List[int]], decode: bool):
    """(probabilities, decoded == "1" or None), batch by batch. With `decode`,
    generate() starts from the encoder states the probabilities were computed
    from: the encoder, most of the work, runs once per batch, not twice."""
    torch = self._torch
    from transformers.modeling_outputs import BaseModelOutput  # pylint: disable=import-outside-toplevel
    probabilities = np.empty(len(sequences), dtype=np.float64)
    decoded = np.zeros(len(sequences), dtype=bool) if decode else None
    with torch.inference_mode():
      for batch in self._batches([len(s) for s in sequences]):
        ids, mask = self._pad([sequences[i] for i in batch])
        if self.simulated_device is not None:
          probabilities[batch] = self.simulated_device.run(ids, mask)
          continue
        encoded = self.encoder_states(ids, mask)
        pair = self.label_logits(ids, mask, encoded).float()
        probabilities[batch] = torch.softmax(pair, dim=-1)[:, 0].cpu().numpy()
        if decode:
          outputs = self.model.generate(
              encoder_outputs=BaseModelOutput(last_hidden_state=encoded),
              attention_mask=mask)
          texts = self.tokenizer.batch_decode(outputs, skip_special_tokens=True)
          decoded[batch] = [text == "1" for text in texts]
    return probabilities, decoded

  def score(self, examples: Sequence[AttributionExample], decision: str,
            threshold: float) -> List[AttributionScore]:
    # Decode mode is the reference's rule: the whole input, however long.
    windowed = decision != "decode"
    encoded = self.encode_many(examples, windowed)
    sequences = [window for item in encoded for window in item.windows]
    probabilities, decoded = self._run(sequences, decode=decision == "decode")
    return self.window_scores(encoded, probabilities, threshold, decoded)


def load_t5_nli(model_path: str, dtype: str = "float32", device: str = "cpu",
                max_input_tokens: Optional[int] = None,
                token_budget: Optional[int] = None, *,
                tokenizer_path: Optional[str] = None,
                decision: str = "threshold",
                label_ids: Optional[Tuple[int, int]] = None,
                decoder_start_id: Optional[int] = None) -> T5NliModel:
  """Loads a T5/mT5 NLI model for scoring (see the module docstring);
  `label_ids` and `decoder_start_id` as T5NliModel takes them."""
  import torch  # pylint: disable=import-outside-toplevel
  from transformers import AutoConfig, AutoModelForSeq2SeqLM  # pylint: disable=import-outside-toplevel
  check_dtype(dtype, FLOAT16_REFUSED)
  check_device(device)
  check_model_and_tokenizer(model_path, tokenizer_path)
  local_dir = local_model_dir(model_path)
  config = AutoConfig.from_pretrained(local_dir, trust_remote_code=False)
  if config.model_type not in SUPPORTED_MODEL_TYPES:
    raise ModelError(f"--model {model_path}: model type {config.model_type!r} is not "
                     f"one of {', '.join(SUPPORTED_MODEL_TYPES)}")
  _, tokenizer = open_tokenizer(model_path, tokenizer_path)
  # safetensors files are memory-mapped and each tensor is cast to `dtype` as
  # it is read: float32 weights load into bfloat16 without a float32 copy.
  model = AutoModelForSeq2SeqLM.from_pretrained(
      local_dir, use_safetensors=True, trust_remote_code=False,
      dtype=getattr(torch, dtype))
  if decision == "decode":
    refuse_sampling(model.generation_config.do_sample, model_path)
  model.to(device)
  model.eval()
  loaded = T5NliModel(model, tokenizer, model_path, device,
                      resolve_max_input_tokens(tokenizer, max_input_tokens),
                      token_budget or DEFAULT_TOKEN_BUDGET[device], label_ids,
                      decoder_start_id)
  loaded.simulated_device = simulated_device.simulated(local_dir, device)
  if loaded.simulated_device is not None and decision == "decode":
    raise ModelError(f"--model {model_path}: a simulated device scores --decision "
                     "threshold only (it does not run generate())")
  return loaded


class T5NliModelHandler(LocalModelHandler):
  """RunInference handler of the T5 family (see LocalModelHandler)."""

  metrics_namespace = "autoais_t5_nli"

  def __init__(self, model_path: str, *, dtype: str = "float32", device: str = "cpu",
               decision: str = "threshold", threshold: float = 0.5,
               max_input_tokens: Optional[int] = None,
               token_budget: Optional[int] = None, max_batch_size: int = 512,
               large_model: bool = False, torch_threads: int = 0,
               tokenizer_path: Optional[str] = None):
    super().__init__(model_path, threshold, max_batch_size, large_model, torch_threads)
    check_dtype(dtype, FLOAT16_REFUSED)
    if decision not in DECISIONS:
      raise ModelError(f"--decision {decision!r}: choose from {', '.join(DECISIONS)}")
    self._dtype = dtype
    self._device = device
    self._decision = decision
    self._max_input_tokens = max_input_tokens
    self._token_budget = token_budget
    self._tokenizer_path = tokenizer_path

  def load_model(self) -> T5NliModel:
    self._set_threads()
    return self._loaded_once(
        (self._dtype, self._device, self._max_input_tokens, self._token_budget,
         self._tokenizer_path, self._decision),
        lambda: load_t5_nli(self._model_path, self._dtype, self._device,
                            self._max_input_tokens, self._token_budget,
                            tokenizer_path=self._tokenizer_path, decision=self._decision))

  def _score(self, batch: Sequence[AttributionExample],
             model: T5NliModel) -> List[AttributionScore]:
    return model.score(batch, self._decision, self._threshold)


def describe_model(model_path: str, max_input_tokens: Optional[int],
                   tokenizer_path: Optional[str] = None) -> Dict[str, Any]:
  """What run.json records of a model, read on a worker: the label pieces of
  its tokenizer, a checksum of its weights and its generation config (without
  loading the weights)."""
  local_dir = local_model_dir(model_path)
  tokenizer_dir, tokenizer = open_tokenizer(model_path, tokenizer_path)
  labels = label_pieces(tokenizer, model_path)
  config = read_json(os.path.join(local_dir, "config.json"), "--model", model_path)
  generation_path = os.path.join(local_dir, "generation_config.json")
  generation = (read_json(generation_path, "--model", model_path)
                if os.path.exists(generation_path) else None)
  return {
      "model_type": config.get("model_type"),
      "tie_word_embeddings": config.get("tie_word_embeddings", True),
      **checkpoint_checksums(local_dir, tokenizer_dir, tokenizer_path or model_path),
      "label_pieces": "first piece of the tokenizer's encoding of '1' and of '0'",
      "one_token_id": labels.one_id,
      "zero_token_id": labels.zero_id,
      "one_token": labels.one_piece,
      "zero_token": labels.zero_piece,
      "max_input_tokens": resolve_max_input_tokens(tokenizer, max_input_tokens),
      "generation_config": {key: value for key, value in (generation or {}).items()
                            if key != "transformers_version"} or None,
      **simulated_device.describe(local_dir),
  }
