"""The pipelines: plan/apply end to end (workflow), executing a plan (apply), pull."""
