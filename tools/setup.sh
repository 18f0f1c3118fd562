#!/usr/bin/env bash
# Install what snaptax needs, from the repository's own files. Idempotent: a second run only checks.
#   tools/setup.sh          make setup: everything, measuring included
#   tools/setup.sh --read   make setup-read: reading only (make lab, claims, compare, nbval, render, pdf): Python
#                           and TeX, none of the measuring tools and no C plugins; no root when the packages are there
#   Debian packages: tools/apt-packages.txt, or with --read tools/apt-packages-read.txt (a subset of it)
#                    (apt-get, via sudo when not root, and only for what is missing)
#   Python:          requirements.txt (exact pins) into .venv, plus the package itself and a Jupyter kernel
#   JavaScript:      (not with --read) the companion site's (make site), pinned in tools/site-js.txt, by
#                    tools/site-js.sh into build/site-js/ (make site runs it too)
#   C:               (not with --read) the nbdkit plugins of the cofw engine and the spindle emulator, rebuilt
#                    when a source is newer; $CC picks the compiler (default gcc)
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
  "")     mode=all;  packages=tools/apt-packages.txt ;;
  --read) mode=read; packages=tools/apt-packages-read.txt ;;
  *)      echo "usage: tools/setup.sh [--read]" >&2; exit 2 ;;
esac

missing=()
while read -r pkg; do
  pkg="${pkg%%#*}"; pkg="${pkg// /}"
  [ -z "$pkg" ] && continue
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done < "$packages"

if [ ${#missing[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null; then
    echo "setup: missing Debian packages (${missing[*]}) and no apt-get on this machine" >&2; exit 1
  fi
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "setup: installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PY="${PYTHON:-python3}"
stamp=.venv/.snaptax-setup
want="$(sha256sum requirements.txt pyproject.toml | sha256sum | cut -c1-16)"
# also when the package itself is not importable (an editable install removed by hand or by another checkout)
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] \
   || ! .venv/bin/python -c "import snaptax" 2>/dev/null; then
  echo "setup: building .venv from requirements.txt"
  [ -x .venv/bin/python ] || "$PY" -m venv .venv
  .venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps -e .
  .venv/bin/python -m ipykernel install --sys-prefix --name snaptax --display-name "snaptax (.venv)" >/dev/null
  echo "$want" > "$stamp"
fi

# Reading needs no compiled plugin: only measuring serves the cofw engine or the compiled emulator.
[ "$mode" = read ] && exit 0

# The companion site's vendored JavaScript (make site fetches it itself; here for the tests that build the site).
bash tools/site-js.sh

# The C plugins (cofw engine, spindle emulator). A missing compiler or header package is one line naming the Debian
# package.
PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" .venv/bin/python -m snaptax build-plugin
