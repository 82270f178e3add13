"""LettuceDetect's reference code (../shared/reference/lettucedetect), run as
it is for parity tests: its modules loaded by path under their own names, the
`lettucedetect` packages (whose __init__ files are not kept there) stubbed as
empty modules; its prompts read from the folder beside them, as it reads them.
"""
import importlib.util
import sys
import types

from tests.support.paths import shared_reference

_MODULES = ("datasets.hallucination_dataset", "detectors.base", "detectors.prompt_utils",
            "detectors.transformer")


def reference_detector(monkeypatch, model_dir: str, **kwargs):
  """The reference's TransformerDetector of `model_dir` on the CPU."""
  for package in ("lettucedetect", "lettucedetect.datasets", "lettucedetect.detectors"):
    monkeypatch.setitem(sys.modules, package, types.ModuleType(package))
  for name in _MODULES:
    path = shared_reference(f"lettucedetect/{name.replace('.', '/')}.py")
    spec = importlib.util.spec_from_file_location(f"lettucedetect.{name}", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, f"lettucedetect.{name}", module)
    spec.loader.exec_module(module)
  transformer = sys.modules["lettucedetect.detectors.transformer"]
  return transformer.TransformerDetector(model_dir, device="cpu", **kwargs)
