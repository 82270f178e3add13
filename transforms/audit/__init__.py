"""The `autoais audit` job's own modules: `readers` reads its answers, candidate
passages (TREC runs, JSONL lists) and topics; `steps` matches candidates to
answers, audits them and computes the per-system figures."""
