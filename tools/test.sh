#!/usr/bin/env bash
# make test: static checks, nbval on the committed notebooks against the committed data/, every notebook once more
# with papermill measuring at the smoke profile, pytest (unit + integration; whole-run checks read those smoke runs),
# and the paper built from the smoke runs. Measured test data goes to a temporary data directory and the paper is
# built in a temporary copy: nothing in the checkout's data/, notebooks/ or paper/ is touched.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch="$(mktemp -d /var/tmp/snaptax-test.XXXXXX)"
mypy_pid=""
# also on Ctrl-C: a background job of a script ignores SIGINT, so the mypy beside nbval (below) is ended here
trap '[ -z "$mypy_pid" ] || kill "$mypy_pid" 2>/dev/null; rm -rf "$scratch"' EXIT
t0=$SECONDS
stamp() { echo "   ($((SECONDS - t0)) s so far)"; }

if [ -x .venv/bin/ruff ]; then
  echo "== ruff"; .venv/bin/ruff check src tests; stamp
fi
# mypy runs beside nbval on the committed notebooks (2 cores; neither measures, and no measurement starts before
# both have ended): its half minute is then hidden in nbval's minute and a half
if [ -x .venv/bin/mypy ]; then
  echo "== mypy (beside nbval, its report below)"
  .venv/bin/mypy > "$scratch/mypy.log" 2>&1 & mypy_pid=$!
fi

echo "== nbval: committed notebooks against the committed data (checked cells must print what they print now)"
nbval_rc=0
.venv/bin/python -m pytest -q -p no:cacheprovider --nbval-lax --nbval-current-env notebooks/ || nbval_rc=$?
if [ -n "$mypy_pid" ]; then
  mypy_rc=0; wait "$mypy_pid" || mypy_rc=$?
  mypy_pid=""
  echo "== mypy"; cat "$scratch/mypy.log"
  [ "$mypy_rc" -eq 0 ] || exit "$mypy_rc"
fi
[ "$nbval_rc" -eq 0 ] || exit "$nbval_rc"
stamp

export SNAPTAX_DATA_DIR="$scratch/data"
echo "== every notebook measuring at the smoke profile (papermill, measure=True)"
for nb in notebooks/*.ipynb; do
  t=$SECONDS
  .venv/bin/python -m snaptax notebook "$nb" "$scratch/executed/$(basename "$nb")" --profile smoke --measure
  echo "   $(basename "$nb"): $((SECONDS - t)) s"
done
stamp

# The tests that check a whole smoke run read the runs just measured (tests/conftest.py: smoke_run) instead of
# measuring each plan a second time.
echo "== pytest"
# --durations: the slowest tests are named in every log, so a run near the 30-minute budget says where it went.
SNAPTAX_SMOKE_DATA="$scratch/data" .venv/bin/python -m pytest -q -p no:cacheprovider --durations=12 tests "$@"
stamp

echo "== paper from the smoke runs"
cp -r paper "$scratch/paper"
rm -rf "$scratch/paper/generated" "$scratch/paper/figures"
(cd "$scratch/paper" && rm -f snaptax.aux snaptax.bbl snaptax.blg snaptax.fdb_latexmk snaptax.fls snaptax.log snaptax.out snaptax.pdf)
.venv/bin/python -m snaptax render --profile smoke --paper-dir "$scratch/paper"
(cd "$scratch/paper" && latexmk -pdf -quiet snaptax.tex >/dev/null 2>&1) || {
  tail -n 40 "$scratch/paper/snaptax.log"; echo "paper: latexmk failed" >&2; exit 1; }
# undefined references stop the test; overfull boxes only the quick paper (`make pdf`): smoke values differ in width
.venv/bin/python -m snaptax texlog --allow-overfull "$scratch/paper/snaptax.log"
echo "paper: ok ($(pdfinfo "$scratch/paper/snaptax.pdf" 2>/dev/null | awk '/^Pages/{print $2}') pages)"
stamp
