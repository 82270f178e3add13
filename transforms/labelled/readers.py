"""Readers of human-labelled attribution data: the agreement sets of `autoais
agreement --format FORMAT`, and the human ratings of `autoais evaluate
--human_ratings`.

Like transforms/io/input_records.py, every reader yields per record either a parsed
element or a DeadLetter naming the file, line and field; an unusable file
raises InputError (the job exits 2). Helpers every reader shares are in
transforms/labelled/items.py. Items with no usable human label or
nothing to score (an ExpertQA claim without evidence) are dead-lettered as
`unmatched`, bad records as `rejected`.

Formats (`FORMATS`), each yielding LabelledItem(premise, hypothesis, label):

  ratings           ratings.csv (or JSONL / Parquet with its columns): premise the
                    `passage`, hypothesis "The answer to the question '{question}'
                    is '{answer}'"; attributable: human_rating Y; group system_name.
  attributionbench  AttributionBench JSONL: premise the `references` joined by
                    newlines, hypothesis `claim`; attributable: attribution_label
                    "attributable"; group src_dataset.
  begin             BEGIN TSV: premise `knowledge`, hypothesis `response`;
                    attributable: "Fully attributable" ("Not fully attributable" and
                    "Generic" are not, as in the TRUE benchmark; each label is also
                    counted apart); groups data_source, then model_name.
  wice              WiCE oracle chunks JSONL: one line per chunk, premise its
                    `evidence` sentences, hypothesis `claim`; an item is a claim
                    (`meta.id`), scored as the max over its chunks; attributable:
                    label "supported".
  expertqa          ExpertQA JSONL: one item per claim of each system's answer,
                    premise the claim's evidence passages, hypothesis the claim;
                    attributable: support "Complete"; group the answering system.
  xor-attriqa       XOR-AttriQA rows (JSONL / CSV / Parquet): premise and hypothesis
                    by --scenario (in-language: passage_in_language, query and
                    prediction; in-english: passage_en, query_translated_en and
                    prediction_translated_en); attributable: ais Y/yes/true/1;
                    group query_language.
  aggrefact         LLM-AggreFact rows (CSV / JSONL / Parquet): premise `doc`,
                    hypothesis `claim`; attributable: label 1; group `dataset`.
  true              TRUE benchmark CSVs (or JSONL / Parquet with their columns):
                    premise `grounding`, hypothesis `generated_text`; attributable:
                    label 1; group a `dataset` column where present, else the file
                    name (true_dataset_name).
  training-data     a split of `autoais training-data` (train / validation /
                    test .parquet): premise, hypothesis, label 1 / 0; group source.
  ragtruth, halubench, faithbench
                    hallucination benchmarks as released (RAGTruth's response.jsonl
                    with the source_info.jsonl beside it, HaluBench's rows,
                    FaithBench's batch JSON files): transforms/labelled/hallucination.py.

Items also carry the question they answer where the format has one (ratings,
xor-attriqa: the question; attributionbench, expertqa: the question the claim's
answer answers; begin: the dialogue message), and ratings rows the passage id
they cite: `autoais training-data` splits on the first and mines hard
negatives from the article of the second.
"""
import functools
import io
import math
import os
from typing import Callable, Dict, Iterator, List, NamedTuple, Optional, Tuple, Union

from autoais.schemas import AttributionExample, DeadLetter, HumanRating, LabelledItem
from autoais.transforms.corpus.passages import parse_passage
from autoais.transforms.io.fields import json_record, rejected
from autoais.transforms.io.inputs import check_input_file, open_input, system_name_from_path
from autoais.transforms.io.predictions import HUMAN_RATINGS, read_predictions
from autoais.transforms.io.input_records import Columns, read_columns, records
from autoais.transforms.labelled.expertqa import (EXPERTQA_FIELDS, clean_text,
                                                  evidence_text, read_expertqa)
from autoais.transforms.labelled.hallucination import (
    HALUBENCH_FIELDS, RAGTRUTH_FIELDS, RAGTRUTH_SPLITS, check_faithbench_file,
    check_ragtruth_file, read_faithbench, read_halubench, read_ragtruth)
from autoais.transforms.labelled.items import (default_item_id, parse_label, parse_records,
                                               stripped, text_fields, unmatched)
from autoais.transforms.scoring.examples import claim_example, qa_example, qa_hypothesis
from autoais.schemas.errors import InputError

SCENARIOS = ("in-language", "in-english")
_YES = {"y", "yes", "true", "1", "attributable"}
_NO = {"n", "no", "false", "0", "not attributable"}


def _yes_no(value) -> Optional[bool]:
  """A Y/N-like label as a bool; None if it is not one."""
  if isinstance(value, bool):
    return value
  if isinstance(value, int) and value in (0, 1):
    return bool(value)
  if isinstance(value, str):
    lowered = value.strip().lower()
    if lowered in _YES:
      return True
    if lowered in _NO:
      return False
  return None


# ----------------------------------------------------------------------------
# Human ratings for `evaluate --human_ratings`.

HUMAN_RATING_FIELDS = ("system_name", "question", "human_rating")


def check_human_ratings_file(path: str) -> None:
  """Raises InputError if a ratings file cannot be read or lacks a column of
  HUMAN_RATING_FIELDS (in JSON Lines, a field of its first record)."""
  check_input_file(path)
  _require_columns(path, HUMAN_RATING_FIELDS)


def read_human_ratings(path: str) -> Iterator[Union[HumanRating, DeadLetter]]:
  """HumanRating per record of a CSV / JSONL / Parquet file with system_name,
  question and human_rating (Y / N, also yes / no), or its DeadLetter."""

  def parse(line, fields):
    values = text_fields(fields, HUMAN_RATING_FIELDS, HUMAN_RATING_FIELDS,
                          ("system_name", "question"), path, line)
    if isinstance(values, DeadLetter):
      return values
    rating = HUMAN_RATINGS.get(values["human_rating"].strip().lower())
    if rating is None:
      return rejected(path, line, "invalid_value",
                      f"human_rating must be Y or N, found {values['human_rating']!r}",
                      json_record(fields), "human_rating")
    return HumanRating(values["system_name"].strip(), values["question"].strip(),
                       rating, path, line)

  return parse_records(records(path, HUMAN_RATING_FIELDS), parse)


# ----------------------------------------------------------------------------
# Agreement formats.


class LabelledFormat(NamedTuple):
  read: Callable[[str, Optional[str]], Iterator[Union[LabelledItem, DeadLetter]]]
  groupings: Tuple[str, ...]  # what `group`, then `secondary_group`, hold
  positive: str  # which human label counts as attributable, in words
  required_columns: Tuple[str, ...]  # checked at launch (JSON Lines: the first record)
  multi_premise: bool = False  # items of several premise chunks (max over them)
  number_columns: Tuple[str, ...] = ()  # required columns that are not text
  check: Optional[Callable[[str], None]] = None  # a further launch check of a file
  span_labels: bool = False  # items carry the spans a human marked (LabelledItem.spans)
  # The values of a `split` field its rows carry, that agreement --split
  # keeps one of (the reader takes `split`); empty: the format has none.
  splits: Tuple[str, ...] = ()
  # Items are claims of answers (a system's `group`, a `question`): one answer
  # per system and question is kept (agreement's KeepFirstAnswers).
  one_answer_per_question: bool = False


def _require_columns(path: str, required, number_columns=()) -> None:
  text_columns = [name for name in required if name not in number_columns]
  columns = (Columns(path, 1, _tsv_header(path), "column") if _is_tsv(path)
             else read_columns(path, text_columns))
  columns.require(required)


def check_labelled_file(format_name: str, path: str,
                        scenario: Optional[str] = None) -> None:
  """Launch checks of an agreement input: readable, and the columns the format
  (and scenario) needs (in JSON Lines, the fields of its first record)."""
  if _is_tsv(path):
    with open_input(path) as binary:
      if not binary.read(65536).strip():
        raise InputError(f"{path}: is empty")
  else:
    check_input_file(path)
  required = FORMATS[format_name].required_columns
  if format_name == "xor-attriqa":
    required += _XOR_SCENARIO_FIELDS[scenario or "in-language"]
  _require_columns(path, required, FORMATS[format_name].number_columns)
  if FORMATS[format_name].check is not None:
    FORMATS[format_name].check(path)


def labelled_reader(format_name: str, scenario: Optional[str] = None,
                    reference_premise: bool = False, split: Optional[str] = None):
  """The read_file function (path -> items) of a format, for ReadRecords.
  `reference_premise` (--decision decode) builds Attributed QA premises as its
  script does; only the ratings format has them. `split` (--split): the rows
  of that split only, for a format with LabelledFormat.splits."""
  if format_name == "ratings":
    return functools.partial(_read_ratings, reference_premise=reference_premise)
  if split is not None:
    return functools.partial(FORMATS[format_name].read, scenario=scenario, split=split)
  return functools.partial(FORMATS[format_name].read, scenario=scenario)


# ratings ---------------------------------------------------------------------


def _read_ratings(path: str, scenario=None, reference_premise: bool = False
                  ) -> Iterator[Union[LabelledItem, DeadLetter]]:
  del scenario
  for prediction in read_predictions(path):
    if isinstance(prediction, DeadLetter):
      yield prediction
      continue
    record = json_record({"system_name": prediction.system_name,
                           "question": prediction.question,
                           "answer": prediction.answer,
                           "human_rating": prediction.human_rating})
    line = prediction.source_line
    if prediction.human_rating is None:
      yield unmatched(path, line, "no_human_label", "no human_rating", record,
                      "human_rating")
      continue
    if prediction.passages:
      # A human rating is of one passage; evaluate rates a row over a list.
      yield rejected(path, line, "wrong_type", "a list of passages: agreement scores "
                     "the one passage a human rated", record, "passage")
      continue
    if not prediction.passage:
      yield unmatched(path, line, "no_passage", "no passage to score", record,
                      "passage")
      continue
    example = qa_example(prediction.question, prediction.answer,
                         parse_passage(prediction.passage), reference_premise)
    yield LabelledItem(default_item_id(path, line), prediction.system_name, None, example,
                       prediction.human_rating, prediction.human_rating == "Y", path,
                       line, prediction.question, prediction.attribution)


# attributionbench ----------------------------------------------------------------

_ATTRIBUTIONBENCH_LABELS = {"attributable": True, "not attributable": False}


def _read_attributionbench(path: str, scenario=None):
  del scenario

  def parse(line, fields):
    values = text_fields(fields, ("claim", "attribution_label", "src_dataset", "id",
                                   "question"),
                          ("claim", "attribution_label"), ("claim",), path, line)
    if isinstance(values, DeadLetter):
      return values
    references = fields.get("references")
    if isinstance(references, str):
      references = [references]
    if (not isinstance(references, list) or
        not all(isinstance(r, str) for r in references)):
      return rejected(path, line, "wrong_type", "expected a list of passages",
                      json_record(fields), "references")
    premise = "\n".join(r for r in references if r.strip())
    if not premise:
      return unmatched(path, line, "no_evidence", "no reference passage to score",
                       json_record(fields), "references")
    label = parse_label(values, "attribution_label", _ATTRIBUTIONBENCH_LABELS, fields, path,
                   line)
    if isinstance(label, DeadLetter):
      return label
    return LabelledItem(values["id"] or default_item_id(path, line), values["src_dataset"],
                        None, claim_example(premise, values["claim"]), *label, path,
                        line, stripped(values["question"]))

  return parse_records(records(path, ("id", "claim", "references", "attribution_label",
                                       "src_dataset", "question")), parse)


# begin ------------------------------------------------------------------------

_BEGIN_LABELS = {"fully attributable": True, "not fully attributable": False,
                 "generic": False}
_BEGIN_FIELDS = ("knowledge", "response", "begin_label", "data_source", "model_name",
                 "message")


def _is_tsv(path: str) -> bool:
  lowered = path.lower()
  return lowered.endswith(".tsv") or ".tsv." in os.path.basename(lowered)


def _tsv_lines(path: str) -> Iterator[Tuple[int, str]]:
  with open_input(path) as binary:
    text = io.TextIOWrapper(binary, encoding="utf-8-sig", errors="surrogateescape",
                            newline="")
    for number, line in enumerate(text, start=1):
      line = line.rstrip("\r\n")
      if line.strip():
        yield number, line


def _tsv_header(path: str) -> List[str]:
  for _, line in _tsv_lines(path):
    return [name.strip() for name in line.split("\t")]
  return []


def _tsv_records(path: str) -> Iterator[Union[Tuple[int, Dict[str, str]], DeadLetter]]:
  """(line, {column: value}) per line of a tab-separated file with a header line;
  fields are not quoted (quotes are text, as in BEGIN)."""
  header = None
  for number, line in _tsv_lines(path):
    values = line.split("\t")
    if header is None:
      header = [name.strip() for name in values]
      if len(set(header)) != len(header):
        raise InputError(f"{path}:{number}: the TSV header names a column twice")
      continue
    if len(values) != len(header):
      yield rejected(path, number, "malformed_tsv",
                     f"expected {len(header)} tab-separated fields, found {len(values)}",
                     json_record({"line": line}))
      continue
    yield number, dict(zip(header, values))


def _read_begin(path: str, scenario=None):
  del scenario

  def parse(line, fields):
    values = text_fields(fields, _BEGIN_FIELDS, ("knowledge", "response", "begin_label"),
                          ("knowledge", "response"), path, line)
    if isinstance(values, DeadLetter):
      return values
    label = parse_label(values, "begin_label", _BEGIN_LABELS, fields, path, line)
    if isinstance(label, DeadLetter):
      return label
    example = AttributionExample(values["knowledge"], values["response"],
                                 values["response"], values["knowledge"])
    # The dialogue turn the response answers is its question.
    return LabelledItem(default_item_id(path, line), values["data_source"],
                        values["model_name"], example, *label, path, line,
                        stripped(values["message"]))

  source = _tsv_records(path) if _is_tsv(path) else records(path, _BEGIN_FIELDS)
  return parse_records(source, parse)


# wice -------------------------------------------------------------------------

_WICE_LABELS = {"supported": True, "partially_supported": False, "not_supported": False}


def _read_wice(path: str, scenario=None):
  del scenario

  def parse(line, fields):
    values = text_fields(fields, ("label", "claim"), ("label", "claim"), ("claim",),
                          path, line)
    if isinstance(values, DeadLetter):
      return values
    evidence = fields.get("evidence")
    if (not isinstance(evidence, list) or
        not all(isinstance(sentence, str) for sentence in evidence)):
      return rejected(path, line, "wrong_type", "expected a list of sentences",
                      json_record(fields), "evidence")
    premise = " ".join(sentence.strip() for sentence in evidence if sentence.strip())
    if not premise:
      return unmatched(path, line, "no_evidence", "no evidence sentence to score",
                       json_record(fields), "evidence")
    label = parse_label(values, "label", _WICE_LABELS, fields, path, line)
    if isinstance(label, DeadLetter):
      return label
    meta = fields.get("meta")
    claim_id = meta.get("id") if isinstance(meta, dict) else None
    if not isinstance(claim_id, str) or not claim_id:
      claim_id = default_item_id(path, line)
    return LabelledItem(claim_id, None, None, claim_example(premise, values["claim"]),
                        *label, path, line)

  return parse_records(records(path, ("label", "claim", "evidence", "meta")), parse)


# expertqa ---------------------------------------------------------------------

EXPERTQA_COMPLETE = "complete"  # attributable; the other labels are not (any case)
_EXPERTQA_NO_LABEL = ("", "n/a")


def _read_expertqa(path: str, scenario=None):
  """ExpertQA's claims (transforms/labelled/expertqa.py, the claims job's reader
  too), each with the text of its evidence (evidence_text) and its human
  `support` label; the claim cleaned as the claims job and ExpertQA's script
  clean it (clean_text: its citation markers out)."""
  del scenario
  for claim in read_expertqa(path):
    if isinstance(claim, DeadLetter):
      yield claim
      continue
    line = claim.source_line
    record = json_record({"system": claim.system_name, "claim_index": claim.claim_index,
                          "claim": claim.claim, "support": claim.support})
    # read_expertqa has refused a support label that is none of ExpertQA's.
    support = (claim.support or "").strip()
    if support.lower() in _EXPERTQA_NO_LABEL:
      yield unmatched(path, line, "no_human_label", f"claim {claim.claim_index} of "
                      f"system {claim.system_name!r} has no support label", record,
                      "support")
      continue
    premise = evidence_text(claim)
    if premise is None:
      yield unmatched(path, line, "no_evidence", f"claim {claim.claim_index} of system "
                      f"{claim.system_name!r} cites no evidence", record, "evidence")
      continue
    if not premise.strip():
      yield unmatched(path, line, "no_evidence_text", f"claim {claim.claim_index} of "
                      f"system {claim.system_name!r}: its evidence is URLs only",
                      record, "evidence")
      continue
    yield LabelledItem(
        default_item_id(path, line, claim.system_name, f"{claim.claim_index:04d}"),
        claim.system_name, None, claim_example(premise, clean_text(claim.claim)), support,
        support.lower() == EXPERTQA_COMPLETE, path, line, claim.question)


# xor-attriqa ------------------------------------------------------------------

XOR_FIELDS = ("query", "query_language", "prediction", "passage_in_language",
              "passage_en", "passage_retrieved_language", "query_translated_en",
              "prediction_translated_en", "ais")
_XOR_SCENARIO_FIELDS = {
    "in-language": ("passage_in_language", "query", "prediction"),
    "in-english": ("passage_en", "query_translated_en", "prediction_translated_en"),
}


def _read_xor_attriqa(path: str, scenario=None):
  passage_field, query_field, answer_field = _XOR_SCENARIO_FIELDS[
      scenario or "in-language"]
  needed = (passage_field, query_field, answer_field)

  def parse(line, fields):
    values = text_fields(fields, needed + ("query_language",), needed, needed, path,
                          line)
    if isinstance(values, DeadLetter):
      return values
    if fields.get("ais") is None or fields.get("ais") == "":
      return unmatched(path, line, "no_human_label", "no ais label",
                       json_record(fields), "ais")
    attributable = _yes_no(fields["ais"])
    if attributable is None:
      return rejected(path, line, "invalid_value",
                      f"ais must be Y/N, yes/no, true/false or 1/0, found "
                      f"{fields['ais']!r}", json_record(fields), "ais")
    answer = values[answer_field]
    example = AttributionExample(values[passage_field],
                                 qa_hypothesis(values[query_field], answer), answer,
                                 values[passage_field])
    item_id = fields.get("id")
    if not isinstance(item_id, str) or not item_id:
      item_id = default_item_id(path, line)
    return LabelledItem(item_id, values["query_language"], None, example,
                        str(fields["ais"]).strip(), attributable, path, line,
                        values[query_field])

  return parse_records(records(path, XOR_FIELDS + ("id",)), parse)


# aggrefact and true ----------------------------------------------------------

_BINARY_LABELS = {"1": True, "0": False, "1.0": True, "0.0": False}


def _binary_label(fields, path, line):
  """(label as "1" / "0", attributable) of LLM-AggreFact's and TRUE's `label`
  (1 = supported / consistent, 0 = not): an integer, or its text, or a float
  1.0 / 0.0 (pandas writes a column with gaps as floats); a DeadLetter
  otherwise, `unmatched` where the label is absent."""
  value = fields.get("label")
  if (value is None or (isinstance(value, str) and not value.strip()) or
      (isinstance(value, float) and math.isnan(value))):
    return unmatched(path, line, "no_human_label", "no label", json_record(fields),
                     "label")
  key = None
  if isinstance(value, str):
    key = value.strip()
  elif isinstance(value, (int, float)) and not isinstance(value, bool):
    key = {1: "1", 0: "0"}.get(value)
  attributable = _BINARY_LABELS.get(key)
  if attributable is None:
    return rejected(path, line, "invalid_value",
                    f"label must be 1 (supported) or 0 (not), found {value!r}",
                    json_record(fields), "label")
  return ("1" if attributable else "0"), attributable


def _binary_item(premise_field, hypothesis_field, group, values, fields, path, line):
  label = _binary_label(fields, path, line)
  if isinstance(label, DeadLetter):
    return label
  return LabelledItem(default_item_id(path, line), group, None,
                      claim_example(values[premise_field], values[hypothesis_field]),
                      *label, path, line)


AGGREFACT_FIELDS = ("dataset", "doc", "claim", "label")


def _read_aggrefact(path: str, scenario=None):
  """LLM-AggreFact rows: premise `doc`, hypothesis `claim`, group `dataset`."""
  del scenario
  text = ("dataset", "doc", "claim")

  def parse(line, fields):
    values = text_fields(fields, text, text, text, path, line)
    if isinstance(values, DeadLetter):
      return values
    return _binary_item("doc", "claim", values["dataset"].strip(), values, fields,
                        path, line)

  return parse_records(records(path, AGGREFACT_FIELDS), parse)


TRUE_FIELDS = ("grounding", "generated_text", "label")
_TRUE_FILE_SUFFIX = "_download"


def true_dataset_name(path: str) -> str:
  """The data set a TRUE file holds, by its name: the file stem (compression
  and format suffixes removed) less a trailing `_download`, the suffix TRUE's
  download script gives every file: `begin_dev_download.csv` -> `begin_dev`."""
  stem = system_name_from_path(path)
  if stem.endswith(_TRUE_FILE_SUFFIX) and len(stem) > len(_TRUE_FILE_SUFFIX):
    stem = stem[:-len(_TRUE_FILE_SUFFIX)]
  return stem


def _read_true(path: str, scenario=None):
  """TRUE benchmark CSVs (or JSONL / Parquet with their columns): premise
  `grounding`, hypothesis `generated_text`; group: a row's non-blank `dataset`
  where the file has that column, else true_dataset_name(path)."""
  del scenario
  text = ("grounding", "generated_text")
  file_dataset = true_dataset_name(path)

  def parse(line, fields):
    values = text_fields(fields, text + ("dataset",), text, text, path, line)
    if isinstance(values, DeadLetter):
      return values
    dataset = (values["dataset"] or "").strip() or file_dataset
    return _binary_item("grounding", "generated_text", dataset, values, fields, path,
                        line)

  return parse_records(records(path, TRUE_FIELDS + ("dataset",)), parse)


# training-data ------------------------------------------------------------------

TRAINING_DATA_FIELDS = ("premise", "hypothesis", "label")


def _read_training_data(path: str, scenario=None):
  """A split of `autoais training-data` (train.parquet, validation.parquet,
  test.parquet): premise, hypothesis, label 1 / 0; group its `source`."""
  del scenario
  text = ("premise", "hypothesis", "source", "item_id", "question")

  def parse(line, fields):
    values = text_fields(fields, text, ("premise", "hypothesis"),
                          ("premise", "hypothesis"), path, line)
    if isinstance(values, DeadLetter):
      return values
    label = _binary_label(fields, path, line)
    if isinstance(label, DeadLetter):
      return label
    return LabelledItem(values["item_id"] or default_item_id(path, line), values["source"],
                        None, claim_example(values["premise"], values["hypothesis"]),
                        *label, path, line, values["question"])

  return parse_records(records(path, TRAINING_DATA_FIELDS + text[2:]), parse)


FORMATS: Dict[str, LabelledFormat] = {
    "ratings": LabelledFormat(_read_ratings, ("system_name",), "human_rating Y",
                              ("question", "answer", "attribution", "passage",
                               "human_rating")),
    "attributionbench": LabelledFormat(
        _read_attributionbench, ("src_dataset",), "attribution_label 'attributable'",
        ("claim", "references", "attribution_label")),
    "begin": LabelledFormat(
        _read_begin, ("data_source", "model_name"),
        "begin_label 'Fully attributable' ('Not fully attributable' and 'Generic' "
        "are not)", ("knowledge", "response", "begin_label")),
    "wice": LabelledFormat(_read_wice, (), "label 'supported' (partially_supported "
                           "and not_supported are not)", ("label", "claim", "evidence"),
                           multi_premise=True),
    "expertqa": LabelledFormat(_read_expertqa, ("system",),
                               "support 'Complete' (Partial, Incomplete, Missing are "
                               "not; N/A has no label; any case)", EXPERTQA_FIELDS,
                               one_answer_per_question=True),
    "xor-attriqa": LabelledFormat(_read_xor_attriqa, ("query_language",),
                                  "ais Y / yes / true / 1", ("ais",)),
    "aggrefact": LabelledFormat(_read_aggrefact, ("dataset",),
                                "label 1 (supported; 0 is not)", AGGREFACT_FIELDS,
                                number_columns=("label",)),
    "true": LabelledFormat(_read_true, ("dataset",),
                           "label 1 (consistent; 0 is not)", TRUE_FIELDS,
                           number_columns=("label",)),
    "training-data": LabelledFormat(_read_training_data, ("source",),
                                    "label 1 (attributable; 0 is not)",
                                    TRAINING_DATA_FIELDS, number_columns=("label",)),
    # transforms/labelled/hallucination.py
    "ragtruth": LabelledFormat(read_ragtruth, ("dataset", "model"),
                               "no span label in `labels` (human label 1; a response "
                               "with any is 0)", RAGTRUTH_FIELDS,
                               number_columns=("labels",), check=check_ragtruth_file,
                               span_labels=True, splits=RAGTRUTH_SPLITS),
    "halubench": LabelledFormat(read_halubench, ("dataset",),
                                "label PASS (FAIL is not)", HALUBENCH_FIELDS[1:5]),
    "faithbench": LabelledFormat(read_faithbench, ("summarizer",),
                                 "no annotation worse than Benign (the worst label "
                                 "Unwanted or Questionable is hallucinated)", (),
                                 check=check_faithbench_file, span_labels=True),
}
