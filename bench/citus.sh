#!/usr/bin/env bash
# Inserts per second into a distributed table on Citus (a coordinator and two
# workers with metadata, PostgreSQL 15, shardid.node_id_source = citus), in
# one run, with the key's default each way a Citus user would write it:
# next_trace_id(), next_snowflake_id(), bigserial and gen_random_uuid().
# Each is loaded through the coordinator alone, then through all three
# nodes at once (pgbench, CLIENTS connections in all, SECONDS each), in
# ROUNDS interleaved rounds; the table gives the best round of each and
# the ratio to bigserial. Then the properties, each backed by
# test/citus/ids.sh. scripts/bench.sh runs it (section 5d); prints one
# SKIP line where Citus cannot be had (scripts/citus.sh).
#   bash bench/citus.sh [SECONDS ROUNDS CLIENTS]
set -u
cd "$(dirname "$0")/.."
. scripts/lib.sh
. scripts/roots.sh
. scripts/citus.sh
SECONDS_EACH=${1:-10}; ROUNDS=${2:-3}; CLIENTS=${3:-6}

citus_available >/dev/null
case $? in 0) ;; 2) echo "  (skipped: $(citus_source 2>&1 >/dev/null))"; exit 0 ;; *) echo "  (Citus did not build)"; exit 1 ;; esac
cwork=$(pg_tmpdir)
trap 'cnodes_stop; rm -rf "$cwork"' EXIT
base=18800
i=0
for n in c w1 w2; do
    cnode_up "$n" $((base + i++)) "shardid.node_id_source = citus" "shared_buffers = '256MB'" "jit = off" \
        "max_wal_size = '4GB'" "synchronous_commit = off" || { echo "  (a Citus node did not start)"; exit 1; }
done
cq c -c "SELECT citus_set_coordinator_host('127.0.0.1', $base)" >/dev/null
cnode_add w1 && cnode_add w2 && cq c -c "CREATE EXTENSION shardid" >/dev/null || { echo "  (the cluster did not form)"; exit 1; }

kinds=(trace snowflake bigserial uuid)
declare -A column=([trace]="id bigint DEFAULT next_trace_id()" [snowflake]="id bigint DEFAULT next_snowflake_id()"
    [bigserial]="id bigserial" [uuid]="id uuid DEFAULT gen_random_uuid()")
declare -A label=([trace]="next_trace_id()" [snowflake]="next_snowflake_id()" [bigserial]="bigserial"
    [uuid]="gen_random_uuid()")
for k in "${kinds[@]}"; do
    cq c -c "CREATE TABLE bench_$k (${column[$k]}, tenant int NOT NULL, note text)" \
        -c "SELECT create_distributed_table('bench_$k', 'tenant', shard_count := 32)" >/dev/null
    printf '\\set t random(1, 100000)\nINSERT INTO bench_%s (tenant, note) VALUES (:t, '"'"'x'"'"');\n' "$k" |
        as_pg tee "$cwork/$k.sql" >/dev/null
done

# pgbench against PORT with N clients for the kind's script: its tps.
tps() {  # KIND PORT N
    as_pg "$PG_BIN/pgbench" -h 127.0.0.1 -p "$2" -U postgres -n -c "$3" -j "$3" -T "$SECONDS_EACH" \
        -f "$cwork/$1.sql" postgres 2>/dev/null | sed -n 's/^tps = \([0-9.]*\) .*/\1/p' | head -1
}
declare -A best_one best_all
for _ in $(seq "$ROUNDS"); do
    for k in "${kinds[@]}"; do
        one=$(tps "$k" "$base" "$CLIENTS")
        per=$((CLIENTS / 3 > 0 ? CLIENTS / 3 : 1))
        tps "$k" "$base" "$per" >"$cwork/tps_a" & tps "$k" $((base + 1)) "$per" >"$cwork/tps_b" &
        tps "$k" $((base + 2)) "$per" >"$cwork/tps_c"
        wait
        all=$(cat "$cwork/tps_a" "$cwork/tps_b" "$cwork/tps_c" | awk '{s += $1} END {printf "%.0f", s}')
        best_one[$k]=$(awk -v a="${one:-0}" -v b="${best_one[$k]:-0}" 'BEGIN {printf "%.0f", (a > b ? a : b)}')
        best_all[$k]=$(awk -v a="$all" -v b="${best_all[$k]:-0}" 'BEGIN {printf "%.0f", (a > b ? a : b)}')
    done
done
dups=$(cq c -c "SELECT count(*) - count(DISTINCT id) FROM bench_trace")
echo "Citus $CITUS_VERSION, a coordinator and two workers on this machine, 32 shards, $CLIENTS clients, best of $ROUNDS rounds of ${SECONDS_EACH} s (rows per second):"
echo
echo "| default of the key | through the coordinator | through all three nodes | vs bigserial (coordinator / all) |"
echo "|---|---:|---:|---:|"
for k in "${kinds[@]}"; do
    awk -v l="${label[$k]}" -v o="${best_one[$k]}" -v a="${best_all[$k]}" -v bo="${best_one[bigserial]}" \
        -v ba="${best_all[bigserial]}" 'BEGIN {printf "| `%s` | %d | %d | %.2f / %.2f |\n", l, o, a,
            (bo > 0 ? o / bo : 0), (ba > 0 ? a / ba : 0)}'
done
echo
echo "(duplicates among the $(cq c -c "SELECT count(*) FROM bench_trace") next_trace_id() rows: $dups)"
echo
echo "| property | next_trace_id() (node id = Citus group) | bigserial on Citus | gen_random_uuid() |"
echo "|---|---|---|---|"
echo "| ordered by time across nodes | yes (to the second; per node to the ID) | no: each node has its own range, group id << 48 | no |"
echo "| decodes to time and node | yes: trace_id_decode() | no | no |"
echo "| defaults evaluated on workers (MX, INSERT ... SELECT) | yes, unique (test/citus/ids.sh) | yes, from the worker's range | yes |"
echo "| fits an int or smallint column | no: 64 bits | no from workers: Citus refuses | no: 128 bits |"
echo "| configuration | one line on every node: shardid.node_id_source = citus | none | none |"
