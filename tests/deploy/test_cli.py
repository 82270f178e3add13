"""The `autoais` entry point and `python -m autoais.beam_jobs.<job>`."""
import json
import os
import subprocess
import sys

from tests.support.paths import PROJECT_ROOT

EXAMPLES = PROJECT_ROOT / "examples"


def _run(*args):
  return subprocess.run([sys.executable, *map(str, args)], cwd=PROJECT_ROOT,
                        capture_output=True, text=True, timeout=300,
                        env=dict(os.environ, PYTHONPATH=str(PROJECT_ROOT)))


def test_python_dash_m_runs_both_jobs(tmp_path):
  result = _run("-m", "autoais.beam_jobs.build_corpus", "--input",
                EXAMPLES / "corpus" / "*.jsonl", "--output", tmp_path / "corpus",
                "--num_shards", 2)
  assert result.returncode == 0, result.stderr[-2000:]
  result = _run("-m", "autoais.beam_jobs.evaluate", "--predictions",
                EXAMPLES / "predictions" / "*.csv", "--corpus", tmp_path / "corpus",
                "--gold", EXAMPLES / "gold.jsonl", "--output_dir", tmp_path / "out",
                "--bootstrap_samples", 20)
  assert result.returncode == 0, result.stderr[-2000:]
  manifest = json.loads((tmp_path / "out" / "run.json").read_text())
  assert manifest["systems"] == 3 and manifest["counts"]["reconciled"]


def test_autoais_lists_jobs_and_refuses_unknown_ones():
  result = _run("-m", "autoais.beam_jobs.cli", "--help")
  assert result.returncode == 0 and "build-corpus" in result.stderr
  result = _run("-m", "autoais.beam_jobs.cli", "frobnicate")
  assert result.returncode == 2 and "unknown job 'frobnicate'" in result.stderr


def test_job_help_lists_its_options():
  result = _run("-m", "autoais.beam_jobs.cli", "evaluate", "--help")
  assert result.returncode == 0
  for option in ("--predictions", "--corpus", "--gold", "--output_dir", "--scorer",
                 "--threshold", "--join", "--direct_running_mode"):
    assert option in result.stdout


def test_missing_options_exit_2():
  result = _run("-m", "autoais.beam_jobs.cli", "evaluate", "--gold", "x")
  assert result.returncode == 2
  assert "missing required option(s): --predictions, --output_dir" in result.stderr


def test_every_jobs_options_register_together():
  """Beam puts every PipelineOptions subclass in one parser: jobs that share a
  flag (--output_dir, --corpus, ...) must not clash."""
  import importlib  # pylint: disable=import-outside-toplevel
  from apache_beam.options.pipeline_options import PipelineOptions  # pylint: disable=import-outside-toplevel
  from autoais.beam_jobs import cli  # pylint: disable=import-outside-toplevel
  for module in cli.JOBS.values():
    importlib.import_module(module)
  options = PipelineOptions(["--output_dir", "x", "--corpus", "c", "--seed", "3"])
  values = options.get_all_options()
  assert (values["output_dir"], values["corpus"], values["seed"]) == ("x", "c", 3)
