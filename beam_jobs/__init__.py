"""AutoAIS-Beam jobs: one module per job, each with its PipelineOptions,
`build_pipeline(pipeline, options)` and `run(argv)`. Entry point: `autoais`."""
