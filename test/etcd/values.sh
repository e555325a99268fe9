#!/usr/bin/env bash
# What comes from etcd is checked before it is used, nothing secret reaches
# an ordinary role or the log, a stop never waits for etcd, a clean restart
# resumes where it stopped, and a new holder of an id never issues while the
# previous one still may. A real etcd (private ports, temporary data) and
# stand-ins for a broken gateway (test/etcd/proxy.py). Each check names
# what it would see on a node that took the value on trust.
#   1 counters: 2^63-1 and 99998 written by hand are refused (nothing is
#     taken, nothing written back); deleting the key, as the error says,
#     brings generation back, with no lasting refusal.
#   2 marks: a mark in the year 2100 or at 2^63-1 is refused, naming the
#     key; shardid_coordination() still answers; fixed, the node claims.
#   3 a gateway that grants a TTL of 3600 s for 3 s asked: fenced at 3 s.
#   4 a node key without a lease that names this node: refused as edited
#     by hand, not waited for.
#   5 a mark equal in value to one of the node's own windows, but written
#     by someone else: not taken for its own (marks are known by token).
#   6 clean restarts: a one-minute layout issues within 1 s, three times;
#     a second copy of the stopped data directory still raises.
#   7 secrets: an endpoint with credentials is refused and never logged;
#     an ordinary role's error names no file, URL or user.
#   8 a fast stop with three endpoints that never answer, TTL 300 s.
#   9 http_proxy and ALL_PROXY in the server's environment are not used;
#     a password sent over http:// is warned about.
#  10 etcd revokes a holder's lease early: the new holder's first ID comes
#     after the old holder's last one.
# ETCD_VALUES_SECTIONS="7 8" runs only those sections (to show a section
# fail against an older build); all by default.
set -u
. scripts/lib.sh
. test/etcd/lib.sh
section() { [ -z "${ETCD_VALUES_SECTIONS:-}" ] || [[ " $ETCD_VALUES_SECTIONS " == *" $1 "* ]]; }

coord_setup 17300
etcd_main 25891 25991
proxies=()
trap 'kill ${proxies[*]:-} 2>/dev/null; coord_cleanup' EXIT
log_of() { cat "${dir_of[$1]}/server.log"; }
last_error() { q "$1" -c "SELECT last_error FROM shardid_coordination()"; }

# --- 1: counters beyond what shardid could have written ------------------------
PREFIX=/v1
if section 1; then
node_up c1 $((base + 1)) "" || { fail "c1 did not start"; exit 1; }
wait_state c1 held 10 || stop_suite "c1 did not claim"
ectl put "$PREFIX/counter/generator" 9223372036854775807 >/dev/null
check "a counter at 2^63-1: no DecimalId generator id is taken" \
    "55000: no DecimalId generator id could be taken from etcd" "$(q_err c1 "SELECT next_decimal_id()")"
check "a counter at 2^63-1: etcd still holds it (nothing wrapped around is written back)" 9223372036854775807 \
    "$(ectl get --print-value-only "$PREFIX/counter/generator")"
wait_state c1 refused 5 || fail "a counter at 2^63-1: c1 is not refused"
contains "a counter at 2^63-1: last_error names the key, its value and the fix" "$(last_error c1)" \
    "the key \"$PREFIX/counter/generator\" is refused: it is 9223372036854775807 after"
ectl del "$PREFIX/counter/generator" >/dev/null
check "deleted as the error says: generator ids are taken again" ok "$(q_err c1 "SELECT next_decimal_id()")"
wait_state c1 held 5 && pass "and the node is \"held\" again" || fail "c1 stays $(q c1 -c "SELECT state FROM shardid_coordination()")"
# 99998 is a valid generator id: taken, it would become the node's floor,
# which the node raises the counter back to after any fix (every node then
# finds no value left).
ectl put "$PREFIX/counter/generator" 99998 >/dev/null
q c1 -c "SELECT decimal_id_new_generator()" >/dev/null 2>&1
gen=$(q c1 -c "SELECT (decimal_id_decode(next_decimal_id())).generator_id")
[ "${gen:-99999}" -lt 99998 ] && pass "a counter set to 99998 by hand is not taken (generator id $gen)" ||
    fail "a counter set to 99998 by hand was taken: generator id '${gen:-?}'"
contains "a counter set to 99998 by hand: refused, naming the key" "$(last_error c1)" "it is 99998 after"
ectl del "$PREFIX/counter/generator" >/dev/null
cluster_stop "${dir_of[c1]}" fast
node_start c1 && wait_state c1 held 10 || fail "c1 did not come back"
check "after the fix and a restart, generator ids are taken (no lasting refusal)" ok \
    "$(q_err c1 "SELECT decimal_id_new_generator()")"
node_up c2 $((base + 2)) "" || stop_suite "c2 did not start"
wait_state c2 held 10 || stop_suite "c2 did not claim"
check "a fresh node takes generator ids too" ok "$(q_err c2 "SELECT next_decimal_id()")"
left=$(ectl get --print-value-only "$PREFIX/counter/generator")
[ "${left:-99999}" -lt 1000 ] && pass "the counter stays low ($left): no floor of 99999 came back" ||
    fail "the counter is $left after the fix"
cluster_stop "${dir_of[c2]}" fast
fi

# --- 2: marks no holder could have written ---------------------------------------
if section 2; then
for m in 4102444800000 9223372036854775807; do
    ectl put "$PREFIX/mark/40" $m >/dev/null
    n=m$((${#m} % 10))
    node_up $n $((base + 10 + ${#m} % 10)) "" "shardid.node_id = 40" || stop_suite "$n did not start"
    wait_state $n refused 10 && pass "a mark of $m: the node is \"refused\"" ||
        fail "a mark of $m: state $(q $n -c "SELECT state FROM shardid_coordination()" 2>&1)"
    err=$(last_error $n 2>&1)
    contains "a mark of $m: shardid_coordination() answers, naming the key" "$err" "the key \"$PREFIX/mark/40\" holds \"$m\""
    contains "a mark of $m: ... and why" "$err" "ahead of this node's clock"
    check "a mark of $m: no ID" "55000: this node holds no node id from etcd" "$(q_err $n "SELECT next_snowflake_id()")"
    ectl del "$PREFIX/mark/40" >/dev/null
    wait_state $n held 10 && pass "a mark of $m deleted: the node takes the id by itself" || stop_suite "$n did not claim after the fix"
    check "... and issues" ok "$(q_err $n "SELECT next_snowflake_id()")"
    cluster_stop "${dir_of[$n]}" fast
    released=$(ectl get --print-value-only "$PREFIX/mark/40" | cut -d' ' -f1)
    [ "${released:-0}" -lt $(( $(date +%s%3N) + 1000 )) ] &&
        pass "a mark of $m: the clean stop wrote back the last tick issued, not it" ||
        fail "a mark of $m: after the clean stop etcd holds $released"
done
fi

# --- 3: a gateway granting more than was asked -----------------------------------
if section 3; then
GW=$((base + 20))
python3 test/etcd/proxy.py $GW grant "$ETCD_PORT" 3600 & proxies+=($!)
wait_port $GW || stop_suite "the granting gateway did not listen"
saved=$ETCD_URLS; ETCD_URLS="http://127.0.0.1:$GW"
node_up g1 $((base + 21)) "" || stop_suite "g1 did not start"
ETCD_URLS=$saved
# A wait for a condition, not a bound: on a busy machine it may take longer.
wait_state g1 held 30 || stop_suite "g1 did not claim through the gateway"
check "etcd 'granted' 3600 s for 3 s asked: the lease shows 3 s" 3 "$(q g1 -c "SELECT lease_ttl FROM shardid_coordination()")"
ahead=$(q g1 -c "SELECT extract(epoch FROM issuing_until - now())::int FROM shardid_coordination()")
[ "${ahead:-99}" -le 3 ] && pass "... and the fence is within 3 s ($ahead s)" || fail "the fence is $ahead s ahead"
kill -STOP "${proxies[-1]}"  # the gateway goes silent
sleep 4                      # past any fence a 3 s lease allows
check "the gateway silent for 4 s: no ID (fenced at the TTL asked)" "55000" "$(q_err g1 "SELECT next_snowflake_id()" | cut -c1-5)"
kill -CONT "${proxies[-1]}"
cluster_stop "${dir_of[g1]}" immediate
fi

# --- 4: a node key without a lease naming this node ------------------------------
if section 4; then
node_up k1 $((base + 31)) "" "shardid.node_id = 41" || stop_suite "k1 did not start"
wait_state k1 held 10 || stop_suite "k1 did not claim 41"
value=$(ectl get --print-value-only "$PREFIX/node/41")
cluster_stop "${dir_of[k1]}" fast
ectl put "$PREFIX/node/41" "$value" >/dev/null  # the same holder record, without a lease
node_start k1 || fail "k1 did not restart"
wait_state k1 refused 10 && pass "a lease-less key naming this node: \"refused\", not waited for" ||
    fail "a lease-less key naming this node: $(q k1 -c "SELECT state, last_error FROM shardid_coordination()")"
contains "... naming the key as edited by hand" "$(last_error k1)" "the key \"$PREFIX/node/41\" has no lease"
ectl del "$PREFIX/node/41" >/dev/null
wait_state k1 held 10 && pass "removed: the node takes id 41" || fail "k1 did not take 41"
fi

# --- 5: a mark equal to one of this node's own windows, written by another -------
if section 5; then
q k1 -c "SELECT create_layout('per_minute', '2024-01-01', '1 minute', 30, 10, 23)" >/dev/null
q k1 -c "SET shardid.etcd_wait = '70s'" -c "SELECT next_id('per_minute')" >/dev/null
own=$(ectl get --print-value-only "$PREFIX/mark/41" | cut -d' ' -f1)
lines=$(log_of k1 | grep -c "issuing IDs with node id 41")
# One transaction: the mark gets that value (written by someone else), and
# the node key goes, as when etcd revokes the lease. The node claims again.
printf '\nput %s %s\ndel %s\n\n\n' "$PREFIX/mark/41" "$own" "$PREFIX/node/41" | ectl txn >/dev/null
for _ in $(seq 1 100); do
    [ "$(log_of k1 | grep -c "issuing IDs with node id 41")" -gt "$lines" ] && break
    sleep 0.1
done
line=$(log_of k1 | grep "issuing IDs with node id 41" | tail -1)
lacks "a mark of this node's value but another's writing is not taken for its own" "$line" "its own mark"
cluster_stop "${dir_of[k1]}" fast
fi

# --- 6: clean restarts resume a one-minute layout at once --------------------------
# A node of its own (section 5's life took a mark for another's and raised
# above it: its restart resumes above that mark's minute, as it should,
# shards.sh section 7). This one's lives never take over anything.
if section 6; then
node_up r1 $((base + 33)) "" "shardid.node_id = 43" || stop_suite "r1 did not start"
wait_state r1 held 10 || stop_suite "r1 did not claim 43"
q r1 -c "SELECT create_layout('per_minute', '2024-01-01', '1 minute', 30, 10, 23)" >/dev/null
# On a new prefix its first ID comes in the minute after the history
# settled: waited for (shardid.etcd_wait bounds a wait for the next tick).
q r1 -c "SET shardid.etcd_wait = '70s'" -c "SELECT next_id('per_minute')" >/dev/null
cluster_stop "${dir_of[r1]}" fast
for i in 1 2 3; do
    node_start r1 || fail "r1 did not restart ($i)"
    took=$(q r1 -c "SET statement_timeout = '70s'" -c "SELECT next_id('per_minute') IS NOT NULL AS t, now() AS at" \
        -c "SELECT (extract(epoch FROM clock_timestamp() - pg_postmaster_start_time()) * 1000)::int" | tail -1)
    promise "clean restart $i: a one-minute layout issues within 3 s of the start" \
        "$([ "${took:-99999}" -le 3000 ] && echo t || echo f)" "${took:-?} ms"
    line=$(log_of r1 | grep "issuing IDs with node id 43" | tail -1)
    contains "clean restart $i: the node knew its own released mark" "$line" "its own mark"
    [ $i -lt 3 ] && cluster_stop "${dir_of[r1]}" fast
done
# Two copies of the stopped data directory: the first claims and writes its
# claim's token; the second's state holds the token no longer in etcd.
cluster_stop "${dir_of[r1]}" fast
copy=$(pg_tmpdir); coord_dirs+=("$copy"); dir_of[r2]=$copy; port_of[r2]=$((base + 34))
as_pg cp -a "${dir_of[r1]}/data" "$copy/data"
echo "unix_socket_directories = '$copy'" | as_pg tee -a "$copy/data/postgresql.conf" >/dev/null
node_start r1 && wait_state r1 held 10 || stop_suite "the first copy did not claim"
q r1 -c "SET shardid.etcd_wait = '70s'" -c "SELECT next_id('per_minute')" >/dev/null
kill9 r1
node_start r2 || stop_suite "the second copy did not start"
wait_state r2 held 20 || stop_suite "the second copy did not claim"
line=$(grep "issuing IDs with node id 43" "$copy/server.log" | tail -1)
lacks "the second copy of one stopped directory raises (its token is no longer etcd's)" "$line" "its own mark"
fi

# --- 7: secrets ------------------------------------------------------------------
if section 7; then
node_up s1 $((base + 41)) "" "shardid.etcd_endpoints = 'http://root:s3cret@127.0.0.1:$ETCD_PORT'" ||
    fail "s1 did not start"
wait_state s1 misconfigured 10 && pass "an endpoint with credentials: \"misconfigured\"" || fail "s1: $(last_error s1)"
contains "... telling to use etcd_user and etcd_password_file" "$(last_error s1)" "shardid.etcd_password_file"
lacks "... without the password in last_error" "$(last_error s1)" "s3cret"
lacks "... nor in the server log" "$(log_of s1)" "s3cret"
node_up s2 $((base + 42)) "" "shardid.etcd_user = 'shardid_node'" \
    "shardid.etcd_password_file = '/nonexistent/secret-dir/etcd-password'" || stop_suite "s2 did not start"
wait_state s2 misconfigured 10 || fail "s2 is not misconfigured"
q s2 -c "CREATE ROLE plain LOGIN"
err=$(psql -X -h "${dir_of[s2]}" -p "${port_of[s2]}" -U plain -d postgres -At -v VERBOSITY=verbose -c "SELECT next_snowflake_id()" 2>&1)
contains "an ordinary role's error says what failed" "$err" "the etcd settings of this node are not usable"
lacks "... but not the password file's path" "$err" "secret-dir"
contains "a superuser's shardid_coordination() names it" "$(last_error s2)" "secret-dir"
node_up s3 $((base + 43)) "" "shardid.etcd_endpoints = 'http://127.0.0.1:$((base + 49))'" "shardid.etcd_wait = 1s" ||
    fail "s3 did not start"
q s3 -c "CREATE ROLE plain LOGIN"
err=$(psql -X -h "${dir_of[s3]}" -p "${port_of[s3]}" -U plain -d postgres -At -v VERBOSITY=verbose -c "SELECT next_snowflake_id()" 2>&1)
contains "etcd unreachable: an ordinary role's error says where to look" "$err" "shardid_coordination()"
lacks "... without the endpoint" "$err" "127.0.0.1:$((base + 49))"
err=$(psql -X -h "${dir_of[s3]}" -p "${port_of[s3]}" -U postgres -d postgres -At -v VERBOSITY=verbose -c "SELECT next_snowflake_id()" 2>&1)
contains "a superuser's error has the coordinator's last error" "$err" "127.0.0.1:$((base + 49))"
fi

# --- 8: a fast stop while three endpoints never answer, TTL 300 s ------------------
if section 8; then
hangs=""
for i in 1 2 3; do
    python3 test/etcd/proxy.py $((base + 50 + i)) hang "$work/hung" & proxies+=($!)
    hangs+="${hangs:+,}http://127.0.0.1:$((base + 50 + i))"
done
for i in 1 2 3; do wait_port $((base + 50 + i)) || fail "the hanging endpoint $i did not listen"; done
node_up h1 $((base + 54)) "" "shardid.etcd_endpoints = '$hangs'" "shardid.etcd_lease_ttl = 300s" || stop_suite "h1 did not start"
wait_until "h1's coordinator inside a request that never ends" 30 test -e "$work/hung"
t0=$(date +%s%3N)
# The request in flight would last a third of the TTL (100 s): pg_ctl's own
# wait (60 s) ends first unless the stop abandons it.
as_pg "$PG_BIN/pg_ctl" -D "${dir_of[h1]}/data" -m fast -w stop >/dev/null 2>&1
stopped=$?
took=$(($(date +%s%3N) - t0))
check "a fast stop with three hung endpoints at TTL 300 s abandons the request in flight and stops (pg_ctl's wait did not run out)" \
    "0 gone" "$stopped $([ -e "${dir_of[h1]}/data/postmaster.pid" ] && echo running || echo gone)"
promise "... within 1.5 s" "$([ "$took" -lt 1500 ] && echo t || echo f)" "$took ms"
fi

# --- 9: proxies from the environment; a password over http:// ---------------------
if section 9; then
echo -n pw | as_pg tee "$work/password" >/dev/null
d=$(pg_tmpdir); coord_dirs+=("$d"); dir_of[p1]=$d; port_of[p1]=$((base + 61))
cluster_init "$d" "shared_preload_libraries = 'shardid'" "shardid.node_id_source = etcd" \
    "shardid.etcd_endpoints = '$ETCD_URLS'" "shardid.etcd_prefix = '$PREFIX'" "shardid.etcd_lease_ttl = 3s" \
    "shardid.etcd_wait = 2s" "shardid.node_id = -1" || fail "p1: initdb"
as_pg env http_proxy="http://127.0.0.1:$((base + 51))" HTTP_PROXY="http://127.0.0.1:$((base + 51))" \
    ALL_PROXY="http://127.0.0.1:$((base + 51))" "$PG_BIN/pg_ctl" -D "$d/data" -l "$d/server.log" \
    -o "-p $((base + 61))" -w -t 60 start >/dev/null 2>&1 || stop_suite "p1 did not start"
q p1 -c "CREATE EXTENSION shardid"
wait_state p1 held 10 && pass "http_proxy and ALL_PROXY (a black hole) in the environment: etcd is reached directly" ||
    fail "with a proxy in the environment: $(last_error p1)"
check "a node without a password: password_in_clear is false" f "$(q p1 -c "SELECT password_in_clear FROM shardid_coordination()")"
cluster_stop "$d" fast
node_up w1 $((base + 62)) "" "shardid.etcd_user = 'root'" "shardid.etcd_password_file = '$work/password'" ||
    fail "w1 did not start"
for _ in $(seq 1 50); do grep -q "over http://" "${dir_of[w1]}/server.log" && break; sleep 0.1; done
contains "a password over http://: a WARNING at start" "$(log_of w1)" "WARNING:  shardid coordinator: the etcd password is sent over http://"
check "... and shardid_coordination() flags it" t "$(q w1 -c "SELECT password_in_clear FROM shardid_coordination()")"

fi

# --- 10: etcd revokes a holder's lease early ---------------------------------------
if section 10; then
PREFIX=/v10
node_up a1 $((base + 71)) "" "shardid.node_id = 7" "shardid.etcd_lease_ttl = 10s" || stop_suite "a1 did not start"
wait_state a1 held 10 || stop_suite "a1 did not claim 7"
node_up b1 $((base + 72)) "" "shardid.node_id = 7" "shardid.etcd_lease_ttl = 10s" || stop_suite "b1 did not start"
wait_state b1 refused 10 || fail "b1 is not refused while a1 holds 7"
# Each node tries to issue all along: a1 for 14 s (its lease is revoked
# once it has issued 100 IDs), b1 until it has issued 100 IDs (it waits out a1's fence first;
# 120 s, scaled by SHARDID_HANG_SCALE, are its hang guard).
loop() {  # SECONDS ROWS
    echo "DO \$\$ DECLARE stop timestamptz := clock_timestamp() + interval '$1 s'; BEGIN
  WHILE clock_timestamp() < stop AND (SELECT count(*) FROM l) < $2 LOOP
    BEGIN INSERT INTO l SELECT clock_timestamp(), next_snowflake_id();
    EXCEPTION WHEN object_not_in_prerequisite_state THEN PERFORM pg_sleep(0.005); END;
    COMMIT;
  END LOOP; END \$\$"
}
q a1 -c "CREATE TABLE l (at timestamptz, id bigint)"; q b1 -c "CREATE TABLE l (at timestamptz, id bigint)"
q a1 -c "SET shardid.etcd_wait = 0" -c "$(loop 14 1000000000)" & la=$!
q b1 -c "SET shardid.etcd_wait = 0" -c "$(loop $((120 * ${SHARDID_HANG_SCALE:-1})) 100)" & lb=$!
wait_rows a1 l 100 10 || fail "a1 issued nothing before its lease was revoked"
lease=$(q a1 -c "SELECT lease_id FROM shardid_coordination()")
revoked=$(date +%s%3N)
ectl lease revoke "$(printf '%x' "$lease")" >/dev/null  # as a leader that was paused does (etcd-io/etcd#12528)
wait $la $lb
a_last=$(q a1 -c "SELECT (extract(epoch FROM max(at)) * 1000)::bigint FROM l")
b_first=$(q b1 -c "SELECT (extract(epoch FROM min(at)) * 1000)::bigint FROM l")
echo "# a1's last ID $((a_last - revoked)) ms after the revocation, b1's first $((b_first - revoked)) ms after it"
[ -n "$b_first" ] && [ "$b_first" -gt "$a_last" ] &&
    pass "an early revocation: the new holder's first ID ($((b_first - revoked)) ms) came after the old holder's last ($((a_last - revoked)) ms)" ||
    fail "an early revocation: the new holder issued from $((b_first - revoked)) ms, the old one until $((a_last - revoked)) ms"
check "... and every ID of the new holder sorts above the old holder's" t \
    "$(q b1 -c "SELECT min(id) > $(q a1 -c "SELECT max(id) FROM l") FROM l")"
contains "... which waited for the old holder's fence" "$(log_of b1)" "was not released cleanly by its previous holder"
# The wait must not move the mark: a window above the last one each round
# of the wait ran the mark 80 s ahead of the clock (found by the 30-minute
# nemesis run), and every later holder starts above it.
ahead=$(( $(ectl get --print-value-only "$PREFIX/mark/7" | cut -d' ' -f1) - $(date +%s%3N) ))
[ "$ahead" -le 12000 ] && pass "after the wait the mark leads the clock by $ahead ms, no more than a window (TTL 10 s)" ||
    fail "after the wait the mark leads the clock by $ahead ms"
fi

no_crashes
