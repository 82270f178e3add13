"""The layering rule (docs/architecture.md, Layers), read from the imports themselves.

    schemas <- models <- transforms <- serve <- beam_jobs <- autoais (the Python API) <- launch

Every layer is imported through the one package, `autoais` (the folders are
mapped into it by setup.py): an import of a bare `models` or `schemas` would
find a user's own package of that name, so none is allowed. Below, module
names drop the `autoais.` prefix of the layers (`autoais.models.t5_nli` is
`models.t5_nli`); the API's own modules keep it (`autoais`, `autoais.api`).

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

A module imported by its name (importlib.import_module) counts as imported
where its whole name is written ("autoais.beam_jobs.evaluate"); a project
module named in pieces (f"autoais.transforms.scoring.{name}") is refused, as
these checks could not see it. No two modules import each other, directly or
through others (a module that imports nothing at its top level pays for a cycle
at its first call, where no test of imports looks).
"""
import ast
import pathlib

import setuptools

from tests.support.paths import PROJECT_ROOT

LAYERS = ("schemas", "models", "transforms", "serve", "beam_jobs", "autoais", "launch")
PACKAGE = "autoais"

JOBS = ("agreement", "ais-annotations", "audit", "build-corpus", "citations", "claims",
        "training-data", "finetune",
        "compare", "evaluate", "sck", "serve")
# A module belongs to a job when its path is transforms/<job>/..., beam_jobs/<job>.py
# or launch/<job>_main.py (the job's name with '_' for '-').
JOB_MODULES = {job: (f"transforms.{job.replace('-', '_')}",
                     f"schemas.{job.replace('-', '_')}",
                     f"beam_jobs.{job.replace('-', '_')}",
                     f"launch.{job.replace('-', '_')}_main") for job in JOBS}
# `autoais serve` is not a Beam job: its server is a layer of its own, serve/.
JOB_MODULES["serve"] += ("serve",)
# The subpackages of transforms/ that every job may import.
SHARED_SUBPACKAGES = ("io", "corpus", "stats", "labelled", "scoring", "rows")
# Shared modules that gather every job's types: the `schemas` package re-exports
# them (`from schemas import X`) and its registry maps each to its schema.
GATHERERS = ("schemas", "schemas.registry")
# Shared modules that map each subcommand to its job's module, by name.
DISPATCHERS = ("beam_jobs.cli", "autoais.api")


def owner(module: str):
  """The job a module belongs to (JOB_MODULES), or None for a shared module."""
  for job, roots in JOB_MODULES.items():
    if any(module == root or module.startswith(root + ".") for root in roots):
      return job
  return None


def _modules():
  """{module name: path} of every module of the layers."""
  found = {}
  for layer in LAYERS:
    for path in sorted((PROJECT_ROOT / layer).rglob("*.py")):
      parts = path.relative_to(PROJECT_ROOT).with_suffix("").parts
      name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
      found[name] = path
  return found


MODULES = _modules()


def _short(name: str) -> str:
  """A module's name in MODULES: `autoais.models.t5_nli` is `models.t5_nli`."""
  inner = name.split(".", 1)[1] if name.startswith(PACKAGE + ".") else ""
  return inner if inner.split(".")[0] in LAYERS else name


def _named_in_pieces(node: ast.AST) -> bool:
  """A call of importlib.import_module or __import__ whose module name is built
  at run time from a project prefix (`f"autoais.{...}"`, "autoais." + name)."""
  if not isinstance(node, ast.Call) or not node.args or getattr(
      node.func, "attr", getattr(node.func, "id", None)) not in ("import_module",
                                                                 "__import__"):
    return False
  name = node.args[0]
  pieces = name.values if isinstance(name, ast.JoinedStr) else [name.left] if isinstance(
      name, ast.BinOp) else []
  return any(isinstance(piece, ast.Constant) and str(piece.value).startswith(PACKAGE)
             for piece in pieces)


def _imports(path: pathlib.Path):
  """(the project modules `path` imports, by their names in MODULES (from X
  import Y counts X.Y where that is a module, else X; a string that is a
  module's whole name counts it too: importlib imports by name); its imports
  of a bare layer name such as `from models import ...`, or of a project module
  named in pieces, which must not exist)."""
  imported, bare = set(), set()
  own = next(name for name, found in MODULES.items() if found == path)
  for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
    if _named_in_pieces(node):
      bare.add(f"a module named in pieces, line {node.lineno}")
      continue
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
      names = [node.value] if node.value.startswith(PACKAGE + ".") and _short(
          node.value) in MODULES else []
    elif isinstance(node, ast.Import):
      names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
      names = [f"{node.module}.{alias.name}" if _short(f"{node.module}.{alias.name}") in MODULES
               else node.module for alias in node.names]
    else:
      continue
    for name in names:
      if _short(name) == own:  # `python -m` entry code that imports its own module
        continue
      top = name.split(".")[0]
      if top == PACKAGE:
        imported.add(_short(name))
      elif top in LAYERS:
        bare.add(name)
  return imported, bare


_PARSED = {name: _imports(path) for name, path in MODULES.items()}
IMPORTS = {name: found for name, (found, _) in _PARSED.items()}


def test_every_project_import_goes_through_the_autoais_package():
  bare = sorted(f"{importer} imports {name}" for importer, (_, names) in _PARSED.items()
                for name in names)
  assert not bare, "\n".join(bare)


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


def test_serve_imports_schemas_and_models_only():
  outside = sorted(f"{importer} imports {imported}"
                   for importer, targets in IMPORTS.items() if owner(importer) == "serve"
                   and importer.split(".")[0] == "serve"
                   for imported in targets
                   if imported.split(".")[0] not in ("schemas", "models", "serve"))
  assert not outside, "\n".join(outside)


def test_a_jobs_modules_are_imported_by_that_job_only():
  crossing = sorted(
      f"{importer} ({owner(importer) or 'shared'}) imports {imported} "
      f"({owner(imported)})"
      for importer, targets in IMPORTS.items() for imported in targets
      if owner(imported) and owner(importer) != owner(imported)
      and importer not in GATHERERS + DISPATCHERS)
  assert not crossing, "\n".join(crossing)


def test_beam_jobs_hold_one_module_per_job_and_the_shared_ones():
  shared = {"beam_jobs", "beam_jobs.options", "beam_jobs.parsing", "beam_jobs.running",
            "beam_jobs.output_dir", "beam_jobs.cli"}
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
  namespace = {"__file__": str(PROJECT_ROOT / "setup.py")}
  source = (PROJECT_ROOT / "setup.py").read_text(encoding="utf-8")
  exec(compile(source.split("setuptools.setup(")[0], "setup.py", "exec"), namespace)  # pylint: disable=exec-used
  found = set(namespace["PACKAGES"])
  directories = {".".join(path.parent.relative_to(PROJECT_ROOT).parts)
                 for path in MODULES.values()}
  assert {name if name.startswith(PACKAGE) else f"{PACKAGE}.{name}"
          for name in directories} == found
  assert all(namespace["PACKAGE_DIR"].get(name, "") ==
             name.removeprefix(PACKAGE + ".") for name in found if name.count(".") <= 1)
  missing_init = sorted(d for d in directories
                        if not (PROJECT_ROOT / d.replace(".", "/") / "__init__.py").exists())
  assert not missing_init, missing_init


def _cycles():
  """The groups of modules that import each other, directly or through
  others (Tarjan's strongly connected components of IMPORTS)."""
  index, low, stack, on_stack, found = {}, {}, [], set(), []

  def visit(module):
    index[module] = low[module] = len(index)
    stack.append(module)
    on_stack.add(module)
    for imported in IMPORTS.get(module, ()):
      if imported not in index:
        visit(imported)
        low[module] = min(low[module], low[imported])
      elif imported in on_stack:
        low[module] = min(low[module], index[imported])
    if low[module] == index[module]:
      group = []
      while not group or group[-1] != module:
        group.append(stack.pop())
        on_stack.discard(group[-1])
      if len(group) > 1:
        found.append(sorted(group))

  for module in sorted(IMPORTS):
    if module not in index:
      visit(module)
  return sorted(found)


def test_no_modules_import_each_other():
  assert not _cycles(), "\n".join(" <-> ".join(group) for group in _cycles())
