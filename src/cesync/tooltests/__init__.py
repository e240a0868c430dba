"""Tool tests kept in the user's repo (``tests/*.yaml``): schema, matching, running, reporting.

Two formats, told apart per test case:

- cesync's own, in the conversation vocabulary (seeds 000 and 002): a ``toolCall``
  and the expected ``toolResponse``; the response is matched as a subset, and a
  string written ``{$regex: ...}`` is a regular expression for the whole string;
- Google cxas-scrapi's tool tests, as they are: ``tool``, ``args``, ``variables``,
  ``expectations: {response: [{path, operator, value}], variables: [...]}`` with
  JSONPath paths.

``schema`` (loading), ``match`` (checking) and ``report`` (rendering) are pure;
``run`` needs a call into a client.
"""

from __future__ import annotations

from .match import check
from .report import junit_xml, report, results_json
from .run import Result, run_cases
from .schema import Case, Expectation, load_tests

__all__ = ["Case", "Expectation", "Result", "check", "junit_xml", "load_tests", "report", "results_json", "run_cases"]
