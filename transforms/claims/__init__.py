"""The `autoais claims` job's own modules (ExpertQA records and their cleaning are
shared: transforms/labelled/expertqa.py).

    readers       the one-claim-per-line JSONL format
    steps         each claim scored against its evidence in the three evidence
                  modes, per-system figures
    tables        claims_rows and the per-system summary claims.*
"""
