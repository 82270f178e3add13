"""The Dataflow launch material in launch/ agrees with the jobs' options.

Checks the Flex Template metadata against each job's PipelineOptions class and
that the entry scripts hand their flags to the job's run(). Nothing here talks to
Google Cloud.
"""
import argparse
import ast
import json
import pathlib
import re
import subprocess
import sys

import pytest

from beam_jobs.build_corpus import BuildCorpusOptions
from beam_jobs.common import ScorerOptions
from beam_jobs.evaluate import EvaluateOptions

LAUNCH = pathlib.Path(__file__).resolve().parent.parent / "launch"

# job -> (options class, metadata file, entry script, module, required options)
JOBS = {
    "evaluate": ((EvaluateOptions, ScorerOptions), "evaluate_metadata.json",
                 "evaluate_main.py",
                 "beam_jobs.evaluate", {"predictions", "gold", "output_dir"}),
    "build-corpus": ((BuildCorpusOptions,), "build_corpus_metadata.json",
                     "build_corpus_main.py", "beam_jobs.build_corpus",
                     {"input", "output"}),
}


def job_arguments(options_classes):
  """dest -> argparse action, for the options the job's own classes add."""
  parser = argparse.ArgumentParser()
  for options_class in options_classes:
    options_class._add_argparse_args(parser)  # pylint: disable=protected-access
  return {action.dest: action for action in parser._actions  # pylint: disable=protected-access
          if action.dest != "help"}


def metadata(job):
  with open(LAUNCH / JOBS[job][1], encoding="utf-8") as f:
    return json.load(f)


@pytest.mark.parametrize("job", JOBS)
def test_metadata_parameters_are_the_jobs_options(job):
  options_class, _, _, _, required = JOBS[job]
  spec = metadata(job)
  assert spec["name"] and spec["description"]
  params = {p["name"]: p for p in spec["parameters"]}
  assert len(params) == len(spec["parameters"]), "duplicate parameter names"
  arguments = job_arguments(options_class)
  assert required <= set(arguments)
  # Every parameter is an option of the job, and every option of the job is a
  # parameter (an option added later must be added to the template too).
  assert set(params) == set(arguments)
  for name, param in params.items():
    assert param.get("label") and param.get("helpText"), name
    optional = param.get("isOptional", False)
    assert optional == (name not in required), (
        f"{name}: isOptional should be {name not in required}")


@pytest.mark.parametrize("job", JOBS)
def test_metadata_regexes_accept_the_defaults_and_choices(job):
  arguments = job_arguments(JOBS[job][0])
  for param in metadata(job)["parameters"]:
    regexes = [re.compile(r) for r in param.get("regexes", [])]
    action = arguments[param["name"]]
    allowed = [str(choice) for choice in action.choices or ()]
    if action.default is not None:
      allowed.append(str(action.default))
    for value in allowed:
      assert all(r.fullmatch(value) for r in regexes), (param["name"], value)


def test_metadata_regexes_reject_bad_values():
  by_name = {p["name"]: p for p in metadata("evaluate")["parameters"]}

  def accepts(name, value):
    return all(re.fullmatch(r, value) for r in by_name[name]["regexes"])

  assert accepts("predictions", "gs://b/runs/*.csv,gs://b/more/x.jsonl")
  assert not accepts("predictions", "runs/*.csv")
  assert accepts("threshold", "0.25") and accepts("threshold", "1.0")
  assert not accepts("threshold", "1.5") and not accepts("threshold", "-0.1")
  assert not accepts("join", "hash")
  assert not accepts("seed", "-1") and not accepts("bootstrap_samples", "0")


@pytest.mark.parametrize("job", JOBS)
def test_entry_script_calls_the_jobs_run(job):
  _, _, script, module, _ = JOBS[job]
  tree = ast.parse((LAUNCH / script).read_text(encoding="utf-8"))
  imports = {(node.module, alias.name) for node in ast.walk(tree)
             if isinstance(node, ast.ImportFrom) for alias in node.names}
  assert (module, "run") in imports


@pytest.mark.parametrize("job", JOBS)
def test_entry_script_exits_with_the_jobs_code(job, tmp_path):
  """Without its required options the job stops with exit code 2 and names them."""
  _, _, script, _, required = JOBS[job]
  result = subprocess.run([sys.executable, str(LAUNCH / script)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, check=False)
  assert result.returncode == 2, result.stderr
  assert "missing required option(s)" in result.stderr
  for name in required:
    assert f"--{name}" in result.stderr


def test_dockerfile_points_the_launcher_at_the_entry_scripts():
  text = (LAUNCH / "Dockerfile").read_text(encoding="utf-8")
  assert "FROM apache/beam_python3.11_sdk:2.77.0" in text
  assert "ENV FLEX_TEMPLATE_PYTHON_PY_FILE=/template/launch/${JOB}_main.py" in text
  assert "ENV FLEX_TEMPLATE_PYTHON_SETUP_FILE=/template/setup.py" in text
  assert "pip install --no-cache-dir ." in text
  for job in ("evaluate", "build_corpus"):
    assert (LAUNCH / f"{job}_main.py").is_file()
  build = (LAUNCH / "cloudbuild.yaml").read_text(encoding="utf-8")
  assert "JOB=evaluate" in build and "JOB=build_corpus" in build
