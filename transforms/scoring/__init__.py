"""The Beam side of scoring, shared by every job that scores.

    names, registry   the scorers of `--scorer`: the families' table, their flags'
                      help, argparse arguments and Scorers
    flags             how a family declares itself and its flags; the shared flags
    config            ScorerConfig: the scorer flags checked once, at launch
    checks            the checks of scorer flags several families share
    scorer            the Scorer base: scoring, run.json description, cache identity
    string_match, t5, nli_classifier, minicheck, hosted, llm_judge
                      the families: their flags' checks and Scorers (the models
                      themselves: models/)
    examples          model inputs of attributed answers and claims
    attribution       ScoreAttribution (scored / failed outputs) and failure helpers
    fanout            each distinct example scored once, fanned out over workers
    cache             the score cache across runs (`--score_cache`)
"""
