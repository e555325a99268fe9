#!/usr/bin/env bash
# The hot paths stay where they belong, in instructions (valgrind's
# cachegrind; a count the machine's load does not change, where a timing
# on a VM does): each call's cost per row above the `i::bigint` floor, as a
# multiple of nextval() CACHE 1's, in a single-user backend of the
# installed shardid. Bounds, with what they caught:
#   obfuscate_id(i), reveal_id(i)  at most 1.00 x nextval (0.87 now; 1.18 in
#                                  1.2, where every call looked up Citus'
#                                  tables by name in a database without them)
#   next_call_number()             at most 0.60 x (0.48 now; 0.79 in 1.2)
#   next_id() of a 1 ms layout     at most 0.30 x (0.24 now)
#   next_trace_id()                at most 0.30 x (0.21 now)
# bench/instructions.sh compares every call with the last release the same
# way. Prints PASS/FAIL lines; run from the repository root.
set -u
. scripts/lib.sh
ROWS=${HOT_PATH_ROWS:-1000}

ensure_packages /usr/bin/valgrind:valgrind
dir=$(pg_tmpdir)
trap 'rm -rf "$dir"' EXIT
as_pg "$PG_BIN/initdb" -D "$dir/data" -U postgres -A trust --no-sync >"$dir/initdb.log" 2>&1 ||
    stop_suite "initdb failed: $(tail -3 "$dir/initdb.log")"
hot_path_setup "$PG_BIN/postgres" "$dir/data" 2>"$dir/setup.log" ||
    stop_suite "the single-user backend could not set up: $(head -2 "$dir/setup.log")"

declare -A n
for expr in "i::bigint" "nextval('s1')" "obfuscate_id(i)" "reveal_id(i)" "next_call_number()" "next_id('l1ms')" \
    "next_trace_id()"; do
    n[$expr]=$(instructions_per_row "$PG_BIN/postgres" "$dir/data" "$expr" "$ROWS") ||
        stop_suite "valgrind could not count $expr"
done
floor=${n["i::bigint"]}
nextval=$((${n["nextval('s1')"]} - floor))
[ "$nextval" -gt 500 ] || stop_suite "nextval() CACHE 1 counted $nextval instructions a row: the count is wrong"
bound() {  # EXPR MAX (x nextval, in hundredths) WHAT
    local above=$((${n[$1]} - floor))
    local times=$((100 * above / nextval))
    [ "$times" -le "$2" ] &&
        pass "$3: $above instructions a row, $(printf '%d.%02d' $((times / 100)) $((times % 100))) x nextval() (at most $(printf '%d.%02d' $(($2 / 100)) $(($2 % 100))))" ||
        fail "$3: $above instructions a row, $(printf '%d.%02d' $((times / 100)) $((times % 100))) x nextval() ($nextval), above $(printf '%d.%02d' $(($2 / 100)) $(($2 % 100)))"
}
bound "obfuscate_id(i)" 100 "obfuscate_id() in a database without Citus"
bound "reveal_id(i)" 100 "reveal_id() in a database without Citus"
bound "next_call_number()" 60 "next_call_number()"
bound "next_id('l1ms')" 30 "next_id() of a 1 ms layout"
bound "next_trace_id()" 30 "next_trace_id()"
