"""The `autoais sck` job's own modules.

    readers           its answers
    intent            question intent and the Structure score
    entity_linking    text linked to the knowledge graph's entities
    knowledge_graph   the graph: read, joined, queried
    steps             the Knowledge, Content and Structure scores and SCK
    tables            sck_rows and the per-system, per-intent means sck.*
"""
