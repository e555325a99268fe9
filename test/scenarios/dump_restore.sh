#!/usr/bin/env bash
# pg_dump/pg_restore of a database with shardid defaults and a user layout:
# the layout comes back unchanged and new IDs sort above the restored ones.
# Needs SHARDID_TEST_HOST and SHARDID_TEST_PORT (a server with shardid
# installed and shardid.node_id set). Prints PASS/FAIL lines.
set -u
. "$(dirname "$0")/../../scripts/lib.sh"
export PGHOST=$SHARDID_TEST_HOST PGPORT=$SHARDID_TEST_PORT PGUSER=postgres
dump=$(mktemp)
trap 'rm -f "$dump"' EXIT

# A template with shardid, made first so that its `default` key is older
# than the source's (section 5 below).
q -d postgres -c "DROP DATABASE IF EXISTS tmpl_shardid" -c "CREATE DATABASE tmpl_shardid" >/dev/null
q -d tmpl_shardid -c "CREATE EXTENSION shardid" >/dev/null
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

# Keys across a restore (second hostile review, section 5): restored into a
# database that already has shardid and its own, older `default` key (made
# from a template that has the extension, as with shardid in template1),
# the restored keys win, with a NOTICE, and every restored public ID reveals.
# A restored key that conflicts with a key a user made there is an error
# the restore shows, and the database's own key stays.
pg_dump -Fc -d dump_src -f "$dump" || echo "FAIL pg_dump (keys)"
q -d postgres -c "DROP DATABASE IF EXISTS dump_dst" -c "CREATE DATABASE dump_dst TEMPLATE tmpl_shardid" >/dev/null
pg_restore --verbose -d dump_dst "$dump" 2>"$dump.err"
check restore_over_an_older_default_key_succeeds_and_says_so "0|1" \
    "$(echo "$?|$(grep -c 'obfuscation key "default" made by CREATE EXTENSION is replaced' "$dump.err")")"
check restored_keys_win_over_the_databases_own "1000|1000|2" \
    "$(q -d dump_dst -c "SELECT count(*) FILTER (WHERE reveal_id(public_id, 'public_ids') = id),
                                count(*) FILTER (WHERE reveal_id(default_public_id) = id),
                                (SELECT count(*) FROM shardid_key) FROM published")"
q -d postgres -c "DROP DATABASE dump_dst" -c "CREATE DATABASE dump_dst TEMPLATE tmpl_shardid" >/dev/null
q -d dump_dst -c "SELECT create_obfuscation_key('public_ids', '\x000102030405060708090a0b0c0d0e0f')" >/dev/null
pg_restore -d dump_dst "$dump" 2>"$dump.err"
check a_restored_key_conflicting_with_a_users_key_fails_the_restore "1|1" \
    "$(echo "$?|$(grep -c 'obfuscation key "public_ids" already exists with another secret' "$dump.err")")"
check and_the_databases_own_key_stays "1|t" \
    "$(q -d dump_dst -c "SELECT count(*), bool_and(secret = '\x000102030405060708090a0b0c0d0e0f') FROM shardid_key WHERE name = 'public_ids'")"
rm -f "$dump.err"
q -d postgres -c "DROP DATABASE tmpl_shardid" -c "DROP DATABASE dump_dst" -c "CREATE DATABASE dump_dst" >/dev/null

# Objects that call shardid with a user layout while rows are restored:
# a generated column and CHECK constraints (evaluated by COPY), an
# expression index (built after the data), a default; in a schema that
# sorts before the extension's, and both as a custom archive and as plain
# SQL through psql. The layout's catalog rows come back with the data,
# possibly after such a table's: nothing may be lost.
q -d dump_src <<'SQL'
CREATE SCHEMA app;
SELECT create_layout('app_layout', '2024-01-01', '1 ms', 41, 6, 16);
SELECT create_layout('app_layout_with_a_name_much_longer_than_an_identifier_allows_x', '2024-01-01', '1 ms', 41, 6, 16);
CREATE TABLE app.orders (
    id bigint PRIMARY KEY DEFAULT next_id('app_layout', 5),
    made timestamptz GENERATED ALWAYS AS (id_timestamp('app_layout', id)) STORED,
    other bigint DEFAULT next_id('app_layout_with_a_name_much_longer_than_an_identifier_allows_x', 1)
        CHECK (id_created_within('app_layout_with_a_name_much_longer_than_an_identifier_allows_x', other, '[2024-01-01,)')),
    CHECK ((id_decode('app_layout', id)).shard = 5));
CREATE INDEX orders_shard ON app.orders (((id_decode('app_layout', id)).shard));
INSERT INTO app.orders SELECT FROM generate_series(1, 500);
SQL
plain=$(mktemp)
pg_dump -d dump_src -f "$plain" || echo "FAIL pg_dump (plain)"
pg_dump -Fc -d dump_src -f "$dump" || echo "FAIL pg_dump (custom)"
for format in custom plain; do
    q -d postgres -c "DROP DATABASE IF EXISTS dump_dst" -c "CREATE DATABASE dump_dst"
    if [ $format = custom ]; then
        pg_restore -d dump_dst "$dump" 2>"$plain.err" || cat "$plain.err"
    else
        psql -X -q -d dump_dst -f "$plain" >/dev/null 2>"$plain.err"
        grep -i error "$plain.err" | head -3
    fi
    check "dump_restore_keeps_rows_whose_generated_columns_and_checks_use_a_user_layout ($format)" "500|500|500|1" \
        "$(q -d dump_dst -c "SELECT count(*), count(*) FILTER (WHERE made = id_timestamp('app_layout', id)),
                                   count(*) FILTER (WHERE other IS NOT NULL), count(DISTINCT (id_decode('app_layout', id)).shard)
                            FROM app.orders")"
done
rm -f "$plain" "$plain.err"
check restored_layout_generates_and_its_index_is_used "5|t" \
    "$(q -d dump_dst -c "INSERT INTO app.orders DEFAULT VALUES" \
                     -c "SET enable_seqscan = off" \
                     -c "SELECT (id_decode('app_layout', max(id))).shard, bool_and(true) FROM app.orders WHERE (id_decode('app_layout', id)).shard = 5")"
check drop_extension_takes_the_layout_carriers_along 0 \
    "$(q -d dump_dst -c "SET client_min_messages = warning" -c "DROP EXTENSION shardid CASCADE" \
                     -c "SELECT count(*) FROM pg_proc WHERE proname LIKE 'shardid%'")"

# The database owner as an attacker (second hostile review, section 2). On
# PostgreSQL 15 a database's owner owns its schema public, the extension's
# schema here. The carriers live in shardid_carrier, the extension's own
# schema: she can neither drop, replace nor pre-create one there, and a
# look-alike she plants in public is never read. A restore, plain or with
# --no-owner, keeps every row with the right values.
q -d postgres -c "DROP DATABASE IF EXISTS owned_src" -c "DROP DATABASE IF EXISTS owned_dst" \
  -c "DROP ROLE IF EXISTS db_owner" -c "CREATE ROLE db_owner LOGIN" \
  -c "CREATE DATABASE owned_src OWNER db_owner" >/dev/null
q -d owned_src <<'SQL' >/dev/null
CREATE EXTENSION shardid;
SELECT create_layout('orders', '2025-01-01', '1 ms', 41, 6, 16);
CREATE TABLE public.orders (id bigint PRIMARY KEY DEFAULT next_id('orders', 3),
                            made timestamptz GENERATED ALWAYS AS (id_timestamp('orders', id)) STORED);
ALTER TABLE public.orders OWNER TO db_owner;
INSERT INTO public.orders SELECT FROM generate_series(1, 100);
SQL
forged="AS \$\$SELECT 'shardid layout v1: name=orders epoch_ms=0 unit_ms=1 time_bits=41 shard_bits=6 sequence_bits=16'::text\$\$"
attack() { psql -X -q -At -U db_owner -d owned_src -c "$1" 2>&1 | grep -c '^ERROR:  \(must be owner\|permission denied\)'; }
check database_owner_cannot_drop_a_carrier 1 "$(attack 'DROP FUNCTION shardid_carrier."shardid_layout$orders"()')"
check database_owner_cannot_replace_a_carrier 1 \
    "$(attack "CREATE OR REPLACE FUNCTION shardid_carrier.\"shardid_layout\$orders\"() RETURNS text LANGUAGE sql $forged")"
check database_owner_cannot_pre_create_a_carrier 1 \
    "$(attack "CREATE FUNCTION shardid_carrier.\"shardid_layout\$later\"() RETURNS text LANGUAGE sql $forged")"
check database_owner_cannot_drop_the_carrier_schema 1 "$(attack 'DROP SCHEMA shardid_carrier CASCADE')"
# Where 1.2's first builds kept carriers (the extension's schema, hers):
# she drops whatever is there and plants a look-alike with another epoch.
check database_owner_can_plant_a_look_alike_in_public 0 \
    "$(attack "DROP FUNCTION IF EXISTS public.\"shardid_layout\$orders\"();
               CREATE FUNCTION public.\"shardid_layout\$orders\"() RETURNS text LANGUAGE sql $forged")"
q -d owned_src -c "SELECT create_layout('later', '2025-01-01', '1 ms', 41, 6, 16)" >/dev/null
check carriers_are_superusers_and_in_their_schema "2|t" \
    "$(q -d owned_src -c "SELECT count(*), bool_and(r.rolsuper) FROM pg_proc p JOIN pg_roles r ON r.oid = p.proowner
                          WHERE p.pronamespace = 'shardid_carrier'::regnamespace")"
pg_dump -Fc -d owned_src -f "$dump" || echo "FAIL pg_dump (owned)"
for how in plain no-owner; do
    q -d postgres -c "DROP DATABASE IF EXISTS owned_dst" -c "CREATE DATABASE owned_dst OWNER db_owner" >/dev/null
    opts=(); [ $how = no-owner ] && opts=(--no-owner)
    pg_restore "${opts[@]}" -d owned_dst "$dump" 2>"$dump.err" || { echo "pg_restore ($how):"; head -5 "$dump.err"; }
    # Made today: with a forged epoch (0) they would read as 1971.
    check "restore_as_$how keeps every row with the layout's real epoch" "100|100|t" \
        "$(q -d owned_dst -c "SELECT count(*), count(*) FILTER (WHERE made = id_timestamp('orders', id)),
                                    min(made) > now() - interval '1 day' FROM public.orders")"
done
rm -f "$dump.err"
q -d postgres -c "DROP DATABASE owned_src" -c "DROP DATABASE owned_dst" -c "DROP ROLE db_owner" >/dev/null

q -d postgres -c "DROP DATABASE dump_src" -c "DROP DATABASE dump_dst"
