"""Reading inputs and writing outputs, shared by every job.

    inputs        input files: matching, format by suffix, opening (decompressed),
                  launch checks
    input_records CSV / JSON Lines / Parquet input records, and ReadRecords, the
                  Beam transform around every reader
    fields        field checks and the DeadLetter of a bad record
    predictions, gold
                  the readers of predictions and of gold answers
    atomic        output files that appear whole or not at all; delete_tree
    tables        row tables (Parquet and CSV side by side), csv_bytes
    summary       a job's per-system summary files
    dead_letters  dead_letter.jsonl and its counts by input role
    counts        SumCounts, the count dicts of workers summed
    sorted_runs   the external sort behind every sorted output
    progress      Beam counters and the console progress of a local run
"""
