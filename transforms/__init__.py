"""Reusable PTransforms (and the pure functions behind them) of AutoAIS-Beam, each
module in a subpackage that says its room: shared ones by stage kind (`io`,
`corpus`, `stats`, `labelled`, `scoring`), imported by every job, and one per job
(`ais_annotations`, `audit`, `claims`, `sck`) for that job's own readers and
steps, imported by that job only (tests/deploy/test_architecture.py)."""
