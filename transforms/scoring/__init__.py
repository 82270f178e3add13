"""The Beam side of scoring, shared by every job that scores.

    names, registry   the scorers of `--scorer` and make_scorer
    scorer            the Scorer interface, its run.json description and cache identity
    string_match, t5, nli_classifier, minicheck, hosted
                      the scorers (the models themselves: models/)
    examples          model inputs of attributed answers and claims
    attribution       ScoreAttribution (scored / failed outputs) and failure helpers
    fanout            each distinct example scored once, fanned out over workers
    cache             the score cache across runs (`--score_cache`)
"""
