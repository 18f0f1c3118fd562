# snaptax — the two commands a new user needs:  make paper   and   make test
# Variables: RIG (a file in rigs/, default local), PROFILE (smoke | quick | full, default quick).
RIG      ?= local
PROFILE  ?= quick
PY       := .venv/bin/python
NOTEBOOKS := $(sort $(wildcard notebooks/*.ipynb))
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: setup paper pdf notebooks render test unit nbval lab bench clean help

help:
	@echo "make paper [RIG=local] [PROFILE=quick]  measure every study, then build paper/snaptax.pdf"
	@echo "make pdf                                rebuild the PDF from data/ alone (no measuring)"
	@echo "make test                               unit + integration tests, nbval on every notebook (smoke)"
	@echo "make lab                                JupyterLab on the notebooks"
	@echo "make bench                              harness and engine benchmarks -> bench/latest.json"

setup:
	@bash tools/setup.sh

# Each notebook is executed by papermill with the rig and profile injected; the executed copies go to build/.
notebooks: setup
	@mkdir -p build/notebooks
	@set -e; for nb in $(NOTEBOOKS); do \
	  $(PY) -m snaptax notebook "$$nb" "build/notebooks/$$(basename $$nb)" --rig $(RIG) --profile $(PROFILE); \
	done

render: setup
	@$(PY) -m snaptax render --rig $(RIG) --profile $(PROFILE)

pdf: render
	@cd paper && latexmk -pdf -quiet snaptax.tex >/dev/null 2>&1 || \
	  { tail -n 30 paper/snaptax.log 2>/dev/null; echo "latexmk failed: see paper/snaptax.log" >&2; exit 1; }
	@echo "paper/snaptax.pdf"

paper: notebooks
	@$(MAKE) --no-print-directory pdf RIG=$(RIG) PROFILE=$(PROFILE)

test: setup
	@bash tools/test.sh

lab: setup
	@.venv/bin/jupyter lab notebooks/

bench: setup
	@$(PY) -m snaptax bench

clean:
	@cd paper && latexmk -C snaptax.tex >/dev/null 2>&1 || true
	@rm -rf build paper/generated paper/figures
