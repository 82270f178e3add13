"""A few records of three hallucination benchmarks, written for this project and
laid out field for field as each is released, and writers that put them in
files as published. Read by tests/jobs/test_hallucination_formats.py through the
job's own readers.

RAGTruth (github.com/ParticleMedia/RAGTruth, dataset/): `response.jsonl`, one
response a line with `id, source_id, model, temperature, labels, split, quality,
response`, each label `start, end, text, meta, label_type, implicit_true,
due_to_null`; `source_info.jsonl`, one source a line with `source_id, task_type,
source, source_info, prompt` (source_info: for QA an object with `question` and
`passages`, the passages one string "passage 1:...\\n\\npassage 2:..."; for
Data2txt the Yelp business record as an object; for Summary the news text).
Uncertain: the README's own sample label lacks `implicit_true` and
`due_to_null` (added with the 2024/02 update): they are written on every label
here and the reader reads neither. Ids are strings, as the README's table says.

HaluBench (huggingface.co/datasets/PatronusAI/HaluBench, data/test-*.parquet):
string columns `id, passage, question, answer, label, source_ds`, label "PASS"
or "FAIL". Uncertain: what the ids look like (here short strings).

FaithBench (github.com/vectara/FaithBench, data_for_release/batch_N.json): one
JSON document, {"samples": [...]}, indented by two spaces; a sample holds
`sample_id, source, summary, annotations, metadata`; an annotation `annot_id,
annotator_id, annotator_name, label (a list: "Unwanted", "Unwanted.Intrinsic",
"Unwanted.Extrinsic", "Questionable", "Benign"), note, summary_span,
summary_start, summary_end, source_span, source_start, source_end`; metadata
`summarizer` and the detectors' predictions (`hhemv1, hhem-2.1,
hhem-2.1-english, trueteacher, true_nli, gpt-3.5-turbo, gpt-4-turbo, gpt_4o`)
and `raw_sample_id`. Uncertain: the repository's README shows an older layout
(a top-level list, `annotator` for `annotator_id`, flat `meta_*` fields); the
files under data_for_release/ are the layout written here.
"""
import json
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq

from tests.support.files import write_jsonl

# ----------------------------------------------------------------------------
# RAGTruth

_QA_PASSAGES = (
    "passage 1:Sourdough starter should be fed once a day when kept at room "
    "temperature. Discard half of the starter, then add equal weights of flour "
    "and water and stir well.\n\n"
    "passage 2:A starter kept in the refrigerator only needs feeding once a week. "
    "Take it out a few hours before baking so that it becomes active again.\n\n")
_QA_QUESTION = "how often to feed sourdough starter"
_SUMMARY_TEXT = (
    "The city council of Harlow voted on Tuesday to close the Riverside public "
    "library for eight months of repairs, starting in March. The roof of the "
    "building, which opened in 1962, has leaked for three winters, and an "
    "inspection in the autumn found damage to the wiring of the reading room. "
    "Books on loan can be returned to the branch on King Street, which will "
    "open on Sundays while Riverside is closed. The repairs are expected to "
    "cost 1.4 million pounds, paid from the council's building fund.")
_BUSINESS = {
    "name": "Luigi's Trattoria",
    "address": "412 Elm St",
    "city": "Tucson",
    "state": "AZ",
    "categories": "Restaurants, Italian, Pizza",
    "hours": {"Monday": "0:0-0:0", "Tuesday": "11:0-21:0", "Friday": "11:0-22:30"},
    "attributes": {"RestaurantsTakeOut": True, "OutdoorSeating": False,
                   "WiFi": "free", "Music": None},
    "business_stars": 4.0,
    "review_info": [
        {"review_stars": 5.0, "review_date": "2021-09-18 19:42:10",
         "review_text": "The lasagna was rich and the staff were friendly."},
        {"review_stars": 3.0, "review_date": "2021-06-02 12:15:33",
         "review_text": "Good pizza but we waited forty minutes for a table."},
    ],
}

RAGTRUTH_SOURCES = [
    {"source_id": "15021", "task_type": "QA", "source": "MARCO",
     "source_info": {"question": _QA_QUESTION, "passages": _QA_PASSAGES},
     "prompt": ("Briefly answer the following question:\n" + _QA_QUESTION +
                "\nBear in mind that your response should be strictly based on the "
                "following two passages:\n" + _QA_PASSAGES + "In case the passages do "
                "not contain the necessary information to answer the question, "
                "please reply with: \"Unable to answer based on given passages.\""
                "\noutput:")},
    {"source_id": "11902", "task_type": "Summary", "source": "Recent News",
     "source_info": _SUMMARY_TEXT,
     "prompt": "Summarize the following news within 83 words:\n" + _SUMMARY_TEXT +
               "\noutput:"},
    {"source_id": "13377", "task_type": "Data2txt", "source": "Yelp",
     "source_info": _BUSINESS,
     "prompt": ("Instruction:\nWrite an objective overview about the following local "
                "business based only on the provided structured data in the JSON "
                "format. You should include details and cover the information "
                "mentioned in the customers' review. The overview should be 100 - "
                "200 words. Don't make up information. Structured data:\n" +
                repr(_BUSINESS) + "\nOverview:")},
]


def _label(response, text, label_type, meta, implicit_true=False, due_to_null=False):
  start = response.index(text)
  return {"start": start, "end": start + len(text), "text": text, "meta": meta,
          "label_type": label_type, "implicit_true": implicit_true,
          "due_to_null": due_to_null}


def _response(response_id, source_id, model, temperature, response, labels=(),
              split="test", quality="good"):
  return {"id": response_id, "source_id": source_id, "model": model,
          "temperature": temperature,
          "labels": [_label(response, *label) for label in labels], "split": split,
          "quality": quality, "response": response}


RAGTRUTH_RESPONSES = [
    _response("20301", "15021", "gpt-4-0613", 0.7,
              "Feed the starter once a day at room temperature, or once a week if "
              "it is kept in the refrigerator."),
    _response("20302", "15021", "llama-2-7b-chat", 0.925,
              "You should feed your sourdough starter twice a day, discarding half "
              "each time and adding equal weights of flour and water.",
              [("twice a day", "Evident Conflict",
                "The passages say once a day, not twice.")]),
    _response("20303", "11902", "mistral-7B-instruct", 0.85,
              "Harlow's council voted to close Riverside library for eight months "
              "from March for repairs to its leaking roof and damaged wiring. The "
              "work will cost 1.4 million pounds and is funded by the government. "
              "Borrowers can return books to the King Street branch, which will "
              "open on Sundays.",
              [("is funded by the government", "Evident Baseless Info",
                "HIGH INTRO OF NEW INFO\nThe source says the council's building "
                "fund pays.")]),
    _response("20304", "11902", "gpt-3.5-turbo-0613", 0.7,
              "Riverside public library in Harlow will close for eight months from "
              "March so that its roof and wiring can be repaired, at a cost of 1.4 "
              "million pounds from the council's building fund."),
    _response("20305", "13377", "llama-2-13b-chat", 0.775,
              "Luigi's Trattoria is an Italian restaurant and pizzeria at 412 Elm St "
              "in Tucson, AZ, rated 4 stars. It offers take-out and free WiFi but no "
              "outdoor seating, and it is open every day of the week. Reviewers "
              "praise the rich lasagna and friendly staff, though one waited forty "
              "minutes for a table.",
              [("it is open every day of the week", "Evident Conflict",
                "Closed on Mondays according to the hours.", False, False),
               ("4 stars", "Subtle Baseless Info", "", True, False)],
              split="train"),
]

# Damaged on purpose: a source_id that source_info.jsonl lacks (unmatched) and a
# span that runs past the response (rejected, field labels).
RAGTRUTH_DAMAGED = [
    _response("20306", "99999", "gpt-4-0613", 0.7,
              "The starter needs feeding once a day."),
    dict(_response("20307", "15021", "gpt-4-0613", 0.7, "Once a day."),
         labels=[{"start": 5, "end": 40, "text": "a day.", "meta": "",
                  "label_type": "Subtle Conflict", "implicit_true": False,
                  "due_to_null": False}]),
]


def write_ragtruth(directory, responses=RAGTRUTH_RESPONSES, sources=RAGTRUTH_SOURCES):
  """dataset/response.jsonl and dataset/source_info.jsonl; returns the first."""
  directory = pathlib.Path(directory)
  write_jsonl(directory / "source_info.jsonl", sources)
  return write_jsonl(directory / "response.jsonl", responses)


# ----------------------------------------------------------------------------
# HaluBench

_COVID_PASSAGE = (
    "Rapid antigen tests detect viral proteins in a nasal swab and return a result "
    "within fifteen to thirty minutes. Their sensitivity is lower than that of "
    "PCR tests, particularly in people without symptoms, so a negative result is "
    "often confirmed by a second test two days later.")
_DROP_PASSAGE = (
    "The Falcons opened the scoring with a 32-yard field goal in the first "
    "quarter. The Ravens answered with two touchdown passes in the second quarter, "
    "of 12 and 45 yards, before the Falcons kicked a second field goal from 28 "
    "yards just before halftime.")

HALUBENCH_ROWS = [
    {"id": "covidqa-0141", "passage": _COVID_PASSAGE,
     "question": "How long do rapid antigen tests take to return a result?",
     "answer": "fifteen to thirty minutes", "label": "PASS", "source_ds": "covidQA"},
    {"id": "covidqa-0142", "passage": _COVID_PASSAGE,
     "question": "How long do rapid antigen tests take to return a result?",
     "answer": "about two hours", "label": "FAIL", "source_ds": "covidQA"},
    {"id": "covidqa-0143", "passage": _COVID_PASSAGE,
     "question": "Why is a negative antigen result often confirmed?",
     "answer": "Their sensitivity is lower than that of PCR tests",
     "label": "PASS", "source_ds": "covidQA"},
    {"id": "drop-0907", "passage": _DROP_PASSAGE,
     "question": "How many field goals did the Falcons kick?", "answer": "2",
     "label": "PASS", "source_ds": "DROP"},
    {"id": "drop-0908", "passage": _DROP_PASSAGE,
     "question": "How long was the longest touchdown pass?", "answer": "52 yards",
     "label": "FAIL", "source_ds": "DROP"},
    {"id": "drop-0909", "passage": _DROP_PASSAGE,
     "question": "Which team scored first?", "answer": "The Ravens",
     "label": "FAIL", "source_ds": "DROP"},
]


def write_halubench(path, rows=HALUBENCH_ROWS):
  """The hub's Parquet: every column a string."""
  path = pathlib.Path(path)
  path.parent.mkdir(parents=True, exist_ok=True)
  columns = ("id", "passage", "question", "answer", "label", "source_ds")
  pq.write_table(pa.table({name: pa.array([row[name] for row in rows], pa.string())
                           for name in columns}), path)
  return path


# ----------------------------------------------------------------------------
# FaithBench

_FAITH_SOURCE = (
    "Marlow Bridge . Marlow Bridge is a suspension bridge across the River Thames "
    "in England , completed in 1832 to a design by William Tierney Clark .")


def _annotation(annot_id, summary, span, label, note, annotator="b71c2e90d4f14a3f"):
  start = summary.index(span)
  return {"annot_id": annot_id, "annotator_id": annotator, "annotator_name": "XXXX",
          "label": label, "note": note, "summary_span": span, "summary_start": start,
          "summary_end": start + len(span), "source_span": None, "source_start": None,
          "source_end": None}


def _metadata(summarizer, raw_sample_id):
  return {"summarizer": summarizer, "hhemv1": 0.97, "hhem-2.1": 0.61,
          "hhem-2.1-english": 0.88, "trueteacher": 1, "true_nli": 1,
          "gpt-3.5-turbo": 1, "gpt-4-turbo": 1, "gpt_4o": 1,
          "raw_sample_id": raw_sample_id}


def _sample(sample_id, summary, annotations, summarizer):
  return {"sample_id": sample_id, "source": _FAITH_SOURCE, "summary": summary,
          "annotations": [_annotation(100 + sample_id * 3 + i, summary, *a)
                          for i, a in enumerate(annotations)],
          "metadata": _metadata(summarizer, 40 + sample_id)}


# (sample, the worst label kind: the sample's human label). The spans of its
# Unwanted and Questionable annotations are the item's spans (the reader).
FAITHBENCH_SAMPLES = [
    (_sample(0, "Marlow Bridge, a suspension bridge over the Thames, was completed in "
                "1832 to William Tierney Clark's design.", [],
             "openai/gpt-4o"), "none"),
    (_sample(1, " Marlow Bridge is a famous suspension bridge over the Thames, built "
                "in 1832 by William Tierney Clark.",
             [("famous", ["Benign"], "The source does not say it is famous.")],
             "mistralai/Mistral-7B-Instruct-v0.3"), "Benign"),
    (_sample(2, "Designed by William Tierney Clark, Marlow Bridge crossed the Thames "
                "from 1832 and was the first suspension bridge in England.",
             [("the first suspension bridge in England", ["Unwanted",
                                                          "Unwanted.Extrinsic"],
               "Not in the source."),
              ("crossed", ["Benign"], "Tense."),
              # A second annotator's span over the first's.
              ("suspension bridge in England", ["Unwanted.Extrinsic"],
               "The source says nothing of the first.", "5e0c9a7713d84b21")],
             "openai/gpt-4o"), "Unwanted"),
    (_sample(3, "Marlow Bridge in England is a suspension bridge built by William "
                "Tierney Clark in 1832.",
             [("built by", ["Questionable"], "He designed it; did he build it?"),
              ("in England", ["Benign"], "Fine.")],
             "mistralai/Mistral-7B-Instruct-v0.3"), "Questionable"),
    (_sample(4, "Marlow Bridge spans the River Thames; William Tierney Clark designed "
                "it in 1823.",
             [("1823", ["Unwanted", "Unwanted.Intrinsic"], "The source says 1832.")],
             "openai/gpt-4o"), "Unwanted"),
]


def write_faithbench(path, samples=None):
  """data_for_release/batch_N.json: {"samples": [...]}, indented by two spaces."""
  path = pathlib.Path(path)
  path.parent.mkdir(parents=True, exist_ok=True)
  if samples is None:
    samples = [sample for sample, _ in FAITHBENCH_SAMPLES]
  path.write_text(json.dumps({"samples": samples}, indent=2, ensure_ascii=False),
                  encoding="utf-8")
  return path
