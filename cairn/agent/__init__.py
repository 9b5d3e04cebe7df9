"""The indexing agent: batch and result schema, batching, models, the agent run and the executor."""
