#!/usr/bin/env bash
# Render a 3-participant report.html, a 5-participant (cluster) report.html, a timeline.html
# and summary.html in headless Chromium, as PNGs, to check by eye that nothing is clipped
# (docs/reports.md). Installs nothing: it uses the chromium on PATH or /usr/bin/chromium
# (Debian/Ubuntu: `apt-get install -y chromium`) and an acp-chaos binary (ACP_CHAOS_BIN, else
# target/release/acp-chaos, built with `cargo build --release` first).
#
# Usage: scripts/screenshots.sh [OUT_DIR]      (default: reports/screenshots)
# Writes OUT_DIR/{report-3.png,report-5.png,timeline-5.png,summary.png} and the two campaign
# folders it drew them from (OUT_DIR/campaign-3, OUT_DIR/campaign-5).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/reports/screenshots}"
bin="${ACP_CHAOS_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/acp-chaos}"
browser="$(command -v chromium || command -v chromium-browser || true)"
[ -z "$browser" ] && [ -x /usr/bin/chromium ] && browser=/usr/bin/chromium
if [ -z "$browser" ]; then
  echo "screenshots.sh: no chromium found (install it: apt-get install -y chromium)" >&2
  exit 2
fi
if [ ! -x "$bin" ]; then
  echo "screenshots.sh: no acp-chaos binary at $bin (cargo build --release, or set ACP_CHAOS_BIN)" >&2
  exit 2
fi
mkdir -p "$out"
out="$(cd "$out" && pwd)"

campaign() { # name scenario design mutant
  # A mutant campaign exits 1 (it finds the bug): that is the point.
  "$bin" run "$2" --agent "$3" --mutant "$4" --seeds 2 --no-progress \
    --scenarios "$root/scenarios" --out "$out/$1" >/dev/null || [ $? -eq 1 ]
}
campaign campaign-3 rfd-02-retry-after-resume-new-connection stored no-dedup
campaign campaign-5 cluster-01-retry-on-another-node cluster cluster-node-local-keys

shot() { # png url width height
  local profile
  profile="$(mktemp -d)"
  "$browser" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --hide-scrollbars \
    --user-data-dir="$profile" --screenshot="$1" --window-size="$3,$4" "$2" >/dev/null 2>&1
  rm -rf "$profile"
  [ -s "$1" ] || { echo "screenshots.sh: chromium wrote no $1" >&2; exit 1; }
  echo "$1"
}
shot "$out/report-3.png" "file://$out/campaign-3/rfd-02-retry-after-resume-new-connection-stored-seed0/report.html" 1400 2600
shot "$out/report-5.png" "file://$out/campaign-5/cluster-01-retry-on-another-node-cluster-seed0/report.html" 1400 2600
shot "$out/timeline-5.png" "file://$out/campaign-5/cluster-01-retry-on-another-node-cluster-seed0/timeline.html" 1400 1400
shot "$out/summary.png" "file://$out/campaign-5/summary.html" 1400 1000
