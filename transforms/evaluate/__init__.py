"""The `autoais evaluate` job's own modules.

    steps         predictions matched to gold, human ratings and corpus
                  passages attached, scored and rated
    ratings       the ratings table's fold (the first prediction per system
                  and question; per-system outcomes)
    leaderboard   leaderboard.{csv,json,md}, scores.txt, agreement.json and
                  report.html from the per-system rows
"""
