"""The `autoais ais-annotations` job's own modules.

    readers       the AIS release's consensus files, row by row
    tally         each (data set, model)'s annotations counted (AisTally)
    shares        the printed shares and the columns' significance marks
    reconciliation
                  which outputs the paper counted, fitted to each printed row
    comparison    the paper's tables rebuilt, cell by cell beside the printed ones
    rendering     the tables as CSV rows, JSON and Markdown
    paper         the paper's printed cells
    tables        the tallies written as ais_tables.* and ais_agreement.csv
"""
