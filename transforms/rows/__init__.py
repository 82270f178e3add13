"""The skeleton every row-writing job shares (issue 16): a job's rows are
spilled in sorted runs, merged on one element and folded by the job's plain
Python rules (`merge.RowFold`: the duplicate rule, what each row adds to the
tables and to its system's outcomes), its per-system rows are written as the
summary files (`summary.WriteSummary`), and run.json is built by a
`run_record.RunRecord` type that declares the job's own fields (checked when
the pipeline is built).
"""
