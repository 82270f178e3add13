"""The `autoais ais-annotations` job's own modules.

    readers       the AIS release's consensus files, row by row
    steps         tallies per (data set, model), reconciliation with the paper's
                  printed cells, the tables and their renderings
    paper         the paper's printed cells
    tables        the tallies written as ais_tables.* and ais_agreement.csv
"""
