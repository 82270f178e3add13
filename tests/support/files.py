"""Writing and reading the files that jobs read and write."""
import csv
import json
import pathlib


def write_jsonl(path, records):
  path = pathlib.Path(path)
  path.parent.mkdir(parents=True, exist_ok=True)
  with open(path, "w", encoding="utf-8") as f:
    for record in records:
      f.write(json.dumps(record, ensure_ascii=False) + "\n")
  return path


def write_prediction_files(directory, systems):
  """One predictions CSV per system: {name: [(question, answer, attribution)]}."""
  directory = pathlib.Path(directory)
  directory.mkdir(parents=True, exist_ok=True)
  for name, rows in systems.items():
    with open(directory / f"{name}.csv", "w", newline="", encoding="utf-8") as f:
      writer = csv.writer(f)
      writer.writerow(["question", "answer", "attribution"])
      writer.writerows(rows)


def read_jsonl(path):
  with open(path, encoding="utf-8") as f:
    return [json.loads(line) for line in f if line.strip()]
