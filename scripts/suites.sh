# The test suites that run against one PostgreSQL installation, shared by
# scripts/test.sh (PostgreSQL 15, natively) and test/versions/in_root.sh (the
# other versions, inside their Debian roots). Source it after scripts/lib.sh.
# Every counted suite is named with its PostgreSQL version.

# suite_files KIND [LANE]: the files test/suites.list gives that kind (and
# that lane, a script's third column), in its order.
suite_files() {
    local kind glob lane f
    while read -r kind glob lane _; do
        [ "$kind" = "$1" ] || continue
        [ -z "${2:-}" ] || [ "$lane" = "$2" ] || continue
        for f in $glob; do [ -e "$f" ] && echo "$f"; done
    done < <(grep -vE '^\s*(#|$)' test/suites.list)
}

# --- where the time goes: each suite's wall and CPU time ---------------------
# A lane (scripts/test.sh) runs in a control group of its own, so that the
# CPU of everything a suite starts is counted, the servers pg_ctl starts
# (which leave their parent) and the Debian roots' processes included:
# cgroup v1's cpuacct where it is mounted, else cgroup v2's cpu.stat. Where
# neither can be made (no root, no cgroup file system) the CPU reads "-".
cpu_group=""
# cpu_group_enter NAME: this shell, and what it starts from now on, into a
# new group NAME under shardid-test.<the test command's pid>.
cpu_group_enter() {
    local top d
    for top in /sys/fs/cgroup/cpuacct /sys/fs/cgroup/unified /sys/fs/cgroup; do
        [ -e "$top/cpuacct.usage" ] || [ -e "$top/cgroup.procs" ] || continue
        d=$top/shardid-test.${SHARDID_TEST_PID:-$$}/$1
        mkdir -p "$d" 2>/dev/null && echo "$BASHPID" >"$d/cgroup.procs" 2>/dev/null || continue
        cpu_group=$d
        return 0
    done
    cpu_group=""
    return 1
}
# cpu_group_next: the next suite's group (the lane's name and a number),
# where cpu_group_enter succeeded before.
cpu_groups_made=0
cpu_group_next() {
    [ -n "$cpu_group" ] || return 0
    cpu_groups_made=$((cpu_groups_made + 1))
    cpu_group_enter "${SHARDID_LANE:-main}-$cpu_groups_made"
}
# cpu_group_kill: every process of this shell's group but the shell itself
# (what a suite stopped by its hang guard left running: its servers).
cpu_group_kill() {
    local pid
    [ -n "$cpu_group" ] || return 0
    for pid in $(cat "$cpu_group/cgroup.procs" 2>/dev/null); do
        [ "$pid" = "$BASHPID" ] || kill -9 "$pid" 2>/dev/null
    done
    return 0
}
# cpu_ms: the CPU time (ms) this shell's group used so far ("" when none).
cpu_ms() {
    [ -n "$cpu_group" ] || return 0
    if [ -e "$cpu_group/cpuacct.usage" ]; then
        echo $(($(cat "$cpu_group/cpuacct.usage") / 1000000))
    else
        awk '$1 == "usage_usec" { print int($2 / 1000) }' "$cpu_group/cpu.stat" 2>/dev/null
    fi
}
# cpu_s_since [MS]: the seconds of CPU this shell's group used since cpu_ms
# gave MS (since the group began without it); nothing where there is no
# group (times_row then writes "-").
cpu_s_since() {
    local now
    now=$(cpu_ms)
    [ -n "$now" ] && echo $(((now - ${1:-0}) / 1000))
    return 0
}
# machine_cpu_ms: the CPU time (ms) the whole machine used since it booted
# (/proc/stat: user, nice, system, irq, softirq, steal), the run's total
# where no control group can be made.
machine_cpu_ms() {
    awk -v hz="$(getconf CLK_TCK)" '$1 == "cpu" { print int(($2 + $3 + $4 + $7 + $8 + $9) * 1000 / hz); exit }' /proc/stat
}
# cpu_groups_remove: the groups of this run, once everything in them ended.
cpu_groups_remove() {
    local top
    for top in /sys/fs/cgroup/cpuacct /sys/fs/cgroup/unified /sys/fs/cgroup; do
        [ -d "$top/shardid-test.${SHARDID_TEST_PID:-$$}" ] || continue
        echo "$BASHPID" >"$top/cgroup.procs" 2>/dev/null
        rmdir "$top/shardid-test.${SHARDID_TEST_PID:-$$}"/*/ "$top/shardid-test.${SHARDID_TEST_PID:-$$}" 2>/dev/null
    done
    return 0
}
# The table at the end of the test command: one row a suite, "lane wall_s
# cpu_s name", in $SHARDID_TIMES (scripts/test.sh sets it).
times_row() {  # NAME WALL_S [CPU_S]
    [ -n "${SHARDID_TIMES:-}" ] && printf '%s\t%s\t%s\t%s\n' "${SHARDID_LANE:-main}" "$2" "${3:--}" "$1" >>"$SHARDID_TIMES"
    return 0
}
times_table() {
    [ -s "${SHARDID_TIMES:-}" ] || return 0
    echo "== where the time went (wall and CPU seconds of each suite, longest first; CPU of the Debian roots' suites is their root's, on its own row)"
    printf '%-8s %6s %6s  %s\n' lane wall cpu suite
    sort -t$'\t' -k2,2nr "$SHARDID_TIMES" | awk -F'\t' '{ printf "%-8s %6s %6s  %s\n", $1, $2, $3, $4 }'
    awk -F'\t' '$3 != "-" { c += $3 } END { printf "CPU seconds in all: %d (the suites, builds and roots above)\n", c }' "$SHARDID_TIMES"
    [ -n "${SHARDID_MACHINE_CPU0:-}" ] &&
        echo "CPU seconds of the whole machine during the run: $((($(machine_cpu_ms) - SHARDID_MACHINE_CPU0) / 1000)) in $((SECONDS - ${SHARDID_RUN_STARTED:-0})) s of wall time (/proc/stat)"
    return 0
}

# suite_limit FILE: the hang guard of a script suite, in seconds: its line's
# fourth column in test/suites.list (900 where it gives none), times
# SHARDID_HANG_SCALE (a whole number; 1 unless set).
suite_limit() {
    local kind glob lane limit f
    while read -r kind glob lane limit _; do
        [ "$kind" = script ] || continue
        for f in $glob; do
            [ "$f" = "$1" ] && { echo $((${limit:-900} * ${SHARDID_HANG_SCALE:-1})); return; }
        done
    done < <(grep -vE '^\s*(#|$)' test/suites.list)
    echo $((900 * ${SHARDID_HANG_SCALE:-1}))
}

# run_script NAME FILE: a script suite under its hang guard, counted. A
# suite still running when its guard ends is stopped, with everything it
# started (its control group), and fails naming the guard.
run_script() {
    local name=$1 file=$2 limit out rc
    limit=$(suite_limit "$file")
    out=$(timeout -k 10 "$limit" bash "$file" 2>&1)
    rc=$?
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        cpu_group_kill
        out+=$'\n'"FAIL $name did not end within its hang guard of ${limit} s (test/suites.list; SHARDID_HANG_SCALE multiplies it)"
    fi
    record_script "$name" "$out" "$rc"
}

passed=0
failed=0
failures=()
skipped=()  # suites that could not run here, with why (a SKIP line): listed before the final count
PGV="PG $PG_MAJOR"

# record NAME PASSED FAILED [SECONDS]
# SECONDS is given when the suite ran elsewhere (in a root) and took that long
# there; otherwise it is the time since the previous record.
record() {
    passed=$((passed + $2))
    failed=$((failed + $3))
    [ "$3" -gt 0 ] && failures+=("$1")
    # Where the time goes, on stderr, and in the table at the end: the
    # wall time since the previous record of this lane, or the time the
    # suite took elsewhere (a root), and the lane's CPU since then.
    local now=$SECONDS took=${4:-} cpu="" cpu_now
    [ -n "$took" ] || took=$((now - ${last_record_at:-0}))
    if [ -z "${4:-}" ] && cpu_now=$(cpu_ms) && [ -n "$cpu_now" ]; then
        cpu=$((cpu_now / 1000))
        cpu_group_next
    fi
    printf '== %s took %ds%s\n' "$1" "$took" "${cpu:+ ($cpu s CPU)}" >&2
    last_record_at=$now
    times_row "$1" "$took" "$cpu"
    printf '%-40s %4d passed, %d failed\n' "$1" "$2" "$3"
    # For a caller that collects results from several runs (the roots).
    [ -n "${SHARDID_RESULTS:-}" ] && printf '%s\t%d\t%d\t%d\n' "$1" "$2" "$3" "$took" >>"$SHARDID_RESULTS"
    return 0
}

# skip_suite WHY: a suite that cannot run here, listed before the final count
# (and for a caller that collects results, in its file).
skip_suite() {
    skipped+=("$1")
    [ -n "${SHARDID_RESULTS:-}" ] && printf 'SKIP\t%s\n' "$1" >>"$SHARDID_RESULTS"
    return 0
}

# A suite that could not run at all counts as one failure.
broken() { log "$1: $2"; record "$1" 0 1; }

finish() {
    times_table
    [ -s "${SHARDID_FAILS:-}" ] && cat "$SHARDID_FAILS"
    [ ${#failures[@]} -gt 0 ] && log "failed: ${failures[*]}"
    local s
    for s in "${skipped[@]}"; do echo "skipped: $s"; done
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit $?
}

# count_lines OUT: sets ok/bad from PASS/FAIL lines, printing them.
count_lines() {
    grep -E '^(PASS|FAIL)' <<<"$1"
    ok=$(grep -c '^PASS' <<<"$1")
    bad=$(grep -c '^FAIL' <<<"$1")
}

# record_script NAME OUT STATUS: counts a script's PASS/FAIL lines. A
# script that exits non-zero has failed, whatever it printed (one more
# failure when it printed no FAIL line), and so has one that printed none.
record_script() {
    local name=$1 out=$2 rc=$3
    # A suite that says it cannot run here (one SKIP line, nothing else
    # counted, status 0) is listed, not counted.
    if [ "$rc" -eq 0 ] && ! grep -qE '^(PASS|FAIL)' <<<"$out" && grep -q '^SKIP ' <<<"$out"; then
        skip_suite "$name: $(grep -m1 '^SKIP ' <<<"$out" | cut -c6-)"
        log "skipped $name"
        return 0
    fi
    count_lines "$out"
    # A part of a suite that cannot run here (its SKIP line says why) is
    # listed before the final count too.
    local why
    while IFS= read -r why; do skip_suite "$name: ${why#SKIP }"; done < <(grep '^SKIP ' <<<"$out")
    # Its FAIL lines again at the very end of the test command (CI's log
    # keeps only the end).
    [ -n "${SHARDID_FAILS:-}" ] && [ -w "$(dirname "$SHARDID_FAILS")" ] && grep '^FAIL' <<<"$out" | sed "s|^FAIL |FAIL $name: |" >>"$SHARDID_FAILS" 2>/dev/null
    if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then
        tail -20 <<<"$out"
        echo "FAIL $name exited with status $rc"
        bad=1
    elif [ "$ok" -eq 0 ] && [ "$bad" -eq 0 ]; then
        tail -20 <<<"$out"
        echo "FAIL $name printed no result"
        bad=1
    fi
    record "$name" "$ok" "$bad"
}

# run_gtest NAME BINARY: counts a GoogleTest binary's tests; a crash, or a
# sanitizer that fired, counts as a failure.
run_gtest() {  # NAME BINARY
    local out
    out=$("$2" 2>&1)
    local rc=$?
    local ok bad
    ok=$(grep -c '^\[       OK \]' <<<"$out")
    bad=$(grep -c '^\[  FAILED  \] [A-Za-z].*\..* (' <<<"$out")
    if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then bad=1; fi  # crashed, or a sanitizer fired
    [ "$bad" -gt 0 ] && tail -40 <<<"$out"
    record "$1" "$ok" "$bad"
}
# regress_lines OUT: pg_regress's per-test lines as PASS/FAIL lines. Up to
# PostgreSQL 15 pg_regress prints "test NAME ... ok"; from 16 on it prints
# TAP: "ok 1 - NAME" / "not ok 1 - NAME".
regress_lines() {
    sed -nE \
        -e 's/^(test )? *([A-Za-z0-9_]+) +\.\.\. ok.*/PASS pg_regress \2/p' \
        -e 's/^(test )? *([A-Za-z0-9_]+) +\.\.\. FAILED.*/FAIL pg_regress \2/p' \
        -e 's/^ok [0-9]+ +- +([A-Za-z0-9_]+).*/PASS pg_regress \1/p' \
        -e 's/^not ok [0-9]+ +- +([A-Za-z0-9_]+).*/FAIL pg_regress \1/p' <<<"$1"
}

# record_regress NAME OUT [DIR]: counts a pg_regress run; a run that printed
# no test at all (it could not start) counts as one failure.
record_regress() {
    local name=$1 out=$2 dir=${3:-} lines
    lines=$(regress_lines "$out")
    ok=$(grep -c '^PASS' <<<"$lines")
    bad=$(grep -c '^FAIL' <<<"$lines")
    grep '^FAIL' <<<"$lines"
    if [ "$ok" -eq 0 ] && [ "$bad" -eq 0 ]; then
        tail -30 <<<"$out" >&2
        bad=1
    fi
    if [ "$bad" -gt 0 ] && [ -n "$dir" ] && [ -f "$dir/regression.diffs" ]; then
        head -150 "$dir/regression.diffs"
        mkdir -p results && cp "$dir/regression.diffs" "results/regression-${name//[^A-Za-z0-9]/_}.diffs"
    fi
    record "$name" "$ok" "$bad"
}

# A copy of the test files owned by the server's user: pg_regress and the
# TAP framework start their own servers, which must not run as root.
test_copy() {  # DIR FILES...
    local dir=$1; shift
    mkdir -p "$dir"
    cp -r "$@" "$dir"/
    [ "$(id -u)" = 0 ] && chown -R postgres: "$dir"
    return 0
}

# run_regress NAME CONF TESTS...
run_regress() {
    local name=$1 conf=$2; shift 2
    local dir="$work/regress-${name//[^A-Za-z0-9]/_}" out
    test_copy "$dir" Makefile shardid.control sql expected test
    out=$(cd "$dir" && as_pg make -s installcheck PG_CONFIG="$PG_CONFIG" REGRESS="$*" REGRESS_CONF="$conf" 2>&1)
    local rc=$?
    # pg_regress exits non-zero on any failure: a run that says otherwise
    # in its lines still fails.
    [ "$rc" -ne 0 ] && ! grep -q '^FAIL' <<<"$(regress_lines "$out")" && out+=$'\nnot ok 0 - exit_status_'"$rc"
    record_regress "pg_regress ($PGV, $name)" "$out" "$dir"
}

# run_regress_all: pg_regress preloaded (the Makefile's REGRESS, the one
# test list) and not preloaded.
run_regress_all() {
    run_regress "preloaded" test/regress/regress.conf $(sed -n 's/^REGRESS = //p' Makefile)
    run_regress "not preloaded" test/regress/nopreload.conf nopreload
}

# run_tap: PostgreSQL's TAP framework (PostgreSQL::Test::Cluster), failover
# and recovery on real servers.
run_tap() {
    local dir="$work/tap" out
    test_copy "$dir" Makefile shardid.control sql expected test src
    out=$(cd "$dir" && as_pg make -s tapcheck PG_CONFIG="$PG_CONFIG" 2>&1)
    grep -E '^(not )?ok [0-9]+ ' <<<"$out" | sed -E 's/^ok [0-9]+ - /PASS /; s/^not ok [0-9]+ - /FAIL /'
    ok=$(grep -cE '^ok [0-9]+ ' <<<"$out")
    bad=$(grep -cE '^not ok [0-9]+ ' <<<"$out")
    if ! grep -q '^Result: PASS' <<<"$out"; then
        [ "$bad" -eq 0 ] && bad=1
        tail -40 <<<"$out"
        ls "$dir"/tmp_check/log/ >/dev/null 2>&1 && mkdir -p results && cp -r "$dir"/tmp_check/log "results/tap-log-$PG_MAJOR"
    fi
    record "tap ($PGV, failover)" "$ok" "$bad"
}

# run_integration: the libpqxx integration tests and the shell scenarios
# (pg_dump, ...) against throwaway servers, preloaded and not.
run_integration() {
    mkdir -p build
    if ! make -s build/integration_tests >/dev/null 2>build/integration.log; then
        cat build/integration.log >&2
        broken "integration ($PGV)" "integration tests did not build"
        return
    fi
    local port=$(test_port 15400) mode dir out rc scenario
    for mode in preloaded "not preloaded"; do
        dir=$(pg_tmpdir)
        local conf=("shardid.node_id = 7" "shardid.launch_id = 65" "max_connections = 40")
        [ "$mode" = preloaded ] && conf+=("shared_preload_libraries = 'shardid'")
        if cluster_init "$dir" "${conf[@]}" && cluster_start "$dir" "$port"; then
            out=$(SHARDID_TEST_DSN="host=$dir port=$port user=postgres dbname=postgres" build/integration_tests 2>&1)
            rc=$?
            for scenario in $(suite_files scenario); do
                out+=$'\n'$(SHARDID_TEST_HOST=$dir SHARDID_TEST_PORT=$port bash "$scenario" 2>&1) || rc=1
            done
            count_lines "$out"
            if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then tail -20 <<<"$out"; bad=1; fi
            record "integration ($PGV, $mode)" "$ok" "$bad"
        else
            broken "integration ($PGV, $mode)" "could not start a cluster"
        fi
        cluster_stop "$dir" immediate
        rm -rf "$dir"
        port=$((port + 1))
    done
}
