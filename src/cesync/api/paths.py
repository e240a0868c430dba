"""Which REST version serves a request path: v1beta for what only v1beta has, v1 for the rest."""

from __future__ import annotations

from .kinds import by_collection

__all__ = ["BETA_APP_METHODS", "BETA_COLLECTIONS", "api_version"]


def api_version(path: str) -> str:
    """The REST version a request path is served on: v1beta for the kinds only v1beta has
    (``{app}/evaluations``, ``{app}/evaluations/e``), runEvaluation and its runs, v1 for everything else."""
    parts = path.split("/")
    if len(parts) == 6 and parts[0] == "projects" and parts[4] == "apps" and parts[5].endswith(BETA_APP_METHODS):
        return "v1beta"
    if len(parts) >= 7 and parts[0] == "projects" and parts[4] == "apps":
        if parts[6] in BETA_COLLECTIONS:
            return "v1beta"
        found = by_collection(parts[6].split(":")[0])
        if found is not None:
            return found.api_version
    return "v1"


# What else only v1beta serves (EvaluationService, google-cloud-ces ces_v1beta): running the
# evaluations (apps:runEvaluation) and the runs it makes; their results are under evaluations/.
BETA_APP_METHODS = (":runEvaluation",)
BETA_COLLECTIONS = ("evaluationRuns",)
