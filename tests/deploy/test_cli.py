"""The `autoais` entry point and `python -m autoais.beam_jobs.<job>`."""
import json
import os
import re
import subprocess
import sys

import pytest

import autoais
from autoais.beam_jobs import claims, cli, evaluate, options, parsing
from autoais.schemas.errors import ConfigError
from tests.support import startup
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
  assert result.returncode == 0 and "build-corpus" in result.stdout
  assert "autoais --version" in result.stdout and result.stderr == ""
  for unknown in ([], ["frobnicate"]):
    result = _run("-m", "autoais.beam_jobs.cli", *unknown)
    assert result.returncode == 2 and "build-corpus" in result.stderr
  assert "unknown job 'frobnicate'" in result.stderr


def test_version_is_the_packages():
  result = _run("-m", "autoais", "--version")
  assert result.returncode == 0, result.stderr
  assert result.stdout.startswith(f"autoais {autoais.__version__} (python ")
  assert "apache_beam " in result.stdout


def _group_titles(text):
  """The titles of a help text's argument groups ("evaluate:", "scorer:", ...)."""
  return [line[:-1] for line in text.splitlines() if re.fullmatch(r"[a-z][\w -]*:", line)]


def test_help_of_every_job_shows_its_own_flags_first_without_the_model_stack(tmp_path):
  """`autoais JOB --help`, every job in one process: on stdout, exit 0, the job's
  own flags first, then the scorer flags (jobs that score), the row-table flags
  (the same jobs: they merge rows) and the run flags;
  Beam's options only behind --help_beam. None imports torch or transformers."""
  record = tmp_path / "record.json"
  result = subprocess.run([sys.executable, "-m", "tests.support.startup",
                           "--help-of-every-job"], cwd=PROJECT_ROOT, capture_output=True,
                          text=True, timeout=300, env=dict(
                              os.environ, PYTHONPATH=str(PROJECT_ROOT),
                              **{startup.RECORD_ENV: str(record)}))
  assert result.returncode == 0, result.stderr[-2000:]
  found = json.loads(record.read_text())
  assert found["heavy"] == []
  helps = found["helps"]
  assert set(helps) == set(cli.JOBS)
  for job, shown in helps.items():
    assert shown["code"] == 0 and shown["stderr"] == "", (job, shown["stderr"])
    assert shown["stdout"].startswith(f"usage: autoais {job} "), job
  scoring = ("evaluate", "agreement", "claims", "citations", "audit", "sck")
  for job in cli.JOBS:
    text = helps[job]["stdout"]
    if job == "serve":  # not a Beam job: its own parser
      assert "--model" in text and "--max_batch_windows" in text
      continue
    if job == "finetune":  # not a Beam pipeline either: its own parser
      assert "--base" in text and "--lora_rank" in text and "--runner" not in text
      continue
    expected = [job, "scorer", "row tables", "run"] if job in scoring else [job, "run"]
    assert _group_titles(text) == expected, job
    for beams in ("--runner", "--direct_running_mode", "--project"):
      assert f"\n  {beams} " not in text, (job, beams)
    assert f"`autoais {job} --help_beam` lists them" in " ".join(text.split())
  evaluate = helps["evaluate"]["stdout"]
  for flag in ("--predictions", "--corpus", "--gold", "--output_dir", "--join",
               "--scorer", "--threshold", "--num_shards", "--progress_interval"):
    assert f"  {flag} " in evaluate, flag
  assert evaluate.index("--predictions") < evaluate.index("--scorer") < evaluate.index(
      "--progress_interval")


def test_help_beam_lists_beams_options_and_not_the_jobs():
  text = parsing.job_help("claims", ["--help_beam"], claims.ClaimsOptions)
  for flag in ("--runner", "--direct_running_mode", "--project", "--flink_master",
               "--spark_master_url", "--environment_type", "--setup_file"):
    assert f"  {flag} " in text, flag
  for ours in ("--scorer", "--output_dir", "--progress_interval"):
    assert ours not in text


def test_the_options_of_the_runner_named_are_known_and_no_others():
  """A runner's module may declare its options (Beam's DaskRunner, RenderRunner):
  the strict parser imports the module --runner names before it parses."""
  runner = "tests.support.runners.LabelledRunner"
  assert "tests.support.runners" not in sys.modules  # imported by this test only
  with pytest.raises(ConfigError, match="^unknown argument\\(s\\): --run_label x$"):
    parsing.parse_options(["--run_label", "x"], evaluate.EvaluateOptions)
  options = parsing.parse_options(["--runner", runner, "--run_label", "x"],
                                 evaluate.EvaluateOptions)
  assert options.get_all_options()["run_label"] == "x"
  assert "  --run_label " in parsing.job_help("evaluate", ["--runner", runner, "--help_beam"],
                                             evaluate.EvaluateOptions)
  with pytest.raises(ConfigError, match="^unknown argument\\(s\\): --run_lable x "
                     "\\(--run_lable: did you mean --run_label\\?\\)$"):
    parsing.parse_options(["--runner", runner, "--run_lable", "x"], evaluate.EvaluateOptions)
  with pytest.raises(ConfigError, match="^--runner Frob: no such runner; choose from "):
    parsing.parse_options(["--runner", "Frob"], evaluate.EvaluateOptions)
  with pytest.raises(ConfigError, match="^--runner nowhere.Runner: cannot import nowhere: "):
    parsing.parse_options(["--runner", "nowhere.Runner"], evaluate.EvaluateOptions)


def test_dask_runner_is_refused_with_why(tmp_path, capsys):
  for runner in (["--runner", "DaskRunner", "--dask_client_address", "127.0.0.1:8786"],
                 ["--runner=apache_beam.runners.dask.dask_runner.DaskRunner"]):
    assert evaluate.run(["--predictions", str(EXAMPLES / "predictions" / "*.csv"),
                         "--gold", str(EXAMPLES / "gold.jsonl"),
                         "--output_dir", str(tmp_path / "out"), *runner]) == 2
    error = capsys.readouterr().err.strip()
    assert error == f"autoais evaluate: error: {parsing.DASK_REFUSED}"
    assert not (tmp_path / "out").exists()


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


def _job_options_classes():
  import importlib  # pylint: disable=import-outside-toplevel
  from apache_beam.options.pipeline_options import PipelineOptions  # pylint: disable=import-outside-toplevel
  classes = []
  for module_name in cli.JOBS.values():
    module = importlib.import_module(module_name)
    classes += [value for value in vars(module).values()
                if isinstance(value, type) and PipelineOptions in value.__bases__
                and value.__module__ == module.__name__]
  return classes


def test_every_jobs_options_keep_their_views_and_stay_beams_direct_subclass():
  from apache_beam.options.pipeline_options import PipelineOptions  # pylint: disable=import-outside-toplevel
  classes = _job_options_classes()
  assert {cls.__name__ for cls in classes} >= {
      "EvaluateOptions", "CitationsOptions", "ClaimsOptions", "AuditOptions",
      "AgreementOptions", "SckOptions", "AisAnnotationsOptions", "BuildCorpusOptions",
      "CompareOptions"}
  for cls in classes:
    assert cls.__mro__[1] is options.ViewsKept, cls
    # Beam finds a job's flags among PipelineOptions' direct subclasses.
    assert cls in PipelineOptions.__subclasses__(), cls


def test_kept_views_behave_as_new_ones():
  import copy  # pylint: disable=import-outside-toplevel
  import pickle  # pylint: disable=import-outside-toplevel
  from apache_beam.options.pipeline_options import StandardOptions, TypeOptions  # pylint: disable=import-outside-toplevel
  options = evaluate.EvaluateOptions(["--output_dir", "out", "--runner", "DirectRunner"])
  view = options.view_as(StandardOptions)
  assert options.view_as(StandardOptions) is view
  view.streaming = True
  options.view_as(TypeOptions).pipeline_type_check = False
  for copied in (copy.deepcopy(options), pickle.loads(pickle.dumps(options))):
    assert "_views_kept" not in vars(copied)
    assert copied.view_as(StandardOptions) is not view
    assert copied.view_as(StandardOptions).streaming is True
    assert copied.view_as(TypeOptions).pipeline_type_check is False
    assert copied.get_all_options(drop_default=True) == options.get_all_options(
        drop_default=True)
  assert options.get_all_options(drop_default=True) == {
      "runner": "DirectRunner", "streaming": True, "pipeline_type_check": False,
      "output_dir": "out"}


def test_a_pipeline_parses_the_flags_once_per_options_class_not_per_transform(monkeypatch):
  import apache_beam as beam  # pylint: disable=import-outside-toplevel
  from apache_beam.options import pipeline_options  # pylint: disable=import-outside-toplevel
  parses = []
  original = pipeline_options._BeamArgumentParser.parse_known_args  # pylint: disable=protected-access
  def counted(parser, *args, **kwargs):
    parses.append(1)
    return original(parser, *args, **kwargs)
  monkeypatch.setattr(pipeline_options._BeamArgumentParser, "parse_known_args", counted)  # pylint: disable=protected-access
  options = evaluate.EvaluateOptions(["--output_dir", "out"])
  pipeline = beam.Pipeline(options=options)
  numbers = pipeline | "CreateNumbers" >> beam.Create([1, 2, 3])
  before = len(parses)
  for step in range(40):
    numbers = numbers | f"AddOne{step}" >> beam.Map(lambda number: number + 1)
  # Beam's own view_as parses the flags for every transform applied (several
  # times each); the kept views parse them once per options class.
  assert len(parses) - before < 10, len(parses) - before
