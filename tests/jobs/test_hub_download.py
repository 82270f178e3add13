"""A hub model downloaded by huggingface_hub, online: the launch reads small
files only, the run downloads the commit it pinned into the cache, the token
comes from the environment (issue 28, item 2).

The hub is tests/support/fake_hub.py on 127.0.0.1 (HF_ENDPOINT); the jobs run
as a user runs them, each in a process of its own with an empty cache (HF_HOME).
"""
import json
import os
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("torch")

from autoais.models import checkpoints  # pylint: disable=wrong-import-position
from tests.support.fake_hub import FakeHub  # pylint: disable=wrong-import-position
from tests.support.paths import EXAMPLES  # pylint: disable=wrong-import-position

REPO = "org/private-t5"
TOKEN = "hf_test_token_123"


@pytest.fixture
def hub(tiny_t5_dirs):
  with FakeHub({REPO: {"main": tiny_t5_dirs[4], "v1": tiny_t5_dirs[3]}},
               private={REPO: TOKEN}) as running:
    yield running


def _env(hub, home, token=TOKEN):
  env = {key: value for key, value in os.environ.items()
         if not key.startswith("HF_") and key != "HUGGING_FACE_HUB_TOKEN"}
  env.update(HF_ENDPOINT=hub.url, HF_HOME=str(home), HF_HUB_DISABLE_TELEMETRY="1")
  if token:
    env["HF_TOKEN"] = token
  return env


def _weights_fetched(hub):
  return [path for method, path in hub.requests
          if method == "GET" and path.endswith(".safetensors")]


def test_the_launch_checks_read_no_weights(hub, tmp_path):
  script = ("import sys\n"
            "from autoais.beam_jobs.options import ScorerOptions, scorer_from_options\n"
            "from autoais.beam_jobs.parsing import parse_options\n"
            "scorer = scorer_from_options(parse_options(sys.argv[1:], ScorerOptions), "
            "local_run=True)\n"
            "print(scorer.describe()['model_commit'])\n")
  done = subprocess.run([sys.executable, "-c", script, "--scorer", "t5", "--model", REPO,
                         "--model_revision", "v1"], env=_env(hub, tmp_path / "hf"),
                        capture_output=True, text=True, check=False, timeout=120)
  assert done.returncode == 0, done.stderr[-3000:]
  assert done.stdout.strip() == hub.commit(REPO, "v1")
  fetched = {path.rsplit("/", 1)[-1] for method, path in hub.requests if method == "GET"
             and "/resolve/" in path}
  # The launch read config.json, the weights' index and the tokenizer (its label
  # pieces), and never a shard.
  assert {"config.json", "model.safetensors.index.json", "spiece.model"} <= fetched
  assert not _weights_fetched(hub)


def test_a_run_downloads_the_pinned_commit_with_the_environments_token(
    hub, tmp_path, example_corpus, tiny_t5_dirs):
  output = tmp_path / "out"
  done = subprocess.run(
      [sys.executable, "-m", "autoais.beam_jobs.cli", "evaluate", "--predictions",
       str(EXAMPLES / "predictions" / "retrieve-then-read.csv"), "--corpus",
       str(example_corpus), "--gold", str(EXAMPLES / "gold.jsonl"), "--output_dir",
       str(output), "--scorer", "t5", "--model", REPO, "--bootstrap_samples", "10"],
      env=_env(hub, tmp_path / "hf"), capture_output=True, text=True, check=False,
      timeout=300)
  assert done.returncode == 0, done.stderr[-3000:]
  scorer = json.loads((output / "run.json").read_text())["scorer"]
  commit = hub.commit(REPO, "main")
  assert (scorer["model"], scorer["model_revision"], scorer["model_commit"]) == (
      REPO, "main", commit)
  assert scorer["weights_sha256"] == checkpoints.weights_checksum(str(tiny_t5_dirs[4]))
  # Every shard came from the hub once, into huggingface_hub's cache.
  shards = sorted(path.name for path in pathlib.Path(tiny_t5_dirs[4]).iterdir()
                  if path.name.endswith(".safetensors"))
  assert sorted(path.rsplit("/", 1)[-1] for path in _weights_fetched(hub)) == shards
  snapshot = (tmp_path / "hf" / "hub" / "models--org--private-t5" / "snapshots" / commit)
  assert sorted(path.name for path in snapshot.iterdir()
                if path.name.endswith(".safetensors")) == shards


def test_a_private_model_without_a_token_is_refused_at_launch(hub, tmp_path):
  output = tmp_path / "out"
  done = subprocess.run(
      [sys.executable, "-m", "autoais.beam_jobs.cli", "evaluate", "--predictions",
       str(EXAMPLES / "predictions" / "retrieve-then-read.csv"), "--gold",
       str(EXAMPLES / "gold.jsonl"), "--output_dir", str(output), "--scorer", "t5",
       "--model", REPO], env=_env(hub, tmp_path / "hf", token=None),
      capture_output=True, text=True, check=False, timeout=120)
  assert done.returncode == 2, done.stderr[-3000:]
  assert (f"--model {REPO}: is not a model on the Hugging Face hub, or it is private "
          "and HF_TOKEN is not set") in done.stderr
  assert not output.exists()
