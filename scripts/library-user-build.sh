#!/usr/bin/env bash
# A library user's first build (docs/internals/performance.md, "Building"): a fresh crate whose one
# test parses a scenario, with this checkout's `acp-chaos` library as its only dev-dependency,
# built from an empty target folder in cargo's default dev profile.
#
#   scripts/library-user-build.sh [CHECKOUT] [DIR]
#
# CHECKOUT: an acp-chaos checkout (default: this one); DIR: a new or empty folder where the crate
# is made (default: a new temporary folder). Prints the crate count and `/usr/bin/time`'s wall and CPU seconds.
set -euo pipefail
repo="$(cd "${1:-$(dirname "$0")/..}" && pwd)"
dir="${2:-$(mktemp -d)}"
# Never over a folder that holds anything: the crate is made from nothing.
if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
  echo "library-user-build: $dir is not empty; give a new or empty folder" >&2
  exit 2
fi
mkdir -p "$dir/tests" "$dir/src" "$dir/.cargo"
cat > "$dir/Cargo.toml" <<EOT
[package]
name = "library-user"
version = "0.1.0"
edition = "2021"

[dev-dependencies]
acp-chaos = { path = "$repo/sim" }

# The checkout's turmoil (vendor/turmoil/NOTE.md); without it the step loop steps every tick.
[patch.crates-io]
turmoil = { path = "$repo/vendor/turmoil" }
EOT
printf '[build]\nrustflags = ["--cfg", "tokio_unstable"]\n' > "$dir/.cargo/config.toml"
: > "$dir/src/lib.rs"
cat > "$dir/tests/t.rs" <<'EOT'
#[test]
fn parses() {
    let s = acp_chaos::scenario::Scenario::parse(std::path::Path::new("x.toml"), "name = \"x\"\n");
    let _ = s;
}
EOT
# The checkout's versions, so both sides of a comparison build the same dependencies.
cp "$repo/Cargo.lock" "$dir/Cargo.lock"
cd "$dir"
echo "crates: $(cargo tree -e normal,dev --prefix none | sed 's/ (\*)//' | sort -u | wc -l)"
/usr/bin/time -f "first build: %e s wall, %U s user + %S s system CPU" cargo test --no-run -q
