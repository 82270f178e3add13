"""`autoais compare`'s own steps: two evaluate (claims, agreement) runs' row
tables joined by system and question (`steps`), the per-system changes and
their files (`tables`)."""
