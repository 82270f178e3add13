"""`autoais agreement --format ragtruth|halubench|faithbench` on files laid out
field for field as each benchmark releases them (tests/support/hallucination_sets.py),
read by the job itself: premises, hypotheses, labels and groups as documented
(docs/agreement.md), RAGTruth's spans kept on the items, damaged records
dead-lettered naming file, line and field, and run.json's counts reconciling.
FaithBench's hallucinated annotations keep their summary spans on the items
too.
The string-match scorer keeps the runs cheap.
"""
import collections
import json

import pyarrow.parquet as pq

from autoais.beam_jobs import agreement
from autoais.schemas import TextSpan
from autoais.transforms.agreement.steps import premise_digest
from autoais.transforms.labelled.hallucination import (faithbench_samples, read_faithbench,
                                                       read_halubench, read_ragtruth)
from tests.support import hallucination_sets as sets
from tests.support.files import read_jsonl
from tests.support.jobs import run_job


def _run(output, inputs, fmt, *flags):
  # Fewer resamples of the means over data sets; faithbench's groups are not
  # data sets, and refuses the flag.
  fewer = ("--bootstrap_samples", 50) if fmt != "faithbench" else ()
  return run_job(agreement, "--input", ",".join(str(p) for p in inputs), "--format",
                 fmt, "--output_dir", output, "--scorer", "string-match", *fewer, *flags)


def _outputs(output):
  rows = pq.read_table(output / "agreement_rows.parquet").to_pylist()
  content = json.loads((output / "agreement.json").read_text())
  manifest = json.loads((output / "run.json").read_text())
  dead = (read_jsonl(output / "dead_letter.jsonl")
          if (output / "dead_letter.jsonl").stat().st_size else [])
  counts = manifest["counts"]
  assert counts["reconciled"]
  assert counts["read"] == (counts["scored"] + counts.get("other_split", 0) +
                            counts["rejected"] + counts["unmatched"])
  assert counts["rejected"] + counts["unmatched"] == len(dead)
  return rows, content, counts, dead


def _line_of(path, needle):
  for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
    if needle in line:
      return number
  raise AssertionError(needle)


# ----------------------------------------------------------------------------
# ragtruth


def test_ragtruth_premise_per_task_type_and_spans(tmp_path):
  path = sets.write_ragtruth(tmp_path / "dataset")
  items = {item.item_id: item for item in read_ragtruth(str(path))}
  assert len(items) == len(sets.RAGTRUTH_RESPONSES)
  qa, summary, data = items["20302"], items["20303"], items["20305"]
  passages = sets.RAGTRUTH_SOURCES[0]["source_info"]["passages"]
  assert (qa.group, qa.secondary_group) == ("QA", "llama-2-7b-chat")
  assert qa.example.premise == passages
  assert qa.question == "how often to feed sourdough starter"
  assert summary.example.premise == sets.RAGTRUTH_SOURCES[1]["source_info"]
  assert summary.question is None
  assert json.loads(data.example.premise) == sets.RAGTRUTH_SOURCES[2]["source_info"]
  # The hypothesis is the response as written: the spans index into it.
  for item, response in zip(items.values(), sets.RAGTRUTH_RESPONSES):
    assert item.example.hypothesis == response["response"]
    assert item.spans == [TextSpan(label["start"], label["end"], label["label_type"])
                          for label in response["labels"]]
    for span, label in zip(item.spans, response["labels"]):
      assert item.example.hypothesis[span.start:span.end] == label["text"]
    assert item.human_attributable == (not response["labels"])
    assert item.human_label == ("1" if item.human_attributable else "0")
  assert [span.label for span in data.spans] == ["Evident Conflict",
                                                 "Subtle Baseless Info"]


def test_ragtruth_job_groups_by_task_type_and_model(tmp_path):
  responses = sets.RAGTRUTH_RESPONSES + sets.RAGTRUTH_DAMAGED
  path = sets.write_ragtruth(tmp_path / "dataset", responses)
  output = tmp_path / "out"
  assert _run(output, [path], "ragtruth") == 0
  rows, content, counts, dead = _outputs(output)
  assert (counts["read"], counts["scored"], counts["rejected"], counts["unmatched"]) == (
      7, 5, 1, 1)
  assert content["groupings"] == ["dataset", "model"]
  assert set(content["groups"]["dataset"]) == {"QA", "Summary", "Data2txt"}
  assert set(content["groups"]["model"]) == {r["model"] for r in
                                             sets.RAGTRUTH_RESPONSES}
  assert "dataset" in content["group_means"]
  by_id = {row["item_id"]: row for row in rows}
  sources = {s["source_id"]: s for s in sets.RAGTRUTH_SOURCES}
  for response in sets.RAGTRUTH_RESPONSES:
    row = by_id[response["id"]]
    assert row["group"] == sources[response["source_id"]]["task_type"]
    assert row["hypothesis"] == response["response"]
    assert row["human_label"] == ("0" if response["labels"] else "1")
    assert row["source_line"] == _line_of(path, f'"id": "{response["id"]}"')
  assert by_id["20304"]["premise_digest"] == premise_digest(
      [sets.RAGTRUTH_SOURCES[1]["source_info"]])
  by_reason = {(entry["kind"], entry["reason"]): entry for entry in dead}
  missing = by_reason[("unmatched", "no_source")]
  assert (missing["source_file"], missing["source_line"], missing["field"]) == (
      str(path), 6, "source_id")
  assert "source_info.jsonl" in missing["message"]
  bad = by_reason[("rejected", "invalid_value")]
  assert (bad["source_line"], bad["field"]) == (7, "labels")
  assert f"{path}:7: field 'labels': labels[0]: span 5-40" in bad["message"]


def test_ragtruth_bad_source_names_the_source_line(tmp_path):
  sources = [dict(sets.RAGTRUTH_SOURCES[0], task_type="Dialogue")] + \
      sets.RAGTRUTH_SOURCES[1:]
  path = sets.write_ragtruth(tmp_path / "dataset", sets.RAGTRUTH_RESPONSES[:3], sources)
  dead = [item for item in read_ragtruth(str(path)) if not hasattr(item, "example")]
  assert [(d.source_line, d.reason, d.field) for d in dead] == [
      (1, "bad_source", "source_id"), (2, "bad_source", "source_id")]
  assert f"{tmp_path / 'dataset' / 'source_info.jsonl'}:1: field 'task_type'" in (
      dead[0].message)


def test_ragtruth_sources_that_cannot_be_told_apart_or_read_are_named(tmp_path):
  """source_info.jsonl lines that used to be passed over in silence: a
  source_id on two lines with other sources (the later one replaced the
  first, and a response was scored against the wrong text), a source_id
  written as a number, passages holding bytes that are not UTF-8 (the job
  stopped with a traceback), a line that is not JSON (its responses said the
  id "is not in" the file). The same source on two lines is one source."""
  import json
  other = dict(sets.RAGTRUTH_SOURCES[0], source_info={
      "question": "q", "passages": "Completely different text."})
  directory = tmp_path / "dataset"
  path = sets.write_ragtruth(directory, sets.RAGTRUTH_RESPONSES,
                             sets.RAGTRUTH_SOURCES + [other, sets.RAGTRUTH_SOURCES[1]])
  source_file = directory / "source_info.jsonl"
  dead = {d.source_line: d for d in read_ragtruth(str(path)) if not hasattr(d, "example")}
  assert sorted(dead) == [1, 2] and {d.reason for d in dead.values()} == {"bad_source"}
  assert (f"its source, {source_file}:1: field 'source_id': source_id '15021' is also on "
          "line 4, with another source") in dead[1].message
  lines = source_file.read_text().splitlines()
  bad_bytes = json.dumps(dict(sets.RAGTRUTH_SOURCES[1], source_info="BYTES " + (
      sets.RAGTRUTH_SOURCES[1]["source_info"]))).encode().replace(b"BYTES", b"\xff\xfe")
  source_file.write_bytes(b"\n".join([
      json.dumps(dict(sets.RAGTRUTH_SOURCES[0], source_id=15021)).encode(), bad_bytes,
      lines[2][:40].encode()]) + b"\n")
  found = list(read_ragtruth(str(path)))
  dead = {d.source_line: d for d in found if not hasattr(d, "example")}
  assert [(line, d.kind, d.reason) for line, d in sorted(dead.items())] == [
      (1, "rejected", "bad_source"), (2, "rejected", "bad_source"),
      (3, "rejected", "bad_source"), (4, "rejected", "bad_source"),
      (5, "unmatched", "no_source")]
  assert f"{source_file}:1: field 'source_id': source_id must be a string, found 15021" in (
      dead[1].message)
  assert (f"{source_file}:2: field 'source_info': source_info holds bytes that are not "
          "UTF-8") in dead[3].message
  assert dead[5].message.endswith(
      f"source_id '13377' is not in {source_file}; no source_id could be read on 1 of its "
      "lines (3): it may be on one of them")


def test_bytes_that_are_not_utf8_in_nested_fields_are_dead_lettered(tmp_path):
  """A passage of AttributionBench's `references` list, or WiCE's `meta.id`,
  holding bytes that are not UTF-8 stopped the job where the item was
  digested; the row goes to dead letter naming the nested field."""
  import json
  from autoais.transforms.labelled.readers import labelled_reader
  bench = tmp_path / "attributionbench.jsonl"
  good = {"id": "a1", "claim": "Tea is grown in Assam.", "attribution_label": "attributable",
          "references": ["Assam grows tea."], "src_dataset": "x"}
  bench.write_bytes(json.dumps(good).encode() + b"\n" + json.dumps(
      dict(good, id="a2", references=["fine", "Assam grBYTESws"])).encode().replace(
          b"BYTES", b"\xf6") + b"\n")
  wice = tmp_path / "wice.jsonl"
  record = {"label": "supported", "claim": "Tea is grown in Assam.",
            "evidence": ["Assam grows tea."], "meta": {"id": "w1"}}
  wice.write_bytes(json.dumps(record).encode() + b"\n" +
                   json.dumps(record).encode().replace(b'"w1"', b'"w\xff"') + b"\n")
  for path, fmt, field in ((bench, "attributionbench", "references[1]"),
                           (wice, "wice", "meta.id")):
    found = list(labelled_reader(fmt)(str(path)))
    assert hasattr(found[0], "example"), fmt
    assert (found[1].source_line, found[1].reason, found[1].field) == (2, "non_utf8", field)
    assert f"{path}:2: field '{field}': bytes that are not UTF-8" == found[1].message
  # The job runs on, the row counted where it went.
  assert run_job(agreement, "--input", wice, "--format", "wice", "--output_dir",
                 tmp_path / "out") == 0
  counts = json.loads((tmp_path / "out" / "run.json").read_text())["counts"]
  assert counts["by_reason"] == {"rejected:non_utf8": 1} and counts["reconciled"]


def _with_splits(responses, train):
  return [dict(response, split="train" if response["id"] in train else "test")
          for response in responses]


def test_ragtruth_split_scores_one_split_and_counts_the_others(tmp_path):
  """--split test scores the test responses; --calibrate_split train
  calibrates on the train ones of the same file. The other split's rows are
  read and counted (other_split), neither scored nor dead-lettered (a damaged
  row of the other split is not read further)."""
  responses = _with_splits(sets.RAGTRUTH_RESPONSES + sets.RAGTRUTH_DAMAGED,
                           {"20302", "20304", "20305"})
  path = sets.write_ragtruth(tmp_path / "dataset", responses)
  output = tmp_path / "out"
  assert _run(output, [path], "ragtruth", "--split", "test", "--calibrate_on", path,
              "--calibrate_split", "train") == 0
  rows, content, counts, dead = _outputs(output)
  assert sorted(row["item_id"] for row in rows) == ["20301", "20303"]
  assert (counts["read"], counts["scored"], counts["other_split"], counts["rejected"],
          counts["unmatched"]) == (7, 2, 3, 1, 1)
  assert sorted(entry["source_line"] for entry in dead) == [6, 7]  # test rows only
  manifest = json.loads((output / "run.json").read_text())
  calibration = manifest["calibration_counts"]
  assert (calibration["read"], calibration["scored"], calibration["other_split"],
          calibration["rejected"], calibration["unmatched"], calibration["items"]) == (
              7, 3, 4, 0, 0, 3)
  assert calibration["reconciled"] and manifest["status"] == "complete"
  assert (manifest["inputs"]["split"], manifest["inputs"]["calibrate_split"]) == (
      "test", "train")
  assert content["split"] == "test"
  # The threshold was tuned on other responses than those scored.
  assert content["calibration"]["input_items_in_calibration_set"] == 0
  # Without --split every row is read, whatever its split.
  assert len([item for item in read_ragtruth(str(path))]) == 7
  # A file none of whose rows is of the split yields no row: empty_inputs.
  only_train = sets.write_ragtruth(tmp_path / "train", _with_splits(
      sets.RAGTRUTH_RESPONSES, {r["id"] for r in sets.RAGTRUTH_RESPONSES}))
  assert _run(tmp_path / "empty", [only_train], "ragtruth", "--split", "test") == 3
  manifest = json.loads((tmp_path / "empty" / "run.json").read_text())
  assert manifest["empty_inputs"] == [{
      "file": str(only_train), "flag": "--input", "read": 5, "rejected": 0,
      "unmatched": 0, "main_reason": "left_out:other_split", "left_out": 5}]


def test_ragtruth_split_in_the_reader(tmp_path):
  """A row without a `split` string is rejected naming the field; rows of
  the other split are LeftOut before anything else of theirs is read."""
  from autoais.transforms.io.input_records import LeftOut  # pylint: disable=import-outside-toplevel
  responses = _with_splits(sets.RAGTRUTH_RESPONSES, {"20305"})
  del responses[0]["split"]
  responses[1]["split"] = 1
  responses[4]["response"] = 5  # train: left out unread
  path = sets.write_ragtruth(tmp_path / "dataset", responses)
  found = list(read_ragtruth(str(path), split="test"))
  assert [(d.source_line, d.reason, d.field) for d in found[:2]] == [
      (1, "missing_field", "split"), (2, "wrong_type", "split")]
  assert [item.item_id for item in found[2:4]] == ["20303", "20304"]
  assert found[4] == LeftOut("other_split")


def test_ragtruth_refusals_at_launch(tmp_path, capsys):
  path = sets.write_ragtruth(tmp_path / "dataset")
  faithbench = sets.write_faithbench(tmp_path / "batch_1.json")
  for inputs, fmt, flags, message in [
      (path, "ragtruth", ("--split", "dev"), "--split"),
      (faithbench, "faithbench", ("--split", "test"),
       "--split: the rows of --format faithbench name no split (formats whose do: "
       "ragtruth)"),
      (path, "ragtruth", ("--calibrate_split", "train"),
       "--calibrate_split picks the rows of --calibrate_on: give it")]:
    assert _run(tmp_path / "out", [inputs], fmt, *flags) == 2
    assert message in capsys.readouterr().err
  (tmp_path / "dataset" / "source_info.jsonl").unlink()
  assert _run(tmp_path / "out", [path], "ragtruth") == 2
  assert "source_info.jsonl is not beside it" in capsys.readouterr().err
  assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------------------
# halubench


def test_halubench_parquet_per_dataset_with_calibration(tmp_path):
  path = sets.write_halubench(tmp_path / "data" / "test-00000-of-00001.parquet")
  items = list(read_halubench(str(path)))
  assert [item.item_id for item in items] == [r["id"] for r in sets.HALUBENCH_ROWS]
  first = items[0]
  assert first.example.premise == sets.HALUBENCH_ROWS[0]["passage"]
  assert first.example.hypothesis == (
      "The answer to the question 'How long do rapid antigen tests take to return "
      "a result?' is 'fifteen to thirty minutes'")
  output = tmp_path / "out"
  assert _run(output, [path], "halubench", "--calibrate_on", path,
              "--calibrate_per_dataset") == 0
  rows, content, counts, dead = _outputs(output)
  assert counts["scored"] == len(sets.HALUBENCH_ROWS) and not dead
  expected = collections.Counter((r["source_ds"], r["label"])
                                 for r in sets.HALUBENCH_ROWS)
  assert collections.Counter((r["group"], r["human_label"]) for r in rows) == expected
  assert all(r["human_attributable"] == (r["human_label"] == "PASS") for r in rows)
  assert content["groupings"] == ["dataset"]
  assert content["group_means"]["dataset"]["roc_auc"]["groups"] == ["DROP", "covidQA"]
  assert set(content["calibration"]["per_dataset"]["thresholds"]) == {"DROP", "covidQA"}


def test_halubench_bad_labels_are_dead_lettered(tmp_path):
  rows = [dict(row) for row in sets.HALUBENCH_ROWS]
  rows[1]["label"] = "MAYBE"
  rows[4]["label"] = ""
  path = sets.write_halubench(tmp_path / "halubench.parquet", rows)
  dead = {d.reason: d for d in read_halubench(str(path)) if not hasattr(d, "example")}
  assert (dead["invalid_value"].source_line, dead["invalid_value"].field) == (2, "label")
  assert (dead["no_human_label"].source_line, dead["no_human_label"].kind) == (
      5, "unmatched")


# ----------------------------------------------------------------------------
# faithbench


def test_faithbench_worst_label_and_sample_lines(tmp_path):
  path = sets.write_faithbench(tmp_path / "data_for_release" / "batch_1.json")
  text = path.read_text(encoding="utf-8").split("\n")
  lines = [line for line, _ in faithbench_samples(str(path))]
  # The line where each sample's object opens, the line before its sample_id.
  assert [text[line - 1].strip() for line in lines] == ["{"] * 5
  assert [json.loads("{" + text[line].strip().rstrip(",") + "}")["sample_id"]
          for line in lines] == list(range(5))
  items = list(read_faithbench(str(path)))
  assert [item.human_label for item in items] == [
      label for _, label in sets.FAITHBENCH_SAMPLES]
  assert [item.human_attributable for item in items] == [True, True, False, False,
                                                         False]
  assert [item.item_id for item in items] == [f"batch_1:{i}" for i in range(5)]
  assert items[1].example.hypothesis == sets.FAITHBENCH_SAMPLES[1][0]["summary"]
  # The summary spans of the Unwanted and Questionable annotations (Benign's
  # are not kept), each annotator's as marked, overlapping ones too.
  assert [[(item.example.hypothesis[s.start:s.end], s.label) for s in item.spans]
          for item in items] == [
              [], [],
              [("the first suspension bridge in England", "Unwanted, Unwanted.Extrinsic"),
               ("suspension bridge in England", "Unwanted.Extrinsic")],
              [("built by", "Questionable")],
              [("1823", "Unwanted, Unwanted.Intrinsic")]]
  output = tmp_path / "out"
  assert _run(output, [path], "faithbench") == 0
  rows, content, counts, _ = _outputs(output)
  assert counts["scored"] == 5
  assert content["groupings"] == ["summarizer"]
  assert set(content["groups"]["summarizer"]) == {"openai/gpt-4o",
                                                  "mistralai/Mistral-7B-Instruct-v0.3"}
  assert [row["source_line"] for row in rows] == lines


def test_faithbench_bad_sample_and_bad_file(tmp_path, capsys):
  samples = [dict(sample) for sample, _ in sets.FAITHBENCH_SAMPLES]
  samples[2]["annotations"] = [dict(samples[2]["annotations"][0], label=["Wrong"])]
  samples[3]["summary"] = 7
  # Spans of hallucinated annotations that the summary does not hold: past
  # its end; offsets whose text is not summary_span. A Benign span is not read.
  summary = samples[4]["summary"]
  first = samples[4]["annotations"][0]
  samples[4]["annotations"] = [dict(first, summary_end=len(summary) + 1)]
  year = samples[0]["summary"].index("1832")
  samples[0]["annotations"] = [dict(first, summary_start=year, summary_end=year + 4)]
  samples[1]["annotations"] = [dict(samples[1]["annotations"][0], summary_start=None)]
  path = sets.write_faithbench(tmp_path / "batch_2.json", samples)
  lines = [line for line, _ in faithbench_samples(str(path))]
  dead = [d for d in read_faithbench(str(path)) if not hasattr(d, "example")]
  assert [(d.source_line, d.reason, d.field) for d in dead] == [
      (lines[0], "invalid_value", "annotations"),
      (lines[2], "invalid_value", "annotations"), (lines[3], "wrong_type", "summary"),
      (lines[4], "invalid_value", "annotations")]
  assert f"{path}:{lines[2]}: field 'annotations'" in dead[1].message
  assert (f"annotations[0]: the summary's characters {year}-{year + 4} are "
          "'1832', not its summary_span '1823'") in dead[0].message
  start = summary.index("1823")
  assert (f"annotations[0]: span {start}-{len(summary) + 1} is not within the "
          f"summary's {len(summary)} characters") in dead[3].message
  broken = tmp_path / "batch_3.json"
  broken.write_text('{\n  "samples": [\n    {"sample_id": 0,\n', encoding="utf-8")
  assert _run(tmp_path / "out", [broken], "faithbench") == 2
  assert f"{broken}:4: not a JSON document" in capsys.readouterr().err
  listed = tmp_path / "batch_4.json"
  listed.write_text(json.dumps(samples), encoding="utf-8")
  assert _run(tmp_path / "out", [listed], "faithbench") == 2
  assert 'expected a JSON object with a list "samples"' in capsys.readouterr().err


def test_faithbench_sample_lines_in_other_layouts(tmp_path):
  """The lines are found wherever "samples" sits and however the file is laid
  out: after another key, and on one line."""
  samples = [sample for sample, _ in sets.FAITHBENCH_SAMPLES[:2]]
  path = tmp_path / "batch_5.json"
  path.write_text(json.dumps({"note": {"samples": "x, ]}"}, "samples": samples},
                             indent=1), encoding="utf-8")
  text = path.read_text(encoding="utf-8").split("\n")
  found = list(faithbench_samples(str(path)))
  assert [value for _, value in found] == samples
  assert [text[line - 1].strip() for line, _ in found] == ["{", "{"]
  path.write_text(json.dumps({"samples": samples}), encoding="utf-8")
  assert list(faithbench_samples(str(path))) == [(1, samples[0]), (1, samples[1])]


def test_faithbench_keys_given_twice_are_refused(tmp_path, capsys):
  """json keeps the last of two values of a key unseen. A second "samples"
  list made the launch check one list and the reader walk the other: refused
  at launch, naming the line. A sample giving a field twice ("summary") is
  dead-lettered as repeated_key, naming it; the other samples are read."""
  samples = [sample for sample, _ in sets.FAITHBENCH_SAMPLES[:3]]
  text = json.dumps({"samples": samples}, indent=1)
  twice = tmp_path / "batch_6.json"
  twice.write_text(text[:-2] + ',\n "samples": []\n}', encoding="utf-8")
  assert json.loads(twice.read_text())["samples"] == []
  assert _run(tmp_path / "out", [twice], "faithbench") == 2
  last_line = twice.read_text().count("\n")
  assert (f"{twice}:{last_line}: the key 'samples' is given twice in the document's "
          "object") in capsys.readouterr().err
  sample = json.dumps(samples[1])
  assert sample.startswith('{"sample_id": 1, ')
  repeated = sample.replace('{"sample_id": 1, ', '{"sample_id": 1, "summary": "other", ')
  path = tmp_path / "batch_7.json"
  path.write_text('{"samples": [\n' + ",\n".join(
      [json.dumps(samples[0]), repeated, json.dumps(samples[2])]) + "\n]}",
                  encoding="utf-8")
  items = list(read_faithbench(str(path)))
  dead = [item for item in items if not hasattr(item, "example")]
  assert [(d.source_line, d.reason, d.field) for d in dead] == [
      (3, "repeated_key", "summary")]
  assert dead[0].message == (f"{path}:3: field 'summary': a sample: the key 'summary' is "
                             "given twice in one object (a JSON reader keeps one of the "
                             "two unseen)")
  assert [item.source_line for item in items if hasattr(item, "example")] == [2, 4]
