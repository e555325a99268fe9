#!/usr/bin/env bash
# docs/citus.md's trial, as written: docs/setup/citus-trial.sh starts a
# coordinator and two workers, the page's first statements run on them,
# and its stop stops them and removes the directory. Prints PASS/FAIL
# lines, or one SKIP line where there is no Citus.
set -u
. scripts/lib.sh
. scripts/roots.sh
. scripts/citus.sh

citus_suite

cwork=$(pg_tmpdir)
trap 'rm -rf "$cwork"' EXIT

# --- 7: docs/citus.md's trial, as written -------------------------------------------
# su postgres -c 'sh -s' < docs/setup/citus-trial.sh, with its own directory
# and ports; then the page's first statements on it, and its stop.
trial=$cwork/trial
tport=$(test_port 18780)
out=$(as_pg env DIR="$trial" PG_PORT=$tport PG_BIN="$PG_BIN" sh -s <docs/setup/citus-trial.sh 2>&1)
check "citus-trial.sh: a coordinator and two workers, each node's id its group" "c (port $tport): citus, configured, node id 0
w1 (port $((tport + 1))): citus, configured, node id 1
w2 (port $((tport + 2))): citus, configured, node id 2
psql -h 127.0.0.1 -p $tport -d postgres   # the coordinator; the workers are on $((tport + 1)) and $((tport + 2))" "$out"
# When it did not come up, what it said and what the servers logged, on
# one line each (a run's log keeps only its PASS/FAIL lines).
if ! grep -q "^w2 (port" <<<"$out"; then
    echo "FAIL citus-trial.sh said: $(tr '\n' '|' <<<"$out" | cut -c1-800)"
    for n in c w1 w2; do
        [ -f "$trial/$n.log" ] && echo "FAIL citus-trial.sh's $n.log: $(grep -E 'ERROR|FATAL|PANIC' "$trial/$n.log" | tail -5 | tr '\n' '|' | cut -c1-800)"
    done
fi
got=$(as_pg "$PG_BIN/psql" -X -q -At -h 127.0.0.1 -p $tport -d postgres \
    -c "CREATE TABLE events (id bigint DEFAULT next_trace_id(), tenant int NOT NULL, payload jsonb)" \
    -c "SELECT create_distributed_table('events', 'tenant')" \
    -c "INSERT INTO events (tenant, payload) VALUES (42, '{}') RETURNING (trace_id_decode(id)).node_no" 2>&1 | tail -1)
check "... the page's distributed table takes an ID from the coordinator, group 0" "0" "$got"
check "... and a worker's DecimalId carries a generator id the coordinator handed out" "t" \
    "$(as_pg "$PG_BIN/psql" -X -At -h 127.0.0.1 -p $((tport + 1)) -d postgres -c "SELECT (decimal_id_decode(next_decimal_id())).generator_id > 0" 2>&1)"
as_pg env DIR="$trial" PG_PORT=$tport sh -s stop <docs/setup/citus-trial.sh
check "citus-trial.sh stop: the servers stop, the directory goes" "gone" \
    "$([ ! -e "$trial" ] && ! pgrep -f "$trial/" >/dev/null && echo gone)"

