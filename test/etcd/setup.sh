#!/usr/bin/env bash
# The setup docs/etcd.md gives, run from its very files (docs/setup/), and
# the procedure it gives for moving a fleet from settings to etcd:
#   - trial: one etcd member from docs/setup/etcd-member.sh's defaults (but
#     the ports and data directory); a node claims an id from it; and
#     docs/setup/trial.sh as docs/etcd.md runs it: two nodes with distinct
#     ids, the page's queries on each, and its stop;
#   - production: three members with TLS (certificates from
#     docs/setup/etcd-tls.sh, client certificates required), the user and
#     role of docs/setup/etcd-shardid-user.sh; two nodes with the settings
#     of the page claim distinct ids over https as that user; a node whose
#     prefix lies outside the role's is refused ("unauthorized"), so is one
#     with a wrong password;
#   - migration: two nodes on settings (ids 1 and 2) keep generating while
#     a new etcd node reserves above them (etcd_node_id_min), then each
#     switches to etcd keeping its id, then a node claims the lowest free id:
#     no ID twice, every node's IDs still rising across its switch. The
#     control (no reservation) claims an id a settings node still uses.
# Prints PASS/FAIL lines. Run from the repository root.
set -u
. scripts/lib.sh
. test/etcd/lib.sh

coord_setup 16640
member() {  # NAME CLIENT_PORT PEER_PORT [VAR=VALUE...]: docs/setup/etcd-member.sh
    local name=$1 cport=$2 pport=$3; shift 3
    env NAME="$name" CLIENT_PORT="$cport" PEER_PORT="$pport" DATA_DIR="$work/etcd-$name" "$@" \
        sh docs/setup/etcd-member.sh >"$work/etcd-$name.log" 2>&1 &
    etcd_pid_of[$name]=$!
}

# --- trial: one member ------------------------------------------------------
member trial 24201 24202
etcd_wait_up 24201 && pass "trial: docs/setup/etcd-member.sh starts a one-member etcd" ||
    { fail "trial: etcd did not start"; tail -5 "$work/etcd-trial.log"; }
ETCD_URLS=http://127.0.0.1:24201 PREFIX=/shardid
node_up t1 16641 "" && wait_state t1 held 30 && pass "trial: a node claims node id $(held_id t1)" ||
    fail "trial: the node holds no id ($(q t1 -c "SELECT state || ': ' || coalesce(last_error, '') FROM shardid_coordination()"))"

# --- trial: docs/setup/trial.sh, two nodes, as docs/etcd.md runs it --------------
# As written (su postgres -c 'sh -s' < docs/setup/trial.sh), with its own
# directory and ports; then the page's two queries on both nodes.
trial=$work/trial
out=$(as_pg env DIR="$trial" ETCD_PORT=24311 PG_PORT=16651 sh -s <docs/setup/trial.sh 2>&1)
echo "$out" | sed 's/^/# /'
check "trial.sh: two nodes, each holding its own node id" "node1 (port 16651): state held, node id 0
node2 (port 16652): state held, node id 1" "$(grep '^node' <<<"$out")"
page_sql=$(python3 - <<'PY'
import re
text = open("docs/etcd.md", encoding="utf-8").read()
print(re.search(r"```sql norun: it needs the trial's servers[^\n]*\n(.*?)```", text, re.S).group(1), end="")
PY
)
for n in 1 2; do
    got=$(as_pg "$PG_BIN/psql" -X -At -h "$trial" -p $((16650 + n)) -d postgres <<<"$page_sql" 2>&1)
    contains "trial: node$n answers the page's queries: held" "$got" "held|$((n - 1))|"
    check "... and its TraceId decodes to node id $((n - 1)), with a call number of 8 characters" "$((n - 1)) 8" \
        "$(tail -1 <<<"$got" | awk -F'|' '{ print $1, length($2) }')"
done
as_pg env DIR="$trial" sh -s stop <docs/setup/trial.sh
check "trial.sh stop: the servers and etcd stop, the directory goes" "gone" \
    "$([ ! -e "$trial" ] && ! pgrep -f "data-dir $trial/etcd" >/dev/null && echo gone)"

# --- production: three members, TLS, a user limited to the prefix ------------
tls=$work/tls
sh docs/setup/etcd-tls.sh "$tls" 127.0.0.1 && [ -s "$tls/server.crt" ] && [ -s "$tls/shardid.key" ] &&
    pass "docs/setup/etcd-tls.sh makes the CA, the server and the client certificates" ||
    fail "docs/setup/etcd-tls.sh failed"
cluster=p1=https://127.0.0.1:24212,p2=https://127.0.0.1:24222,p3=https://127.0.0.1:24232
for i in 1 2 3; do member "p$i" "242${i}1" "242${i}2" TLS_DIR="$tls" CLUSTER="$cluster"; done
export ETCDCTL_CACERT=$tls/ca.crt ETCDCTL_CERT=$tls/server.crt ETCDCTL_KEY=$tls/server.key
up=0
for _ in $(seq 1 100); do
    etcdctl --endpoints=https://127.0.0.1:24211,https://127.0.0.1:24221,https://127.0.0.1:24231 endpoint health >/dev/null 2>&1 &&
        { up=1; break; }
    sleep 0.2
done
[ $up = 1 ] && pass "production: three members with TLS from docs/setup/etcd-member.sh" ||
    { fail "production: the three members are not healthy"; tail -3 "$work/etcd-p1.log"; }
members=$(etcdctl --endpoints=https://127.0.0.1:24211 member list 2>/dev/null | wc -l)
check "production: the cluster has three members" 3 "$members"
if ENDPOINTS=https://127.0.0.1:24211 PREFIX=/shardid ROOT_PASSWORD=rootpw SHARDID_PASSWORD=shardidpw \
    sh docs/setup/etcd-shardid-user.sh >"$work/auth.log" 2>&1; then
    pass "docs/setup/etcd-shardid-user.sh makes the user and role and turns authentication on"
else
    fail "docs/setup/etcd-shardid-user.sh failed: $(tail -2 "$work/auth.log")"
fi
unset ETCDCTL_CACERT ETCDCTL_CERT ETCDCTL_KEY
secrets=$(pg_tmpdir)
cp "$tls/ca.crt" "$tls/shardid.crt" "$tls/shardid.key" "$secrets/"
echo shardidpw >"$secrets/password"; echo wrong >"$secrets/wrong"
chown -R postgres "$secrets" 2>/dev/null; chmod 600 "$secrets"/*
ETCD_URLS=https://127.0.0.1:24211,https://127.0.0.1:24221,https://127.0.0.1:24231
tls_lines=("shardid.etcd_cacert = '$secrets/ca.crt'" "shardid.etcd_cert = '$secrets/shardid.crt'"
           "shardid.etcd_key = '$secrets/shardid.key'" "shardid.etcd_user = 'shardid'")
node_up a 16642 "" "${tls_lines[@]}" "shardid.etcd_password_file = '$secrets/password'"
node_up b 16643 "" "${tls_lines[@]}" "shardid.etcd_password_file = '$secrets/password'"
if wait_state a held 30 && wait_state b held 30 && [ "$(held_id a)" != "$(held_id b)" ]; then
    pass "production: two nodes claim ids $(held_id a) and $(held_id b) over TLS as the user shardid"
else
    fail "production: a: $(q a -c "SELECT state || ' ' || coalesce(last_error, '') FROM shardid_coordination()"); b: $(q b -c "SELECT state FROM shardid_coordination()")"
fi
check "production: 4000 IDs from the two nodes, none twice" 4000 \
    "$( (q a -c "SELECT next_snowflake_id() FROM generate_series(1, 2000)"; q b -c "SELECT next_snowflake_id() FROM generate_series(1, 2000)") | sort -u | wc -l)"
PREFIX=/other
node_up c 16644 "" "${tls_lines[@]}" "shardid.etcd_password_file = '$secrets/password'"
wait_state c unauthorized 30 && q c -c "SELECT last_error FROM shardid_coordination()" | grep -q 'permission denied' &&
    pass "production: a prefix outside the role's is refused (unauthorized: permission denied)" ||
    fail "production: a node outside the role's prefix is $(q c -c "SELECT state FROM shardid_coordination()")"
# etcd refuses such a node its keys, not its lease: the renewals it answers
# do not end the condition (they did: last_error went blank at each one, and
# the log said the refusal ended and began again).
renewals_seen() {  # N: c's lease renewed N times since c_last
    local at
    at=$(q c -c "SELECT last_answer_at FROM shardid_coordination()")
    [ "$at" != "$c_last" ] && c_last=$at && c_renewals=$((c_renewals + 1))
    [ "$c_renewals" -ge "$1" ]
}
c_last=$(q c -c "SELECT last_answer_at FROM shardid_coordination()") c_renewals=0
wait_until "5 renewals of c's lease" 30 renewals_seen 5 && pass "production: c's lease is renewed meanwhile (5 renewals)" ||
    fail "production: c's lease was renewed $c_renewals times"
check "production: ... and the refusal went on through them, in the state and the log (no line says it ended)" \
    "unauthorized permission denied 0" \
    "$(q c -c "SELECT state, CASE WHEN last_error LIKE '%permission denied%' THEN 'permission denied' ELSE last_error END FROM shardid_coordination()" | tr '|' ' ') $(grep -c "etcd refused this node's credentials for" "${dir_of[c]}/server.log")"
# The role given the prefix: the node claims by itself, and the log says
# the refusal ended.
ETCDCTL_CACERT=$tls/ca.crt ETCDCTL_CERT=$tls/server.crt ETCDCTL_KEY=$tls/server.key \
    etcdctl --endpoints=https://127.0.0.1:24211 --user root:rootpw role grant-permission shardid readwrite --prefix=true /other/ \
    >/dev/null 2>&1 || fail "production: etcdctl could not grant the role /other/"
wait_state c held 30 && pass "production: once the role may use the prefix, c claims an id by itself" ||
    fail "production: c is $(q c -c "SELECT state || ': ' || coalesce(last_error, '') FROM shardid_coordination()")"
check "production: ... and the log says the refusal ended, once" 1 \
    "$(grep -c "etcd refused this node's credentials for" "${dir_of[c]}/server.log")"
PREFIX=/shardid
node_up d 16645 "" "${tls_lines[@]}" "shardid.etcd_password_file = '$secrets/wrong'"
wait_state d unauthorized 30 && q d -c "SELECT last_error FROM shardid_coordination()" | grep -q 'authentication' &&
    pass "production: a wrong password is refused (unauthorized: authentication failed)" ||
    fail "production: a node with a wrong password is $(q d -c "SELECT state FROM shardid_coordination()")"
for n in a b c d; do cluster_stop "${dir_of[$n]}" immediate; done

# --- moving a fleet from settings to etcd (docs/etcd.md) --------------------
ETCD_URLS=http://127.0.0.1:24201 PREFIX=/fleet
settings_node() {  # NAME PORT ID
    local d; d=$(pg_tmpdir); coord_dirs+=("$d"); dir_of[$1]=$d; port_of[$1]=$2
    cluster_init "$d" "shared_preload_libraries = 'shardid'" "shardid.node_id = $3" "shardid.launch_id = 1" &&
        node_start "$1" && q "$1" -c "CREATE EXTENSION shardid" -c "CREATE TABLE ids (id bigint, at timestamptz)"
}
ids=$work/fleet-ids
gen() { q "$1" -c "INSERT INTO ids SELECT next_snowflake_id(), clock_timestamp() FROM generate_series(1, 2000)"; }
switch_to_etcd() {  # NAME: the procedure's step 2, the node keeping its id
    local id; id=$(q "$1" -c "SHOW shardid.node_id")
    printf '%s\n' "shardid.node_id_source = etcd" "shardid.etcd_endpoints = '$ETCD_URLS'" \
        "shardid.etcd_prefix = '$PREFIX'" "shardid.node_id = $id" | as_pg tee -a "${dir_of[$1]}/data/postgresql.conf" >/dev/null
    as_pg "$PG_BIN/pg_ctl" -D "${dir_of[$1]}/data" -m fast -w stop >/dev/null 2>&1
    node_start "$1" && wait_state "$1" held 30
}
settings_node m1 16651 1 && settings_node m2 16652 2 || stop_suite "migration: the settings nodes did not start"
gen m1; gen m2
# Step 1: every new etcd node claims above the ids in use.
node_up m3 16653 "" "shardid.etcd_node_id_min = 3" && wait_state m3 held 30
check "migration: a new node reserving above the ids in use claims 3" 3 "$(held_id m3)"
q m3 -c "CREATE TABLE ids (id bigint, at timestamptz)"
gen m3
switch_to_etcd m1 && check "migration: m1 switched to etcd holds its own id 1" 1 "$(held_id m1)" || fail "migration: m1 did not switch"
gen m1; gen m2; gen m3
switch_to_etcd m2 && check "migration: m2 switched to etcd holds its own id 2" 2 "$(held_id m2)" || fail "migration: m2 did not switch"
gen m2
# Step 3: once every node is on etcd, -1 claims the lowest free id.
node_up m4 16654 "" && wait_state m4 held 30
check "migration: afterwards a node with -1 claims the lowest free id, 0" 0 "$(held_id m4)"
q m4 -c "CREATE TABLE ids (id bigint, at timestamptz)"; gen m4
for n in m1 m2 m3 m4; do q "$n" -c "SELECT id, '$n', at FROM ids ORDER BY at, id" -F' '; done >"$ids"
check "migration: no ID twice across the four nodes ($(wc -l <"$ids") IDs)" 0 "$(awk '{print $1}' "$ids" | sort | uniq -d | wc -l)"
rising=yes
for n in m1 m2; do
    awk -v n=$n '$2 == n {print $1}' "$ids" | sort -c -n 2>/dev/null || rising=no
done
check "migration: each switched node's IDs rise across its switch, in the order issued" yes "$rising"

# Control: without the reservation, a node with -1 claims an id that a node
# still on settings uses.
PREFIX=/fleet-control
settings_node c1 16661 0 || stop_suite "control: the settings node did not start"
node_up c2 16662 "" && wait_state c2 held 30
check "control: without the reservation, a new node claims id 0, which a settings node uses" 0 "$(held_id c2)"
