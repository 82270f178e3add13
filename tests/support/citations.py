"""ALCE-format inputs built from NQ-Open oracle passages, and a tiny T5 whose
greedy decisions mix, for the citations job's tests."""
import json
import os

from tests.support.t5_models import EOS_ID, build_random_t5, save_model

SYSTEMS = ("single", "multiple", "messy")
QAMPARI_SYSTEM = "lists-qampari"
ELI5_SYSTEM = "eli5-claims"
DOCS_PER_ITEM = 4
DIRECTIONS, ONE_SHARE = 2000, 0.45


def build_mixing_t5(directory: str, texts, probes, seed: int = 3) -> str:
  """A random T5 v1.1 (untied output layer) whose output layer can only say
  `▁1` or `</s>`: the row of `▁1` is a vector v, the row of `</s>` is -v, every
  other row 0. Greedy decoding reads "1" iff the first step says `▁1` and the
  second `</s>`: the signs of v against two decoder states, which depend on the
  whole input. v is, of DIRECTIONS random directions, the one whose decisions
  on `probes` (model inputs like those to be scored) are "1" closest to
  ONE_SHARE of the time: decisions mix without training. P("1") at the first
  step is over {`▁1`, `▁`}, `▁`'s logit being 0."""
  import torch  # pylint: disable=import-outside-toplevel
  from transformers import AutoModelForSeq2SeqLM, AutoTokenizer  # pylint: disable=import-outside-toplevel
  build_random_t5(directory, texts, vocab_size=2000, version="1.1", seed=seed)
  tokenizer = AutoTokenizer.from_pretrained(directory)
  one = tokenizer("1")["input_ids"][0]
  model = AutoModelForSeq2SeqLM.from_pretrained(directory).eval()
  generator = torch.Generator().manual_seed(seed)
  with torch.no_grad():
    states = {1: [], 2: []}
    for text in probes:
      ids = tokenizer(text, return_tensors="pt").input_ids
      out = model(input_ids=ids, decoder_input_ids=torch.tensor([[0, one]]),
                  output_hidden_states=True)
      last = out.decoder_hidden_states[-1][0]
      states[1].append(last[0])
      states[2].append(last[1])
    first, second = torch.stack(states[1]), torch.stack(states[2])
    best, best_gap = None, None
    for _ in range(DIRECTIONS):
      v = torch.randn(first.shape[1], generator=generator)
      says_one = ((first @ v > 0) & (second @ v < 0)).float().mean().item()
      if best is None or abs(says_one - ONE_SHARE) < best_gap:
        best, best_gap = v, abs(says_one - ONE_SHARE)
    v = best
    weight = torch.zeros_like(model.lm_head.weight)
    weight[one] = v
    weight[EOS_ID] = -v
    model.lm_head.weight.copy_(weight)
  # Ten new tokens at most, as eval.py asks of generate().
  model.generation_config.max_length = 11
  for name in os.listdir(directory):
    if name.endswith(".safetensors") or name == "model.safetensors.index.json":
      os.unlink(os.path.join(directory, name))
  save_model(model, directory)
  return directory


def write_alce(path, items) -> str:
  with open(path, "w", encoding="utf-8") as f:
    json.dump({"args": {"built_for": "tests"}, "data": items}, f, indent=1)
  return str(path)


DOC_WORDS = 60


def _doc(record):
  """A passage's title and its first DOC_WORDS words (shorter inputs, a faster test)."""
  ctx = record["ctxs"][0]
  return {"title": ctx["title"], "text": " ".join(ctx["text"].split()[:DOC_WORDS])}


def _sentences(text, count):
  """The first `count` sentences of a passage, without their full stops."""
  parts = [part.strip().rstrip(".") for part in text.split(". ") if len(part.split()) > 3]
  parts = parts or [text.strip().rstrip(".")]
  return [parts[k % len(parts)] for k in range(count)]


def _docs(records, index, gold_at):
  """The gold passage at position `gold_at` among DOCS_PER_ITEM documents, the
  others distractors (the next questions' passages)."""
  others = [_doc(records[(index + k) % len(records)]) for k in range(1, DOCS_PER_ITEM)]
  others.insert(gold_at, _doc(records[index]))
  return others


def _single_output(sentences, gold):
  cited = [gold, (gold + 1) % DOCS_PER_ITEM, gold]
  return " ".join(f"{s} [{c + 1}]." for s, c in zip(sentences, cited))


def _multiple_output(sentences, gold, index):
  other = (gold + 1 + index % 3) % DOCS_PER_ITEM
  patterns = [
      f"[{gold + 1}][{other + 1}]",
      f"[{other + 1}][{gold + 1}][{(other + 1) % DOCS_PER_ITEM + 1}][4]",  # past 3
      f"[{gold + 1}][{gold + 1}]",  # a repeat
      f"[{other + 1}, {gold + 1}]",
      f"[{other + 1}] [{gold + 1}]",
  ]
  return " ".join(f"{s} {patterns[(index + k) % len(patterns)]}."
                  for k, s in enumerate(sentences))


def _messy_output(sentences, gold, index):
  kind = index % 8
  first, second, third = sentences
  if kind == 0:
    return f"{first}. {second} [{gold + 1}]."  # a sentence without citations
  if kind == 1:
    return f"{first} [9]. {second} [{gold + 1}]."  # out of range
  if kind == 2:
    return f"{first} [0]. {second} [{gold + 1}][0]."  # [0]: ALCE's last document
  if kind == 3:
    return f"{first}. [{gold + 1}] {second}. [{gold + 1}]"  # citations after the period
  if kind == 4:
    return f"  {first} [{gold + 1}].\n{second} [{gold + 1}]."  # two lines
  if kind == 5:
    return f"{first} [{gold + 1}] | {third} [2].<|im_end|>"
  if kind == 6:
    return "" if index % 16 == 6 else f"{third} [{gold + 1}]"
  return f"{first} [{gold + 1}][2]. {second} [3][{gold + 1}]. {third} [1][2][3]."


def alce_items(records, system, indexes):
  """ALCE items of one system over NQ-Open oracle questions `indexes`."""
  items = []
  for index in indexes:
    record = records[index]
    gold = index % DOCS_PER_ITEM
    sentences = _sentences(record["ctxs"][0]["text"], 3)
    item = {"question": record["question"], "docs": _docs(records, index, gold)}
    if system == "single":
      item["output"] = _single_output(sentences, gold)
      other = records[(index + 5) % len(records)]["answers"]
      item["qa_pairs"] = [{"short_answers": record["answers"]}, {"short_answers": other}]
      item["answer"] = record["answers"][0]
    elif system == "multiple":
      item["output"] = _multiple_output(sentences, gold, index)
    elif system == "messy":
      item["output"] = _messy_output(sentences, gold, index)
    elif system == QAMPARI_SYSTEM:
      wrong = records[(index + 3) % len(records)]["answers"][0]
      item["output"] = (f"{record['answers'][0]} [{gold + 1}], {wrong} [{gold + 1}][1], "
                        f"{sentences[0][:40]} [{(gold + 1) % DOCS_PER_ITEM + 1}].")
      item["answers"] = [record["answers"], [wrong + " x"], ["never said"]]
    elif system == ELI5_SYSTEM:
      item["output"] = f"{sentences[0]} [{gold + 1}]. {sentences[1]} [{gold + 1}][3]."
      item["claims"] = [sentences[0], sentences[2],
                        _sentences(records[(index + 9) % len(records)]["ctxs"][0]["text"],
                                   1)[0]]
    items.append(item)
  return items


def probe_inputs(records, indexes):
  """Model inputs shaped like the citation checks' (two documents or one, and
  a sentence), for build_mixing_t5."""
  inputs = []
  for item in alce_items(records, "multiple", indexes):
    docs = [f"Title: {doc['title']}\n{doc['text']}" for doc in item["docs"]]
    sentence = item["output"].split(". ")[0]
    inputs.append(f"premise: {docs[0]}\n{docs[1]} hypothesis: {sentence}")
    inputs.append(f"premise: {docs[2]} hypothesis: {sentence}")
  return inputs


# ----------------------------------------------------------------------------
# ALCE's human evaluation file (human_eval/human_eval_citations_completed.json).
#
# The published file was not available here; this fixture rebuilds the
# properties that ALCE's README and analysis script (human_eval/analyze.py)
# state: the layout {dataset: {system file name: {question id: item,
# "overall_results": {...}}}}; an item as in ALCE's result files (id, question,
# output, docs, qa_pairs or claims) plus `sentences`, per sentence of the
# answer (as Punkt cut it) {sentence_recall_score: 0 | 1,
# sentence_precision_score: 0 | 1, citations: [{citation_precision_score: 0 |
# 1 | 2}, one per valid citation]}, and `automatic_recall_scores`,
# `automatic_precision_scores` (per sentence, 0 | 1) and
# `automatic_citation_precision_scores` (per sentence, per citation). Not known,
# so chosen here: the key holding a sentence's text (`sentence`), the figures
# under `overall_results`, and that items keep their `docs`.

HUMAN_DATASETS = {"asqa": ("a", "b", "c"), "eli5": ("a", "b", "c")}
HUMAN_ITEMS = 10
# Per pattern: the citation text, and the 0-based documents it uses, as
# functions of (gold document, another document, a third one).
_HUMAN_PATTERNS = (
    ("[{g}]", lambda g, o, t: [g]),
    ("[{o}]", lambda g, o, t: [o]),
    ("[{g}][{o}]", lambda g, o, t: [g, o]),
    ("[{o}][{g}][{t}]", lambda g, o, t: [o, g, t]),
    ("", lambda g, o, t: []),
    ("[9]", lambda g, o, t: []),
    ("[{o}][{t}]", lambda g, o, t: [o, t]),
)


def _question_id(question: str) -> str:
  import hashlib  # pylint: disable=import-outside-toplevel
  digest = hashlib.sha1(question.encode("utf-8")).digest()[:8]
  return str(int.from_bytes(digest, "big", signed=True))


def human_judged_item(records, index: int, shift: int, dataset: str, position: int):
  """One judged item: three sentences of the gold passage, each citing by a
  pattern; the judge finds a sentence supported where its citations include
  the gold document (a different judgement every seventh sentence, as judges
  and the fixture's own construction disagree) and rates the gold document 2,
  another 0 or, one time in five, 1 (`shift`: the system's choice of
  patterns). Position 3 of a system: the judges'
  splitter merged the last two sentences (one judged sentence fewer); position
  7: a judged citation too many."""
  record = records[index]
  gold = index % DOCS_PER_ITEM
  other, third = (gold + 1) % DOCS_PER_ITEM, (gold + 2) % DOCS_PER_ITEM
  sentences, judged = [], []
  for s, text in enumerate(_sentences(record["ctxs"][0]["text"], 3)):
    text = text[0].upper() + text[1:]  # as answers are written (a splitter cue)
    pattern, used = _HUMAN_PATTERNS[(index + s + shift) % len(_HUMAN_PATTERNS)]
    docs = used(gold, other, third)
    sentence = f"{text} {pattern.format(g=gold + 1, o=other + 1, t=third + 1)}".strip()
    sentences.append(sentence + ".")
    supported = int(gold in docs)
    if (index + s + shift) % 7 == 3:
      supported = 1 - supported
    citations = [{"citation_precision_score": 2 if doc == gold else
                  int((index + s + k) % 5 == 0)} for k, doc in enumerate(docs)]
    judged.append({"sentence": sentences[-1], "sentence_recall_score": supported,
                   "sentence_precision_score": int(supported and all(
                       c["citation_precision_score"] for c in citations)),
                   "citations": citations})
  if position == 3:
    judged[1:] = [dict(judged[1], sentence=" ".join(sentences[1:]))]
  if position == 7:
    judged[0]["citations"].append({"citation_precision_score": 0})
  item = {"id": _question_id(record["question"]), "question": record["question"],
          "answers": record["answers"], "output": " ".join(sentences),
          "docs": _docs(records, index, gold), "sentences": judged,
          "automatic_recall_scores": [j["sentence_recall_score"] for j in judged],
          "automatic_precision_scores": [j["sentence_precision_score"] for j in judged],
          "automatic_citation_precision_scores": [
              [min(c["citation_precision_score"], 1) for c in j["citations"]]
              for j in judged]}
  if dataset == "asqa":
    item["qa_pairs"] = [{"short_answers": record["answers"]}]
  else:
    item["claims"] = [sentences[0].split(" [")[0]]
  return item


def human_system_file(dataset: str, system: str) -> str:
  return f"{dataset}-{system}-gtr-shot2-ndoc{DOCS_PER_ITEM}-judged.json"


def write_human_eval(path, records, first: int = 0) -> str:
  """ALCE's human evaluation layout over questions first, first + 1, ...:
  every dataset's systems answer the same HUMAN_ITEMS questions."""
  document, shift = {}, 0
  for dataset, systems in HUMAN_DATASETS.items():
    document[dataset] = {}
    for system in systems:
      name = human_system_file(dataset, system)
      items = {}
      shift += 2
      for position in range(HUMAN_ITEMS):
        item = human_judged_item(records, first + position, shift, dataset, position)
        items[item["id"]] = item
      items["overall_results"] = {"citation_rec": None, "citation_prec": None,
                                  "note": "not read"}
      document[dataset][name] = items
  with open(path, "w", encoding="utf-8") as f:
    json.dump(document, f, indent=4)
  return str(path)
