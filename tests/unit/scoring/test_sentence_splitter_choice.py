"""The sentence splitter's choice (models/sentences.py): punkt where NLTK finds
its data, else syntok, decided without importing NLTK where none of the places
NLTK searches holds tokenizer data. Each case runs in a fresh interpreter, so
that NLTK is not already imported."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("nltk")

_PROBE = """
import json, sys
from autoais.models import sentences
paths = sentences._nltk_default_paths()
installed = sentences.punkt_installed()
imported = "nltk" in sys.modules
import nltk
print(json.dumps({"paths": paths, "installed": installed, "imported": imported,
                  "nltk_paths": list(nltk.data.path)}))
"""


def _probe(tmp_path, nltk_data=None):
  env = {key: value for key, value in os.environ.items() if key != "NLTK_DATA"}
  env["HOME"] = str(tmp_path / "home")  # no ~/nltk_data of the machine's user
  if nltk_data is not None:
    env["NLTK_DATA"] = nltk_data
  done = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True,
                        text=True, check=True, cwd=str(tmp_path))
  return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_places_searched_are_nltks_own(tmp_path):
  extra = str(tmp_path / "extra")
  probe = _probe(tmp_path, nltk_data=os.pathsep.join([extra, str(tmp_path / "more")]))
  # Every place NLTK searches is one the quick check looks at (in NLTK's order).
  assert probe["paths"] is not None
  assert probe["nltk_paths"] == [p for p in probe["paths"] if p in probe["nltk_paths"]]
  assert set(probe["nltk_paths"]) <= set(probe["paths"])
  assert probe["nltk_paths"][:2] == [extra, str(tmp_path / "more")]


def test_no_tokenizer_data_anywhere_is_decided_without_importing_nltk(tmp_path):
  system_data = [path for path in _probe(tmp_path)["paths"]
                 if os.path.exists(os.path.join(path, "tokenizers"))]
  if system_data:
    pytest.skip(f"this machine has NLTK tokenizer data in {system_data}")
  probe = _probe(tmp_path, nltk_data=str(tmp_path / "empty"))
  assert probe == {**probe, "installed": False, "imported": False}


def test_punkt_data_where_nltk_looks_is_found_by_nltk(tmp_path):
  data = tmp_path / "data"
  (data / "tokenizers" / "punkt_tab" / "english").mkdir(parents=True)
  probe = _probe(tmp_path, nltk_data=str(data))
  assert probe["installed"] is True and probe["imported"] is True
  # Other tokenizer data (not punkt): NLTK is asked, and says no.
  other = tmp_path / "other"
  (other / "tokenizers" / "something_else").mkdir(parents=True)
  probe = _probe(tmp_path, nltk_data=str(other))
  assert probe["installed"] is False and probe["imported"] is True
