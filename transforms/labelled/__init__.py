"""Human-labelled attribution data, shared by `autoais evaluate` (its
`--human_ratings`) and `autoais agreement` (every `--format`): `readers` reads each
format into labelled items or human ratings."""
