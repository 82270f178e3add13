"""Statistics shared by the jobs.

    squad         SQuAD answer normalisation, exact match and token F1
    metrics       per-system aggregates of a leaderboard, the paired bootstrap
    agreement     agreement of attribution scores with human labels, from
                  mergeable accumulators
    report        report.html, drawn from those accumulators
    spans         character precision, recall and F1 of predicted hallucination
                  spans against human ones (not yet used by a job)
"""
