#!/usr/bin/env python3
"""Every relative `](path)` link in README.md and docs/**/*.md must point at an existing file or
folder, relative to the file it is in. http(s)/mailto links and pure anchors are skipped; a
`#anchor` after a path is ignored. Links inside fenced code blocks are not links."""
import os, re, sys, glob
root = sys.argv[1] if len(sys.argv) > 1 else "."
files = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "**", "*.md"), recursive=True))
extra = [os.path.join(root, p) for p in ("scenarios/README.md", "reports/README.md", "spec/README.md")]
link = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
bad = checked = 0
for f in files + extra:
    in_code = False
    for n, line in enumerate(open(f, encoding="utf-8"), 1):
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        for target in link.findall(line):
            if re.match(r"^(https?:|mailto:)", target) or target.startswith("#"):
                continue
            path = target.split("#", 1)[0]
            checked += 1
            full = os.path.normpath(os.path.join(os.path.dirname(f), path))
            if not os.path.exists(full):
                bad += 1
                print(f"BROKEN {os.path.relpath(f, root)}:{n}: {target}")
print(f"{len(files + extra)} files, {checked} relative links checked, {bad} broken")
sys.exit(1 if bad else 0)
