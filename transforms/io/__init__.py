"""Reading inputs and writing outputs, shared by every job: `records` the
record-level readers (input files, CSV / JSON Lines / Parquet records,
predictions, gold answers, corpus sources) and ReadRecords; `dead_letters` the
writers (row tables, dead_letter.jsonl, summary files, run.json); `sorted_runs`
the external sort behind every sorted output; `progress` the Beam counters and
console progress of a run."""
