"""The `autoais training-data` job's own modules (its readers are agreement's,
shared: transforms/labelled/).

    examples      a labelled item as a training example of a family, its split
                  (by a hash of its question) and its duplicate key
    steps         the composites: items to examples, hard negatives mined from
                  the corpus, the split tables and their counts
    t5x           TFRecords of a split and the seqio Task module beside them
"""
