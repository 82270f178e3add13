"""A newcomer's first hour (issue 46, item 5), from the wheel: a fresh
virtualenv with the package installed as a user installs it, a new shell, the
README's set-up commands as written, the `make run` recipe's commands, a run on
rows that carry their own passage, every scoring job's docs Example, and on
each run's outputs and console the checks that every figure names its scorer
(tests/support/scorer_surfaces.py).

The commands run once a session, for this module and test_docs.py
(tests/support/example_runs.py, through tests/deploy/conftest.py's
`example_runs`): the virtualenv is tests/support/wheel_env.py's, the wheel
installed with pip into a `venv` (its `bin/activate`, the `autoais` console
script), the third-party dependencies reached through a path entry to the
test environment's site-packages rather than installed again (5 GB and
minutes each time). It stands where `make run` leaves it, as `.venv` in a
directory laid out as a clone (examples/ beside it); `make run`'s own install
step is the wheel install here, and `make test` is this suite. The shell is
`bash --noprofile --norc` with PATH=/usr/bin:/bin and an empty HOME: nothing
of this session's environment reaches it.
"""
import json

import pytest

from tests.deploy.test_docs import INLINE, MAKE_RUN_OUT, page_commands
from tests.support.scorer_surfaces import SURFACES, check_scorer_named

# The docs pages whose Example runs a job that scores, in the order a newcomer
# might read them; compare's compares two evaluate runs.
SCORING_PAGES = ("agreement", "audit", "claims", "citations", "sck", "compare")


@pytest.fixture(scope="module")
def session(example_runs):
  """(clone, [(command, exit code, stdout, stderr)] in the order run, the
  shell's own output, the fresh virtualenv's python)."""
  ran = [(entry.command, entry.code, entry.stdout, entry.stderr)
         for entry in example_runs.ran.values()]
  return example_runs.clone, ran, example_runs.shell, example_runs.python


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
                  and f"{MAKE_RUN_OUT}/eval" in entry[0])
  check_scorer_named("evaluate", clone / MAKE_RUN_OUT / "eval", evaluate[2])
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
    if command not in page_commands(page) or " --output_dir " not in command:
      continue
    job = command.split()[1]
    if job not in ("evaluate", page):
      continue
    surfaces = check_scorer_named(job, clone / command.split("--output_dir ")[1].split()[0],
                                  console)
    # The pages a person reads first are among those checked; agreement's and
    # compare's report.html too (test_scorer_named checks evaluate's).
    assert SURFACES[job][0] in surfaces
    if job in ("agreement", "compare"):
      assert "report.html" in surfaces, (command, surfaces)
    checked += 1
  if page == "sck" and not checked:
    pytest.skip("the sck example needs the embedding model of the sck extra")
  assert checked
