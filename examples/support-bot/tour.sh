#!/usr/bin/env bash
# The whole app on the embedded emulator, start to finish (README.md's first command runs this):
#   1. apply from nothing: the app is created (CreateApp), then everything in it, in order;
#   2. the evaluations (golden conversations) pass; a change to a tool's code makes one fail;
#   3. an agent edited by hand (here through the REST API, as the console would) is drift;
#   4. a tool, the widget it feeds and its reference in an agent go in one apply;
#   5. export writes a repo that plans empty; so does an exportApp archive through import-archive;
#   6. the version apply --snapshot made before the removal is listed, and rollback to it undoes that apply.
# It works on a copy in a temporary folder: this example stays as it is.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/repo"
(cd "$here" && tar --exclude=.cesync -cf - .) | (cd "$work/repo" && tar -xf -)
cd "$work/repo"
app=projects/local/locations/us/apps/support-bot

# Bold headings on a terminal only: the tour's output saved to a file has no escape codes.
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
  step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
else
  step() { printf '\n== %s\n' "$*"; }
fi
# The REST API of the embedded emulator, for what the console or another client would do.
rest() {
  python3 - "$@" <<'PY'
import asyncio, json, sys
from pathlib import Path
import httpx
from cesync.emulator import EmbeddedTransport

async def main(method: str, path: str, body: str = "") -> None:
    transport = EmbeddedTransport(state=Path(".cesync/local.sqlite"))
    async with httpx.AsyncClient(transport=transport, base_url="http://embedded/v1/") as client:
        reply = await client.request(method, path, json=json.loads(body) if body else None)
        reply.raise_for_status()
        sys.stdout.write(reply.text)

asyncio.run(main(*sys.argv[1:]))
PY
}

step "1. plan: the app does not exist yet, so it and everything in it will be created"
cesync plan --env local
step "apply"
cesync apply --env local --auto-approve
step "plan: nothing to change (exit 0)"
cesync plan --env local --detailed-exitcode

step "2. the evaluations pass: each golden's tool calls run against the real tools, their answers are checked"
cesync eval --env local
step "the return fee changes in the refund policy's code; applied, the golden of the small order fails (exit 1)"
sed -i.bak 's/else 4.99/else 5.99/' code/refund_policy.py && rm code/refund_policy.py.bak
cesync apply --env local --auto-approve
set +e; cesync eval --env local --junit "$work/evaluations.xml"; code=$?; set -e
[ "$code" = 1 ] || { echo "expected a failing evaluation (exit 1), got $code" >&2; exit 1; }
grep -q 'failures="1"' "$work/evaluations.xml" || { echo "expected one failure in the JUnit report" >&2; exit 1; }

step "3. someone edits the support agent's instruction by hand"
etag=$(rest GET "$app/agents/support" | python3 -c 'import json,sys; print(json.load(sys.stdin)["etag"])')
rest PATCH "$app/agents/support?updateMask=instruction" "{\"instruction\": \"Answer everything yourself.\", \"etag\": \"$etag\"}" >/dev/null
step "plan shows the drift (exit 2), apply puts the repo's instruction back"
set +e; cesync plan --env local --detailed-exitcode; code=$?; set -e
[ "$code" = 2 ] || { echo "expected drift (exit 2), got $code" >&2; exit 1; }
cesync apply --env local --auto-approve

step "4. remove the order-status tool, the widget it feeds and its reference in the support agent: one apply, snapshotted before it writes"
rm tools/order-status.yaml tools/order-card.yaml
grep -v 'ref: tools/order-status' agents/support.yaml >agents/support.yaml.new && mv agents/support.yaml.new agents/support.yaml
cesync apply --env local --auto-approve --prune --snapshot
cesync plan --env local --detailed-exitcode --prune

step "5. export the app as a new repo; it plans empty against the same app"
cesync export --env local --out "$work/exported"
cp -r .cesync "$work/exported/"
cesync plan --dir "$work/exported" --env local --detailed-exitcode
step "exportApp (CES's own archive), import-archive, and that repo plans empty too"
op=$(rest POST "$app:exportApp" '{"exportFormat": "JSON"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["name"])')
until rest GET "$op" >"$work/op.json" && python3 -c 'import json,sys; sys.exit(not json.load(open(sys.argv[1])).get("done"))' "$work/op.json"; do
  sleep 0.2  # a long-running operation, polled as any client does
done
python3 -c 'import base64,json,sys; open(sys.argv[2], "wb").write(base64.b64decode(json.load(open(sys.argv[1]))["response"]["appContent"]))' \
  "$work/op.json" "$work/app.zip"
cesync import-archive "$work/app.zip" --out "$work/imported" --app "$app"
cp -r .cesync "$work/imported/"
cesync plan --dir "$work/imported" --env local --endpoint embedded --detailed-exitcode

step "6. the version apply --snapshot made before the removal, and a rollback to it (the removed tool comes back)"
cesync versions --env local
version=$(cesync versions --env local --format json | python3 -c 'import json,sys; print(next(v["name"].rsplit("/", 1)[-1] for v in json.load(sys.stdin) if v.get("description", "").startswith("the app before")))')
cesync rollback "$version" --env local --auto-approve
step "the repo no longer has those tools: plan takes the agent's reference out again, and --prune deletes them again (the rollback's applied record owns what cesync made)"
set +e; cesync plan --env local --detailed-exitcode --prune >"$work/after-rollback.txt"; code=$?; set -e
cat "$work/after-rollback.txt"
[ "$code" = 2 ] || { echo "expected changes after the rollback (exit 2), got $code" >&2; exit 1; }
grep -q 'tool order-status will be deleted' "$work/after-rollback.txt" \
  || { echo "expected the restored tools deleted again by --prune, as cesync made them" >&2; exit 1; }
printf '\nThe tour is over: every step did what it said.\n'
