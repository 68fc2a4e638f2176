#!/usr/bin/env bash
# Run every pruned schedule of the k=2 certificates of the seven RFD traces under every design,
# with the correct models and under the mutants that need a fault placement, and print one
# line per certificate: explored, pruned, audited, placement deltas that differ from their
# representative's, violations, CPU seconds and peak RSS (docs/explore.md, "Pruning").
#
# Usage: scripts/audit-pruning.sh [OUT_DIR] [MUTANT...]
#   (default mutants: none keys-per-connection held-retry-errors cluster-check-then-insert
#    no-dedup record-unsynced two-step-write error-after-insert key-recorded-on-arrival
#    new-key-per-attempt cluster-node-local-keys)
# Needs an acp-chaos binary (ACP_CHAOS_BIN, else target/release/acp-chaos). A mutant that does
# not apply to a design is skipped. Exit 1 if any certificate's audit found a differing delta.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/reports/audit-pruning}"
shift || true
bin="${ACP_CHAOS_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/acp-chaos}"
mutants=("$@")
if [ ${#mutants[@]} -eq 0 ]; then
  mutants=(none keys-per-connection held-retry-errors cluster-check-then-insert no-dedup
    record-unsynced two-step-write error-after-insert key-recorded-on-arrival
    new-key-per-attempt cluster-node-local-keys)
fi
traces=(rfd-01-retry-same-connection rfd-02-retry-after-resume-new-connection
  rfd-03-retry-after-agent-restart rfd-04-retry-while-held rfd-05-retry-after-error
  rfd-06-same-key-other-session rfd-07-retry-inserted-during-active-work)
mkdir -p "$out"
bad=0
printf '| mutant | trace | design | explored | pruned | audited | differ | violations | CPU s | max RSS MB |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
for m in "${mutants[@]}"; do
  for t in "${traces[@]}"; do
    for d in in-memory stored adapter cluster; do
      dir="$out/$m-$t-$d"
      args=(explore "$t" --agent "$d" --faults 2 --audit-pruning all --out "$dir")
      [ "$m" != none ] && args+=(--mutant "$m")
      log="$dir.log"
      set +e
      /usr/bin/time -f '%U %S %M' -o "$dir.time" "$bin" "${args[@]}" >"$log" 2>&1
      code=$?
      set -e
      if [ $code -eq 2 ]; then
        continue # the mutant does not apply to this design
      fi
      read -r user sys rss < <(tail -n 1 "$dir.time")
      cpu=$(echo "$user + $sys" | bc)
      line=$(grep '^explored:' "$log" | head -1)
      audit=$(grep '^pruning audited' "$log" | head -1)
      explored=$(echo "$line" | sed -E 's/^explored: ([0-9]+) .*/\1/')
      pruned=$(echo "$line" | sed -E 's/.*, ([0-9]+) pruned.*/\1/')
      viol=$(echo "$line" | sed -E 's/.*, ([0-9]+) violations.*/\1/')
      audited=$(echo "$audit" | sed -E 's/^pruning audited on ([0-9]+) .*/\1/')
      differ=$(echo "$audit" | sed -E 's/.*: ([0-9]+) differ.*/\1/')
      [ -z "$audit" ] && audited=0 && differ=0
      [ "$differ" != 0 ] && bad=1
      printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$m" "${t:0:6}" "$d" \
        "$explored" "$pruned" "$audited" "$differ" "$viol" "$cpu" "$((rss / 1024))"
    done
  done
done
exit $bad
