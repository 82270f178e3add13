"""The docs run as written: every page's Example, the README's set-up, its links.

* Each page under docs/ with a `## Example` section: its fenced commands (all of
  them `autoais ...`) run one after the other, as a newcomer runs them: the
  `autoais` of a fresh virtualenv holding the wheel, in a new shell, in a
  directory laid out as a clone (tests/support/example_runs.py: once a session,
  for this module and test_newcomer.py, with what each process imported);
  each must exit 0, and every output the section names (`out/...` in backticks)
  must then exist. examples/ must be left as it was. A command an earlier page
  already ran, word for word (the example corpus), is not run again: its
  outputs are there. Every example scores with string-match (or does not
  score), and none but sck's (its ER-score embeds texts with a torch model) or
  finetune's may import torch or transformers: a run that needs no model
  starts without loading the model stack.
* Every job has a page, and each job page has an Example, except `serve`: it
  serves a T5 NLI model over HTTP until stopped, and no model is bundled, so its
  page shows commands that are not run (and says so).
* The README's two set-up commands: `make run` is run as the `autoais` commands
  of the Makefile's `run` recipe; `make test` runs the whole suite, this file
  included, so it is only checked to be there.
* Relative links of README.md, docs/, bench/README.md and launch/README.md lead
  to files that exist, and to headings that exist where they name one.
* A block fenced as ```text shows what a command prints: it is not run.
* The product's docs stand on their own: no page, and no docstring or help
  text of the package, names a path outside the repository (`../shared/...`,
  a developer's absolute path) or the team's SPEC.
"""
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys

import pytest

from tests.support import startup
from tests.support.example_runs import has_embedding_model, snapshot
from tests.support.scorer_surfaces import check_scorer_named
from tests.support.paths import PROJECT_ROOT

ROOT = PROJECT_ROOT
DOCS = ROOT / "docs"
EXAMPLES = ROOT / "examples"
JOBS = ("build-corpus", "evaluate", "agreement", "ais-annotations", "claims",
        "citations", "audit", "sck", "serve", "finetune")
NOT_RUN = {
    "serve": "serves a T5 NLI model over HTTP until stopped; no model is bundled",
}
# The jobs whose example may import torch or transformers.
NEEDS_MODEL_STACK = {"sck": "the ER-score's sentence embeddings are a torch model",
                     "finetune": "it trains a torch model"}
# The base model docs/finetune.md's example trains from, built in the workspace.
FINETUNE_BASE = "tiny-base"
# Outputs a section names: `out/...` in backticks, outside code blocks.
OUTPUT = re.compile(r"`(out/[^`\s]+)`")
LINK = re.compile(r"!?\[([^\]]*)\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")
# The info string of a fenced block that shows output rather than commands.
SHOWN_OUTPUT = "text"
COMMAND_TIMEOUT_S = 300


# ----------------------------------------------------------------------------
# Markdown, as far as these checks need it.


def _lines_outside_code(text: str):
  """(line, in a fenced block) for each line; fence lines count as inside."""
  inside = False
  for line in text.split("\n"):
    if FENCE.match(line):
      yield line, True
      inside = not inside
      continue
    yield line, inside


def headings(text: str):
  """(level, title) of each heading outside fenced blocks."""
  found = []
  for line, in_code in _lines_outside_code(text):
    match = re.match(r"^(#{1,6}) (.+?)\s*#*\s*$", line)
    if match and not in_code:
      found.append((len(match.group(1)), match.group(2)))
  return found


def section(text: str, title: str):
  """The text under `## title` up to the next heading of level 1 or 2, or None."""
  lines, found = None, False
  for line, in_code in _lines_outside_code(text):
    heading = None if in_code else re.match(r"^(#{1,2}) (.+?)\s*$", line)
    if heading:
      if found:
        break
      found = heading.group(1) == "##" and heading.group(2) == title
      lines = [] if found else None
    elif found:
      lines.append(line)
  return None if lines is None else "\n".join(lines)


def fenced_blocks(text: str):
  """The contents of the fenced blocks, but those fenced as ```text (output)."""
  blocks, current, shown = [], None, False
  for line in text.split("\n"):
    if FENCE.match(line):
      if current is None:
        current, shown = [], line.strip()[3:].strip() == SHOWN_OUTPUT
      else:
        if not shown:
          blocks.append("\n".join(current))
        current = None
    elif current is not None:
      current.append(line)
  assert current is None, "an unclosed code block"
  return blocks


def commands(block: str):
  """Each command of a block as argv: backslash continuations joined, blank
  lines and # comments skipped."""
  joined = re.sub(r"\\\n", " ", block)
  found = []
  for line in joined.split("\n"):
    line = line.strip()
    if line and not line.startswith("#"):
      found.append(shlex.split(line))
  return found


def example_commands(text: str):
  example = section(text, "Example")
  if example is None:
    return None, []
  argvs = [argv for block in fenced_blocks(example) for argv in commands(block)]
  outputs = OUTPUT.findall(prose(example))
  return argvs, outputs


def prose(text: str) -> str:
  """The text outside fenced blocks."""
  return "\n".join(line for line, in_code in _lines_outside_code(text) if not in_code)


def slug(title: str) -> str:
  """GitHub's anchor of a heading."""
  text = re.sub(r"[^\w\- ]", "", title.strip().lower())
  return text.replace(" ", "-")


def page_path(name: str) -> pathlib.Path:
  return DOCS / f"{name}.md"


def example_pages():
  return sorted(path.stem for path in DOCS.glob("*.md")
                if section(path.read_text(encoding="utf-8"), "Example") is not None)


# ----------------------------------------------------------------------------
# Running commands.


class Workspace:
  """A temporary directory with examples/ linked in; remembers what it ran."""

  def __init__(self, path: pathlib.Path):
    self.path = path
    (path / "examples").symlink_to(EXAMPLES, target_is_directory=True)
    self.done = set()

  def run(self, argv, **env_vars):
    """Runs an `autoais` command (once a session; `env_vars` added to its
    environment); returns the model stack's modules it imported
    (tests/support/startup.py), [] where it ran before."""
    assert argv[0] == "autoais", f"not an autoais command: {shlex.join(argv)}"
    key = tuple(argv)
    if key in self.done:
      return []
    env = dict(os.environ, **env_vars)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    record = self.path / "startup-record.json"
    env[startup.RECORD_ENV] = str(record)
    result = subprocess.run(
        [sys.executable, "-m", "tests.support.startup", *argv[1:]], cwd=self.path, env=env,
        capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False)
    assert result.returncode == 0, (
        f"`{shlex.join(argv)}` exited {result.returncode}:\n{result.stderr[-3000:]}")
    self.done.add(key)
    return json.loads(record.read_text(encoding="utf-8"))["heavy"]

  def check_outputs(self, outputs, where: str):
    missing = [name for name in outputs if not (self.path / name).exists()]
    assert not missing, f"{where} names outputs that were not written: {missing}"


@pytest.fixture(scope="session")
def workspace(tmp_path_factory):
  return Workspace(tmp_path_factory.mktemp("docs-examples"))


# ----------------------------------------------------------------------------
# Tests.


def test_every_job_has_a_page_and_an_example():
  for job in JOBS:
    assert page_path(job).is_file(), f"no page docs/{job}.md"
    text = page_path(job).read_text(encoding="utf-8")
    argvs, outputs = example_commands(text)
    if job in NOT_RUN:
      assert argvs is None, (
          f"docs/{job}.md has an Example section, which would be run: {NOT_RUN[job]}")
      continue
    assert argvs, f"docs/{job}.md: no commands in its Example section"
    assert outputs, f"docs/{job}.md: its Example names no output (`out/...`)"
    assert any(argv[1] == job for argv in argvs), (
        f"docs/{job}.md: its Example never runs `autoais {job}`")


@pytest.mark.parametrize("page", example_pages())
def test_page_example_runs(page, example_runs):
  argvs, outputs = example_commands(page_path(page).read_text(encoding="utf-8"))
  assert argvs, f"docs/{page}.md: no commands in its Example section"
  if page == "sck" and not has_embedding_model(example_runs.python):
    pytest.skip("the sck example needs the embedding model of the sck extra "
                "(pip install 'autoais-beam[sck]')")
  for argv in argvs:
    ran = example_runs.ran.get(shlex.join(argv))
    assert ran is not None, (f"`{shlex.join(argv)}` did not run: the shell stopped "
                             f"before it:\n{example_runs.shell.stderr[-3000:]}")
    assert ran.code == 0, (f"`{ran.command}` exited {ran.code}:\n{ran.stderr[-3000:]}")
    if argv[1] not in NEEDS_MODEL_STACK:
      assert ran.heavy == [], f"`{ran.command}` imported {ran.heavy}"
  missing = [name for name in outputs if not (example_runs.clone / name).exists()]
  assert not missing, f"docs/{page}.md names outputs that were not written: {missing}"
  assert example_runs.examples_after == example_runs.examples_before, (
      "an example command changed examples/")


def build_finetune_base(directory: pathlib.Path) -> None:
  """A tiny random RoBERTa NLI classifier with a BPE trained on the bundled
  agreement sets' text (tests/support/nli_classifiers.py)."""
  from tests.support.nli_classifiers import build_tiny_classifier  # pylint: disable=import-outside-toplevel
  texts = [path.read_text(encoding="utf-8")
           for path in sorted((EXAMPLES / "agreement").glob("*.csv"))]
  build_tiny_classifier(str(directory), "roberta",
                        {0: "entailment", 1: "neutral", 2: "contradiction"},
                        [line for text in texts for line in text.split("\n")],
                        model_max_length=128)


def subsection(text: str, title: str):
  """The text under `### title` up to the next heading of level 3 or less."""
  lines = None
  for line, in_code in _lines_outside_code(text):
    heading = None if in_code else re.match(r"^(#{1,3}) (.+?)\s*$", line)
    if heading:
      if lines is not None:
        break
      lines = [] if heading.group(1) == "###" and heading.group(2) == title else None
    elif lines is not None:
      lines.append(line)
  return None if lines is None else "\n".join(lines)


def _run_hub_example(workspace, tmp_path, title: str, models: dict) -> None:
  """Runs the `### Example` of docs/scorers.md's section `title` as written,
  offline, from a Hugging Face cache holding `models` ({hub id: local
  directory}); every command names the first hub id. Its outputs are checked,
  and examples/ is left as it was."""
  from tests.support.hub_cache import add_to_hub_cache  # pylint: disable=import-outside-toplevel
  example = subsection(section(page_path("scorers").read_text(encoding="utf-8"), title),
                       "Example")
  argvs = [argv for block in fenced_blocks(example) for argv in commands(block)]
  outputs = OUTPUT.findall(prose(example))
  assert argvs and outputs and all(next(iter(models)) in argv for argv in argvs), argvs
  for repo_id, directory in models.items():
    add_to_hub_cache(tmp_path / "hf_home", repo_id, directory)
  before = snapshot(EXAMPLES)
  for argv in argvs:
    workspace.run(argv, HF_HOME=str(tmp_path / "hf_home"), HF_HUB_OFFLINE="1",
                  HF_HUB_CACHE=str(tmp_path / "hf_home" / "hub"))
  workspace.check_outputs(outputs, f"docs/scorers.md's {title} example")
  assert snapshot(EXAMPLES) == before, "an example command changed examples/"
  # Every surface of each run names the family and the hub model at its
  # commit (tests/support/scorer_surfaces.py), as test_scorer_named checks
  # for the t5 family.
  for argv in argvs:
    output_dir = workspace.path / argv[argv.index("--output_dir") + 1]
    check_scorer_named(argv[1], output_dir)
    block = json.loads((output_dir / "run.json").read_text(encoding="utf-8"))["scorer"]
    assert block["model"] == next(iter(models)) and block["model_commit"], block


def test_hhem_example_runs(workspace, tmp_path):
  """docs/scorers.md's HHEM section has an Example of its own (### Example):
  its commands run as written, offline, from a Hugging Face cache holding a
  tiny random HHEM checkpoint and foundation (tests/support/hhem_models.py)
  under the hub ids HHEM publishes and names: the command and its outputs
  are checked, not the model's scores."""
  from tests.support.hhem_models import FOUNDATION_ID, HHEM_ID, build_tiny_hhem  # pylint: disable=import-outside-toplevel
  from tests.support.vocab import example_texts  # pylint: disable=import-outside-toplevel
  foundation, model = build_tiny_hhem(str(tmp_path / "hhem"), example_texts())
  _run_hub_example(workspace, tmp_path, "Vectara HHEM (hhem)",
                   {HHEM_ID: model, FOUNDATION_ID: foundation})


def test_factcg_example_runs(workspace, tmp_path):
  """docs/scorers.md's FactCG section has an Example of its own: its command
  runs as written, offline, from a Hugging Face cache holding a tiny random
  FactCG-DeBERTa checkpoint (tests/support/factcg_models.py) under the hub id
  FactCG publishes: the command and its outputs are checked, not the scores."""
  from tests.support.factcg_models import FACTCG_ID, build_tiny_factcg  # pylint: disable=import-outside-toplevel
  from tests.support.vocab import example_texts  # pylint: disable=import-outside-toplevel
  model = build_tiny_factcg(str(tmp_path / "factcg"), example_texts())
  _run_hub_example(workspace, tmp_path, "FactCG (factcg)", {FACTCG_ID: model})


def test_lettucedetect_example_runs(workspace, tmp_path):
  """The LettuceDetect section's Example, from a cache holding a tiny random
  checkpoint (tests/support/lettucedetect_models.py) under the hub id KRLabs
  publishes."""
  from tests.support.lettucedetect_models import LETTUCEDETECT_ID, build_tiny_lettucedetect  # pylint: disable=import-outside-toplevel
  from tests.support.vocab import example_texts  # pylint: disable=import-outside-toplevel
  model = build_tiny_lettucedetect(str(tmp_path / "lettucedetect"), example_texts())
  _run_hub_example(workspace, tmp_path, "LettuceDetect (lettucedetect)",
                   {LETTUCEDETECT_ID: model})


def makefile_recipe(target: str):
  lines, taking = [], False
  for line in (ROOT / "Makefile").read_text(encoding="utf-8").split("\n"):
    if re.match(rf"^{re.escape(target)}:", line):
      taking = True
      continue
    if taking:
      if not line.startswith("\t"):
        break
      lines.append(line[1:])
  return "\n".join(lines)


# Where the `make run` recipe writes (its $(EXAMPLE_OUT)).
MAKE_RUN_OUT = "build/example"
# The Example command of docs/evaluate.md that runs on rows with their passage.
INLINE = "examples/inline/"


def readme_setup_lines():
  """The README's set-up block, as written, less `make` (the wheel install
  stands for `make run`'s install step; `make test` is this suite)."""
  setup = section((PROJECT_ROOT / "README.md").read_text(encoding="utf-8"), "Set up")
  lines = [line.split("#")[0].strip() for block in fenced_blocks(setup)
           for line in block.split("\n")]
  return [line for line in lines if line and not line.startswith("make ")]


def make_run_commands():
  recipe = (makefile_recipe("run").replace("$(VENV)/bin/autoais", "autoais")
            .replace("$(EXAMPLE_OUT)", MAKE_RUN_OUT))
  return [shlex.join(argv) for argv in commands(recipe) if argv[0] == "autoais"]


def page_commands(page):
  argvs, _ = example_commands(page_path(page).read_text(encoding="utf-8"))
  return [shlex.join(argv) for argv in argvs or []]


def test_readme_setup_commands_run(example_runs):
  setup = section((ROOT / "README.md").read_text(encoding="utf-8"), "Set up")
  assert setup is not None, "README.md has no '## Set up' section"
  lines = [line.split("#")[0].strip() for block in fenced_blocks(setup)
           for line in block.split("\n")]
  assert "make run" in lines and "make test" in lines, lines
  # `make test` runs the whole suite, this test among them: not run here.
  recipe = makefile_recipe("run").replace("$(VENV)/bin/autoais", "autoais")
  recipe = recipe.replace("$(EXAMPLE_OUT)", "build/example")
  argvs = [argv for argv in commands(recipe) if argv[0] == "autoais"]
  assert [argv[1] for argv in argvs] == ["build-corpus", "evaluate"], argvs
  for argv in argvs:
    ran = example_runs.ran[shlex.join(argv)]
    assert ran.code == 0 and ran.heavy == [], (ran.code, ran.heavy, ran.stderr[-3000:])
  # evaluate prints its leaderboard's table itself: the recipe does not print
  # it a second time (issue 46).
  assert not [argv for argv in commands(recipe) if argv[0].lstrip("@") == "cat"]
  assert (example_runs.clone / "build" / "example" / "eval" / "leaderboard.md").exists()


def markdown_files():
  readmes = [ROOT / "README.md", ROOT / "bench" / "README.md",
             ROOT / "launch" / "README.md"]
  return readmes + sorted(DOCS.glob("*.md"))


def test_relative_links_resolve():
  anchors = {}

  def anchors_of(path: pathlib.Path):
    if path not in anchors:
      anchors[path] = {slug(title) for _, title in
                       headings(path.read_text(encoding="utf-8"))}
    return anchors[path]

  broken = []
  for path in markdown_files():
    text = re.sub(r"`[^`\n]*`", "", prose(path.read_text(encoding="utf-8")))
    for _, target in LINK.findall(text):
      if re.match(r"^[a-z][a-z0-9+.-]*:", target):
        continue  # http:, https:, mailto:
      file_part, _, anchor = target.partition("#")
      linked = (path.parent / file_part).resolve() if file_part else path
      where = f"{path.relative_to(ROOT)}: ({target})"
      if not linked.exists():
        broken.append(f"{where}: no such file")
      elif anchor and linked.suffix == ".md" and anchor not in anchors_of(linked):
        broken.append(f"{where}: no heading with anchor #{anchor}")
  assert not broken, "\n".join(broken)


def test_example_sections_are_found_by_these_helpers():
  """The helpers on a page made up here: a command split over lines, a comment, a
  block outside the Example that is not run, a block of output (```text)."""
  text = "\n".join([
      "# page", "## Flags", "```", "autoais evaluate --not-run", "```",
      "## Example", "Some prose naming `out/a/run.json`.", "```",
      "# a comment", "autoais build-corpus --input 'x/*.jsonl' \\",
      "    --output out/a", "```", "It prints:", "```text", "| a | table |",
      "autoais build-corpus: outputs in out/a", "```", "### More", "`out/b.txt`",
      "## After", "```", "autoais sck --not-run", "```"])
  argvs, outputs = example_commands(text)
  assert argvs == [["autoais", "build-corpus", "--input", "x/*.jsonl",
                    "--output", "out/a"]]
  assert outputs == ["out/a/run.json", "out/b.txt"]
  assert slug("Hosted models: remote and `vertex`") == "hosted-models-remote-and-vertex"
  assert slug("7. A hosted model: `autoais serve`, Vertex AI") == (
      "7-a-hosted-model-autoais-serve-vertex-ai")


# ----------------------------------------------------------------------------
# The Python API's notebook (docs/python-api.md).


def notebook_cells(text: str):
  """The ```python blocks of the page's `## Notebook` section, in order."""
  notebook = section(text, "Notebook")
  assert notebook is not None, "docs/python-api.md has no '## Notebook' section"
  cells, current = [], None
  for line in notebook.split("\n"):
    if current is None and line.strip() == "```python":
      current = []
    elif current is not None and FENCE.match(line):
      cells.append("\n".join(current))
      current = None
    elif current is not None:
      current.append(line)
  return cells


def test_python_api_notebook_runs_beside_a_projects_own_packages(tmp_path, tiny_t5_dirs):
  """The page's cells, as written, in one process whose directory holds
  packages of its own named models, schemas and transforms, imported first (a
  research repository's layout). The hub model the cells name comes from an
  offline Hugging Face cache holding a tiny random T5 under its id: this
  checks that the cells run and what they print, not the 11B model's scores."""
  from tests.support.hub_cache import add_to_hub_cache  # pylint: disable=import-outside-toplevel
  cells = notebook_cells((DOCS / "python-api.md").read_text(encoding="utf-8"))
  assert len(cells) >= 3
  (tmp_path / "examples").symlink_to(EXAMPLES, target_is_directory=True)
  for package in ("models", "schemas", "transforms"):
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text(f"OWNER = 'project {package}'\n")
  commit = add_to_hub_cache(tmp_path / "hf_home", "google/t5_xxl_true_nli_mixture",
                            tiny_t5_dirs[3])
  script = "\n\n".join(
      ["import models, schemas, transforms"] + cells +
      ["import sys\n"
       "for name in ('models', 'schemas', 'transforms'):\n"
       "    assert sys.modules[name].OWNER == f'project {name}', sys.modules[name]\n"
       "print('own packages intact')"])
  (tmp_path / "notebook.py").write_text(script, encoding="utf-8")
  env = dict(os.environ, HF_HOME=str(tmp_path / "hf_home"), HF_HUB_OFFLINE="1")
  env.pop("HF_HUB_CACHE", None)
  env.pop("PYTHONPATH", None)
  done = subprocess.run([sys.executable, "notebook.py"], cwd=tmp_path, env=env,
                        capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S,
                        check=False)
  assert done.returncode == 0, done.stderr[-4000:]
  out = done.stdout
  assert "refused: --model needs a model scorer" in out
  assert f"google/t5_xxl_true_nli_mixture {commit}" in out
  assert out.rstrip().endswith("own packages intact")
  for name in ("out/api/corpus/corpus.json", "out/api/eval/leaderboard.csv",
               "out/api/t5/run.json"):
    assert (tmp_path / name).exists(), name
  assert not (tmp_path / "out" / "api" / "refused").exists()


# ----------------------------------------------------------------------------
# The docs stand on their own.

# The code whose docstrings and --help texts a user reads; its comments are
# read too (a path outside the repository helps nobody there either).
PRODUCT_CODE = ("autoais", "beam_jobs", "transforms", "serve", "models", "schemas", "launch")
# A path of the machine the docs were written on.
DEVELOPER_PATH = re.compile(r"(?<![\w.:/~-])/(?:work|home|Users|root)/[^\s`'\")\]>]*")
PARENT_PATH = re.compile(r"(?:\.\./)+[^\s`'\")\]>,;]*")
# The team's specification and source documents, which a user's clone lacks.
TEAM_DOCUMENT = re.compile(r"\bSPEC(?:\.md|\s+§?\d)|\bseed \d{3}\b")


def outside_references(path: pathlib.Path, text: str, team_documents: bool = True):
  """'file:line: what' for each reference in `text` to a path outside the
  repository: a `../` path that leaves it (a Markdown link's from the page's
  folder, any other from the repository root, where commands are run), a
  developer's absolute path, and (team_documents) the SPEC or a seed."""
  found = []
  root = ROOT.resolve()
  for number, line in enumerate(text.split("\n"), 1):
    where = f"{path.relative_to(ROOT)}:{number}"
    for match in PARENT_PATH.finditer(line):
      base = path.parent if line[:match.start()].endswith("](") else ROOT
      target = (base / match.group(0)).resolve()
      if target != root and root not in target.parents:
        found.append(f"{where}: {match.group(0)}")
    found += [f"{where}: {match.group(0)}" for match in DEVELOPER_PATH.finditer(line)]
    if team_documents:
      found += [f"{where}: {match.group(0)}" for match in TEAM_DOCUMENT.finditer(line)]
  return found


def product_code_files():
  return sorted(path for package in PRODUCT_CODE for path in (ROOT / package).rglob("*.py"))


def test_docs_point_at_nothing_outside_the_repository():
  found = []
  for path in markdown_files() + sorted(EXAMPLES.rglob("*.md")):
    found += outside_references(path, path.read_text(encoding="utf-8"))
  for path in product_code_files():
    # Code comments cite the team's SPEC for developers; what a user is shown
    # (the jobs' and the API's docstrings and --help texts) does not.
    user_facing = path.parts[len(ROOT.parts)] in ("autoais", "beam_jobs")
    found += outside_references(path, path.read_text(encoding="utf-8"), user_facing)
  assert not found, "references outside the repository:\n" + "\n".join(found)


def test_outside_references_are_found():
  """The check above on a page made up here, in docs/ (links from there)."""
  page = DOCS / "made-up.md"
  text = "\n".join([
      "[README](../README.md) and `examples/gold.jsonl` are ours.",
      "autoais evaluate --gold ../shared/data/nq_open/NQ-open.dev.jsonl",
      "[spec](../../shared/docs/SPEC.md)",
      "/work/venv/bin/python bench/x.py; /opt/autoais/model is the image's",
      "as SPEC 5.2 says; the paper (seed 003)"])
  assert outside_references(page, text) == [
      "docs/made-up.md:2: ../shared/data/nq_open/NQ-open.dev.jsonl",
      "docs/made-up.md:3: ../../shared/docs/SPEC.md",
      "docs/made-up.md:3: SPEC.md",
      "docs/made-up.md:4: /work/venv/bin/python",
      "docs/made-up.md:5: SPEC 5",
      "docs/made-up.md:5: seed 003"]
  assert outside_references(page, text.split("\n")[4], team_documents=False) == []


def test_architecture_page_names_modules_that_exist():
  """docs/architecture.md walks `autoais evaluate` through the code: every
  file and folder it names in backticks is in the repository (a module renamed
  or moved fails here until the page follows it)."""
  text = (DOCS / "architecture.md").read_text(encoding="utf-8")
  named = re.findall(r"`([\w./-]+(?:\.py|/))`", text)
  assert len(named) >= 20, named
  missing = sorted({path for path in named if not (ROOT / path).exists()})
  assert not missing, missing
