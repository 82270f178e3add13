"""Where the project, its examples, the shared data sets and the field's
reference code lie."""
import os
import pathlib

import pytest

# tests/support/paths.py: the repository root is three levels up.
PROJECT_ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = PROJECT_ROOT / "examples"


def shared_data_dir() -> pathlib.Path:
  """The real data sets: $AUTOAIS_SHARED_DATA, else ../shared/data beside the project."""
  return pathlib.Path(os.environ.get("AUTOAIS_SHARED_DATA",
                                     PROJECT_ROOT.parent / "shared" / "data"))


def shared_file(relative: str) -> pathlib.Path:
  """A file of the shared data; skips the test (with the reason) where it is absent."""
  path = shared_data_dir() / relative
  if not path.exists():
    pytest.skip(f"shared data {relative} not found under {shared_data_dir()} "
                "(set AUTOAIS_SHARED_DATA)")
  return path


def shared_reference(relative: str) -> pathlib.Path:
  """A file of the field's reference code (../shared/reference, beside the
  shared data); skips the test (with the reason) where it is absent."""
  path = shared_data_dir().parent / "reference" / relative
  if not path.exists():
    pytest.skip(f"reference code {relative} not found under "
                f"{shared_data_dir().parent / 'reference'}")
  return path
