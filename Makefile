# snaptax — three commands: make pdf (reads data/, measures nothing), make paper (measures, root), make test (root)
# Variables: RIG (a file in rigs/, default local), PROFILE (smoke | quick | full, default quick; what `paper`,
#            `notebooks` and `notebooks-commit` measure or open; `pdf`, `render`, `claims` and `site` read the runs
#            named by PROFILE when it is given, else the paper's selection: each study's full run, else its quick one),
#            STUDY (one study id, e.g. chain_length: `notebooks` and `notebooks-commit` run only its notebook),
#            ALLOW_DIRTY=1 (measure although the code has uncommitted changes; the runs keep their diff),
#            FORMAT (make claims: text | markdown | csv | json, default text).
RIG      ?= local
PROFILE  ?= quick
# the runs the reading targets use: PROFILE when it is given (command line or environment), else the paper's
RUNS     := $(if $(filter command line environment,$(origin PROFILE)),$(PROFILE),paper)
STUDY    ?=
FORMAT   ?= text
PY       := .venv/bin/python
NOTEBOOKS := $(sort $(wildcard notebooks/*.ipynb))
# The notebooks a target runs: all of them, or with STUDY=<id> the one named notebooks/NN_<id>.ipynb.
SELECTED := $(if $(STUDY),$(sort $(wildcard notebooks/*_$(STUDY).ipynb)),$(NOTEBOOKS))
export PYTHONDONTWRITEBYTECODE := 1

# A STUDY that names no notebook stops the targets that run notebooks, in one line, before anything starts.
ifneq ($(filter paper notebooks notebooks-commit,$(MAKECMDGOALS)),)
ifeq ($(strip $(SELECTED)),)
$(error STUDY=$(STUDY): no notebook notebooks/*_$(STUDY).ipynb (studies: $(shell ls notebooks/*.ipynb | \
  sed 's|^notebooks/[0-9]*_||; s|\.ipynb$$||' | paste -sd' ')))
endif
endif

.PHONY: help setup setup-read paper pdf notebooks notebooks-commit render claims site compare test unit nbval lab bench clean

help:
	@echo "make paper [RIG=local] [PROFILE=quick] [STUDY=<id>]"
	@echo "                          measure every study (or only STUDY) through its notebook, then build the PDFs"
	@echo "make pdf                  rebuild paper/snaptax.pdf and paper/supplement.pdf from data/ alone (no measuring)"
	@echo "make claims [FORMAT=text] the claims table (published, ours with 95 % CI, verdict) and a tally per seed,"
	@echo "                          from data/ alone; FORMAT=markdown, csv or json (what checks read)"
	@echo "make site                 the interactive offline companion site -> build/site/index.html: the committed"
	@echo "                          notebooks and a page per seed with its claims rows, figures and models'"
	@echo "                          held-out tests, from data/ alone; charts drawn by vendored Vega"
	@echo "                          (tools/site-js.txt, fetched once with npm), nothing online"
	@echo "make compare              every rerun (a run git does not track) against the committed run of its study"
	@echo "make test                 unit + integration tests, nbval on the committed notebooks, paper from smoke data"
	@echo "make unit                 pytest on tests/ (unit and integration tests; no notebooks, no paper)"
	@echo "make nbval                check the committed notebooks' outputs against the committed data/"
	@echo "make notebooks            execute the notebooks, measuring (needs root), into build/notebooks/ [STUDY=<id>]"
	@echo "make notebooks-commit     re-execute the notebooks in place against the committed data/, no measuring [STUDY=<id>]"
	@echo "make render               figures and values for the paper from data/ (what make pdf runs first)"
	@echo "make lab                  JupyterLab on notebooks/ (opens the published runs; no root needed)"
	@echo "make bench                harness and engine benchmarks -> bench/latest.json"
	@echo "make setup                install what is missing: Debian packages, .venv with the exact pins, C plugins"
	@echo "make setup-read           install what reading needs (lab, claims, compare, nbval, pdf): Python and TeX, no root"
	@echo "make clean                remove build/, the generated paper inputs, LaTeX by-products and both PDFs"

setup:
	@bash tools/setup.sh

# Reading only: Python and TeX (tools/apt-packages-read.txt, a subset of tools/apt-packages.txt), no measuring tools,
# no C plugins, and no root when those Debian packages are present. The targets that only read data/ need only this.
setup-read:
	@bash tools/setup.sh --read

# Each notebook is executed by papermill with the rig and profile injected and measure=True (it measures a new
# run and publishes it under data/); the executed copies go to build/notebooks/. Before each: "[k/n] study — expect
# N min; total so far M of ≈T min" (snaptax.expect: the newest measured run of the study, else its plan).
notebooks: setup
	@$(PY) -m snaptax notebooks $(SELECTED) --output-dir build/notebooks --rig $(RIG) --profile $(PROFILE) \
	  --measure $(if $(filter 1,$(ALLOW_DIRTY)),--allow-dirty)

# The committed notebooks are executed against the committed data/ (the newest published run of each study):
# their stored outputs are what `make nbval` checks. In place, with their own parameters (local, quick), and without
# papermill's injected-parameters cell, so that editing the parameters cell in `make lab` does what it says.
notebooks-commit: setup-read
	@$(PY) -m snaptax notebooks $(SELECTED) --in-place --rig $(RIG) --profile $(PROFILE)

render: setup-read
	@$(PY) -m snaptax render --rig $(RIG) --profile $(RUNS)

# The supplement first: the paper's body refers into it (xr-hyper reads paper/supplement.aux), and latexmk reruns
# the body when that file changes (paper/latexmkrc lists both in this order).
pdf: render
	@cd paper && latexmk -pdf -quiet supplement.tex snaptax.tex >/dev/null 2>&1 || \
	  { for d in supplement snaptax; do tail -n 30 $$d.log 2>/dev/null; done; \
	    echo "latexmk failed: see paper/supplement.log and paper/snaptax.log" >&2; exit 1; }
	@$(PY) -m snaptax texlog paper/supplement.log
	@$(PY) -m snaptax texlog paper/snaptax.log
	@# every figure and every scaled table prints its smallest text at 7 pt or more (issue 50), in both documents
	@$(PY) -m snaptax printsize paper/supplement.log
	@$(PY) -m snaptax printsize paper/snaptax.log
	@echo "paper/snaptax.pdf (the paper) and paper/supplement.pdf (its supplement)"

paper: notebooks
	@$(MAKE) --no-print-directory pdf RIG=$(RIG) PROFILE=$(PROFILE)

claims: setup-read
	@$(PY) -m snaptax claims --rig $(RIG) --profile $(RUNS) --format $(FORMAT)

# The site's JavaScript is fetched once (tools/site-js.sh: npm pack, pinned versions and integrity) into
# build/site-js/; the site itself (snaptax.site) executes no notebook and fetches nothing.
site: setup-read
	@bash tools/site-js.sh
	@$(PY) -m snaptax site --rig $(RIG) --profile $(RUNS)

compare: setup-read
	@$(PY) -m snaptax compare --rig $(RIG) --profile $(PROFILE)

test: setup
	@bash tools/test.sh

# Tests write only into temporary directories; a private data directory makes sure of it for data/.
unit: setup
	@d="$$(mktemp -d /var/tmp/snaptax-unit.XXXXXX)"; trap 'rm -rf "$$d"' EXIT; \
	  SNAPTAX_DATA_DIR="$$d/data" $(PY) -m pytest -q -p no:cacheprovider tests/

nbval: setup-read
	@$(PY) -m pytest -q -p no:cacheprovider --nbval --nbval-current-env notebooks/

# Jupyter refuses to run as root unless told: add --allow-root only for root.
lab: setup-read
	@.venv/bin/jupyter lab $$([ "$$(id -u)" -eq 0 ] && echo --allow-root) notebooks/

bench: setup
	@$(PY) -m snaptax bench

clean:
	@cd paper && latexmk -C supplement.tex snaptax.tex >/dev/null 2>&1 || true
	@rm -rf build paper/generated paper/figures
