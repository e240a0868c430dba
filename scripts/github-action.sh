#!/usr/bin/env bash
# The body of the cesync GitHub Action (action.yml): run one command, expose its
# results as step outputs and in the job summary, and keep the plan comment current.
# Inputs come as INPUT_* variables; the tests run this script as it is, against the
# emulator and a fake GitHub API.
set -uo pipefail

command="${INPUT_COMMAND:-plan}"
environment="${INPUT_ENVIRONMENT:-}"
out_dir="${RUNNER_TEMP:-/tmp}/cesync/${environment:-default}-$$"
mkdir -p "$out_dir"
plan_json="$out_dir/plan.json"
plan_md="$out_dir/plan.md"
junit="$out_dir/junit.xml"
summary="${GITHUB_STEP_SUMMARY:-/dev/null}"
outputs="${GITHUB_OUTPUT:-/dev/null}"

env_args=()
if [ -n "$environment" ]; then
  env_args=(--env "$environment")
fi
extra=()
if [ -n "${INPUT_ARGS:-}" ]; then
  read -r -a extra <<< "$INPUT_ARGS"
fi

is_pull_request() {
  case "${GITHUB_EVENT_NAME:-}" in
    pull_request | pull_request_target) return 0 ;;
    *) return 1 ;;
  esac
}

code=0
case "$command" in
  validate)
    cesync validate "${env_args[@]}" "${extra[@]}" || code=$?
    ;;
  plan)
    cesync plan "${env_args[@]}" --out "$plan_json" --detailed-exitcode "${extra[@]}" || code=$?
    if [ -f "$plan_json" ]; then
      cesync show "$plan_json" --format markdown > "$plan_md"
    fi
    ;;
  apply)
    if [ -n "${INPUT_PLAN_FILE:-}" ]; then
      cesync apply "$INPUT_PLAN_FILE" --auto-approve "${extra[@]}" || code=$?
    else
      cesync apply "${env_args[@]}" --auto-approve "${extra[@]}" || code=$?
    fi
    ;;
  test)
    cesync test "${env_args[@]}" --junit "$junit" "${extra[@]}" || code=$?
    ;;
  promote)
    if [ -z "${INPUT_FROM:-}" ] || [ -z "$environment" ]; then
      echo "::error::promote needs the inputs 'from' and 'environment'"
      exit 1
    fi
    cesync promote --from "$INPUT_FROM" --to "$environment" --out "$plan_json" --detailed-exitcode "${extra[@]}" || code=$?
    if [ -f "$plan_json" ]; then
      cesync show "$plan_json" --format markdown > "$plan_md"
    fi
    ;;
  diff)
    if [ -z "${INPUT_FROM:-}" ] || [ -z "$environment" ]; then
      echo "::error::diff needs the inputs 'from' and 'environment'"
      exit 1
    fi
    cesync diff --from "$INPUT_FROM" --to "$environment" --format markdown --detailed-exitcode "${extra[@]}" > "$plan_md" || code=$?
    ;;
  *)
    echo "::error::unknown command '$command': use validate, plan, apply, test, promote or diff"
    exit 1
    ;;
esac

has_changes=false
if [ "$code" -eq 2 ]; then
  has_changes=true
fi
{
  echo "exitcode=$code"
  echo "has-changes=$has_changes"
  if [ -f "$plan_json" ]; then echo "plan-json=$plan_json"; fi
  if [ -s "$plan_md" ]; then echo "plan-markdown=$plan_md"; fi
  if [ -f "$junit" ]; then echo "junit=$junit"; fi
} >> "$outputs"

if [ -s "$plan_md" ]; then
  cat "$plan_md" >> "$summary"
fi

if [ "$command" = plan ] && [ -f "$plan_json" ] && [ "${INPUT_COMMENT:-on}" = on ] && is_pull_request; then
  cesync comment "$plan_json" || echo "::warning::could not update the plan comment (see above)"
fi

if [ "$code" -eq 2 ]; then
  if [ "${INPUT_FAIL_ON_CHANGES:-false}" = true ]; then
    echo "::error::the app differs from the repo (drift, or changes not yet applied)"
    exit 2
  fi
  exit 0
fi
exit "$code"
