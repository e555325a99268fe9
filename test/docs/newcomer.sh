#!/usr/bin/env bash
# A newcomer's first steps, followed literally on a fresh server that has
# no shardid setting and does not preload it (what `make install` leaves):
#   1 README's first two SQL blocks, as written, give what README shows.
#   2 the hint of "shardid.node_id is not set", its commands run as written
#     (the placeholder filled in), makes the next session issue IDs.
#   3 the same for "shardid.launch_id is not set" and DecimalIds.
# Prints PASS/FAIL lines.
set -u
cd "$(dirname "$0")/../.."
. scripts/lib.sh

scenario_cluster 55475 "timezone = 'UTC'" "lc_messages = 'C'"
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
