"""The passage corpus, shared by the jobs that read passages.

    store         the Parquet corpus of `autoais build-corpus`: its layout, how to
                  write it, how to look passages and articles up or join against it
    sources       the corpus sources build-corpus reads (Pyserini or id, title, text)
    passages      passage formats: Pyserini contents, the NLI premise, the AIS
                  display form
"""
