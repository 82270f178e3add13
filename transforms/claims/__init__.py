"""The `autoais claims` job's own modules: `readers` reads claim-level inputs
(ExpertQA records, one claim per JSON line); `steps` cleans evidence, scores each
claim against it in the three evidence modes and computes the per-system
figures."""
