#!/usr/bin/env bash
# Each generator's cost against the last release, on this machine, in one
# run: builds the last release's tree (the commit scripts/release.sh finds
# on the branch) and the working tree, then installs them alternately on
# one server (a restart after each) and times every call in each, ROUNDS
# rounds in alternating order. Prints, per call, the nanoseconds above the
# `i::bigint` floor of each round (the median of paired timings), the ratio
# new/old (median of the rounds, and their spread), the call's cost over
# nextval() CACHE 1's timed right after it (PostgreSQL's code, the same in
# both trees: the machine's speed at that moment cancels out) and that
# ratio new/old, and the working tree's obfuscate_id() against nextval().
# Leaves the working tree installed. Installs into the PostgreSQL of
# $PG_CONFIG: run it alone (not beside the test command).
#   bash bench/against_release.sh [ROUNDS] [ROWS]      (defaults: 3, 1000000)
set -eu
cd "$(dirname "$0")/.."
. scripts/lib.sh
ROUNDS=${1:-3}
ROWS=${2:-1000000}
REPS=5  # paired timings (the floor, then the call) of each call in a round; the median counts

ensure_deps quick
base=$(bash scripts/release.sh)
version=$(git show "$base:shardid.control" | sed -n "s/^default_version = '\(.*\)'/\1/p")
work=$(pg_tmpdir)
port=${BENCH_PORT:-15470}
trap 'cluster_stop "$work/pg" immediate; rm -rf "$work"' EXIT
mkdir -p "$work/old" "$work/pg"
[ "$(id -u)" = 0 ] && chown postgres: "$work/pg"
git archive "$base" | tar -x -C "$work/old"
log "building $version ($(git rev-parse --short "$base")) and the working tree ($(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ', changed'))"
make -s -j2 -C "$work/old" PG_CONFIG="$PG_CONFIG" >/dev/null
make -s -j2 PG_CONFIG="$PG_CONFIG" >/dev/null
for tree in old new; do
    src=$([ $tree = old ] && echo "$work/old" || pwd)
    make -s -C "$src" install PG_CONFIG="$PG_CONFIG" DESTDIR="$work/stage-$tree" >/dev/null
done
# (Each file replaced, never written over in place: a server that has the
# library mapped keeps its copy.)
install_tree() { as_root cp -a --remove-destination "$work/stage-$1/." /; }

cluster_init "$work/pg" "shared_preload_libraries = 'shardid'" "shardid.node_id = 7" "shardid.launch_id = 1" \
    "max_connections = 20" "shared_buffers = '128MB'" "jit = off"
dir=$work/pg
export PGOPTIONS="-c client_min_messages=warning"
CALLS=("nextval('s1')" "obfuscate_id(i)" "reveal_id(i)" "next_trace_id()" "next_id('l1ms')"
    "next_decimal_id()" "next_call_number()")
setup_db() {  # TREE: its database, made with that tree installed
    q -d postgres -c "CREATE DATABASE db_$1" >/dev/null
    q -d "db_$1" >/dev/null <<'SQL'
CREATE EXTENSION shardid;
CREATE SEQUENCE s1 CACHE 1;
CREATE SEQUENCE s2 CACHE 1;
SELECT create_layout('l1ms', '2020-01-01 00:00+00', '1 millisecond', 41, 10, 12);
-- ns per row of expr above the floor (i::bigint), and expr's cost over
-- nextval()'s (CACHE 1: PostgreSQL's own code, the same in both trees, a
-- yardstick of how fast the machine is at that moment): each rep times the
-- floor, expr and nextval() back to back; the medians of reps.
CREATE FUNCTION t(expr text, n int, reps int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; f float8; e float8; v float8; d float8[] := '{}'; r float8[] := '{}';
BEGIN
    FOR k IN 1..reps LOOP
        t0 := clock_timestamp();
        EXECUTE format('SELECT count(g) FROM (SELECT i::bigint AS g FROM generate_series(1, %s) i) s', n);
        f := extract(epoch FROM clock_timestamp() - t0);
        t0 := clock_timestamp();
        EXECUTE format('SELECT count(g) FROM (SELECT %s AS g FROM generate_series(1, %s) i) s', expr, n);
        e := extract(epoch FROM clock_timestamp() - t0) - f;
        t0 := clock_timestamp();
        EXECUTE format('SELECT count(g) FROM (SELECT nextval(''s2'') AS g FROM generate_series(1, %s) i) s', n);
        v := extract(epoch FROM clock_timestamp() - t0) - f;
        d := d || e * 1e9 / n;
        r := r || e / greatest(v, 1e-9);
    END LOOP;
    RETURN (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(d) x) || ' ' ||
           (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(r) x);
END $$;
SQL
}
: >"$work/times"
started=no
for ((r = 1; r <= ROUNDS; r++)); do
    order=$([ $((r % 2)) = 1 ] && echo "old new" || echo "new old")
    for tree in $order; do
        [ $started = yes ] && cluster_stop "$work/pg"
        install_tree $tree
        cluster_start "$work/pg" "$port"
        started=yes
        [ "$(q -d postgres -c "SELECT count(*) FROM pg_database WHERE datname = 'db_$tree'")" = 1 ] || setup_db $tree
        for call in "${CALLS[@]}"; do
            read -r ns per_nextval <<<"$(q -d "db_$tree" -c "SELECT t(\$e\$$call\$e\$, $ROWS, $REPS)")"
            printf '%s\t%s\t%s\t%s\t%s\n' "$tree" "$r" "$call" "$ns" "$per_nextval" >>"$work/times"
        done
    done
done
cluster_stop "$work/pg"
install_tree new
echo "# each call against $version ($(git rev-parse --short "$base")), $ROUNDS rounds of $REPS x $ROWS rows, PostgreSQL $PG_MAJOR, $(nproc) cores, $(date -u +%Y-%m-%d)"
python3 - "$work/times" "$ROUNDS" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
ns = {(tree, int(r), call): float(x) for tree, r, call, x, _ in rows}
per = {(tree, int(r), call): float(y) for tree, r, call, _, y in rows}
rounds = range(1, int(sys.argv[2]) + 1)
calls = list(dict.fromkeys(call for _, _, call, _, _ in rows))
fmt = lambda xs: ", ".join(f"{x:.0f}" for x in xs)
def ratio(xs):
    return f"{statistics.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})" if xs else "-"
print(f"{'call':<22} {'old ns above floor':>20} {'new ns above floor':>20} {'new/old (spread)':>18} "
      f"{'x nextval old':>14} {'x nextval new':>14} {'new/old, per nextval':>22}")
for call in calls:
    old = [ns[("old", r, call)] for r in rounds]
    new = [ns[("new", r, call)] for r in rounds]
    po = [per[("old", r, call)] for r in rounds]
    pn = [per[("new", r, call)] for r in rounds]
    raw = [n / o for n, o in zip(new, old) if o > 0]
    norm = [n / o for n, o in zip(pn, po) if o > 0]
    print(f"{call:<22} {fmt(old):>20} {fmt(new):>20} {ratio(raw):>18} "
          f"{statistics.median(po):>14.2f} {statistics.median(pn):>14.2f} {ratio(norm):>22}")
pn = [per[("new", r, "obfuscate_id(i)")] for r in rounds]
print(f"working tree: obfuscate_id(i) / nextval() CACHE 1 = {statistics.median(pn):.2f} "
      f"(rounds: {', '.join(f'{x:.2f}' for x in pn)})")
PY
