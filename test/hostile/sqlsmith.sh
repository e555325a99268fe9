#!/usr/bin/env bash
# SQLsmith (Debian package sqlsmith) against a database with shardid, as an
# ordinary role: random queries over the catalog, shardid's functions and
# tables whose columns hold shardid IDs. In the test command, the same
# queries every run: a fixed seed (SQLSMITH_SEED, 20261122) and a number of
# them (SQLSMITH_QUERIES, 4000), all of which must run, however long that
# takes (within the suite's hang guard). scripts/soak.sh explores: a fresh
# seed (SQLSMITH_SEED=fresh) for SQLSMITH_SECONDS. Fails on any backend
# crash (a server process terminated by a signal, or the server
# restarting) and if nothing ran.
# Prints PASS/FAIL lines. Run from the repository root (uses scripts/lib.sh).
set -u
. scripts/lib.sh

queries=${SQLSMITH_QUERIES:-4000}
seconds=${SQLSMITH_SECONDS:-}
seed=${SQLSMITH_SEED:-20261122}
# A fresh seed within an int (SQLsmith reads it with std::stoi: one of 2^31
# and above ended the run before its first query, "stoi").
[ "$seed" = fresh ] && seed=$(($(od -An -N4 -tu4 /dev/urandom | tr -d ' ') % 2147483647))
ensure_deps  # installs sqlsmith where missing
command -v sqlsmith >/dev/null || { echo "FAIL sqlsmith_available: could not install sqlsmith"; exit 0; }

dir=$(pg_tmpdir)
port=15440
trap 'cluster_stop "$dir" immediate; [ -n "${KEEP:-}" ] || rm -rf "$dir"' EXIT
cluster_init "$dir" "shared_preload_libraries = 'shardid'" "shardid.node_id = 7" "shardid.launch_id = 65" \
    "max_connections = 20" "log_min_messages = warning" || exit 1
cluster_start "$dir" "$port" || exit 1
pm_before=$(head -1 "$dir/data/postmaster.pid")

q >/dev/null <<'SQL'
CREATE DATABASE smith;
\c smith
CREATE EXTENSION shardid;
SELECT create_layout('smith_layout', '2024-01-01', '1 ms', 41, 6, 16);
SELECT create_layout('smith_slow', '2020-01-01', '30 days', 30, 4, 1);
SELECT create_obfuscation_key('smith_key');
CREATE ROLE smith LOGIN;
ALTER ROLE smith SET statement_timeout = '1s';
CREATE TABLE ids (id bigint PRIMARY KEY DEFAULT next_snowflake_id(), trace bigint DEFAULT next_trace_id(),
                  insta bigint DEFAULT next_instagram_id(42), eight bytea DEFAULT next_eightbyte_id(),
                  dec bigint DEFAULT next_decimal_id(), call text DEFAULT next_call_number(),
                  own bigint DEFAULT next_id('smith_layout', 3), made timestamptz DEFAULT now(),
                  period tstzrange DEFAULT tstzrange(now() - interval '1 hour', now()));
INSERT INTO ids DEFAULT VALUES;
INSERT INTO ids (id, trace, insta, own, period)
VALUES (1, 1, -1, 9223372036854775807, 'empty'), (2, 0, 0, -9223372036854775808, '(,)'),
       (9223372036854775807, 9223372036854775807, 9223372036854775807, 0, '[-infinity,infinity]');
GRANT SELECT, INSERT ON ids TO smith;
GRANT USAGE ON SCHEMA public TO smith;
SQL

start=$(date +%s)
if [ -n "$seconds" ]; then
    timeout "$seconds" sqlsmith --target="host=$dir port=$port user=smith dbname=smith" --max-queries="$queries" \
        --seed="$seed" --exclude-catalog --verbose >"$dir/sqlsmith.out" 2>"$dir/sqlsmith.err"
else
    sqlsmith --target="host=$dir port=$port user=smith dbname=smith" --max-queries="$queries" \
        --seed="$seed" --exclude-catalog --verbose >"$dir/sqlsmith.out" 2>"$dir/sqlsmith.err"
fi
took=$(($(date +%s) - start))
# With --verbose SQLsmith ends with its error rate once it has run them all;
# stopped by the time a run explores for, its progress lines say how far.
rate=$(grep -o 'error rate: [0-9.]*' "$dir/sqlsmith.err" | tail -1 | grep -o '[0-9.]*$')
# (It prints the rate when the time stops it too: the count is then its
# progress lines'.)
ran=0
if [ -n "$seconds" ]; then
    ran=$(grep -o 'queries: [0-9]*' "$dir/sqlsmith.err" | tail -1 | grep -o '[0-9]*$')
    [ -z "$ran" ] && [ -n "$rate" ] && [ "$took" -lt "$seconds" ] && ran=$queries
elif [ -n "$rate" ]; then
    ran=$queries
fi
crash_lines() { grep -cE 'terminated by signal|was terminated by exception|all server processes terminated|server process .* exited with exit code [^01]' "$dir/server.log"; }
crashes=$(crash_lines)
pm_after=$(head -1 "$dir/data/postmaster.pid" 2>/dev/null)
alive=$(q -d smith -c "SELECT count(*) > 0 FROM ids" 2>/dev/null)
if [ "$crashes" -eq 0 ] && [ "$pm_before" = "$pm_after" ] && [ "$alive" = t ] && [ "${ran:-0}" -gt 0 ]; then
    echo "PASS sqlsmith_as_an_ordinary_role_crashes_no_backend (${ran} queries of seed $seed in ${took}s, error rate ${rate:-?})"
else
    echo "FAIL sqlsmith_as_an_ordinary_role_crashes_no_backend: ${ran:-0} queries, crashes in the log: $crashes, server alive: ${alive:-no}"
    grep -E -B2 -A4 'terminated by signal|exited with exit code' "$dir/server.log" | head -30
    tail -5 "$dir/sqlsmith.err"
fi
# The queries touched shardid's functions at all (else the run proves little).
used=$(grep -cE 'next_|_decode|_timestamp|_min_id|obfuscate_id|reveal_id|base62|base32|call_number|created_within|id_compose' "$dir/server.log")
if [ "$used" -gt 0 ]; then
    echo "PASS sqlsmith_reached_shardid_functions ($used logged errors name them)"
else
    echo "FAIL sqlsmith_reached_shardid_functions: no query error named a shardid function"
fi

# Negative control: a backend that really crashes (SIGSEGV) is noticed by
# the same check.
q -d smith -c "SELECT pg_sleep(30)" >/dev/null 2>&1 &
sleeper=$!
for _ in $(seq 50); do
    victim=$(q -c "SELECT pid FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(30)%' AND pid <> pg_backend_pid()")
    [ -n "$victim" ] && break
    sleep 0.1
done
[ -n "$victim" ] && kill -SEGV "$victim"
wait "$sleeper" 2>/dev/null
# The postmaster logs the crash once it reaped the process (at most 10 s).
for _ in $(seq 100); do
    [ "$(crash_lines)" -gt 0 ] && break
    sleep 0.1
done
if [ "$(crash_lines)" -gt 0 ]; then
    echo "PASS negative_control_a_crashed_backend_is_detected"
else
    echo "FAIL negative_control_a_crashed_backend_is_detected: the check saw no crash after SIGSEGV"
fi
