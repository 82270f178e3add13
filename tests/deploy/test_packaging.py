"""The wheel is the product a Dataflow worker gets (`--setup_file` builds it):
build it, install it into a fresh virtualenv outside the checkout, and import
every module and ask every job for its --help from there.

The fresh environment reaches the third-party dependencies of the test
environment through a path entry (installing torch, Beam and TensorFlow again
would take minutes), but not the checkout: the project's own modules must come
from the wheel, and the test checks that each one was loaded from the fresh
environment's site-packages.
"""
import json
import pathlib
import subprocess
import zipfile

import pytest

from autoais.beam_jobs.cli import JOBS
from tests.support.paths import PROJECT_ROOT
from tests.support.wheel_env import install_wheel

LAYERS = ("schemas", "models", "transforms", "serve", "beam_jobs", "launch")


def _checkout_modules():
  """Every module of the checkout by its installed name: the API's folder,
  autoais/, and each layer's folder mapped under `autoais.` (setup.py)."""
  names = set()
  for folder in ("autoais",) + LAYERS:
    for path in (PROJECT_ROOT / folder).rglob("*.py"):
      parts = path.relative_to(PROJECT_ROOT).with_suffix("").parts
      name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
      names.add(name if folder == "autoais" else f"autoais.{name}")
  return names


def _wheel_top_level(wheel: pathlib.Path):
  """The names the wheel installs into site-packages (its .dist-info aside)."""
  with zipfile.ZipFile(wheel) as archive:
    return {name.split("/")[0] for name in archive.namelist()
            if not name.split("/")[0].endswith(".dist-info")}


def _wheel_modules(wheel: pathlib.Path):
  names = set()
  with zipfile.ZipFile(wheel) as archive:
    for name in archive.namelist():
      if name.endswith(".py") and name.split("/")[0] == "autoais":
        parts = pathlib.PurePosixPath(name).with_suffix("").parts
        names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
  return names


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
  """(wheel, python of a fresh virtualenv with only the wheel installed, its
  site-packages): tests/support/wheel_env.py."""
  return install_wheel(tmp_path_factory.mktemp("packaging"))


def test_the_wheel_holds_every_module_of_the_checkout(installed):
  wheel, _, _ = installed
  assert _wheel_modules(wheel) == _checkout_modules()


def test_the_wheel_installs_one_import_name(installed):
  wheel, _, _ = installed
  assert _wheel_top_level(wheel) == {"autoais"}


def test_every_module_imports_from_the_installed_wheel(installed, tmp_path):
  _, python, fresh_site = installed
  script = ("import importlib, json, sys\n"
            "origins = {name: importlib.import_module(name).__file__\n"
            "           for name in sys.argv[1:]}\n"
            "print(json.dumps(origins))\n")
  modules = sorted(_checkout_modules())
  done = subprocess.run([str(python), "-c", script, *modules], cwd=tmp_path,
                        capture_output=True, text=True, check=False,
                        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
  assert done.returncode == 0, done.stderr[-3000:]
  origins = json.loads(done.stdout)
  elsewhere = {name: path for name, path in origins.items()
               if not pathlib.Path(path).is_relative_to(fresh_site)}
  assert not elsewhere, elsewhere


@pytest.mark.parametrize("job", sorted(JOBS))
def test_every_job_answers_help_from_the_installed_entry_point(installed, job, tmp_path):
  _, python, _ = installed
  autoais = python.parent / "autoais"
  done = subprocess.run([str(autoais), job, "--help"], cwd=tmp_path, capture_output=True,
                        text=True, check=False,
                        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
  assert done.returncode == 0, done.stderr[-3000:]
  assert "--output_dir" in done.stdout or "--output" in done.stdout or \
      "--port" in done.stdout, done.stdout[:2000]


def test_the_package_works_beside_a_projects_own_packages(installed, tmp_path):
  """A research repository has its own models/, schemas/, transforms/ (and
  beam_jobs/): with them imported first, and as the working directory of
  `python -m autoais`, the installed package still finds its own."""
  _, python, _ = installed
  for package in ("models", "schemas", "transforms", "beam_jobs"):
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text(f"OWNER = 'project {package}'\n")
  env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
  script = ("import models, schemas, transforms, beam_jobs\n"
            "import autoais\n"
            "from autoais.beam_jobs import evaluate\n"
            "from autoais.schemas import AttributionExample\n"
            "print(autoais.hypothesis('q', 'a'))\n"
            "print(models.OWNER, schemas.OWNER, transforms.OWNER, beam_jobs.OWNER)\n")
  done = subprocess.run([str(python), "-c", script], cwd=tmp_path, capture_output=True,
                        text=True, check=False, env=env)
  assert done.returncode == 0, done.stderr[-3000:]
  assert done.stdout.split("\n")[:2] == [
      "The answer to the question 'q' is 'a'",
      "project models project schemas project transforms project beam_jobs"]
  for argv in (["-m", "autoais", "evaluate", "--help"],
               ["-m", "autoais.beam_jobs.evaluate", "--help"]):
    done = subprocess.run([str(python), *argv], cwd=tmp_path, capture_output=True,
                          text=True, check=False, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "--predictions" in done.stdout
