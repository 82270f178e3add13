"""The layering rule (README, Architecture), read from the imports themselves.

    schemas <- models <- transforms <- beam_jobs <- launch

A module imports only from its own layer or the layers to its left (every import
statement counts, those inside functions too). `models/` holds ModelHandlers and
imports `schemas` only. A job's own modules (its domain steps and readers in
transforms/, its module in beam_jobs/) are imported by that job only: not by
another job, not by the shared modules, except where named below with the
reason. Every package is found by setup.py, so that what imports
in tests also ships to Dataflow workers.
"""
import ast
import pathlib

import setuptools

from tests.conftest import PROJECT_ROOT

LAYERS = ("schemas", "models", "transforms", "beam_jobs", "launch")

# Modules that belong to one job (transforms/ is flat for now: the job
# subpackages of issue 16 will make this the path itself).
JOB_MODULES = {
    "agreement": {"beam_jobs.agreement"},
    "ais-annotations": {"transforms.ais", "transforms.ais_paper",
                        "beam_jobs.ais_annotations"},
    "audit": {"transforms.audit", "transforms.audit_sources", "beam_jobs.audit"},
    "build-corpus": {"beam_jobs.build_corpus"},
    "claims": {"transforms.claims", "transforms.claim_sources", "beam_jobs.claims"},
    "evaluate": {"beam_jobs.evaluate"},
    "sck": {"transforms.sck", "transforms.sck_sources", "transforms.intent",
            "transforms.entity_linking", "transforms.knowledge_graph", "beam_jobs.sck"},
    "serve": {"beam_jobs.serve"},
}
# Each job's Flex Template entry script (launch/<job>_main.py) is the job's too.
for _job, _modules_of_job in JOB_MODULES.items():
  _modules_of_job.add(f"launch.{_job.replace('-', '_')}_main")

# (importer, imported): why the rule allows it.
CROSS_JOB_EXCEPTIONS = {
    ("transforms.labelled_sources", "transforms.claim_sources"):
        "the human-labelled readers (shared by evaluate and agreement) read "
        "ExpertQA records for agreement --format expertqa with the claims job's "
        "reader, so that both jobs see the same claims",
    ("transforms.labelled_sources", "transforms.claims"):
        "... and cleans their evidence as the claims job does",
}


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
  owner = {module: job for job, modules in JOB_MODULES.items() for module in modules
           if module in MODULES or not module.startswith("launch.")}
  assert set(owner) <= set(MODULES), set(owner) - set(MODULES)
  crossing = sorted(
      f"{importer} ({owner.get(importer, 'shared')}) imports {imported} "
      f"({owner[imported]})"
      for importer, targets in IMPORTS.items() for imported in targets
      if imported in owner and owner.get(importer) != owner[imported]
      and (importer, imported) not in CROSS_JOB_EXCEPTIONS)
  assert not crossing, "\n".join(crossing)
  # The exceptions are still needed: a stale one would hide a new crossing.
  for importer, imported in CROSS_JOB_EXCEPTIONS:
    assert imported in IMPORTS[importer], (importer, imported)


def test_every_job_module_has_an_owner_and_beam_jobs_hold_only_jobs():
  shared = {"beam_jobs", "beam_jobs.common", "beam_jobs.output_dir", "beam_jobs.cli"}
  owned = {module for modules in JOB_MODULES.values() for module in modules}
  assert {m for m in MODULES if m.startswith("beam_jobs")} - shared == {
      m for m in owned if m.startswith("beam_jobs")}


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
