"""The `autoais ais-annotations` job's own modules: `steps` tallies the AIS
release per (data set, model), reconciles the counts with the paper's printed
cells and renders the tables; `paper` holds those printed cells."""
