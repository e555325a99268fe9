#!/usr/bin/env bash
# Shard claims at Instagram's scale (8,192 logical shards), with node ids
# from a real etcd on this machine (private ports, the default lease TTL of
# 10 s): docs/performance.md, "Claims at Instagram's scale". Not a test: it
# prints figures and fails only if something cannot run.
#   - what one node asks etcd per renewal of its lease, holding 8, 1,024
#     and 8,192 values (requests, and bytes each way through a counting
#     proxy), steady state: flat is the target;
#   - three nodes splitting 8,192 logical shards (shardid.shards): the time
#     from their first use until all are held;
#   - per ID, next_instagram_id(shard) over all 8,192 shards against node
#     ids from settings (both bound by Instagram's 1,024 IDs a millisecond),
#     and the same with a layout of Instagram's shard width whose sequence
#     does not bind (15 bits: 32,768 a millisecond);
#   - the claim table's shared memory at the default shardid.max_shard_claims.
#   bash bench/claims_scale.sh [ROUNDS]
set -u
cd "$(dirname "$0")/.."
. scripts/lib.sh
. test/etcd/lib.sh
ROUNDS=${1:-5}
coord_setup 17800
etcd_main 25791 25891
PY=/usr/bin/python3
TTL10=("shardid.etcd_lease_ttl = 10s" "shardid.etcd_wait = 60s" "shared_buffers = '256MB'" "jit = off")
INSTAGRAM=e1314220021721u1t40s13q10
counter() { cat "$work/count-$1" 2>/dev/null || echo "0 0"; }
held_claims() { q "$1" -c "SELECT count(*) FROM shardid_shard_claims() WHERE state = 'held' AND space = '$INSTAGRAM'"; }
wait_held() {  # NODE N SECONDS
    for _ in $(seq $(($3 * 20))); do
        [ "$(held_claims "$1")" -ge "$2" ] && return 0
        sleep 0.05
    done
    return 1
}

echo "## Claims at Instagram's scale (etcd $(etcd --version | awk '/etcd Version/ {print $3}') on this machine, lease TTL 10 s: a renewal every 2 s)"

# --- what a renewal costs, by the values held --------------------------------
$PY test/etcd/proxy.py 25800 count 25791 "$work/count-x" & coord_pids+=($!)
wait_port 25800 || { echo "  (the counting proxy did not start)"; exit 1; }
PREFIX=/bench-x
ETCD_URLS=http://127.0.0.1:25800
node_up x 17801 "" "shardid.node_id = 0" "shardid.shards = '0-7'" "${TTL10[@]}" || { echo "  (node x did not start)"; exit 1; }
wait_state x held 30 || { echo "  (node x did not claim its id)"; exit 1; }
echo "  per renewal of the lease, one node, steady state, over 5 renewals each:"
for set in 0-7 0-1023 0-8191; do
    n=$((${set#0-} + 1))
    q x -c "ALTER SYSTEM SET shardid.shards = '$set'" -c "SELECT pg_reload_conf()" >/dev/null
    sleep 0.5
    q x -c "SELECT next_instagram_id(0)" >/dev/null
    wait_held x "$n" 60 || { echo "  (node x did not hold $n values)"; exit 1; }
    sleep 3
    r0=$(q x -c "SELECT requests FROM shardid_coordination()"); c0=$(counter x)
    sleep 10
    r1=$(q x -c "SELECT requests FROM shardid_coordination()"); c1=$(counter x)
    awk -v n="$n" -v r0="$r0" -v r1="$r1" -v c0="$c0" -v c1="$c1" 'BEGIN {
        split(c0, a, " "); split(c1, b, " ");
        printf "    %5d values held: %.1f requests, %.0f bytes to etcd, %.0f bytes from etcd\n",
               n, (r1 - r0) / 5, (b[1] - a[1]) / 5, (b[2] - a[2]) / 5 }'
done
echo "  the claim table in shared memory, shardid.max_shard_claims = $(q x -c "SHOW shardid.max_shard_claims"): $(q x -c "SELECT pg_size_pretty(size) || ' (' || size || ' bytes)' FROM pg_shmem_allocations WHERE name = 'shardid shard claims'")"

# --- per ID: next_instagram_id(shard) over 8,192 shards, etcd and settings ------
# Room for a second claim space of 8,192 declared values (x restarts).
q x -c "ALTER SYSTEM SET shardid.max_shard_claims = 20000" >/dev/null
cluster_stop "${dir_of[x]}" fast
node_start x || { echo "  (node x did not start again)"; exit 1; }
wait_state x held 30 || { echo "  (node x did not claim its id again)"; exit 1; }
node_up k 17809 "" "shardid.node_id_source = setting" "shardid.node_id = 9" "shared_buffers = '256MB'" "jit = off" ||
    { echo "  (node k did not start)"; exit 1; }
for n in x k; do q $n -c "SELECT create_layout('insta_wide', date_trunc('day', now()), '1 ms', 35, 13, 15)" >/dev/null; done
for l in "next_instagram_id(i)" "next_id('insta_wide', i)"; do
    q x -c "SET shardid.etcd_wait = '60s'" -c "SELECT count($l) FROM generate_series(0, 8191) i" >/dev/null
done
N=1000000
for expr in "next_instagram_id(i % 8192)" "next_id('insta_wide', i % 8192)"; do
    for r in $(seq "$ROUNDS"); do
        for side in k x; do
            out=$(q $side -c "\\timing on" -c "SELECT count($expr) FROM generate_series(1, $N) i")
            grep -qx "$N" <<<"$out" || { echo "  ($expr failed on $side: $out)" >&2; continue; }
            echo "$side $(sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' <<<"$out")"
        done
    done | awk -v label="$expr" -v n="$N" -v rounds="$ROUNDS" '
        { if (!($1 in best) || $2 < best[$1]) best[$1] = $2 }
        END { printf "  per ID, %s, fastest of %d rounds: settings %.0f ns, etcd (8,192 held) %.0f ns: etcd / settings = %.2f\n",
              label, rounds, best["k"] * 1e6 / n, best["x"] * 1e6 / n, best["x"] / best["k"] }'
done
cluster_stop "${dir_of[x]}" fast
cluster_stop "${dir_of[k]}" fast

# --- three nodes splitting 8,192 logical shards -------------------------------
ETCD_URLS=http://127.0.0.1:25791
PREFIX=/bench-three
i=0
for set in 0-2730 2731-5461 5462-8191; do
    node_up "n$i" $((17802 + i)) "" "shardid.node_id = $((10 + i))" "shardid.shards = '$set'" "${TTL10[@]}" ||
        { echo "  (a node did not start)"; exit 1; }
    i=$((i + 1))
done
for n in n0 n1 n2; do wait_state $n held 60 || { echo "  ($n did not claim its id)"; exit 1; }; done
# Each node: its first use, then a loop in SQL until it holds its third
# (polled every 100 ms inside the server: the listing costs CPU the
# claims need); all three at once.
t0=$(date +%s%3N)
firsts=()
i=0
for set in 0-2730 2731-5461 5462-8191; do
    lo=${set%-*}; hi=${set#*-}
    q "n$i" -c "SELECT next_instagram_id($lo)" -c "DO \$\$ BEGIN
        WHILE (SELECT count(*) FROM shardid_shard_claims() WHERE state = 'held' AND space = '$INSTAGRAM') < $((hi - lo + 1))
        LOOP PERFORM pg_sleep(0.1); END LOOP; END \$\$" >/dev/null &
    firsts+=($!)
    i=$((i + 1))
done
wait "${firsts[@]}"
t1=$(date +%s%3N)
echo "  three nodes splitting 8,192 logical shards (shardid.shards), from their first use until all are held: $((t1 - t0)) ms ($(held_claims n0) + $(held_claims n1) + $(held_claims n2) held)"
