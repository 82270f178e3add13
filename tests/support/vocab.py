"""A vocabulary for tiny T5 models."""
import json

from tests.support.files import read_jsonl
from tests.support.paths import EXAMPLES


def example_texts():
  """Texts of the example corpus and gold: a vocabulary for tiny T5 models."""
  texts = [json.loads(line)["contents"] for line in
           (EXAMPLES / "corpus" / "wiki_sample.jsonl").read_text().splitlines()]
  texts += [g["question"] + " " + " ".join(g["answer"])
            for g in read_jsonl(EXAMPLES / "gold.jsonl")]
  return texts + ["premise: hypothesis: The answer to the question is"] * 50
