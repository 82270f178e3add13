"""The `autoais citations` job's own modules (ALCE result files).

    readers       ALCE's result files and their JSON Lines variant
    alce          ALCE's definitions: the answer as scored, sentences and their
                  citations, the recall and precision pairs, STR-EM, QAMPARI,
                  length
    steps         the three scoring rounds (each distinct pair once) and each
                  item's sentence rows and figures
    tables        citations_rows, citations_items and the leaderboard citations.*
"""
