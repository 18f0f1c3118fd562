#!/usr/bin/env bash
# make test: pytest (unit + integration), nbval on every notebook at the smoke profile, and the paper built
# from the smoke runs those notebooks published. Test data goes to a temporary data directory and the paper
# is built in a temporary copy: nothing in the checkout's data/ or paper/ is touched.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch="$(mktemp -d /var/tmp/snaptax-test.XXXXXX)"
trap 'rm -rf "$scratch"' EXIT
export SNAPTAX_DATA_DIR="$scratch/data"

echo "== pytest"
.venv/bin/python -m pytest -q -p no:cacheprovider tests "$@"

echo "== nbval (every notebook at its committed parameters: profile smoke)"
# Cells marked NBVAL_CHECK_OUTPUT must reproduce their stored output exactly; the others must run.
.venv/bin/python -m pytest -q -p no:cacheprovider --nbval-lax --nbval-current-env notebooks/

echo "== paper from the smoke runs"
cp -r paper "$scratch/paper"
rm -rf "$scratch/paper/generated" "$scratch/paper/figures"
(cd "$scratch/paper" && rm -f snaptax.aux snaptax.bbl snaptax.blg snaptax.fdb_latexmk snaptax.fls snaptax.log snaptax.out snaptax.pdf)
.venv/bin/python -m snaptax render --profile smoke --paper-dir "$scratch/paper"
(cd "$scratch/paper" && latexmk -pdf -quiet snaptax.tex >/dev/null 2>&1) || {
  tail -n 40 "$scratch/paper/snaptax.log"; echo "paper: latexmk failed" >&2; exit 1; }
if grep -q "undefined" "$scratch/paper/snaptax.log"; then
  grep "undefined" "$scratch/paper/snaptax.log" >&2; echo "paper: undefined references or macros" >&2; exit 1
fi
echo "paper: ok ($(pdfinfo "$scratch/paper/snaptax.pdf" 2>/dev/null | awk '/^Pages/{print $2}') pages)"
