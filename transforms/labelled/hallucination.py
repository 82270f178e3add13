"""Readers of three hallucination benchmarks, each file as its publishers
release it, for `autoais agreement --format ragtruth|halubench|faithbench`:

  ragtruth    RAGTruth's dataset/response.jsonl (one generated response a line,
              its hallucination spans in `labels`) and the source_info.jsonl
              beside it (what the model was given, one source a line), joined on
              `source_id`. Premise: the source as the generation prompt gives it
              (QA: the `passages`; Summary: the news text; Data2txt: the
              business record as JSON); hypothesis: the `response`. Attributable
              (human label "1") when the response has no span label, else "0".
              A QA item's question is on the item and on its example
              (AttributionExample.question: read by --scorer lettucedetect
              alone, whose QA prompt takes it).
              Groups: `task_type` (the data set), then `model`. The spans are kept
              on the item (LabelledItem.spans) for span-level scoring. With
              --split, only the responses of that `split` are read, the
              others left out (counted, not dead-lettered).
  halubench   HaluBench's rows (`id, passage, question, answer, label,
              source_ds`; the hub's Parquet, or CSV / JSONL with those fields).
              Premise `passage`; hypothesis the QA hypothesis of `question` and
              `answer`; attributable: label PASS (FAIL is not). Group
              `source_ds` (the data set).
  faithbench  FaithBench's data_for_release/batch_*.json: one JSON document per
              file, {"samples": [...]}, each sample's `source` (premise) and
              `summary` (hypothesis) with the annotators' span annotations. The
              sample's label is the worst over all its annotations' labels
              (Unwanted, then Questionable, then Benign), as the release's
              scripts/binarize.py does; Unwanted and Questionable are
              hallucinated, Benign or no annotation consistent. Group the
              summarizer (metadata.summarizer). The summary span of each
              hallucinated annotation (summary_start, summary_end: characters
              of the summary, checked against summary_span) is kept on the
              item (LabelledItem.spans), as RAGTruth's are; annotators' spans
              may overlap (span agreement counts their union).

Every bad record is dead-lettered naming its file, line and field (a FaithBench
sample: the line where its object starts); a file that cannot be read at all
raises InputError at launch.
"""
import json
import posixpath
from typing import Dict, Iterator, List, NamedTuple, Optional, Tuple, Union

from apache_beam.io.filesystems import FileSystems

from autoais.schemas import AttributionExample, DeadLetter, LabelledItem, TextSpan
from autoais.schemas.errors import InputError
from autoais.transforms.io.fields import has_surrogates, json_record, raw_record, rejected
from autoais.transforms.io.input_records import (JSON_DECODER, LeftOut, RepeatedKey,
                                                 jsonl_records, records)
from autoais.transforms.io.inputs import (check_input_file, open_input, system_name_from_path,
                                          uncompressed_name)
from autoais.transforms.labelled.items import (default_item_id, parse_label, parse_records,
                                               stripped, text_fields, unmatched)
from autoais.transforms.scoring.examples import claim_example, qa_hypothesis

# ragtruth ---------------------------------------------------------------------

RAGTRUTH_FIELDS = ("id", "source_id", "model", "labels", "response")
RAGTRUTH_SOURCE_FILE = "source_info.jsonl"
RAGTRUTH_TASKS = ("QA", "Summary", "Data2txt")
RAGTRUTH_SPLITS = ("train", "test")  # response.jsonl's `split`
RAGTRUTH_OTHER_SPLIT = "other_split"  # the LeftOut reason of another split's row


def ragtruth_source_file(path: str) -> str:
  """The source_info.jsonl of a RAGTruth response file: beside it, compressed
  as it is (response.jsonl.gz -> source_info.jsonl.gz)."""
  suffix = path[len(uncompressed_name(path)):]
  return posixpath.join(posixpath.dirname(path), RAGTRUTH_SOURCE_FILE + suffix)


def check_ragtruth_file(path: str) -> None:
  """Launch check beyond the response file's fields: its source_info.jsonl
  exists beside it and is readable."""
  source_file = ragtruth_source_file(path)
  if not FileSystems.exists(source_file):
    raise InputError(f"{path}: RAGTruth's {RAGTRUTH_SOURCE_FILE} is not beside it "
                     f"(looked for {source_file})")
  check_input_file(source_file)


def ragtruth_premise(task_type: str, source_info) -> Union[Tuple[str, Optional[str]], str]:
  """(premise, question) of a RAGTruth source as its prompt gives it to the
  model, or the reason it cannot be read. QA: the `passages` text ("passage
  1:...\\n\\npassage 2:..."), the question apart; Summary: the news text;
  Data2txt: the business record as JSON (the prompt prints the same dict in
  Python's notation)."""
  if task_type == "Summary":
    if not isinstance(source_info, str):
      return "a Summary source_info must be a string"
    return source_info, None
  if not isinstance(source_info, dict):
    return f"a {task_type} source_info must be an object"
  if task_type == "QA":
    question, passages = source_info.get("question"), source_info.get("passages")
    if not isinstance(question, str) or not isinstance(passages, str):
      return "a QA source_info must hold the strings question and passages"
    return passages, question.strip() or None
  return json.dumps(source_info, ensure_ascii=False), None


def _ragtruth_source(line: int, fields: dict) -> tuple:
  """(line, task_type, premise, question) of a source record, or (line, None,
  reason, field) where it cannot be used."""
  task_type = fields.get("task_type")
  if task_type not in RAGTRUTH_TASKS:
    return (line, None, f"task_type must be one of {', '.join(RAGTRUTH_TASKS)}, found "
            f"{task_type!r}", "task_type")
  premise = ragtruth_premise(task_type, fields.get("source_info"))
  if isinstance(premise, str):
    return line, None, premise, "source_info"
  if not premise[0].strip():
    return line, None, "source_info holds no text", "source_info"
  if has_surrogates(premise[0] + (premise[1] or "")):
    return line, None, "source_info holds bytes that are not UTF-8", "source_info"
  return (line, task_type) + premise


def _ragtruth_sources(source_file: str) -> Tuple[Dict[str, tuple], List[int]]:
  """({source_id: _ragtruth_source}, the lines that name no source id). A
  source_id on two lines with other sources is unusable (which one the
  responses were generated from cannot be told); on two lines alike, one."""
  sources, unreadable = {}, []
  for item in jsonl_records(source_file):
    if isinstance(item, DeadLetter):
      unreadable.append(item.source_line)
      continue
    line, fields = item
    source_id = fields.get("source_id")
    if isinstance(source_id, int) and not isinstance(source_id, bool):
      # RAGTruth's ids are strings: a number is named, not passed over.
      sources[str(source_id)] = (line, None, f"source_id must be a string, found "
                                 f"{source_id}", "source_id")
      continue
    if not isinstance(source_id, str):
      unreadable.append(line)
      continue
    source = _ragtruth_source(line, fields)
    first = sources.get(source_id)
    if first is None:
      sources[source_id] = source
    elif first[1:] != source[1:]:
      sources[source_id] = (first[0], None, f"source_id {source_id!r} is also on line "
                            f"{line}, with another source", "source_id")
  return sources, unreadable


def _not_in_sources(source_id: str, source_file: str, unreadable: List[int]) -> str:
  message = f"source_id {source_id!r} is not in {source_file}"
  if unreadable:
    lines = ", ".join(map(str, unreadable[:5])) + (", ..." if len(unreadable) > 5 else "")
    message += (f"; no source_id could be read on {len(unreadable)} of its lines "
                f"({lines}): it may be on one of them")
  return message


def span_problem(start, end, where: str, fields: str, text: str, name: str
                 ) -> Optional[str]:
  """Why (start, end) are not the offsets of a span of `text` (Python string
  indices: integers, start <= end within it), or None."""
  if (not isinstance(start, int) or not isinstance(end, int) or
      isinstance(start, bool) or isinstance(end, bool)):
    return f"{where}: {fields} must be integers"
  if not 0 <= start <= end <= len(text):
    return f"{where}: span {start}-{end} is not within the {name}'s {len(text)} characters"
  return None


def ragtruth_spans(labels, response: str) -> Union[List[TextSpan], str]:
  """RAGTruth's `labels` as TextSpans of the response, or why they are not:
  each an object with integer `start` <= `end` within the response."""
  if not isinstance(labels, list):
    return "expected a list of span labels"
  spans = []
  for index, label in enumerate(labels):
    if not isinstance(label, dict):
      return f"labels[{index}] is not an object"
    start, end = label.get("start"), label.get("end")
    problem = span_problem(start, end, f"labels[{index}]", "start and end", response,
                           "response")
    if problem is not None:
      return problem
    kind = label.get("label_type")
    spans.append(TextSpan(start, end, kind if isinstance(kind, str) else None))
  return spans


def read_ragtruth(path: str, scenario=None, split: Optional[str] = None
                  ) -> Iterator[Union[LabelledItem, DeadLetter, LeftOut]]:
  """RAGTruth's response.jsonl, each response joined to its source in the
  source_info.jsonl beside it. With `split` (agreement --split), the responses
  of another `split` are left out (LeftOut "other_split"), before anything
  else of theirs is read; a response without a `split` string is rejected."""
  del scenario
  source_file = ragtruth_source_file(path)
  sources, unreadable = _ragtruth_sources(source_file)
  split_field = ("split",) if split is not None else ()

  def parse(line, fields):
    if split is not None:
      values = text_fields(fields, split_field, split_field, split_field, path, line)
      if isinstance(values, DeadLetter):
        return values
      if values["split"] != split:
        return LeftOut(RAGTRUTH_OTHER_SPLIT)
    values = text_fields(fields, ("id", "source_id", "model", "response"),
                         ("source_id", "response"), ("source_id", "response"), path,
                         line)
    if isinstance(values, DeadLetter):
      return values
    response = values["response"]
    spans = ragtruth_spans(fields.get("labels"), response)
    if isinstance(spans, str):
      return rejected(path, line, "invalid_value", spans, json_record(fields), "labels")
    source = sources.get(values["source_id"])
    if source is None:
      return unmatched(path, line, "no_source",
                       _not_in_sources(values["source_id"], source_file, unreadable),
                       json_record(fields), "source_id")
    source_line, task_type = source[:2]
    if task_type is None:
      return rejected(path, line, "bad_source", f"its source, {source_file}:"
                      f"{source_line}: field '{source[3]}': {source[2]}",
                      json_record(fields), "source_id")
    premise, question = source[2:]
    attributable = not spans
    # The QA question rides on the example for a scorer whose prompt takes it
    # (lettucedetect); the others score the same (premise, response) pair.
    example = claim_example(premise, response)._replace(question=question)
    return LabelledItem(values["id"] or default_item_id(path, line), task_type,
                        stripped(values["model"]), example,
                        "1" if attributable else "0", attributable, path, line,
                        question, None, spans)

  return parse_records(records(path, RAGTRUTH_FIELDS), parse)


# halubench --------------------------------------------------------------------

HALUBENCH_FIELDS = ("id", "passage", "question", "answer", "label", "source_ds")
_HALUBENCH_LABELS = {"pass": True, "fail": False}


def read_halubench(path: str, scenario=None) -> Iterator[Union[LabelledItem, DeadLetter]]:
  """HaluBench rows: premise `passage`, hypothesis the QA hypothesis of
  `question` and `answer`, attributable: label PASS; group `source_ds`."""
  del scenario
  needed = ("passage", "question", "answer")

  def parse(line, fields):
    values = text_fields(fields, HALUBENCH_FIELDS, needed + ("label",), needed, path,
                         line)
    if isinstance(values, DeadLetter):
      return values
    if not values["label"].strip():
      return unmatched(path, line, "no_human_label", "no label", json_record(fields),
                       "label")
    label = parse_label(values, "label", _HALUBENCH_LABELS, fields, path, line)
    if isinstance(label, DeadLetter):
      return label
    question, answer = values["question"].strip(), values["answer"].strip()
    example = AttributionExample(values["passage"], qa_hypothesis(question, answer),
                                 answer, values["passage"])
    return LabelledItem(stripped(values["id"]) or default_item_id(path, line),
                        stripped(values["source_ds"]), None, example, *label, path, line,
                        question)

  return parse_records(records(path, HALUBENCH_FIELDS), parse)


# faithbench -------------------------------------------------------------------

# Severity of FaithBench's span labels (the release's binarize.py): a sample
# takes the worst over every label of every annotation.
FAITHBENCH_SEVERITY = {"Benign": 1, "Questionable": 2, "Unwanted": 3}
FAITHBENCH_HALLUCINATED = ("Questionable", "Unwanted")
FAITHBENCH_NO_ANNOTATION = "none"


def faithbench_label(label: str) -> Optional[str]:
  """The kind of a FaithBench span label: Unwanted for "Unwanted" and its
  subtypes ("Unwanted.Intrinsic", "Unwanted.Extrinsic"), Questionable, Benign;
  None for anything else."""
  kind = label.split(".", 1)[0] if isinstance(label, str) else None
  return kind if kind in FAITHBENCH_SEVERITY else None


def _faithbench_text(path: str) -> str:
  with open_input(path) as binary:
    data = binary.read()
  try:
    return data.decode("utf-8-sig")
  except UnicodeDecodeError as error:
    raise InputError(f"{path}: bytes that are not UTF-8 at offset {error.start}") from error


def _skip_space(text: str, index: int) -> int:
  while index < len(text) and text[index] in " \t\r\n":
    index += 1
  return index


def _next_value(text: str, index: int, closer: str) -> Optional[int]:
  """Where the next member of a JSON object or array starts, past a comma;
  None at its closing bracket."""
  index = _skip_space(text, index)
  if text[index] == ",":
    index = _skip_space(text, index + 1)
  return None if text[index] == closer else index


class RepeatedSample(NamedTuple):
  """A FaithBench sample whose object gives a key twice, and its text."""
  error: RepeatedKey
  text: str


def faithbench_samples(path: str) -> Iterator[Tuple[int, object]]:
  """(line where it starts, value) of each element of the document's
  "samples" list; the value is a RepeatedSample where an object in it gives a
  key twice. Raises InputError where the file is not one JSON object with one
  "samples" list (or gives any of its own keys twice)."""
  text = _faithbench_text(path)
  try:
    document = json.loads(text)
  except ValueError as error:
    where = f":{error.lineno}" if hasattr(error, "lineno") else ""
    raise InputError(f"{path}{where}: not a JSON document ({error})") from error
  if not isinstance(document, dict) or not isinstance(document.get("samples"), list):
    raise InputError(f"{path}: expected a JSON object with a list \"samples\" "
                     "(FaithBench's data_for_release/batch_*.json)")
  # Walk the (valid) document again for the line of each sample. Its keys
  # first: a second "samples" (json keeps the last, this walk would read the
  # first) is refused, as is any key given twice.
  decoder = json.JSONDecoder()
  members = {}  # key -> where its value starts
  index = _skip_space(text, 0) + 1  # past "{"
  while (index := _next_value(text, index, "}")) is not None:
    key, index = decoder.raw_decode(text, index)
    index = _skip_space(text, _skip_space(text, index) + 1)  # past ":"
    if key in members:
      raise InputError(f"{path}:{text.count(chr(10), 0, index) + 1}: the key {key!r} is "
                       "given twice in the document's object (a JSON reader keeps one "
                       "of the two unseen)")
    members[key] = index
    _, index = decoder.raw_decode(text, index)
  index = members["samples"] + 1  # past "["
  line, counted = 1, 0
  while (index := _next_value(text, index, "]")) is not None:
    line += text.count("\n", counted, index)
    counted = index
    start = index
    try:
      value, index = JSON_DECODER.raw_decode(text, index)
    except RepeatedKey as repeated:
      _, index = decoder.raw_decode(text, index)
      value = RepeatedSample(repeated, text[start:index])
    yield line, value


def check_faithbench_file(path: str) -> None:
  """Launch check: one JSON object with a list "samples"."""
  check_input_file(path)
  for _ in faithbench_samples(path):
    break


def faithbench_span(annotation, index: int, summary: str) -> Union[TextSpan, str]:
  """The summary span of a hallucinated annotation as a TextSpan (its labels
  as written, joined by ", "), or why it is not one: integer `summary_start`
  <= `summary_end` within the summary, and where `summary_span` is given, the
  very text at those offsets."""
  start, end = annotation.get("summary_start"), annotation.get("summary_end")
  where = f"annotations[{index}]"
  problem = span_problem(start, end, where, "summary_start and summary_end", summary,
                         "summary")
  if problem is not None:
    return problem
  text = annotation.get("summary_span")
  if isinstance(text, str) and summary[start:end] != text:
    return (f"{where}: the summary's characters {start}-{end} are "
            f"{summary[start:end]!r}, not its summary_span {text!r}")
  return TextSpan(start, end, ", ".join(annotation["label"]))


class _BadAnnotations(NamedTuple):
  reason: str
  message: str


def _faithbench_annotations(annotations, summary: str
                            ) -> Union[Tuple[str, List[TextSpan]], _BadAnnotations]:
  """(the worst label kind over the annotations, FAITHBENCH_NO_ANNOTATION where
  none has a label; the summary spans of the hallucinated ones), or why an
  annotation is bad."""
  if not isinstance(annotations, list):
    return _BadAnnotations("wrong_type", "expected a list of annotations")
  worst, spans = None, []
  for index, annotation in enumerate(annotations):
    labels = annotation.get("label") if isinstance(annotation, dict) else None
    if not isinstance(labels, list):
      return _BadAnnotations("wrong_type", f"annotations[{index}].label is not a list")
    kinds = [faithbench_label(label) for label in labels]
    for label, kind in zip(labels, kinds):
      if kind is None:
        return _BadAnnotations(
            "invalid_value", f"annotations[{index}].label holds {label!r}: "
            "expected Unwanted (or Unwanted.*), Questionable or Benign")
      if worst is None or FAITHBENCH_SEVERITY[kind] > FAITHBENCH_SEVERITY[worst]:
        worst = kind
    if any(kind in FAITHBENCH_HALLUCINATED for kind in kinds):
      span = faithbench_span(annotation, index, summary)
      if isinstance(span, str):
        return _BadAnnotations("invalid_value", span)
      spans.append(span)
  return worst or FAITHBENCH_NO_ANNOTATION, spans


def read_faithbench(path: str, scenario=None) -> Iterator[Union[LabelledItem, DeadLetter]]:
  """FaithBench's batch files: premise `source`, hypothesis `summary`,
  hallucinated where the worst annotation label is Unwanted or Questionable;
  group metadata.summarizer."""
  del scenario
  stem = system_name_from_path(path)
  for line, sample in faithbench_samples(path):
    if isinstance(sample, RepeatedSample):
      yield rejected(path, line, "repeated_key", f"a sample: {sample.error}",
                     raw_record(sample.text), sample.error.key)
      continue
    if not isinstance(sample, dict):
      yield rejected(path, line, "malformed_json", "a sample is not a JSON object",
                     json_record({"sample": sample}))
      continue
    values = text_fields(sample, ("source", "summary"), ("source", "summary"),
                         ("source", "summary"), path, line)
    if isinstance(values, DeadLetter):
      yield values
      continue
    annotated = _faithbench_annotations(sample.get("annotations", []), values["summary"])
    if isinstance(annotated, _BadAnnotations):
      yield rejected(path, line, annotated.reason, annotated.message, json_record(sample),
                     "annotations")
      continue
    worst, spans = annotated
    metadata = sample.get("metadata")
    summarizer = metadata.get("summarizer") if isinstance(metadata, dict) else None
    sample_id = sample.get("sample_id")
    item = (f"{stem}:{sample_id}" if isinstance(sample_id, (int, str)) and
            not isinstance(sample_id, bool) else default_item_id(path, line))
    yield LabelledItem(item, summarizer if isinstance(summarizer, str) else None, None,
                       claim_example(values["source"], values["summary"]), worst,
                       worst not in FAITHBENCH_HALLUCINATED, path, line, None, None,
                       spans)
