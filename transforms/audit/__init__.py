"""The `autoais audit` job's own modules.

    readers       its answers, candidate passages (TREC runs, JSONL lists), topics
    steps         candidates matched to answers and audited, per-system figures
    stages        the job's stages as composite PTransforms, in order
    tables        audit_candidates / audit_answers and the summary audit.*
"""
