"""cesync: manage Google Cloud Customer Engagement Suite (CES) tools as code."""

__version__ = "0.1.0"
