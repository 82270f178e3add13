"""Small knowledge graphs and answers for the SCK tests, written for this project.

The Obama graph holds the triples of the seed's Table 1 (Figure 3's answer):
(Barack Obama, position held, President of the United States), (Barack Obama,
ethnic group, African Americans), (Patient Protection and Affordable Care Act,
signatory, Barack Obama), with Wikidata-style ids (Q76, Q30, Q1414593 and Q7942
are among the ids Table 1 lists); labels, aliases and descriptions are ours.
Distractor edges to the United States (Q30) must not reach a sentence that only
names the President of the United States. Dodd-Frank is left out of the graph,
so that the answer has one text entity the graph cannot verify.

The phones of Figure 5 carry the seed's ids (Q108118280, Q108939091,
Q115127699); the iPhone 12 is not in the graph.

Honolulu / New York City give a claim the graph contradicts (Obama's place of
birth).
"""
import pyarrow as pa
import pyarrow.parquet as pq

LABEL, ALIAS, DESCRIPTION = "rdfs:label", "skos:altLabel", "schema:description"


def _entity(entity_id, label, description=None, aliases=()):
  statements = [(entity_id, LABEL, label)]
  statements += [(entity_id, ALIAS, alias) for alias in aliases]
  if description:
    statements.append((entity_id, DESCRIPTION, description))
  return statements


OBAMA_KG = (
    _entity("Q76", "Barack Obama", "president of the United States from 2009 to 2017",
            ["Obama", "Barack Hussein Obama"])
    + _entity("Q11696", "President of the United States",
              "head of state and head of government of the United States",
              ["US President"])
    + _entity("Q30", "United States", "country in North America",
              ["United States of America", "America"])
    + _entity("Q49085", "African Americans",
              "Americans with ancestry from sub-Saharan Africa", ["African American"])
    + _entity("Q1414593", "Patient Protection and Affordable Care Act",
              "United States health care reform law of 2010",
              ["Affordable Care Act", "Obamacare"])
    + _entity("Q7942", "climate change", "long-term change of the Earth's climate")
    + _entity("P39", "position held") + _entity("P172", "ethnic group")
    + _entity("P1891", "signatory") + _entity("P27", "country of citizenship")
    + _entity("P17", "country")
    + [("Q76", "P39", "Q11696"), ("Q76", "P172", "Q49085"), ("Q1414593", "P1891", "Q76"),
       ("Q76", "P27", "Q30"), ("Q11696", "P17", "Q30"), ("Q1414593", "P17", "Q30"),
       ("Q76", "P569", "1961-08-04")]
)

CONFLICT_KG = (
    _entity("Q18094", "Honolulu", "capital of Hawaii")
    + _entity("Q60", "New York City", "most populous city in the United States",
              ["New York"])
    + _entity("Q22686", "Donald Trump", "45th and 47th president of the United States",
              ["Trump"])
    + _entity("P19", "place of birth")
    + [("Q76", "P19", "Q18094"), ("Q22686", "P19", "Q60")]
)

PHONES_KG = (
    _entity("Q108118280", "iPhone 13", "smartphone made by Apple, released in 2021")
    + _entity("Q108939091", "Pixel 6", "smartphone made by Google, released in 2021")
    + _entity("Q115127699", "Galaxy S23", "smartphone made by Samsung, released in 2023")
)

OBAMA_QUESTION = "Can you provide a brief introduction of Barack Obama?"
# Figure 3, without the quotation marks around it.
OBAMA_ANSWER = (
    "Sure, here's a brief introduction to Barack Obama: Barack Obama is a former "
    "President of the United States. He is the first African American to have held "
    "the office, and is widely recognized for his progressive policies and "
    "leadership. During his presidency, Obama enacted landmark legislation such as "
    "the Affordable Care Act and the Dodd-Frank Wall Street Reform and Consumer "
    "Protection Act, and worked to address issues such as climate change, "
    "immigration reform, and civil rights. Obama is widely respected for his "
    "intelligence, charisma, and commitment to public service, and is considered one "
    "of the most influential leaders of our time.")
# Table 1's relevant triples, verbalised as the job's premises must be.
OBAMA_PREMISES = (
    "Barack Obama position held President of the United States.",
    "Barack Obama ethnic group African Americans.",
    "Patient Protection and Affordable Care Act signatory Barack Obama.",
)

PHONES_QUESTION = "Compare these iPhone 13, Pixel 6, and Galaxy S23"
PHONES_ANSWER = (
    "The iPhone 12, released in 2020, offers a sleek design, a capable A14 Bionic "
    "chip, and a vibrant Super Retina XDR display. The iPhone 13, introduced in "
    "2021, builds upon its predecessor with the more powerful A15 Bionic chip, "
    "improved camera system, and longer battery life. The Pixel 6, launched in 2021 "
    "as well, featuring impressive computational photography capabilities, "
    "alongside a clean Android experience. Ultimately, the choice between them "
    "depends on user preferences, with iPhone models known for their ecosystem "
    "integration and build quality, while the Pixel 6 excels in camera innovation "
    "and a more pure Android experience.")

CONFLICT_QUESTION = "Where was Barack Obama born?"
CONFLICT_ANSWER = "Obama was born in New York City."
CONFLICT_CLAIM = "Barack Obama place of birth New York City."

ALL_KG = OBAMA_KG + CONFLICT_KG + PHONES_KG


def write_kg(path, statements) -> str:
  subjects, predicates, objects = zip(*statements)
  pq.write_table(pa.table({"subject": list(subjects), "predicate": list(predicates),
                           "object": list(objects)}), str(path))
  return str(path)
