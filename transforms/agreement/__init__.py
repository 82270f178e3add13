"""The `autoais agreement` job's own modules (its readers, of AttributionBench,
BEGIN, WiCE and ExpertQA, are shared: transforms/labelled/).

    steps         labelled items scored (multi-premise items maxed over their
                  chunks) into AgreementRows
    summary       agreement_rows.{parquet,csv}; counts per grouping, the
                  calibrated threshold, agreement.{json,md} and report.html
"""
