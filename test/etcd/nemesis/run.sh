#!/usr/bin/env bash
# A fault-injection run in Jepsen's manner, judged from the clients' history:
#   bash test/etcd/nemesis/run.sh --seconds N --seed S|fresh [--control same-id|no-mark]
# test/etcd/nemesis/nemesis.py runs the system under test (four PostgreSQL nodes
# with node ids from a three-member etcd, every link through a proxy it can
# cut), the clients and the seeded fault schedule, printing a line per
# fault; test/etcd/nemesis/checker.py then judges the history and prints the
# summary, ending with "anomalies: N (...), M operations". Exit status 0
# exactly when there is no anomaly (for a control: exactly when it finds the
# kind of anomaly the control exists for: same-id duplicates, no-mark IDs
# below a previous holder).
# The history and the schedule stay in the directory the run prints; the
# same seed gives the same schedule. Installs the packages it needs; uses
# the installed shardid (the test command installs it; alone, run `make
# install` first).
set -u
cd "$(dirname "$0")/../../.."
. scripts/lib.sh
# What it needs when run alone (the test command installs these anyway).
ensure_packages "/usr/lib/python3/dist-packages/psycopg2/__init__.py:python3-psycopg2" "/usr/bin/etcd:etcd-server" \
    "/usr/bin/etcdctl:etcd-client" "/usr/bin/pgrep:procps" || { echo "could not install what the run needs"; exit 1; }
control=()
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    # A control's checker wants the anomaly kind it exists for.
    [ "${args[$i]}" = --control ] && case ${args[$((i + 1))]:-} in
        same-id) control=(--control duplicates) ;;
        no-mark) control=(--control "below a previous holder") ;;
    esac
    # --seed fresh: a new seed, printed with the history's directory.
    [ "${args[$i]}" = --seed ] && [ "${args[$((i + 1))]:-}" = fresh ] && args[$((i + 1))]=$(date +%s)
done
out=$(mktemp -d /tmp/shardid-nemesis-history.XXXXXX)
chmod 755 "$out"
PG_BIN=$PG_BIN NEMESIS_OUT=$out /usr/bin/python3 test/etcd/nemesis/nemesis.py "${args[@]}" || { echo "the run did not complete"; exit 1; }
/usr/bin/python3 test/etcd/nemesis/checker.py "$out" "${control[@]}"
