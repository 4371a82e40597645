#!/usr/bin/env bash
# Fails when a tracked source file is over 1,000 lines (STYLE.md: aim under 600, never over 1,000).
set -euo pipefail
cd "$(dirname "$0")/.."
limit=1000
bad=0
while IFS= read -r f; do
    n=$(wc -l < "$f")
    if [ "$n" -gt "$limit" ]; then
        echo "check_sizes: $f has $n lines (the limit is $limit): split it by what it owns" >&2
        bad=1
    fi
done < <(git ls-files 'src/*.cpp' 'src/*.h' 'src/*.comp' 'tests/*.cpp' 'tests/*.h' 'tests/*.py' 'tools/*.cpp' \
                        'tools/*.py' 'bench/*.py' 'scripts/*.sh' 'scripts/*.py')
[ "$bad" = 0 ] && echo "check_sizes: every source file is at most $limit lines"
exit "$bad"
