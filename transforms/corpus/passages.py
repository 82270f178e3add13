"""Passage formats (SPEC 5.1).

The attribution corpus stores Pyserini `contents`: `« title » « headings » text`,
where headings usually start with the title (`« St. Elsewhere » « St. Elsewhere,
Episodes, "Their Town" » In a ...`). Two renderings are derived from it:

* the NLI premise, `"{headings}. {text}"` (and, for `--decision decode`, the
  Attributed QA script's own premise: its regex has no DOTALL, so the text stops
  at the first line break: `reference_premise`);
* the AIS display form used in ratings.csv: `Title: {title}`, a `Section:` line with
  the headings after the title, a blank line, then the text.

Predictions may carry a passage already (ratings.csv does, in display form); the
parser below accepts either form, and anything else is used as is.
"""
import re
from typing import NamedTuple, Optional

_PYSERINI = re.compile(r"« ([^»]*) » « ([^»]*) » (.*)", re.DOTALL)
_DISPLAY = re.compile(r"Title: ([^\n]*)\n(?:Section: ([^\n]*)\n)?\n(.*)", re.DOTALL)


class ParsedPassage(NamedTuple):
  title: Optional[str]  # None when the passage matched no known form
  headings: Optional[str]
  text: str


def pyserini_contents(title: str, text: str, headings: Optional[str] = None) -> str:
  """The Pyserini `contents` string of a passage given as title and text."""
  return f"« {title} » « {headings or title} » {text}"


def parse_passage(passage: str) -> ParsedPassage:
  match = _PYSERINI.match(passage)
  if match:
    return ParsedPassage(match.group(1), match.group(2), match.group(3))
  match = _DISPLAY.match(passage)
  if match:
    title, section, text = match.groups()
    return ParsedPassage(title, f"{title}, {section}" if section else title, text)
  return ParsedPassage(None, None, passage)


def nli_premise(parsed: ParsedPassage) -> str:
  if parsed.headings is None:
    return parsed.text
  return f"{parsed.headings}. {parsed.text}"


def reference_premise(parsed: ParsedPassage) -> str:
  """The premise the Attributed QA script (evaluation.py) builds: its `(.*)`
  without DOTALL stops at the first "\n", so a passage text with a line break
  keeps only its first line. A passage of no known form is used whole, as
  there."""
  if parsed.headings is None:
    return parsed.text
  return f"{parsed.headings}. {parsed.text.split(chr(10), 1)[0]}"


def display_passage(parsed: ParsedPassage) -> str:
  if parsed.title is None:
    return parsed.text
  lines = [f"Title: {parsed.title}"]
  title, headings = parsed.title, parsed.headings
  if not headings.startswith(title):
    lines.append(f"Section: {headings}")
  elif len(headings) > len(title):
    # Headings continue the title with ", ".
    lines.append(f"Section: {headings[len(title) + 2:]}")
  lines.append("")
  lines.append(parsed.text)
  return "\n".join(lines)
