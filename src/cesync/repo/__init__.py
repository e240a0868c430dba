"""The repo on disk: cesync.yaml, loading, environments, templating, formatting, writing folders."""
