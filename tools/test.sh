#!/usr/bin/env bash
# make test: pytest (unit + integration) and nbval on every notebook at the smoke profile.
# Measured data of test runs goes to a temporary data directory, never into the checkout's data/.
set -euo pipefail
cd "$(dirname "$0")/.."
export SNAPTAX_DATA_DIR="$(mktemp -d /var/tmp/snaptax-testdata.XXXXXX)"
trap 'rm -rf "$SNAPTAX_DATA_DIR"' EXIT
.venv/bin/python -m pytest -q tests "$@"
# nbval: every notebook re-executed at its committed parameters (profile smoke); cells marked
# NBVAL_CHECK_OUTPUT must reproduce their stored output exactly.
.venv/bin/python -m pytest -q -p no:cacheprovider --nbval-lax --nbval-current-env notebooks/
