"""pytest fixtures and hooks for the whole suite; the plain helpers they use
live in tests/support/."""
import json
import os

import pytest

# The helpers' asserts report as the tests' own do (pytest rewrites them).
pytest.register_assert_rewrite("tests.support")
# Light modules only (no torch) above the thread settings below.
from tests.support.jobs import run_job  # pylint: disable=wrong-import-position
from tests.support.nq import build_nq_leaderboard  # pylint: disable=wrong-import-position
from tests.support.paths import EXAMPLES, PROJECT_ROOT  # pylint: disable=wrong-import-position
from tests.support.vocab import example_texts  # pylint: disable=wrong-import-position

# `make test` runs pytest-xdist processes side by side. Each takes its share of
# the cores for torch's (OpenMP) threads, set before torch is imported: with a
# thread per core in every process, threads spin against each other's cores
# (the reference-parity fixture took 540 s in the suite against 178 s alone).
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
  _THREADS = str(max(1, (os.cpu_count() or 1) //
                     int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))
  for _variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, _THREADS)

# Beam reads each DoFn method's arguments anew for every pipeline; the suite
# builds over a thousand (see the module for the measured cost).
from tests.support import beam_inspection  # pylint: disable=wrong-import-position

beam_inspection.install()


@pytest.fixture(scope="session")
def example_corpus(tmp_path_factory):
  """The example passages (examples/corpus) built into a 2-shard corpus, once a
  session; tests that damage a corpus work on a copy."""
  from autoais.beam_jobs import build_corpus  # pylint: disable=import-outside-toplevel
  output = tmp_path_factory.mktemp("example_corpus") / "corpus"
  assert run_job(build_corpus, "--input", EXAMPLES / "corpus" / "*.jsonl",
                 "--output", output, "--num_shards", 2) == 0
  return output


@pytest.fixture(scope="session")
def nq_leaderboard_inputs(tmp_path_factory):
  """A real leaderboard: NQ-Open dev gold, a corpus built from the 2,655 oracle
  Wikipedia passages, and five systems of predictions derived from them."""
  return build_nq_leaderboard(tmp_path_factory.mktemp("nq_leaderboard"))


@pytest.fixture(scope="session")
def tiny_t5_dirs(tmp_path_factory):
  """Two tiny random T5 checkpoints (seeds 3 and 4) with the example vocabulary."""
  from tests.support.t5_models import build_random_t5  # pylint: disable=import-outside-toplevel
  root = tmp_path_factory.mktemp("tiny_t5")
  return {seed: build_random_t5(str(root / f"seed{seed}"), example_texts(),
                                vocab_size=2000, seed=seed) for seed in (3, 4)}


@pytest.fixture(scope="session")
def tiny_t5(tmp_path_factory):
  """A tiny random-weight T5 NLI model (tests/support/t5_models.py) whose vocabulary is
  trained on the example corpus; skipped where torch is not installed."""
  pytest.importorskip("torch")
  pytest.importorskip("transformers")
  from tests.support.t5_models import build_random_t5  # pylint: disable=import-outside-toplevel
  texts = [json.loads(line)["contents"] for line in
           (PROJECT_ROOT / "examples" / "corpus" / "wiki_sample.jsonl")
           .read_text(encoding="utf-8").splitlines()]
  directory = str(tmp_path_factory.mktemp("tiny_t5") / "model")
  return build_random_t5(directory, texts + ["premise: hypothesis: is"] * 50,
                         vocab_size=2000, seed=3)


@pytest.fixture(scope="session")
def tiny_nli_classifier(tmp_path_factory):
  """A tiny random three-way RoBERTa NLI classifier (tests/support/nli_classifiers.py),
  input length 128 tokens; skipped where torch is not installed."""
  pytest.importorskip("torch")
  pytest.importorskip("transformers")
  from tests.support.nli_classifiers import build_tiny_classifier  # pylint: disable=import-outside-toplevel
  return build_tiny_classifier(str(tmp_path_factory.mktemp("tiny_nli_classifier")),
                               "roberta", {0: "entailment", 1: "neutral",
                                           2: "contradiction"}, example_texts(), 128)


@pytest.fixture(scope="session")
def tiny_minicheck(tmp_path_factory):
  """A tiny random T5 v1.1 that --scorer minicheck reads as MiniCheck-Flan-T5
  (its vocabulary holds ids 3 and 209); skipped where torch is not installed."""
  pytest.importorskip("torch")
  pytest.importorskip("transformers")
  from tests.support.t5_models import build_random_t5  # pylint: disable=import-outside-toplevel
  return build_random_t5(str(tmp_path_factory.mktemp("tiny_minicheck") / "model"),
                         example_texts(), version="1.1", seed=5)


@pytest.fixture(params=["t5", "nli-classifier", "minicheck"])
def model_scorer(request):
  """(family, model directory) of each local model scorer family."""
  fixture = {"t5": "tiny_t5", "nli-classifier": "tiny_nli_classifier",
             "minicheck": "tiny_minicheck"}[request.param]
  return request.param, request.getfixturevalue(fixture)


# The tests behind the two longest fixtures are collected first, one after the
# other: the reference-parity module's (minutes, one module fixture), then those
# reading the docs' commands run once a session (tests/support/example_runs.py:
# test_docs' page and set-up tests, test_newcomer). pytest-xdist's default
# scheduling (--dist load) hands each worker a run of consecutive tests to
# start with (a quarter of its share: about 100 tests with three workers), so
# all of these start on one worker and each fixture is built once, while the
# other workers take the many short ones. (--dist loadgroup was tried for the
# docs' commands, issue 47: it schedules every other test alone, and module
# fixtures were built on both workers: a whole-suite run took 1,236 s against
# 1,068 s.)
_FIRST = "tests/jobs/test_reference_parity.py::"
_SECOND = "example_runs"


def pytest_collection_modifyitems(config, items):
  del config
  items.sort(key=lambda item: (not item.nodeid.startswith(_FIRST),
                               _SECOND not in getattr(item, "fixturenames", ())))


# Hypothesis profiles for the reader property tests: `ci` (the default, 150
# examples per reader inside `make test`) and `nightly` (40x more), chosen with
# pytest's --hypothesis-profile. Each planted bug of test_reader_properties must
# be caught within `ci`'s examples: over 12 seeds each was caught within 4 to 69
# (Hypothesis tries its smallest files first; most bugs need the ~53rd, the
# first damaged ones). `ci` was 300 until issue 47: generating damaged files
# took most of the suite's largest module.
from hypothesis import settings as _hypothesis_settings  # pylint: disable=wrong-import-position

_hypothesis_settings.register_profile("ci", max_examples=150, deadline=None)
_hypothesis_settings.register_profile("nightly", max_examples=6000, deadline=None)


def pytest_configure(config):
  if not config.getoption("hypothesis_profile", None):
    _hypothesis_settings.load_profile("ci")
