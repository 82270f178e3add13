"""--model as the field names it: a Hugging Face hub id, resolved through
huggingface_hub's cache (issue 28, item 2), and scorer flags never ignored
(item 1).

The cache is built offline in its real layout (tests/support/hub_cache.py:
blobs, snapshots/<commit>, refs/) from the tiny T5 checkpoints of conftest, and
the jobs run with HF_HOME pointing at it and HF_HUB_OFFLINE=1, as a user whose
cache holds the model runs them.
"""
import json
import pathlib
import shutil

import pytest

pytest.importorskip("torch")

from autoais.beam_jobs import agreement, audit, citations, claims, evaluate, sck  # pylint: disable=wrong-import-position
from autoais.models import checkpoints  # pylint: disable=wrong-import-position
from tests.support.hub_cache import add_to_hub_cache, repo_cache  # pylint: disable=wrong-import-position
from tests.support.jobs import run_job  # pylint: disable=wrong-import-position
from tests.support.paths import EXAMPLES  # pylint: disable=wrong-import-position

REPO = "org/tiny-t5"
PREDICTIONS = EXAMPLES / "predictions" / "retrieve-then-read.csv"


@pytest.fixture(scope="module")
def hub_home(tmp_path_factory, tiny_t5_dirs):
  """A cache holding two commits of org/tiny-t5: the seed-3 checkpoint tagged
  v1, then the seed-4 one on main; and org/no-shard, whose second weight shard
  never arrived."""
  home = tmp_path_factory.mktemp("hf_home")
  v1 = add_to_hub_cache(home, REPO, tiny_t5_dirs[3], refs=("v1",))
  main = add_to_hub_cache(home, REPO, tiny_t5_dirs[4], refs=("main",))
  shards = sorted(path.name for path in pathlib.Path(tiny_t5_dirs[3]).iterdir()
                  if path.name.endswith(".safetensors"))
  assert len(shards) > 1, "the fixture publishes sharded weights"
  add_to_hub_cache(home, "org/no-shard", tiny_t5_dirs[3], skip=shards[1:2])
  return {"home": home, "v1": v1, "main": main, "missing_shard": shards[1]}


@pytest.fixture
def offline(hub_home, monkeypatch):
  monkeypatch.setenv("HF_HOME", str(hub_home["home"]))
  monkeypatch.delenv("HF_HUB_CACHE", raising=False)
  monkeypatch.setenv("HF_HUB_OFFLINE", "1")
  return hub_home


def _evaluate(output, example_corpus, *flags):
  code = run_job(evaluate, "--predictions", PREDICTIONS, "--corpus", example_corpus,
                 "--gold", EXAMPLES / "gold.jsonl", "--output_dir", output,
                 "--bootstrap_samples", 10, *flags)
  run = json.loads((output / "run.json").read_text()) if code == 0 else None
  return code, run


def test_a_hub_id_loads_the_commit_main_names_from_the_cache(offline, tmp_path,
                                                             example_corpus,
                                                             tiny_t5_dirs):
  code, run = _evaluate(tmp_path / "out", example_corpus, "--scorer", "t5",
                        "--model", REPO)
  assert code == 0
  scorer = run["scorer"]
  assert (scorer["model"], scorer["model_revision"], scorer["model_commit"]) == (
      REPO, "main", offline["main"])
  # The run read the snapshot of that commit: main's weights (seed 4), not v1's.
  assert scorer["weights_sha256"] == checkpoints.weights_checksum(str(tiny_t5_dirs[4]))
  assert scorer["weights_sha256"] != checkpoints.weights_checksum(str(tiny_t5_dirs[3]))
  assert scorer["tokenizer_sha256"] == checkpoints.tokenizer_checksum(str(tiny_t5_dirs[4]))
  assert run["counts"]["scored"] > 0


@pytest.mark.parametrize("revision", ["v1", "commit"])
def test_model_revision_pins_a_tag_or_a_commit(offline, tmp_path, example_corpus,
                                               tiny_t5_dirs, revision):
  asked = offline["v1"] if revision == "commit" else revision
  code, run = _evaluate(tmp_path / "out", example_corpus, "--scorer", "t5",
                        "--model", REPO, "--model_revision", asked)
  assert code == 0
  scorer = run["scorer"]
  assert (scorer["model"], scorer["model_revision"], scorer["model_commit"]) == (
      REPO, asked, offline["v1"])
  assert scorer["weights_sha256"] == checkpoints.weights_checksum(str(tiny_t5_dirs[3]))


def test_a_hub_tokenizer_beside_a_model_directory_without_one(offline, tmp_path,
                                                              example_corpus,
                                                              tiny_t5_dirs):
  weights_only = tmp_path / "weights_only"
  shutil.copytree(tiny_t5_dirs[3], weights_only)
  for name in ("spiece.model", "tokenizer.json", "tokenizer_config.json",
               "special_tokens_map.json"):
    (weights_only / name).unlink(missing_ok=True)
  code, run = _evaluate(tmp_path / "out", example_corpus, "--scorer", "t5",
                        "--model", weights_only, "--tokenizer", REPO,
                        "--tokenizer_revision", "v1")
  assert code == 0
  scorer = run["scorer"]
  assert (scorer["model"], scorer["tokenizer_path"], scorer["tokenizer_revision"],
          scorer["tokenizer_commit"]) == (str(weights_only), REPO, "v1", offline["v1"])
  assert scorer["tokenizer_sha256"] == checkpoints.tokenizer_checksum(str(tiny_t5_dirs[3]))


@pytest.mark.parametrize("flags,message", [
    (["--model", "org/not-cached"], "HF_HUB_OFFLINE is set and the Hugging Face cache"),
    (["--model", REPO, "--model_revision", "v9"], "has no revision 'v9'"),
    (["--model", "org/no-shard"], "are missing"),
])
def test_a_hub_model_the_cache_cannot_give_is_refused_at_launch(
    offline, tmp_path, example_corpus, capsys, flags, message):
  code, _ = _evaluate(tmp_path / "out", example_corpus, "--scorer", "t5", *flags)
  err = capsys.readouterr().err
  assert code == 2, err
  assert message in err and flags[1] in err
  if flags[1] == "org/no-shard":
    assert offline["missing_shard"] in err
  assert not (tmp_path / "out").exists()


def test_a_hub_id_is_no_directory_of_the_working_directory(offline, tmp_path, monkeypatch,
                                                           example_corpus):
  # org/tiny-t5 would lie inside --output_dir if it were read as ./org/tiny-t5.
  (tmp_path / "run").mkdir()
  monkeypatch.chdir(tmp_path / "run")
  code, run = _evaluate(tmp_path / "run", example_corpus, "--scorer", "t5",
                        "--model", REPO)
  assert code == 0
  assert run["scorer"]["model_commit"] == offline["main"]


def test_the_cache_is_read_where_huggingface_hub_keeps_it(offline):
  # The layout the fixture wrote is the one huggingface_hub resolves itself.
  from huggingface_hub import snapshot_download  # pylint: disable=import-outside-toplevel
  folder = snapshot_download(REPO, revision="v1", cache_dir=offline["home"] / "hub",
                             local_files_only=True)
  assert folder == str(repo_cache(offline["home"], REPO) / "snapshots" / offline["v1"])


def test_every_local_family_loads_a_hub_model(model_scorer, monkeypatch, tmp_path):
  family, directory = model_scorer
  repo = f"org/tiny-{family}"
  commit = add_to_hub_cache(tmp_path / "hf_home", repo, directory)
  monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
  monkeypatch.setenv("HF_HUB_OFFLINE", "1")
  output = tmp_path / "out"
  assert run_job(claims, *JOB_ARGS[claims], "--output_dir", output, "--scorer", family,
                 "--model", repo) == 0
  run = json.loads((output / "run.json").read_text())
  assert (run["scorer"]["model"], run["scorer"]["model_commit"]) == (repo, commit)
  assert run["scorer"]["weights_sha256"] == checkpoints.weights_checksum(str(directory))
  assert run["counts"]["scored"] > 0


def test_model_revision_of_a_directory_is_refused(tmp_path, example_corpus,
                                                  tiny_t5_dirs, capsys):
  code, _ = _evaluate(tmp_path / "out", example_corpus, "--scorer", "t5",
                      "--model", tiny_t5_dirs[3], "--model_revision", "main")
  assert code == 2
  assert "--model_revision is for a model named by its Hugging Face hub id" in (
      capsys.readouterr().err)


# Every scoring job, with inputs it accepts: a scorer flag its scorer does not
# take stops it at launch, before anything is written.
JOB_ARGS = {
    evaluate: ["--predictions", PREDICTIONS, "--gold", EXAMPLES / "gold.jsonl"],
    agreement: ["--input", EXAMPLES / "agreement" / "ratings.csv", "--format", "ratings"],
    claims: ["--input", EXAMPLES / "claims" / "expertqa.jsonl", "--format", "expertqa"],
    citations: ["--input", EXAMPLES / "citations" / "cite-everything.json"],
    audit: ["--answers", EXAMPLES / "audit" / "answers.csv", "--candidates",
            EXAMPLES / "audit" / "runs" / "*", "--topics", EXAMPLES / "audit" / "topics.tsv"],
    sck: ["--input", EXAMPLES / "sck" / "answers.csv", "--kg", EXAMPLES / "sck" / "kg.csv"],
}


@pytest.mark.parametrize("job", list(JOB_ARGS), ids=lambda job: job.__name__.split(".")[-1])
@pytest.mark.parametrize("flags,message", [
    (["--model", "MODEL_DIR"], "--model needs a model scorer, and the default scorer, "
                               "string-match, reads no model"),
    (["--dtype", "bfloat16", "--device", "cuda"],
     "--device is for --scorer t5 / nli-classifier / minicheck / hhem / factcg / "
     "lettucedetect, not --scorer string-match (the default); --dtype is for"),
    (["--scorer", "string-match", "--tokenizer", "TOKENIZER_DIR"],
     "--tokenizer is for --scorer t5 / nli-classifier / minicheck / hhem / factcg / "
     "lettucedetect / "
     "llm-judge, not --scorer string-match"),
    (["--scorer", "t5", "--model", "MODEL_DIR", "--endpoint", "http://127.0.0.1:9"],
     "--endpoint is for --scorer remote, not --scorer t5"),
    (["--scorer", "remote", "--endpoint", "http://127.0.0.1:9", "--model", "MODEL_DIR"],
     "--model is for --scorer t5 / nli-classifier / minicheck / hhem / factcg / "
     "lettucedetect, not "
     "--scorer remote"),
    (["--dtype", "float32"], "--dtype is for"),
])
def test_a_scorer_flag_the_scorer_does_not_take_is_refused(job, flags, message, tmp_path,
                                                           tiny_t5_dirs, capsys):
  flags = [str(tiny_t5_dirs[3]) if flag in ("MODEL_DIR", "TOKENIZER_DIR") else flag
           for flag in flags]
  code = run_job(job, *JOB_ARGS[job], "--output_dir", tmp_path / "out", *flags)
  err = capsys.readouterr().err
  assert code == 2, err
  assert message in err
  assert not (tmp_path / "out").exists()
