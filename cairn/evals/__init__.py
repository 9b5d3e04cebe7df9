"""The eval harness: every change to a prompt, a model or the offline indexer shown as numbers.

Someone tuning cairn needs to know whether a change made extraction better or worse and what it costs,
before users find out. The harness indexes a labelled dataset (`evals/datasets/`) into a throwaway store
exactly as live capture and indexing would (`cairn.evals.indexing`), scores what was stored against the
labels (`cairn.evals.scoring`, `cairn.evals.metrics`), runs the dataset's queries through search
(`cairn.evals.retrieval`), and saves each run as JSON (`cairn.evals.runs`) so two runs can be compared
(`cairn.evals.compare`). Model traffic can be recorded and replayed (`cairn.evals.record`), so a run
against a paid model is reproducible later with no key and no cost.
"""
