"""The `autoais audit` job's own modules.

    readers       its answers, candidate passages (TREC runs, JSONL lists), topics
    steps         candidates matched to answers and audited, per-system figures
"""
