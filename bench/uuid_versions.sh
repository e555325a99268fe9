#!/usr/bin/env bash
# UUID keys on the PostgreSQL of $PG_MAJOR, in one run: next_uuidv7()
# against gen_random_uuid() and, from PostgreSQL 18, uuidv7(): the cost per
# UUID (fastest of REPS interleaved rounds of N in one SELECT), and a bulk
# INSERT of ROWS rows keyed by each (its time, and the primary key's size).
# scripts/bench.sh runs it on 15 and, in their Debian roots, on 17 and 18.
#   PG_MAJOR=18 bash bench/uuid_versions.sh [N REPS ROWS]
set -eu
cd "$(dirname "$0")/.."
. scripts/lib.sh
N=${1:-1000000}; REPS=${2:-5}; ROWS=${3:-1000000}

dir=$(pg_tmpdir)
port=15480
trap 'cluster_stop "$dir" immediate; rm -rf "$dir"' EXIT
cluster_init "$dir" "shared_preload_libraries = 'shardid'" "shardid.node_id = 7" "shared_buffers = '256MB'" \
    "jit = off" "max_wal_size = '4GB'" >/dev/null
cluster_start "$dir" "$port"
export PGOPTIONS="-c client_min_messages=warning"
q -c "CREATE EXTENSION shardid" -c "CREATE TABLE cost (expr text, ns float8)" -c "CREATE TABLE bulk (expr text, ms float8, bytes bigint)"
exprs=("next_uuidv7()" "gen_random_uuid()")
[ "$(q -c "SELECT current_setting('server_version_num')::int >= 180000")" = t ] && exprs+=("uuidv7()")

for _ in $(seq "$REPS"); do
    for e in "${exprs[@]}"; do
        q -c "INSERT INTO cost SELECT '$e', extract(epoch FROM clock_timestamp() - t0) * 1e9 / $N
              FROM (SELECT clock_timestamp() AS t0) t, LATERAL (SELECT count($e) FROM generate_series(1, $N)) g"
    done
done
for e in "${exprs[@]}"; do
    t="k_$(tr -dc 'a-z0-9' <<<"$e")"
    q -c "CREATE TABLE $t (id uuid PRIMARY KEY DEFAULT $e, payload text)" -c "CHECKPOINT" \
      -c "DO \$\$ DECLARE t0 timestamptz := clock_timestamp(); BEGIN
            INSERT INTO $t (payload) SELECT 'p' FROM generate_series(1, $ROWS);
            INSERT INTO bulk VALUES ('$e', extract(epoch FROM clock_timestamp() - t0) * 1000, pg_relation_size('${t}_pkey'));
          END \$\$"
done
echo "## UUID keys, PostgreSQL $(q -c 'SHOW server_version' | cut -d' ' -f1): per UUID (fastest of $REPS rounds of $N), and a bulk INSERT of $ROWS rows"
PGOPTIONS="-c client_min_messages=warning" cluster_psql "$dir" "$port" -P footer=off -c "
SELECT c.expr AS \"generator\", round(min(c.ns)::numeric, 1) AS \"ns/UUID\",
       round((min(c.ns) / (SELECT min(ns) FROM cost WHERE expr = 'gen_random_uuid()'))::numeric, 2) AS \"x gen_random_uuid()\",
       round(b.ms::numeric) AS \"bulk INSERT ms\", pg_size_pretty(b.bytes) AS \"primary key\"
FROM cost c JOIN bulk b USING (expr) GROUP BY c.expr, b.ms, b.bytes ORDER BY min(c.ns)"
