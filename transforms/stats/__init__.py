"""Statistics shared by the jobs: `squad` the SQuAD answer normalisation, exact
match and token F1; `metrics` the per-system aggregates of a leaderboard and the
paired bootstrap; `agreement` the agreement of attribution scores with human
labels, from mergeable accumulators; `report` report.html, drawn from those
accumulators."""
