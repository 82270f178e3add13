"""A job's per-system summary: `{stem}.csv`, `{stem}.json` and `{stem}.md`."""
import json
from typing import Optional

from apache_beam.io.filesystems import FileSystems

from autoais.transforms.io.atomic import atomic_create, write_text_atomically
from autoais.transforms.io.tables import csv_bytes


def write_summary_files(output_dir: str, stem: str, rows, schema, document: dict,
                        markdown: str, scorer: Optional[str] = None) -> None:
  """A job's per-system summary: `{stem}.csv` (rows in schema order, then the
  column `scorer` where one is given), `{stem}.json` (`document`, which holds
  the rows) and `{stem}.md`, each written atomically."""
  join = FileSystems.join
  with atomic_create(join(output_dir, f"{stem}.csv")) as sink:
    sink.write(csv_bytes(rows, schema, scorer=scorer))
  write_text_atomically(join(output_dir, f"{stem}.json"),
                        json.dumps(document, indent=2, ensure_ascii=False) + "\n")
  write_text_atomically(join(output_dir, f"{stem}.md"), markdown)
