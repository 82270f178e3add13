"""`autoais compare`'s own steps: two evaluate runs' ratings joined by system
and question (`steps`), the per-system changes and their files (`tables`)."""
