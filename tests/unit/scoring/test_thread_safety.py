"""A loaded model of each local family scored from several threads at once, as
Beam's RunInference shares one loaded model among the threads of a worker
process: the scores equal those of one thread, and nothing fails. (A fast
tokenizer keeps its truncation and padding settings in shared state: called
from two threads with different settings, it corrupted encodings, e.g. "index
66 is out of bounds for dimension 1 with size 66", before models/checkpoints.py's
LockedTokenizer.)"""
import threading

import pytest

from autoais.schemas import AttributionExample
from tests.support.vocab import example_texts

THREADS, ROUNDS = 8, 8


def _examples():
  text = " ".join(example_texts()[:60])
  # Long premises (windowed or truncated) and short ones, in alternate batches.
  long = [AttributionExample(text[:300 + 41 * k], f"Claim {k} is here.", "", "")
          for k in range(12)]
  short = [AttributionExample(f"A short premise {k}.", "A claim.", "", "")
           for k in range(12)]
  return long, short


def _load(family, directory):
  if family == "t5":
    from autoais.models.t5_nli import load_t5_nli  # pylint: disable=import-outside-toplevel
    model = load_t5_nli(directory, max_input_tokens=64)
    return lambda examples: model.score(examples, "threshold", 0.5)
  if family == "nli-classifier":
    from autoais.models.nli_classifier import load_nli_classifier  # pylint: disable=import-outside-toplevel
    model = load_nli_classifier(directory, max_input_tokens=64)
    return lambda examples: model.score(examples, 0.5)
  from autoais.models.minicheck import load_minicheck  # pylint: disable=import-outside-toplevel
  model = load_minicheck(directory, max_input_tokens=64, chunk_size=24)
  return lambda examples: model.score(examples, 0.5)


def test_scores_from_many_threads_equal_one_threads(model_scorer):
  family, directory = model_scorer
  score = _load(family, directory)
  batches = _examples()
  expected = [score(batch) for batch in batches]
  results, errors = {}, []

  def work(thread):
    try:
      for round_ in range(ROUNDS):
        which = (thread + round_) % 2
        results[(thread, round_)] = (which, score(batches[which]))
    except Exception as error:  # pylint: disable=broad-except
      errors.append(repr(error))

  threads = [threading.Thread(target=work, args=(k,)) for k in range(THREADS)]
  for thread in threads:
    thread.start()
  for thread in threads:
    thread.join()
  assert not errors, errors[:3]
  assert len(results) == THREADS * ROUNDS
  # Exact: each thread scores one of the same two batches as `expected` did,
  # on one machine; a race (a tokenizer or a batch shared wrongly) would
  # change the inputs, not only the last bits.
  for which, scores in results.values():
    assert scores == expected[which]


def test_the_lock_leaves_the_tokenizer_as_it_was(tiny_nli_classifier):
  from autoais.models.nli_classifier import load_nli_classifier  # pylint: disable=import-outside-toplevel
  from autoais.models.checkpoints import LockedTokenizer  # pylint: disable=import-outside-toplevel
  model = load_nli_classifier(tiny_nli_classifier)
  assert isinstance(model.tokenizer, LockedTokenizer)
  inner = model.tokenizer.unlocked
  assert model.tokenizer("a b", "c")["input_ids"] == inner("a b", "c")["input_ids"]
  assert model.tokenizer.encode("a b") == inner.encode("a b")
  assert model.tokenizer.pad_token_id == inner.pad_token_id and len(model.tokenizer) == len(
      inner)
  with pytest.raises(AttributeError):
    model.tokenizer.no_such_attribute  # pylint: disable=pointless-statement
