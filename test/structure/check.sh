#!/usr/bin/env bash
# The house's rules on the tree (rooms, header loops, file sizes, the suite
# list, the settings table, formatting): test/structure/check.py, then the
# same checks against planted defects, each of which must be caught.
set -u
cd "$(dirname "$0")/../.."
rc=0
python3 test/structure/check.py . || rc=1
python3 test/structure/check.py --self-test . || rc=1
exit $rc
