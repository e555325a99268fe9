#!/usr/bin/env bash
# A newcomer's first steps, followed literally on a fresh server that has
# no shardid setting and does not preload it (what `make install` leaves):
#   1 README's first two SQL blocks, as written, give what README shows.
#   2 the hint of "shardid.node_id is not set", its commands run as written
#     (the placeholder filled in), makes the next session issue IDs.
#   3 the same for "shardid.launch_id is not set" and DecimalIds.
#   4 README's first block, then docs/etcd.md's "On a server of your own" on
#     the same server, as written (etcd on a private port): the node claims
#     the lowest free id, not README's ALTER SYSTEM value, and says where
#     its id comes from.
#   5 README's scratch server block, on a PATH without /usr/local/bin (as
#     root: it makes a Debian cluster of its own, removed after).
# Prints PASS/FAIL lines.
set -u
cd "$(dirname "$0")/../.."
. scripts/lib.sh

scenario_cluster 15475 "timezone = 'UTC'" "lc_messages = 'C'"
psql_in() {  # DB: SQL on stdin, as typed into psql
    psql -X -q -P pager=off -P footer=off -h "$dir" -p "$port" -U postgres -d "$1" 2>&1
}
# The first N ```sql blocks of README.md, and the ```text block after the
# second.
readme_block() {  # N: sql block N (1-based); N text: the text block after it
    python3 - "$@" <<'PY'
import re, sys
n, want_text = int(sys.argv[1]), len(sys.argv) > 2
blocks = re.findall(r"^```(\w*)[^\n]*\n(.*?)^```", open("README.md", encoding="utf-8").read(), re.S | re.M)
sql = [i for i, (lang, _) in enumerate(blocks) if lang == "sql"]
i = sql[n - 1] + (1 if want_text else 0)
print(blocks[i][1], end="")
PY
}
# Waits (at most 10 s) until a new session sees SETTING = VALUE: the
# reload the commands asked for has reached the postmaster.
wait_setting() {
    for _ in $(seq 100); do
        [ "$(psql_in postgres <<<"LOAD 'shardid';"$'\n'"\\pset tuples_only on"$'\n'"SHOW $1;" | tr -d ' ')" = "$2" ] &&
            return 0
        sleep 0.1
    done
    return 1
}

# --- 1: README's first example --------------------------------------------------
out=$(readme_block 1 | psql_in postgres)
check "README's first block (LOAD, ALTER SYSTEM, reload, reconnect) runs without an error" "" \
    "$(grep -E '^(ERROR|psql: error)' <<<"$out")"
wait_setting shardid.node_id 7 || fail "the reload did not reach a new session within 10 s"
shown=$(readme_block 2 text | sed 's/ *$//')
actual=$(readme_block 2 | psql_in postgres | sed 's/ *$//')
check "README's second block prints what README shows" "$shown" "$actual"
from=$(psql_in postgres <<<"SELECT node_id_from FROM shardid_coordination();")
contains "shardid_coordination() says the node id is README's ALTER SYSTEM value" "$from" \
    "setting: shardid.node_id (postgresql.auto.conf line "
contains "... and how to undo it" "$from" "ALTER SYSTEM RESET shardid.node_id undoes it"
contains "README says how to undo its ALTER SYSTEM right after it" "$(sed -n '/^ALTER SYSTEM SET shardid.node_id/,/^## /p' README.md)" \
    "ALTER SYSTEM RESET"

# --- 2: the hint of an unset node id, followed literally ------------------------
psql_in postgres <<<"LOAD 'shardid';"$'\n'"ALTER SYSTEM RESET shardid.node_id;"$'\n'"SELECT pg_reload_conf();" >/dev/null
wait_setting shardid.node_id -1 || fail "the reset did not reach a new session within 10 s"
psql_in postgres <<<"CREATE DATABASE hint" >/dev/null
err=$(psql_in hint <<<"CREATE EXTENSION shardid;"$'\n'"SELECT next_trace_id();")
hint=$(sed -n 's/^HINT:  //p' <<<"$err")
contains "a fresh server without a node id refuses, with a hint" "$err" "shardid.node_id is not set"
commands=$(sed -n 's/.*one by one: //p' <<<"$hint")
[ -n "$commands" ] || fail "the hint names no commands: $hint"
commands=${commands//<0..65535>/9}
out=$(sed 's/; /;\n/g' <<<"$commands" | psql_in hint)
check "the hint's commands run as written: $commands" "" "$(grep -E '^ERROR' <<<"$out")"
wait_setting shardid.node_id 9 || fail "the hint's reload did not reach a new session within 10 s"
check "... and a new session issues TraceIds under node id 9" "9" \
    "$(psql_in hint <<<"\\pset tuples_only on"$'\n'"SELECT (trace_id_decode(next_trace_id())).node_no;" | tr -d ' ')"

# --- 3: the same for DecimalId's launch id ----------------------------------------
err=$(psql_in hint <<<"SELECT next_decimal_id();")
hint=$(sed -n 's/^HINT:  //p' <<<"$err")
contains "DecimalIds without a launch id are refused, with a hint" "$err" "shardid.launch_id is not set"
commands=$(sed -n 's/.*one by one: //p' <<<"$hint")
commands=$(sed -E 's/<1\.\.[0-9]+>/65/' <<<"$commands")
out=$(sed 's/; /;\n/g' <<<"$commands" | psql_in hint)
check "the hint's commands run as written: $commands" "" "$(grep -E '^ERROR' <<<"$out")"
wait_setting shardid.launch_id 65 || fail "the launch id did not reach a new session within 10 s"
check "... and a new session issues DecimalIds of launch 65" "65" \
    "$(psql_in hint <<<"\\pset tuples_only on"$'\n'"SELECT next_decimal_id() % 100000;" | tr -d ' ')"

# --- 4: README's first block, then docs/etcd.md on the same server ------------------
# The blocks of docs/etcd.md's "On a server of your own": check (the sql
# block before the postgresql.conf lines), conf (the ini block), query (the
# sql block after them) and shown (the text block after that); empty when
# the page has none.
etcd_block() {  # check|conf|query|shown
    python3 - "$1" <<'PY'
import re, sys
text = open("docs/etcd.md", encoding="utf-8").read()
section = text[text.index("**On a server of your own**"):]
section = section[:section.index("\n## ")]
blocks = re.findall(r"^```(\w*)[^\n]*\n(.*?)^```", section, re.S | re.M)
langs = [lang for lang, _ in blocks]
conf = langs.index("ini")
want = {"check": [i for i in range(conf) if langs[i] == "sql"][:1],
        "conf": [conf],
        "query": [i for i in range(conf + 1, len(blocks)) if langs[i] == "sql"][:1]}
want["shown"] = [i + 1 for i in want["query"] if i + 1 < len(blocks) and langs[i + 1] == "text"]
print("".join(blocks[i][1] for i in want[sys.argv[1]]), end="")
PY
}
# Restarts the server and waits (at most 40 s) until its id is held.
restart_until_held() {
    cluster_stop "$dir"
    cluster_start "$dir" "$port" || return 1
    for _ in $(seq 200); do
        [ "$(psql_in postgres <<<"\pset tuples_only on"$'\n'"SELECT state FROM shardid_coordination();" | tr -d ' ')" = held ] &&
            return 0
        sleep 0.2
    done
    fail "the node holds no id 40 s after its start: $(psql_in postgres <<<"\pset tuples_only on"$'\n'"SELECT state || ': ' || coalesce(last_error, '') FROM shardid_coordination();" | tr '\n' ' ')"
}
# Below Linux's ephemeral range (32768 and up), where an outgoing
# connection of another program can hold a port for a moment.
etcd_port=31478
etcd --name newcomer --data-dir "$dir/etcd" --log-level error \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$((etcd_port + 1))" \
    --initial-advertise-peer-urls "http://127.0.0.1:$((etcd_port + 1))" \
    --initial-cluster "newcomer=http://127.0.0.1:$((etcd_port + 1))" >"$dir/etcd.log" 2>&1 &
etcd_pid=$!
for _ in $(seq 300); do  # at most 30 s: a first start fsyncs its files, slow on a busy disk
    etcdctl --endpoints="http://127.0.0.1:$etcd_port" endpoint health >/dev/null 2>&1 && break
    sleep 0.1
done
etcdctl --endpoints="http://127.0.0.1:$etcd_port" endpoint health >/dev/null 2>&1 ||
    stop_suite "etcd did not start on port $etcd_port: $(tail -3 "$dir/etcd.log" | tr '\n' ' ')"
trap 'kill -9 $etcd_pid 2>/dev/null; cluster_stop "$dir" immediate; rm -rf "$dir"' EXIT
readme_block 1 | psql_in postgres >/dev/null
wait_setting shardid.node_id 7 || fail "README's node id did not reach a new session within 10 s"
[ -n "$(etcd_block check)" ] && pass "docs/etcd.md begins by undoing ALTER SYSTEM values" ||
    fail "docs/etcd.md's \"On a server of your own\" does not undo ALTER SYSTEM values first"
out=$(etcd_block check | psql_in postgres)
check "docs/etcd.md's check of ALTER SYSTEM values runs as written" "" "$(grep -E '^ERROR' <<<"$out")"
etcd_block conf | sed "s|http://127.0.0.1:2379|http://127.0.0.1:$etcd_port|" | as_pg tee -a "$dir/data/postgresql.conf" >/dev/null
restart_until_held || stop_suite "the server did not start with docs/etcd.md's settings"
actual=$(etcd_block query | psql_in postgres | grep -v '^NOTICE:' | sed 's/ *$//')  # "already exists": README made it
shown=$(etcd_block shown)
python3 - "$shown" "$actual" <<'PY' && pass "docs/etcd.md's query prints what it shows" ||
import re, sys
shown, actual = sys.argv[1].rstrip("\n").split("\n"), sys.argv[2].rstrip("\n").split("\n")
ok = len(shown) == len(actual) and all(
    re.fullmatch(".*".join(map(re.escape, s.rstrip().split("…"))), a) for s, a in zip(shown, actual))
sys.exit(0 if ok else 1)
PY
    fail "docs/etcd.md's query prints what it shows: expected"$'\n'"$shown"$'\n'"got"$'\n'"$actual"
check "the node claimed the lowest free id (0), not README's ALTER SYSTEM value" "0" \
    "$(psql_in postgres <<<"\pset tuples_only on"$'\n'"SELECT node_id FROM shardid_coordination();" | tr -d ' ')"
contains "the claim's log line says which id and why" "$(grep 'claimed node id' "$dir/server.log")" \
    "claimed node id 0 with lease"
contains "... the lowest free id, as postgresql.conf's shardid.node_id = -1 asks" \
    "$(grep 'claimed node id' "$dir/server.log")" "the lowest free id from 0 to 1023, as shardid.node_id = -1 asks (postgresql.conf line"
# The trap itself, once more: an ALTER SYSTEM value left over beats
# postgresql.conf, and says so where an operator looks.
readme_block 1 | psql_in postgres >/dev/null
restart_until_held || stop_suite "the server did not start again"
from=$(psql_in postgres <<<"\pset tuples_only on"$'\n'"SELECT node_id || ' ' || node_id_from FROM shardid_coordination();")
contains "an ALTER SYSTEM value left over: the node claims 7, and node_id_from says it is ALTER SYSTEM's" "$from" \
    "7 etcd: id 7, as shardid.node_id asks (postgresql.auto.conf line "
contains "... and how to undo it" "$from" "ALTER SYSTEM RESET shardid.node_id undoes it"
contains "... and so does the claim's log line" "$(grep 'claimed node id 7' "$dir/server.log")" "postgresql.auto.conf line"

# --- 5: README's scratch server, on a stock PATH -------------------------------------
if [ "$(id -u)" = 0 ]; then
    version=$(pg_config --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
    scratch=$(python3 - <<'PY'
import re
blocks = re.findall(r"^```sh\n(.*?)^```", open("README.md", encoding="utf-8").read(), re.S | re.M)
print(blocks[0], end="")
PY
)
    scratch=${scratch//pg_createcluster 15 /pg_createcluster $version }
    scratch=${scratch//--port 5499/--port 31481}
    scratch=${scratch//-p 5499/-p 31481}
    scratch=$(sed "s|psql -p 31481'|psql -p 31481 -X -At -c \"SELECT 41 + 1\"'|" <<<"$scratch")
    pg_dropcluster "$version" newcomer_scratch --stop >/dev/null 2>&1
    out=$(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root bash -c "${scratch//scratch/newcomer_scratch}" 2>&1)
    check "README's scratch server block works on a stock PATH (without /usr/local/bin)" "42" "$(tail -1 <<<"$out")"
    pg_dropcluster "$version" newcomer_scratch --stop >/dev/null 2>&1
else
    log "README's scratch server block is not tried: it needs root"
fi
