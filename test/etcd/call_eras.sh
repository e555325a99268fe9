#!/usr/bin/env bash
# Call numbers never issued twice across changes of the call-number key
# (issue 65, part 4; src/core/callnum.hpp, "key eras"). Prints PASS/FAIL
# lines; run from the repository root. CALL_ERAS_SECTIONS="1" runs some
# sections only.
#   1 one node (node ids from settings): six keys in turn, four whole runs
#     of 16,384 numbers each, into one UNIQUE column (issue 65: 240 and 24
#     texts issued twice, across two keys); every text decodes with its own
#     key to its run; the keys again in turn, after a restart and after
#     kill -9 too, each in its own era; two databases' default keys at
#     once; a dump restored into another server goes on above its
#     numbers; 255 eras in all, then 2200H; 1.2's texts (era 0) never come
#     again.
#   2 two nodes with node ids from etcd: the cluster's eras in etcd; keys
#     changed on both nodes in turn, no text twice across both nodes; etcd
#     losing the prefix: the next run ids are in new eras.
set -u
. scripts/lib.sh
. test/etcd/lib.sh

coord_setup 16900
sections=" ${CALL_ERAS_SECTIONS:-1 2} "
# secret N: a 16-byte secret of its own for key N.
secret() { printf '\\x%032x' "$1"; }

if want 1; then
    d=$(pg_tmpdir); coord_dirs+=("$d"); dir_of[l]=$d; port_of[l]=$((base + 1))
    cluster_init "$d" "shared_preload_libraries = 'shardid'" "shardid.node_id = 3" "shardid.launch_id = 1" ||
        stop_suite "the node's data directory was not made"
    node_start l && q l -c "CREATE EXTENSION shardid" || stop_suite "the node did not start"
    q l -c "CREATE TABLE c (c text PRIMARY KEY, k int, run int, seq int)" -c "CREATE TABLE old (c text PRIMARY KEY, k int)"
    # Keys k1 to k260, the secret of kN as secret N makes it.
    q l -c "SELECT count(create_obfuscation_key('k' || k, decode(lpad(to_hex(k), 32, '0'), 'hex'))) FROM generate_series(1, 260) k" >/dev/null
    # 1.2's texts (era 0: run ids below 2^24) of keys 1 to 6, made by hand
    # as 1.2 issued them: runs 1 to 30, every sequence of a few.
    for k in 1 2 3 4 5 6; do
        q l -c "SET shardid.call_number_key = 'k$k'" -c "INSERT INTO old SELECT call_number_compose(0, r, s), $k
                FROM generate_series(1, 30) r, generate_series(0, 16383, 7) s ON CONFLICT DO NOTHING" >/dev/null
    done
    failed=0
    for k in 1 2 3 4 5 6; do
        # Four whole runs in one session (a run is a backend's 16,384).
        q l -c "SET shardid.call_number_key = 'k$k'" \
            -c "INSERT INTO c SELECT next_call_number(), $k FROM generate_series(1, 4 * 16384)" >/dev/null 2>"$work/k$k.err" ||
            { failed=1; fail "key k$k: $(head -1 "$work/k$k.err")"; }
    done
    check "six keys in turn, 4 runs of 16,384 each: every call number once" "0|393216" \
        "$([ $failed = 0 ] && echo 0)|$(q l -c "SELECT count(*) FROM c")"
    for k in 1 2 3 4 5 6; do
        q l -c "SET shardid.call_number_key = 'k$k'" \
            -c "UPDATE c SET (run, seq) = (SELECT run_id, sequence FROM call_number_decode(c)) WHERE k = $k" >/dev/null
    done
    check "... each key's numbers in an era of its own, eras 1 to 6 in turn (run_id >> 22)" "1|1|2|2|3|3|4|4|5|5|6|6" \
        "$(q l -c "SELECT string_agg(lo || '|' || hi, '|' ORDER BY k) FROM (SELECT k, min(run >> 22) lo, max(run >> 22) hi FROM c GROUP BY k) x")"
    check "... each decodes with its own key to four whole runs (sequences 0 to 16383 of each)" "6|4|16384|0|16383" \
        "$(q l -c "SELECT count(*) || '|' || min(runs) || '|' || min(per) || '|' || min(lo) || '|' || max(hi) FROM (
                   SELECT k, count(DISTINCT run) runs, min(n) per, min(lo) lo, max(hi) hi FROM (
                     SELECT k, run, count(*) n, min(seq) lo, max(seq) hi FROM c GROUP BY k, run) r GROUP BY k) x")"
    check "... none equals a text 1.2 made with any of the keys (era 0)" "0" \
        "$(q l -c "SELECT count(*) FROM c JOIN old USING (c)")"
    check "... all 8 base62 characters" "t" "$(q l -c "SELECT bool_and(c ~ '^[0-9A-Za-z]{8}\$') FROM c")"
    # The keys again, in turn: each goes on in its own era, above its last
    # run id, after a restart and after kill -9 too.
    again() {  # WHAT
        local k failed=0
        for k in 3 1 6 2; do
            q l -c "SET shardid.call_number_key = 'k$k'" \
                -c "INSERT INTO c SELECT next_call_number(), $k FROM generate_series(1, 20000)" >/dev/null 2>"$work/again.err" ||
                { failed=1; fail "$1: key k$k: $(head -1 "$work/again.err")"; }
        done
        [ $failed = 0 ] && pass "$1: keys 3, 1, 6 and 2 again, 20,000 numbers each, none twice"
    }
    again "keys in turn"
    cluster_stop "$d" fast && node_start l || stop_suite "the node did not start again"
    again "... after a restart"
    pm=$(head -1 "$d/data/postmaster.pid")
    kill -9 $(pgrep -P "$pm") "$pm" 2>/dev/null
    while kill -0 "$pm" 2>/dev/null; do sleep 0.1; done
    mv "$d/server.log" "$d/killed.log"  # what the kill made it say is not a crash (no_crashes)
    node_start l || stop_suite "the node did not start after kill -9"
    again "... after kill -9"
    for k in 1 2 3 6; do
        q l -c "SET shardid.call_number_key = 'k$k'" \
            -c "UPDATE c SET (run, seq) = (SELECT run_id, sequence FROM call_number_decode(c)) WHERE k = $k" >/dev/null
    done
    check "... each key still in its own era, and still six eras" "1|1|2|2|3|3|4|4|5|5|6|6" \
        "$(q l -c "SELECT string_agg(lo || '|' || hi, '|' ORDER BY k) FROM (SELECT k, min(run >> 22) lo, max(run >> 22) hi FROM c GROUP BY k) x")"
    # Two databases, each with its own default key (a secret of its own), at
    # once: each takes its era, neither stops the other.
    q l -c "CREATE DATABASE other" >/dev/null && q l -d other -c "CREATE EXTENSION shardid" >/dev/null
    q l -c "CREATE TABLE d (c text)" >/dev/null
    q l -d other -c "COPY (SELECT next_call_number() FROM generate_series(1, 40000)) TO STDOUT" >"$work/other.txt" 2>&1 &
    q l -c "INSERT INTO d SELECT next_call_number() FROM generate_series(1, 40000)" 2>&1
    wait
    q l -c "COPY d FROM STDIN" <"$work/other.txt" 2>&1
    check "two databases' default keys at once: 80,000 call numbers, none twice" "80000|80000" \
        "$(q l -c "SELECT count(*) || '|' || count(DISTINCT c) FROM d")"
    # A dump restored into another server (a node state of its own, no
    # eras): its numbers come after the dump's.
    r=$(pg_tmpdir); coord_dirs+=("$r"); dir_of[r]=$r; port_of[r]=$((base + 2))
    cluster_init "$r" "shared_preload_libraries = 'shardid'" "shardid.node_id = 4" "shardid.launch_id = 1" &&
        node_start r || stop_suite "the restore's server did not start"
    pg_dump -h "$d" -p "${port_of[l]}" -U postgres -d postgres >"$work/dump.sql" 2>"$work/dump.err" ||
        fail "pg_dump failed: $(head -2 "$work/dump.err")"
    q r -v ON_ERROR_STOP=0 -f "$work/dump.sql" >/dev/null 2>&1
    # The restored database names l's history: r adopts l's state, taken
    # after the dump (docs/install.md, "Upgrading PostgreSQL").
    echo "SELECT shardid_adopt_state(:'state')" |
        q r -v state="$(q l -c "SELECT shardid_export_state()")" >/dev/null 2>"$work/r.err" ||
        fail "r adopts l's state: $(head -1 "$work/r.err")"
    for k in 1 6; do
        q r -c "SET shardid.call_number_key = 'k$k'" \
            -c "INSERT INTO c SELECT next_call_number(), $k FROM generate_series(1, 20000)" >/dev/null 2>"$work/r.err" ||
            fail "a dump restored into another server, key k$k: $(head -1 "$work/r.err")"
    done
    check "a dump restored into another server: keys 1 and 6 go on, none of their numbers comes again" "$(($(q l -c "SELECT count(*) FROM c") + 40000))" \
        "$(q r -c "SELECT count(DISTINCT c) FROM c")"
    cluster_stop "$r" fast
    # 255 eras: six keys and the two default keys took eras 1 to 8; keys
    # 7 to 253 take 9 to 255 (in one session), key 254 none.
    for k in $(seq 7 253); do
        echo "SET shardid.call_number_key = 'k$k';"
        echo "INSERT INTO c SELECT next_call_number(), $k;"
    done | q l -v ON_ERROR_STOP=1 >/dev/null 2>"$work/eras.err" || fail "a key took no era: $(head -1 "$work/eras.err")"
    check "... 255 eras in all: the next key is refused" "2200H: no call-number key era is left" \
        "$(q_err l "SET shardid.call_number_key = 'k254'; SELECT next_call_number()")"
    check "... the keys that have an era go on (the last, and the first)" "ok ok" \
        "$(q_err l "SET shardid.call_number_key = 'k253'; SELECT next_call_number()") $(q_err l "SET shardid.call_number_key = 'k1'; SELECT next_call_number()")"
    check "... the last key's numbers decode to era 255" "255" \
        "$(q l -c "SET shardid.call_number_key = 'k253'" -c "SELECT (call_number_decode(next_call_number())).run_id >> 22" | tail -1)"
    cluster_stop "$d" fast
fi

if want 2; then
    etcd_main 25291 25391
    PREFIX=/eras
    node_up x $((base + 11)) "" "shardid.node_id = 11" || stop_suite "node x did not start"
    node_up y $((base + 12)) "" "shardid.node_id = 12" || stop_suite "node y did not start"
    wait_state x held 20 && wait_state y held 20 || stop_suite "the nodes did not claim their ids"
    for n in x y; do
        q $n -c "CREATE TABLE c (c text PRIMARY KEY)" >/dev/null
        for k in 1 2 3; do q $n -c "SELECT create_obfuscation_key('k$k', '$(secret "$k")')" >/dev/null; done
    done
    take() {  # NODE KEY N
        q "$1" -c "SET shardid.etcd_wait = '20s'; SET shardid.call_number_key = '$2'" \
            -c "INSERT INTO c SELECT next_call_number() FROM generate_series(1, $3)" >/dev/null 2>"$work/take.err" ||
            fail "node $1, key $2: $(head -1 "$work/take.err")"
    }
    take x k1 20000
    take y k1 20000
    take x k2 20000
    take y k1 20000
    take y k2 20000
    take x k1 20000
    check "... the cluster's eras recorded in etcd: k1's and k2's" "2" \
        "$(ectl get --print-value-only "$PREFIX/counter/run/eras" | wc -w)"
    # etcd loses the prefix: the next run ids come in new eras (the ones
    # they were in are recorded nowhere now).
    ectl del --prefix "$PREFIX/" >/dev/null
    q x -c "SELECT pg_sleep(1)" >/dev/null
    take x k2 20000
    take y k1 20000
    take y k2 20000
    copy() { q y -c "COPY c TO STDOUT" | q x -c "CREATE TEMP TABLE yc (c text); COPY yc FROM STDIN; SELECT count(*) FROM c JOIN yc USING (c)"; }
    check "... no call number issued by both nodes" "0" "$(copy | tail -1)"
    check "... after the prefix was lost, new eras (3 and 4)" "t" \
        "$(q x -c "SET shardid.call_number_key = 'k2'" -c "SELECT max((call_number_decode(c)).run_id >> 22) >= 3 FROM c" | tail -1)"
    for n in x y; do cluster_stop "${dir_of[$n]}" fast; done
fi

no_crashes
