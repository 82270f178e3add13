"""Human-labelled attribution data, shared by `autoais evaluate` (its
`--human_ratings`), `autoais agreement` (every `--format`) and `autoais claims`.

    readers       each agreement format read into labelled items; human ratings
    hallucination the hallucination benchmarks' formats: RAGTruth, HaluBench,
                  FaithBench
    items         what every reader shares: ids, checked text fields, labels,
                  `unmatched` dead letters
    expertqa      ExpertQA's claim records (read_expertqa) and the cleaning of
                  claims and evidence, so that agreement and claims see the same
                  claims
"""
