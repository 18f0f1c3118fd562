#!/usr/bin/env bash
# The companion site's JavaScript (tools/site-js.txt) into build/site-js/<name>-<version>/: each package's tarball
# fetched once with `npm pack` (npm's own client and cache), its integrity checked against the pin, and only the
# listed files extracted. Idempotent: a package whose files are all there is not fetched again. make setup and
# make site run it; nothing else fetches, and the site never loads anything from the network.
set -euo pipefail
cd "$(dirname "$0")/.."
pins=tools/site-js.txt
dest=build/site-js

needed=()
while read -r name version integrity files; do
  case "$name" in ""|\#*) continue ;; esac
  for f in $files; do
    [ -f "$dest/$name-$version/$f" ] || { needed+=("$name $version $integrity $files"); break; }
  done
done < "$pins"
[ ${#needed[@]} -eq 0 ] && exit 0

if ! command -v npm >/dev/null; then
  echo "site-js: the site's JavaScript needs npm to fetch it once (Debian package npm)" >&2; exit 1
fi
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
for line in "${needed[@]}"; do
  read -r name version integrity files <<< "$line"
  echo "site-js: fetching $name@$version (npm pack)"
  tarball="$scratch/$(npm pack "$name@$version" --pack-destination "$scratch" --silent | tail -n 1)"
  got="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
  if [ "$got" != "$integrity" ]; then
    echo "site-js: $name@$version: the tarball's integrity is $got, tools/site-js.txt pins $integrity" >&2; exit 1
  fi
  out="$dest/$name-$version"
  rm -rf "$out.tmp" && mkdir -p "$out.tmp"
  # shellcheck disable=SC2086
  tar -xzf "$tarball" -C "$out.tmp" --strip-components=1 $(printf 'package/%s ' $files)
  rm -rf "$out" && mv "$out.tmp" "$out"
done
