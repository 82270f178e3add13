"""What a person reads of a scoring run names the scorer (issue 46, item 1).

    check_scorer_named("evaluate", output_dir, console_text)

The surfaces of each job that scores (SURFACES: its summary tables, pages,
scores.txt and report.html; the console's summary as the run printed it) must
name the scorer that made the figures, as run.json records it: the Markdown,
HTML and console say "Scored by: ..." with the model (and the
commit of a hub model), scores.txt's block of each
system a `scorer:` line, a summary CSV ends with a `scorer` column, a summary
JSON holds the `scorer` block. A run scored by string-match never calls its
figures AutoAIS: the word appears on its human-facing surfaces only in "not
AutoAIS", and no CSV column or JSON key is named `autoais...` (they say
`string_match...`; compare of a string-match run and a model's run says
`attribution...`). compare names the scorer of both its runs. Used by
tests/jobs/test_scorer_named.py and tests/deploy/test_newcomer.py.
"""
import csv
import html
import io
import json
import pathlib
import re

# The files a person reads of each job that scores; each is checked where the
# run wrote it (report.html only where rows carry human labels), and at least
# the Markdown summary must be there.
SURFACES = {
    "evaluate": ("leaderboard.md", "leaderboard.csv", "leaderboard.json", "scores.txt",
                 "agreement.json", "report.html"),
    "agreement": ("agreement.md", "agreement.json", "report.html"),
    "audit": ("audit.md", "audit.csv", "audit.json"),
    "claims": ("claims.md", "claims.csv", "claims.json"),
    "citations": ("citations.md", "citations.csv", "citations.json", "citations_human.md",
                  "citations_human.csv", "citations_human.json"),
    "sck": ("sck.md", "sck.csv", "sck.json"),
    "compare": ("compare.md", "compare_systems.csv", "compare.json", "report.html"),
}
_READ = (".md", ".html")
# The fields of a scorer block that name what scored.
_NAMING = ("name", "family", "model", "model_revision", "model_commit", "endpoint",
           "judge_model", "judge_url")
_NOT_AUTOAIS = re.compile(r"not AutoAIS")


def _scorer_ids(output_dir: pathlib.Path, job: str):
  """{run: scorer block} of the run (compare: of its two runs)."""
  # pylint: disable=import-outside-toplevel
  if job == "compare":
    return json.loads((output_dir / "compare.json").read_text(encoding="utf-8"))["scorers"]
  return {"run": json.loads((output_dir / "run.json").read_text(encoding="utf-8"))["scorer"]}


def _check_text(text: str, where: str, blocks: dict) -> None:
  from autoais.transforms.scoring.label import measure_name, scored_by  # pylint: disable=import-outside-toplevel
  for block in blocks.values():
    said = scored_by(block)
    assert said in text or (said[0].lower() + said[1:]).rstrip(".") in text, (
        f"{where} does not name its scorer ({said!r})")
  if all(measure_name(block) == "string-match" for block in blocks.values()):
    left = _NOT_AUTOAIS.sub("", text)
    assert "AutoAIS" not in left, (
        f"{where}: a string-match run's figures are called AutoAIS: "
        f"...{left[max(0, left.index('AutoAIS') - 80):left.index('AutoAIS') + 40]}...")


def _keys(value):
  """Every key of a JSON document, nested."""
  if isinstance(value, dict):
    for key, item in value.items():
      yield key
      yield from _keys(item)
  elif isinstance(value, list):
    for item in value:
      yield from _keys(item)


def _no_autoais_name(names, where: str, blocks: dict) -> None:
  """A run that string-match scored (either of compare's) names no column or
  key after AutoAIS."""
  from autoais.transforms.scoring.label import measure_name  # pylint: disable=import-outside-toplevel
  if any(measure_name(block) == "string-match" for block in blocks.values()):
    named = sorted({name for name in names if "autoais" in name.lower()})
    assert not named, f"{where}: a string-match figure named after AutoAIS: {named}"


def check_scorer_named(job: str, output_dir, console: str = None) -> list:
  """Checks every surface of `job`'s run in `output_dir` (and `console`, the
  text it printed, where given); returns the files checked."""
  from autoais.transforms.scoring.label import (compared_scorer_id, measure_name,  # pylint: disable=import-outside-toplevel
                                                scored_by, scorer_id)
  output_dir = pathlib.Path(output_dir)
  blocks = _scorer_ids(output_dir, job)
  cell = (compared_scorer_id(blocks["baseline"], blocks["candidate"]) if job == "compare"
          else scorer_id(blocks["run"]))
  checked = []
  assert (output_dir / SURFACES[job][0]).exists(), f"{job}: no {SURFACES[job][0]}"
  for name in SURFACES[job]:
    path = output_dir / name
    if not path.exists():
      continue
    text = path.read_text(encoding="utf-8")
    where = f"{job}'s {name}"
    if name.endswith(_READ):
      _check_text(html.unescape(text) if name.endswith(".html") else text, where, blocks)
    elif name == "scores.txt":
      # The reference script's `key: value` lines: each block's `scorer:`.
      blocks_named = text.count(f"\nscorer: {cell}\n")
      assert blocks_named and blocks_named == text.count("system_name: "), (
          f"{where}: not every system's block names the scorer {cell!r}")
      if measure_name(blocks["run"]) == "string-match":
        assert "AutoAIS" not in text, f"{where}: a string-match run's figure is AutoAIS"
    elif name.endswith(".csv"):
      rows = list(csv.DictReader(io.StringIO(text)))
      header = text.split("\n", 1)[0].split(",")
      assert header[-1] == "scorer", f"{where}: no last column `scorer` ({header})"
      _no_autoais_name(header, where, blocks)
      assert rows and {row["scorer"] for row in rows} == {cell}, (
          f"{where}: scorer column {sorted({row['scorer'] for row in rows})} != {cell!r}")
    else:
      if all(measure_name(block) == "string-match" for block in blocks.values()):
        left = _NOT_AUTOAIS.sub("", text)
        assert "AutoAIS" not in left, (
            f"{where}: a string-match run's figures are called AutoAIS: ..."
            f"{left[max(0, left.index('AutoAIS') - 80):left.index('AutoAIS') + 40]}...")
      document = json.loads(text)
      _no_autoais_name(_keys(document), where, blocks)
      found = document.get("scorers") if job == "compare" else {"run": document.get("scorer")}
      # run.json's block adds what a worker read of the model and the counters.
      assert found and all(
          block and all(blocks[run].get(key) == block.get(key) for key in _NAMING)
          for run, block in found.items()), (
              f"{where}: scorer {found!r} is not run.json's {blocks!r}")
      # The sentence too (docs/scorers.md): agreement.json and compare.json had
      # none.
      sentences = {run: scored_by(block) for run, block in found.items()}
      assert document.get("scored_by") == (
          sentences if job == "compare" else sentences["run"]), (
              f"{where}: scored_by {document.get('scored_by')!r} is not {sentences!r}")
    checked.append(name)
  if console is not None:
    _check_text(console, f"{job}'s console", blocks)
  return checked
