"""The `autoais sck` job's own modules: `readers` reads its answers; `intent`
classifies questions and scores answer structure; `entity_linking` links text to
the knowledge graph's entities; `knowledge_graph` reads, joins and queries the
graph; `steps` computes the Structure, Content and Knowledge scores and SCK."""
