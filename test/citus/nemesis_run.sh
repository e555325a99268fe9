#!/usr/bin/env bash
# The Citus nemesis (docs/testing.md): a coordinator and two workers, each
# with a synchronous standby, clients on every node with every scheme, and
# a seeded schedule of Citus' own faults (test/citus/nemesis.py); then
# test/citus/checker.py judges the history and the tables read back.
#   bash test/citus/nemesis_run.sh --seconds N --seed S|fresh [--control same-group]
# Exit status 0 exactly when there is no anomaly (for the control: exactly
# when it finds duplicates). The history stays in the directory it prints.
# Installs what it needs (Citus built from ../shared/vendor, psycopg2);
# uses the installed shardid (the test command installs it; alone, run
# `make install` first).
set -u
cd "$(dirname "$0")/../.."
. scripts/lib.sh
. scripts/roots.sh
. scripts/citus.sh
ensure_packages "/usr/lib/python3/dist-packages/psycopg2/__init__.py:python3-psycopg2" "/usr/bin/pgrep:procps" ||
    { echo "could not install what the run needs"; exit 1; }
citus_available
case $? in 0) ;; 2) exit 2 ;; *) exit 1 ;; esac
control=()
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    [ "${args[$i]}" = --control ] && control=(--control duplicates)
    [ "${args[$i]}" = --seed ] && [ "${args[$((i + 1))]:-}" = fresh ] && args[$((i + 1))]=$(date +%s)
done
out=$(mktemp -d /tmp/shardid-citus-nemesis.XXXXXX)
chmod 755 "$out"
[ "$(id -u)" = 0 ] && chown postgres: "$out"
PG_BIN=$PG_BIN NEMESIS_OUT=$out /usr/bin/python3 test/citus/nemesis.py "${args[@]}" || { echo "the run did not complete"; exit 1; }
/usr/bin/python3 test/citus/checker.py "$out" "${control[@]}"
