#!/usr/bin/env bash
# make test: static checks, nbval on the committed notebooks against the committed data/, every notebook once more
# with papermill measuring at the smoke profile, pytest (unit + integration; whole-run checks read those smoke runs),
# and the paper built from the smoke runs. Measured test data goes to a temporary data directory and the paper is
# built in a temporary copy: nothing in the checkout's data/, notebooks/ or paper/ is touched.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch="$(mktemp -d /var/tmp/snaptax-test.XXXXXX)"
# Checks that measure nothing run beside each other (2 cores): mypy and the tests of the committed data/ (pytest -m
# committed) in the background, nbval in the foreground; all end (joined) before the first measurement starts.
# Only one Jupyter kernel runs at a time: two nbval processes side by side lost a kernel at start-up in CI (stop 40:
# "Kernel died before replying to kernel_info"; not reproduced here).
# The kernels' IPython profile and connection files live in the scratch directory, not in $HOME.
export IPYTHONDIR="$scratch/ipython" JUPYTER_RUNTIME_DIR="$scratch/jupyter-runtime"
# Runs' derived values are cached in the scratch directory too (snaptax.derived; default build/derived), and every
# pytest run below reads and fills the same cache (tests/conftest.py), so a run is analysed once in make test: the
# committed runs the printed-values tests analyse are read back by the prose, compare and site tests, and in the
# later steps by the site's browser test, instead of analysed again (2026-12-02: the site alone analysed every
# newest quick run twice, 53 s each time).
export SNAPTAX_DERIVED_DIR="$scratch/derived" SNAPTAX_TEST_DERIVED_DIR="$scratch/derived"
# What git sees before anything runs: reading the committed data (nbval, the claims, compare and the render of the
# committed runs that the committed tests do) must leave it as it was (raw runs stay raw; the printed values file
# is rewritten only when a value prints differently).
status_before="$(git status --porcelain 2>/dev/null || true)"
pids=() names=()
# also on Ctrl-C: a background job of a script ignores SIGINT, so the checks beside are ended here
trap 'for p in ${pids[@]+"${pids[@]}"}; do kill "$p" 2>/dev/null || true; done; rm -rf "$scratch"' EXIT
# and Ctrl-C ends the script itself once its foreground command has ended (pytest handles SIGINT and exits 2,
# after which the script would otherwise wait for the checks beside)
trap 'exit 130' INT
trap 'exit 143' TERM
t0=$SECONDS
stamp() { echo "   ($((SECONDS - t0)) s so far)"; }
beside() {  # beside NAME COMMAND...: an external COMMAND (killed on exit) in the background, its report kept for joined
  local name=$1; shift
  "$@" > "$scratch/beside-${#pids[@]}.log" 2>&1 &
  pids+=($!); names+=("$name")
}
selected() {  # selected VAR=VALUE... COMMAND...: a pytest run; tests named on the command line may all fall in the
  # other half, and pytest's "no tests collected" (exit 5) is then no failure
  local r=0; env "$@" || r=$?
  [ "$r" -eq 0 ] || [ "$r" -eq 5 ] || return "$r"
}
joined() {  # wait for every check beside, print each report in turn; fail with the first that failed
  local rc=0 r i
  for i in "${!pids[@]}"; do
    r=0; wait "${pids[$i]}" || r=$?
    echo "== ${names[$i]} (ran beside)"; cat "$scratch/beside-$i.log"
    [ "$rc" -ne 0 ] || rc=$r
  done
  pids=() names=()
  return "$rc"
}

if [ -x .venv/bin/ruff ]; then
  echo "== ruff"; .venv/bin/ruff check src tests; stamp
fi
[ ! -x .venv/bin/mypy ] || beside mypy .venv/bin/mypy
# The tests of the committed data/ in two processes beside nbval, split by the runs they analyse: the paper
# selection's printed values (its full runs) in one, and in the other the quick selection's printed values first and
# then the tests that read the same quick runs' values back (prose, compare, the site, the claims). A split that put
# the printed values apart from their readers analysed the quick runs twice (537 CPU-s against 377, 2026-12-01).
paper_selection="tests/paper/test_printedvalues.py::test_the_committed_data_print_what_the_committed_file_says[paper]"
beside "pytest -m committed: the paper selection's printed values" \
  .venv/bin/python -m pytest -q -p no:cacheprovider --durations=2 -m committed "$paper_selection"
beside "pytest -m committed: the rest (the committed data/ and paper/)" \
  .venv/bin/python -m pytest -q -p no:cacheprovider --durations=5 -m committed tests --deselect "$paper_selection"

echo "== nbval: committed notebooks against the committed data (checked cells must print what they print now)"
rc=0
.venv/bin/python -m pytest -q -p no:cacheprovider --nbval-lax --nbval-current-env notebooks/ || rc=$?
joined || exit $?
[ "$rc" -eq 0 ] || exit "$rc"
stamp

export SNAPTAX_DATA_DIR="$scratch/data"
# make test measures from the tree as it is (its runs go to the scratch data directory, never into data/)
export SNAPTAX_ALLOW_DIRTY=1
echo "== every notebook measuring at the smoke profile (papermill, measure=True)"
for nb in notebooks/*.ipynb; do
  t=$SECONDS
  .venv/bin/python -m snaptax notebook "$nb" "$scratch/executed/$(basename "$nb")" --profile smoke --measure
  echo "   $(basename "$nb"): $((SECONDS - t)) s"
done
stamp

# The tests that check a whole smoke run read the runs just measured (tests/conftest.py: smoke_run) instead of
# measuring each plan a second time.
echo "== pytest (all but -m committed, which ran beside nbval): the tests that only compute, two at a time"
# -m parallel (tests/conftest.py): analyses, models, the paper's rendering, records and statistics, which measure
# nothing and start nothing; pytest-xdist runs them on both cores. Nothing measures beside them.
# --durations: the slowest tests are named in every log, so a run near the 35-minute budget says where it went.
selected SNAPTAX_SMOKE_DATA="$scratch/data" .venv/bin/python -m pytest -q -p no:cacheprovider -n 2 --durations=8 \
  -m parallel tests "$@"
stamp
echo "== pytest: the rest, one at a time (they measure, start daemons, guests or browsers, or hold machine-wide things)"
selected SNAPTAX_SMOKE_DATA="$scratch/data" .venv/bin/python -m pytest -q -p no:cacheprovider --durations=12 \
  -m "not committed and not parallel" tests "$@"
stamp

echo "== paper from the smoke runs"
cp -r paper "$scratch/paper"
rm -rf "$scratch/paper/generated" "$scratch/paper/figures"
for doc in supplement snaptax; do
  (cd "$scratch/paper" && rm -f "$doc".aux "$doc".bbl "$doc".blg "$doc".fdb_latexmk "$doc".fls "$doc".log "$doc".out \
    "$doc".pdf)
done
.venv/bin/python -m snaptax render --profile smoke --paper-dir "$scratch/paper"
# the supplement first: the paper's body refers into it (xr-hyper reads supplement.aux)
(cd "$scratch/paper" && latexmk -pdf -quiet supplement.tex snaptax.tex >/dev/null 2>&1) || {
  for doc in supplement snaptax; do tail -n 40 "$scratch/paper/$doc.log" || true; done; echo "paper: latexmk failed" >&2
  exit 1; }
# undefined references stop the test; overfull boxes only the quick paper (`make pdf`): smoke values differ in width
for doc in supplement snaptax; do
  .venv/bin/python -m snaptax texlog --allow-overfull "$scratch/paper/$doc.log"
done
# every figure and scaled table prints its smallest text at 7 pt or more (issue 50): the charts are drawn for the
# widths they print at, whatever the data, so the smoke paper is held to it as the quick one is
for doc in supplement snaptax; do
  .venv/bin/python -m snaptax printsize "$scratch/paper/$doc.log"
done
echo "paper: ok ($(pdfinfo "$scratch/paper/snaptax.pdf" 2>/dev/null | awk '/^Pages/{print $2}') pages; supplement" \
  "$(pdfinfo "$scratch/paper/supplement.pdf" 2>/dev/null | awk '/^Pages/{print $2}') pages)"
stamp

status_after="$(git status --porcelain 2>/dev/null || true)"
if [ "$status_after" != "$status_before" ]; then
  echo "make test changed the checkout (git status --porcelain before and after differ):" >&2
  diff <(echo "$status_before") <(echo "$status_after") >&2 || true
  exit 1
fi
echo "checkout unchanged: ok"
