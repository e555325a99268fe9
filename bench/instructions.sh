#!/usr/bin/env bash
# Each call's cost against the last release in instructions, which a busy
# or noisy machine does not change (bench/against_release.sh times them,
# and a VM's noise can exceed the differences sought). Builds the last
# release's tree (scripts/release.sh) and the working tree, installs each
# into a private copy of this PostgreSQL (relocated: nothing of the
# machine's installation changes, so it runs beside anything), and counts
# with valgrind's cachegrind the instructions a single-user backend runs
# for CALLS and for 2 x CALLS rows of each call: the difference over CALLS,
# less the same for the `i::bigint` floor, is the call's own count.
# Prints old, new, new/old, and each tree's calls as a multiple of
# nextval() CACHE 1.
#   bash bench/instructions.sh [CALLS]      (default: 20000)
# BENCH_BASE=<commit> compares with that commit instead of the release.
set -eu
cd "$(dirname "$0")/.."
. scripts/lib.sh
CALLS=${1:-20000}

ensure_deps quick
ensure_packages /usr/bin/valgrind:valgrind  # also in the test command's list
base=$(git rev-parse "${BENCH_BASE:-$(bash scripts/release.sh)}")
version=$(git show "$base:shardid.control" | sed -n "s/^default_version = '\(.*\)'/\1/p")
work=$(pg_tmpdir)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/old"
git archive "$base" | tar -x -C "$work/old"
log "building $version ($(git rev-parse --short "$base")) and the working tree ($(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ', changed'))"
make -s -j2 -C "$work/old" PG_CONFIG="$PG_CONFIG" >/dev/null
make -s -j2 PG_CONFIG="$PG_CONFIG" >/dev/null
bindir=$("$PG_CONFIG" --bindir)
for tree in old new; do
    src=$([ $tree = old ] && echo "$work/old" || pwd)
    root="$work/root-$tree"
    # The server's own directories (a relocated copy), then this tree into them.
    pg_private_copy "$root" >/dev/null || exit 1
    make -s -C "$src" install PG_CONFIG="$PG_CONFIG" DESTDIR="$root" >/dev/null
    chown -R postgres: "$root" 2>/dev/null || true
    as_pg "$root$bindir/initdb" -D "$work/data-$tree" -U postgres -A trust --no-sync >"$work/initdb-$tree.log" 2>&1 || {
        cat "$work/initdb-$tree.log" >&2; exit 1; }
done

for tree in old new; do
    hot_path_setup "$work/root-$tree$bindir/postgres" "$work/data-$tree"
done

EXPRS=("i::bigint" "nextval('s1')" "obfuscate_id(i)" "reveal_id(i)" "next_trace_id()" "next_id('l1ms')"
    "next_decimal_id()" "next_call_number()")
: >"$work/counts"
for tree in old new; do
    for expr in "${EXPRS[@]}"; do
        n=$(instructions_per_row "$work/root-$tree$bindir/postgres" "$work/data-$tree" "$expr" "$CALLS")
        printf '%s\t%s\t%s\n' "$tree" "$expr" "$n" >>"$work/counts"
    done
done
echo "# instructions per call above the i::bigint floor, against $version ($(git rev-parse --short "$base")), $CALLS and $((2 * CALLS)) rows, PostgreSQL $PG_MAJOR, $(date -u +%Y-%m-%d)"
python3 - "$work/counts" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
n = {(tree, expr): int(x) for tree, expr, x in rows}
floor = {tree: n[(tree, "i::bigint")] for tree in ("old", "new")}
above = lambda tree, expr: n[(tree, expr)] - floor[tree]
NEXTVAL = "nextval('s1')"
print(f"{'call':<22} {'old':>8} {'new':>8} {'new/old':>8} {'old x nextval':>14} {'new x nextval':>14}")
for expr in dict.fromkeys(e for _, e, _ in rows):
    if expr == "i::bigint":
        continue
    o, w = above("old", expr), above("new", expr)
    nv_old, nv_new = above("old", NEXTVAL), above("new", NEXTVAL)
    print(f"{expr:<22} {o:>8} {w:>8} {w / o if o > 0 else float('nan'):>8.3f} "
          f"{o / nv_old:>14.3f} {w / nv_new:>14.3f}")
PY
