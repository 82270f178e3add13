"""The layering rule (README, Architecture), read from the imports themselves.

    schemas <- models <- transforms <- beam_jobs <- launch

A module imports only from its own layer or the layers to its left (every import
statement counts, those inside functions too). `models/` holds ModelHandlers and
imports `schemas` only. A job's own modules (its domain steps and readers in
transforms/<job>/, its types schemas/<job>.py, its module beam_jobs/<job>.py, its
entry script launch/<job>_main.py) are imported by that job only: not by another job, not by
the shared modules (what two jobs share lives in a shared subpackage, as the
ExpertQA records of claims and agreement do in transforms/labelled/). Every
module of transforms/ lives in a subpackage: a shared one (SHARED_SUBPACKAGES) or
a job's. Every package is found by setup.py, so that what imports in tests also
ships to Dataflow workers.
"""
import ast
import pathlib

import setuptools

from tests.support.paths import PROJECT_ROOT

LAYERS = ("schemas", "models", "transforms", "beam_jobs", "launch")

JOBS = ("agreement", "ais-annotations", "audit", "build-corpus", "citations", "claims",
        "evaluate", "sck", "serve")
# A module belongs to a job when its path is transforms/<job>/..., beam_jobs/<job>.py
# or launch/<job>_main.py (the job's name with '_' for '-').
JOB_MODULES = {job: (f"transforms.{job.replace('-', '_')}",
                     f"schemas.{job.replace('-', '_')}",
                     f"beam_jobs.{job.replace('-', '_')}",
                     f"launch.{job.replace('-', '_')}_main") for job in JOBS}
# The subpackages of transforms/ that every job may import.
SHARED_SUBPACKAGES = ("io", "corpus", "stats", "labelled", "scoring", "rows")
# Shared modules that gather every job's types: the `schemas` package re-exports
# them (`from schemas import X`) and its registry maps each to its schema.
GATHERERS = ("schemas", "schemas.registry")


def owner(module: str):
  """The job a module belongs to (JOB_MODULES), or None for a shared module."""
  for job, roots in JOB_MODULES.items():
    if any(module == root or module.startswith(root + ".") for root in roots):
      return job
  return None


def _modules():
  """{module name: path} of every module of the five layers."""
  found = {}
  for layer in LAYERS:
    for path in sorted((PROJECT_ROOT / layer).rglob("*.py")):
      parts = path.relative_to(PROJECT_ROOT).with_suffix("").parts
      name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
      found[name] = path
  return found


MODULES = _modules()


def _imports(path: pathlib.Path):
  """The project modules `path` imports (from X import Y counts X.Y where
  that is a module, else X)."""
  imported = set()
  for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
    if isinstance(node, ast.Import):
      names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
      names = [f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in MODULES
               else node.module for alias in node.names]
    else:
      continue
    imported.update(name for name in names if name.split(".")[0] in LAYERS)
  return imported


IMPORTS = {name: _imports(path) for name, path in MODULES.items()}


def _layer(module: str) -> int:
  return LAYERS.index(module.split(".")[0])


def test_no_module_imports_a_layer_above_its_own():
  upward = sorted(f"{importer} imports {imported}"
                  for importer, targets in IMPORTS.items() for imported in targets
                  if _layer(imported) > _layer(importer))
  assert not upward, "\n".join(upward)


def test_models_are_model_handlers_that_import_schemas_only():
  outside = sorted(f"{importer} imports {imported}"
                   for importer, targets in IMPORTS.items() if importer.startswith("models")
                   for imported in targets
                   if imported.split(".")[0] not in ("schemas", "models"))
  assert not outside, "\n".join(outside)


def test_a_jobs_modules_are_imported_by_that_job_only():
  crossing = sorted(
      f"{importer} ({owner(importer) or 'shared'}) imports {imported} "
      f"({owner(imported)})"
      for importer, targets in IMPORTS.items() for imported in targets
      if owner(imported) and owner(importer) != owner(imported)
      and importer not in GATHERERS)
  assert not crossing, "\n".join(crossing)


def test_beam_jobs_hold_one_module_per_job_and_the_shared_ones():
  shared = {"beam_jobs", "beam_jobs.common", "beam_jobs.output_dir", "beam_jobs.cli"}
  assert {m for m in MODULES if m.startswith("beam_jobs")} - shared == {
      f"beam_jobs.{job.replace('-', '_')}" for job in JOBS}


def test_transforms_modules_live_in_a_shared_or_a_jobs_subpackage():
  job_packages = {job.replace("-", "_") for job in JOBS}
  assert not set(SHARED_SUBPACKAGES) & job_packages
  rooms = set(SHARED_SUBPACKAGES) | job_packages
  misplaced = sorted(
      module for module in MODULES if module.startswith("transforms.")
      and (module.split(".")[1] not in rooms
           or module.count(".") == 1 and MODULES[module].name != "__init__.py"))
  assert not misplaced, misplaced


def test_setup_finds_every_package():
  namespace = {}
  source = (PROJECT_ROOT / "setup.py").read_text(encoding="utf-8")
  exec(compile(source.split("setuptools.setup(")[0], "setup.py", "exec"), namespace)  # pylint: disable=exec-used
  found = set(setuptools.find_packages(where=str(PROJECT_ROOT), include=namespace["PACKAGES"]))
  directories = {".".join(path.parent.relative_to(PROJECT_ROOT).parts)
                 for path in MODULES.values()}
  assert directories == found
  missing_init = sorted(d for d in directories
                        if not (PROJECT_ROOT / d.replace(".", "/") / "__init__.py").exists())
  assert not missing_init, missing_init
