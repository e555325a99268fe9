#!/usr/bin/env bash
# pg_dump/pg_restore of a database with shardid defaults and a user layout:
# the layout comes back unchanged and new IDs sort above the restored ones.
# Needs SHARDID_TEST_HOST and SHARDID_TEST_PORT (a server with shardid
# installed and shardid.node_id set). Prints PASS/FAIL lines.
set -u
export PGHOST=$SHARDID_TEST_HOST PGPORT=$SHARDID_TEST_PORT PGUSER=postgres
q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
check() {  # NAME EXPECTED ACTUAL
    if [ "$2" = "$3" ]; then echo "PASS $1"; else echo "FAIL $1: expected '$2', got '$3'"; fi
}
dump=$(mktemp)
trap 'rm -f "$dump"' EXIT

q -d postgres -c "DROP DATABASE IF EXISTS dump_src" -c "DROP DATABASE IF EXISTS dump_dst" \
  -c "CREATE DATABASE dump_src" -c "CREATE DATABASE dump_dst"
q -d dump_src <<'SQL'
CREATE EXTENSION shardid;
SELECT create_layout('orders_layout', '2024-01-01', '1 ms', 41, 6, 16);
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT next_id('orders_layout', 3), item text);
CREATE TABLE visits (id bigint PRIMARY KEY DEFAULT next_snowflake_id(), page text);
INSERT INTO orders (item) SELECT 'item ' || g FROM generate_series(1, 1000) g;
INSERT INTO visits (page) SELECT 'page ' || g FROM generate_series(1, 1000) g;
SELECT create_obfuscation_key('public_ids');
CREATE TABLE published AS SELECT id, obfuscate_id(id, 'public_ids') AS public_id,
                                 obfuscate_id(id) AS default_public_id FROM orders;
SQL
pg_dump -Fc -d dump_src -f "$dump" || echo "FAIL pg_dump"
pg_restore -d dump_dst "$dump" || echo "FAIL pg_restore"

layout_src=$(q -d dump_src -c "SELECT epoch, time_unit, time_bits, shard_bits, sequence_bits FROM shardid_layouts WHERE name = 'orders_layout'")
layout_dst=$(q -d dump_dst -c "SELECT epoch, time_unit, time_bits, shard_bits, sequence_bits FROM shardid_layouts WHERE name = 'orders_layout'")
check dump_restore_keeps_user_layout "$layout_src" "$layout_dst"
check dump_restore_keeps_rows "1000|1000" "$(q -d dump_dst -c "SELECT (SELECT count(*) FROM orders), (SELECT count(*) FROM visits)")"
out=$(q -d dump_dst <<'SQL'
CREATE TEMP TABLE before AS SELECT (SELECT max(id) FROM orders) AS orders_max, (SELECT max(id) FROM visits) AS visits_max;
INSERT INTO orders (item) SELECT 'new ' || g FROM generate_series(1, 100) g;
INSERT INTO visits (page) SELECT 'new ' || g FROM generate_series(1, 100) g;
SELECT (SELECT count(*) FROM orders WHERE id > b.orders_max), (SELECT count(*) FROM visits WHERE id > b.visits_max),
       (SELECT count(DISTINCT id) FROM orders), (SELECT min(shard) || '-' || max(shard) FROM orders, id_decode('orders_layout', id))
FROM before b;
SQL
)
check restored_defaults_generate_above_restored_ids "100|100|1100|3-3" "$out"
check dump_restore_keeps_obfuscation_keys "1000|1000" \
    "$(q -d dump_dst -c "SELECT count(*) FILTER (WHERE reveal_id(public_id, 'public_ids') = id),
                                count(*) FILTER (WHERE reveal_id(default_public_id) = id) FROM published")"
q -d postgres -c "DROP DATABASE dump_src" -c "DROP DATABASE dump_dst"
