#!/usr/bin/env bash
# check-size.sh: fail when a file tracked by git is over 1 MiB. Build output
# (a binary of bench/ once made it into the tree) and data do not belong in
# git; .gitignore keeps built binaries out, and this keeps anything large
# from coming back unnoticed.
set -euo pipefail
cd "$(dirname "$0")/.."
limit=$((1024 * 1024))
status=0
while IFS= read -r -d '' f; do
	[ -f "$f" ] || continue
	size=$(stat -c '%s' -- "$f")
	if [ "$size" -gt "$limit" ]; then
		echo "tracked file over 1 MiB: $f ($size bytes); remove it from git (git rm --cached) and list it in .gitignore" >&2
		status=1
	fi
done < <(git ls-files -z)
exit $status
