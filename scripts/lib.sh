# Shared shell helpers for shardid's scripts: dependencies, throwaway clusters.
# Source it: . scripts/lib.sh

PG_MAJOR=${PG_MAJOR:-15}
PG_BIN=${PG_BIN:-/usr/lib/postgresql/$PG_MAJOR/bin}
PG_CONFIG=${PG_CONFIG:-$PG_BIN/pg_config}
export PG_CONFIG

log() { printf '== %s\n' "$*" >&2; }

# The suites' result lines, which scripts/test.sh counts.
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; }
# stop_suite MESSAGE: a FAIL line for a step the rest of the suite needs (a
# server that did not start, a claim never made), and the suite ends there
# instead of failing every later check for the same cause. fail() goes on:
# checks after it do not depend on it.
stop_suite() { fail "$* (the checks after it need it: the suite stops here)"; exit 1; }
check() {  # NAME EXPECTED ACTUAL
    if [ "$2" = "$3" ]; then pass "$1"; else fail "$1: expected '$2', got '$3'"; fi
}
# promise NAME HELD DETAIL: a latency or availability promise (a pause that
# costs nothing, a restart that resumes at once, a stop that waits on no
# etcd), stated in time: HELD is t when the figure met its bound. The test
# command never fails on a machine's speed: there it is a FIGURE line, not
# counted; scripts/bench.sh runs the suites that hold such promises with
# SHARDID_JUDGE_PROMISES=1, where each is a PASS or FAIL line (each
# against a control measured in the same run, where the suite has one).
promise() {
    if [ -n "${SHARDID_JUDGE_PROMISES:-}" ]; then
        if [ "$2" = t ]; then pass "$1 ($3)"; else fail "$1: $3"; fi
    else
        echo "FIGURE $1: $3"
    fi
}
# contains NAME TEXT WORDS / lacks NAME TEXT WORDS: TEXT has WORDS, or not.
contains() { case $2 in *"$3"*) pass "$1" ;; *) fail "$1: expected '$3' in: $2" ;; esac; }
lacks() { case $2 in *"$3"*) fail "$1: '$3' in: $2" ;; *) pass "$1" ;; esac; }

# Runs a command as root (for apt-get and make install): directly when we
# are root, else through sudo.
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# PostgreSQL refuses to run as root: as root, run servers as the postgres
# OS user; as anyone else, as ourselves. A checkout often lies where the
# postgres user cannot enter (/root/src, a 0700 home): then the command
# starts in / instead, since programs that look at their working directory
# (Patroni's Python workers, for one) fail in one they cannot enter. The
# suites give such commands absolute paths.
as_pg() {
    if [ "$(id -u)" != 0 ]; then "$@"; return; fi
    if [ "${_as_pg_dir:-}" != "$PWD" ]; then
        _as_pg_dir=$PWD
        _as_pg_enter=$(runuser -u postgres -- test -x "$PWD" -a -r "$PWD" && echo yes || echo no)
    fi
    if [ "$_as_pg_enter" = yes ]; then
        runuser -u postgres -- "$@"
    else
        (cd / && runuser -u postgres -- "$@")
    fi
}

# A fresh temporary directory the server's user can write to.
pg_tmpdir() {
    local d
    d=$(mktemp -d "${TMPDIR:-/tmp}/shardid.XXXXXX")
    chmod 755 "$d"
    [ "$(id -u)" = 0 ] && chown postgres: "$d"
    echo "$d"
}

# The Debian packages shardid's scripts use, as FILE:PACKAGE (the check is
# by file, so a machine that has them needs no apt at all). deps_quick:
# what the quick loop runs (the build, the structure check, the unit
# tests, pg_regress); deps_full: what the full test command adds.
deps_quick() {
    printf '%s\n' "/usr/bin/g++:g++" "/usr/bin/make:make" "/usr/bin/clang-format:clang-format" \
        "/usr/bin/python3:python3" "$PG_BIN/postgres:postgresql-$PG_MAJOR" \
        "/usr/include/postgresql/$PG_MAJOR/server/postgres.h:postgresql-server-dev-$PG_MAJOR" \
        "/usr/include/gtest/gtest.h:libgtest-dev" \
        "/usr/include/x86_64-linux-gnu/curl/curl.h:libcurl4-openssl-dev" \
        "/usr/include/nlohmann/json.hpp:nlohmann-json3-dev"
}
deps_full() {
    deps_quick
    printf '%s\n' "/usr/include/pqxx/pqxx:libpqxx-dev" \
        "/usr/bin/ent:ent" "/usr/bin/rngtest:rng-tools5" "/usr/bin/pgrep:procps" \
        "/usr/bin/sqlsmith:sqlsmith" "/usr/share/perl5/IPC/Run.pm:libipc-run-perl" \
        "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1:faketime" "/usr/bin/prove:perl" \
        "/usr/sbin/debootstrap:debootstrap" \
        "/usr/share/postgresql/$PG_MAJOR/extension/plproxy.control:postgresql-$PG_MAJOR-plproxy" \
        "/usr/bin/unshare:util-linux" \
        "/usr/lib/python3/dist-packages/psycopg2/__init__.py:python3-psycopg2" \
        "/usr/lib/python3/dist-packages/yaml/__init__.py:python3-yaml" "/usr/bin/etcd:etcd-server" \
        "/usr/bin/etcdctl:etcd-client" "/usr/bin/patroni:patroni" "/usr/bin/valgrind:valgrind" \
        "/usr/sbin/mkfs.xfs:xfsprogs"
}

# deps_clients: what test/clients/compare.sh installs the client libraries
# with, as a user would (the test command installs it during the build).
deps_clients() {
    printf '%s\n' "/usr/bin/node:nodejs" "/usr/bin/npm:npm" "/usr/lib/python3/dist-packages/wheel/__init__.py:python3-wheel" \
        "/usr/lib/python3/dist-packages/pip/__init__.py:python3-pip" "/usr/lib/python3.11/ensurepip/__init__.py:python3-venv"
}

# deps_soak: what scripts/soak.sh and scripts/bench.sh add (the fuzzer's
# clang and its runtime, Google Benchmark).
deps_soak() {
    deps_full
    printf '%s\n' "/usr/bin/clang++:clang" "/usr/include/benchmark/benchmark.h:libbenchmark-dev" \
        "/usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a:libclang-rt-14-dev"
}

# ensure_deps [quick|full|soak]: installs the packages of that list (full when
# not named) that are missing, after saying which. DEPS_ROOT (empty) is
# where the files are looked for: test/structure/build_deps.sh points it at
# an empty directory to see what a clean machine would be given.
ensure_deps() {
    local wants=()
    mapfile -t wants < <("deps_${1:-full}")
    if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
        wants+=("/nonexistent/postgres-user:postgresql-$PG_MAJOR")
    fi
    ensure_packages "${wants[@]}"
}

# ensure_packages FILE:PACKAGE...: installs each package whose file is
# missing (a command run alone, outside the test command, names what it
# needs this way: test/etcd/nemesis/run.sh, test/citus/nemesis_run.sh).
ensure_packages() {
    local missing=() want
    for want in "$@"; do
        [ -e "${DEPS_ROOT:-}${want%%:*}" ] || missing+=("${want#*:}")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing missing packages: ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# single_user POSTGRES DATA [PREFIX...]: runs stdin's statements (one a
# line) in a single-user backend of POSTGRES on DATA, shardid preloaded
# with node id 7, the command started under PREFIX (valgrind) if given.
single_user() {
    local pg=$1 data=$2; shift 2
    as_pg "$@" "$pg" --single -D "$data" -c shared_preload_libraries=shardid -c shardid.node_id=7 \
        -c shardid.launch_id=1 -c jit=off postgres
}
# hot_path_setup POSTGRES DATA: the objects the hot-path counts use (the
# extension, sequence s1 CACHE 1, layout l1ms of 1 ms ticks); fails on an
# error, printing it.
hot_path_setup() {
    local out
    out=$(single_user "$1" "$2" 2>&1 <<'SQL'
CREATE EXTENSION shardid
CREATE SEQUENCE s1 CACHE 1
SELECT create_layout('l1ms', '2020-01-01 00:00+00', '1 millisecond', 41, 10, 12)
SQL
    )
    if grep -q ERROR <<<"$out"; then grep ERROR <<<"$out" >&2; return 1; fi
}
# instructions_per_row POSTGRES DATA EXPR ROWS: the instructions one row of
# EXPR costs in a single-user backend, counted by valgrind's cachegrind:
# (the count for 2 x ROWS rows - the count for ROWS rows) / ROWS, so the
# backend's start and end cancel out. Instruction counts do not depend on
# what else the machine is doing (timings on a VM do). Fails on an error.
instructions_per_row() {
    local counts=() n out
    for n in "$4" $((2 * $4)); do
        out=$(echo "SELECT count(g) FROM (SELECT $3 AS g FROM generate_series(1, $n) i) s" |
            single_user "$1" "$2" valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null 2>&1)
        if grep -q ERROR <<<"$out"; then grep ERROR <<<"$out" >&2; return 1; fi
        counts+=("$(sed -n 's/.*I *refs: *\([0-9,]*\).*/\1/p' <<<"$out" | tr -d ,)")
    done
    [ -n "${counts[0]}" ] && [ -n "${counts[1]}" ] || return 1
    echo $(((counts[1] - counts[0]) / $4))
}

# Builds and installs the extension into the PostgreSQL of $PG_CONFIG.
build_install() {
    make -s -j2 PG_CONFIG="$PG_CONFIG" >/dev/null
    as_root make -s install PG_CONFIG="$PG_CONFIG" >/dev/null
}

# cluster_init DIR [CONFIG LINE...]: a new cluster in DIR/data; extra
# postgresql.conf lines as arguments.
# pg_private_copy DEST: a copy of this PostgreSQL's binaries, libraries and
# share files under DEST, at their own paths (PostgreSQL is relocatable:
# it finds them relative to its binaries); prints the copy's bindir. What
# a suite changes there, no other server sees.
pg_private_copy() {
    local dest=$1 libdir sharedir bindir
    libdir=$("$PG_CONFIG" --pkglibdir); sharedir=$("$PG_CONFIG" --sharedir); bindir=$("$PG_CONFIG" --bindir)
    mkdir -p "$dest$(dirname "$bindir")" "$dest$(dirname "$sharedir")" || return 1
    cp -a "$(dirname "$bindir")/." "$dest$(dirname "$bindir")/" &&
        cp -a "$sharedir" "$dest$(dirname "$sharedir")/" || return 1
    if [ "$libdir" != "$(dirname "$bindir")/lib" ]; then
        mkdir -p "$dest$libdir" && cp -a "$libdir/." "$dest$libdir/" || return 1
    fi
    echo "$dest$bindir"
}

cluster_init() {
    local dir=$1; shift
    as_pg "$PG_BIN/initdb" -D "$dir/data" -U postgres -A trust --no-sync >"$dir/initdb.log" 2>&1 || {
        cat "$dir/initdb.log" >&2; return 1; }
    {
        echo "listen_addresses = ''"
        echo "unix_socket_directories = '$dir'"
        echo "fsync = off"
        local line
        for line in "$@"; do echo "$line"; done
    } | as_pg tee -a "$dir/data/postgresql.conf" >/dev/null
}

# scenario_cluster PORT [CONFIG LINE...]: a started throwaway cluster for a
# scenario script, in $dir on $port, removed when the script exits; the
# script exits if it cannot start one.
scenario_cluster() {
    port=$1; shift
    dir=$(pg_tmpdir)
    trap 'cluster_stop "$dir" immediate; rm -rf "$dir"' EXIT
    cluster_init "$dir" "$@" || exit 1
    cluster_start "$dir" "$port" || exit 1
}

# private_port PORT: true when PORT is below (or above) the kernel's
# ephemeral range (net.ipv4.ip_local_port_range, 32768-60999 by default).
# Inside it, an outgoing connection's local end (Citus' connections between
# nodes, clients) may hold the port when a test server starts, and the
# server cannot listen ("Address already in use": CI's Citus suite, "w7 did
# not start" on 58708). Every server the suites start is checked here.
private_port() {
    local lo=32768 hi=60999
    read -r lo hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
    if [ "$1" -ge "$lo" ] && [ "$1" -le "$hi" ]; then
        echo "port $1 is in the kernel's ephemeral port range ($lo-$hi), where an outgoing connection may hold it: give the test server a port below $lo" >&2
        return 1
    fi
}
# test_port PORT: PORT moved by SHARDID_PORT_SHIFT (0 unless set). The test
# command runs the Debian roots' suites beside the native ones, on the same
# network: the roots' servers take the same suites' ports shifted by 4000.
test_port() { echo $(($1 + ${SHARDID_PORT_SHIFT:-0})); }
# server_why LOG: a server log's last errors on one line (why it did not
# start), for a FAIL line: the test command's log keeps only those.
server_why() { grep -E 'FATAL|PANIC|ERROR|could not' "$1" 2>/dev/null | tail -3 | tr '\n' ' '; }

# cluster_start DIR PORT / cluster_stop DIR [MODE]
cluster_start() {
    private_port "$2" || return 1
    as_pg "$PG_BIN/pg_ctl" -D "$1/data" -l "$1/server.log" -o "-p $2" -w -t 60 start >/dev/null 2>&1 || {
        tail -20 "$1/server.log" >&2; return 1; }
}
cluster_stop() { as_pg "$PG_BIN/pg_ctl" -D "$1/data" -m "${2:-fast}" -w stop >/dev/null 2>&1 || true; }

# node_setting DIR PORT NAME VALUE|DEFAULT: a setting of the whole server
# (shardid.clock_offset_ms, shardid.max_clock_lead, ...: no session may set
# them) changed with ALTER SYSTEM and a reload, and waited for (at most
# 10 s) until a new session has it: its pg_conf_load_time() is the
# postmaster's last reload. DEFAULT resets it.
node_setting() {
    local dir=$1 port=$2 name=$3 value=$4 asked
    if [ "$value" = DEFAULT ]; then
        cluster_psql "$dir" "$port" -c "LOAD 'shardid'" -c "ALTER SYSTEM RESET $name" || return 1
    else
        cluster_psql "$dir" "$port" -c "LOAD 'shardid'" -c "ALTER SYSTEM SET $name = '$value'" || return 1
    fi
    asked=$(cluster_psql "$dir" "$port" -At -c "SELECT clock_timestamp()" -c "SELECT pg_reload_conf()" | head -1) ||
        return 1
    for _ in $(seq 1 $((100 * ${SHARDID_HANG_SCALE:-1}))); do
        [ "$(cluster_psql "$dir" "$port" -At -c "SELECT pg_conf_load_time() >= '$asked'" 2>/dev/null)" = t ] &&
            return 0
        sleep 0.1
    done
    echo "node_setting: the reload that sets $name did not show within 10 s" >&2
    return 1
}

# cluster_psql DIR PORT [psql args...]: psql as the postgres superuser.
cluster_psql() {
    local dir=$1 port=$2; shift 2
    psql -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$port" -U postgres -d postgres "$@"
}
# A suite's servers: named nodes in dir_of[NAME] and port_of[NAME] (their
# socket directory and port), or its one server in $dir and $port.
declare -gA dir_of port_of
# q [NODE] PSQL-ARGS...: psql -At as the superuser, in database postgres (a
# -d among the arguments names another), on NODE where the first argument
# names one, else on the suite's one server, else on the server the
# environment names (PGHOST, PGPORT: the integration run's scenarios). A
# suite that wants no notices exports PGOPTIONS="-c client_min_messages=warning".
q() {
    if [ $# -gt 0 ] && [ -n "${dir_of[$1]+set}" ]; then
        local n=$1
        shift
        cluster_psql "${dir_of[$n]}" "${port_of[$n]}" -At "$@"
    elif [ -n "${dir:-}" ]; then
        cluster_psql "$dir" "${port:?no port for the server in $dir}" -At "$@"
    else
        psql -X -q -v ON_ERROR_STOP=1 -At "$@"
    fi
}

# sqlstate_of PSQL-COMMAND...: "ok" where the command (a psql, or a function
# running one) succeeds, else the SQLSTATE of its first error.
sqlstate_of() {
    local out
    out=$("$@" -v VERBOSITY=verbose 2>&1) && { echo ok; return; }
    grep -oE 'ERROR:  [0-9A-Z]{5}' <<<"$out" | head -1 | cut -c9-
}
# kv TEXT KEY: VALUE of the word KEY=VALUE in TEXT (load.py's summaries).
kv() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<" $1"; }
# ms_now: the wall clock, in milliseconds since the epoch.
ms_now() { date +%s%3N; }
# want N: a suite's section N is to run (the suite sets sections=" 1 2 ... ",
# from a variable of its own, to run some of them).
want() { [[ "${sections:-}" == *" $1 "* ]]; }

# --- waiting for a condition, and etcd --------------------------------------
# wait_until WHAT SECONDS COMMAND...: COMMAND again every 0.1 s until it
# succeeds (true), or false after SECONDS (a hang guard: SHARDID_HANG_SCALE,
# a whole number, multiplies it), saying WHAT it waited for on stderr.
wait_until() {
    local what=$1 limit=$(($2 * ${SHARDID_HANG_SCALE:-1})) i
    shift 2
    for ((i = 0; i < limit * 10; i++)); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "no end in ${limit}s waiting for: $what" >&2
    return 1
}
# shows WANT PSQL-COMMAND...: the command (a q or cq with its node, and
# -c "SHOW name" or a query) prints WANT: with wait_until, a setting
# reloaded (pg_reload_conf() returns before the postmaster has read the
# file; a new session then has it) or a state reached, instead of a sleep.
shows() { [ "$("${@:2}" 2>/dev/null)" = "$1" ]; }

# etcd members for the suites, on private ports, their data in $work
# (etcd_pid_of: each member's pid, by name).
declare -A etcd_pid_of
# etcd_start NAME CLIENT_PORT PEER_PORT [INITIAL_CLUSTER]: one member.
etcd_start() {
    local name=$1 cport=$2 pport=$3 cluster=${4:-$1=http://127.0.0.1:$3}
    private_port "$cport" && private_port "$pport" || return 1
    etcd --name "$name" --data-dir "$work/etcd-$name" \
        --listen-client-urls "http://127.0.0.1:$cport" --advertise-client-urls "http://127.0.0.1:$cport" \
        --listen-peer-urls "http://127.0.0.1:$pport" --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
        --initial-cluster "$cluster" --initial-cluster-state new --log-level error \
        >"$work/etcd-$name.log" 2>&1 &
    etcd_pid_of[$name]=$!
}
etcd_wait_up() {  # CLIENT_PORT
    wait_until "etcd on port $1" 10 etcdctl --endpoints="http://127.0.0.1:$1" endpoint health
}
