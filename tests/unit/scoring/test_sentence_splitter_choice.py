"""The sentence splitter's choice (models/sentences.py): punkt where NLTK's own
lookup finds its data, else syntok. Each case runs in a fresh interpreter with
its own NLTK_DATA and HOME."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("nltk")

_PROBE = """
import json, sys
from autoais.models import sentences
installed = sentences.punkt_installed()
imported = "nltk" in sys.modules
import nltk
print(json.dumps({"installed": installed, "imported": imported,
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
