"""The scorer names of `--scorer` (SPEC 3)."""

STRING_MATCH = "string-match"
T5 = "t5"
REMOTE = "remote"
VERTEX = "vertex"
SCORERS = (STRING_MATCH, T5, REMOTE, VERTEX)
