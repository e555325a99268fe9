#!/usr/bin/env bash
# The build's dependencies, as a newcomer meets them:
#   - `make` with one of them missing stops naming its Debian package (a
#     compiler that cannot find one header stands in for the missing package);
#   - README.md's one `apt-get install` line for a source build names every
#     package the Makefile checks for, and debian/control.in's Build-Depends
#     carries each of them, so `pg_buildext updatecontrol` keeps them.
set -u
cd "$(dirname "$0")/../.."
. scripts/lib.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

deps=$(sed -n 's/^BUILD_DEPS = //p' Makefile)
[ -n "$deps" ] && pass "the Makefile lists its build dependencies: $deps" || fail "the Makefile has no BUILD_DEPS line"
for dep in $deps; do
    header=${dep%%:*} package=${dep#*:}
    # A compiler that cannot find this one header.
    printf '#!/bin/bash\nin=$(cat); grep -qF "<%s>" <<<"$in" && exit 1; exec g++ "$@" <<<"$in"\n' "$header" >"$tmp/cxx"
    chmod +x "$tmp/cxx"
    out=$(make -n CXX="$tmp/cxx" 2>&1)
    if [ $? -ne 0 ] && grep -q "apt-get install $package\b" <<<"$out"; then
        pass "make without $header stops naming $package"
    else
        fail "make without $header does not name $package: $(tail -1 <<<"$out")"
    fi
done
# pg_config without the server headers (Debian's libpq-dev alone).
out=$(make -n PGXS=/nonexistent/pgxs.mk 2>&1)
if [ $? -ne 0 ] && grep -q "apt-get install postgresql-server-dev-$PG_MAJOR" <<<"$out"; then
    pass "make without the server headers stops naming postgresql-server-dev-$PG_MAJOR"
else
    fail "make without the server headers does not name postgresql-server-dev-$PG_MAJOR: $(tail -1 <<<"$out")"
fi
# A compiler that does not run.
out=$(make -n CXX=/nonexistent/g++ 2>&1)
if [ $? -ne 0 ] && grep -q "apt-get install g++" <<<"$out"; then
    pass "make without a C++ compiler stops naming g++"
else
    fail "make without a C++ compiler does not name g++: $(tail -1 <<<"$out")"
fi

# README's apt-get line and debian/control.in.
line=$(grep -m1 '^apt-get install .*postgresql-server-dev' README.md)
controlin=$(sed -n '/^Build-Depends:/,/^[A-Z]/p' debian/control.in)
for package in g++ make postgresql-server-dev-15 $(for dep in $deps; do echo "${dep#*:}"; done); do
    if grep -qE "(^| )${package//+/\\+}( |$)" <<<"$line"; then
        pass "README's apt-get line installs $package"
    else
        fail "README's apt-get line ($line) lacks $package"
    fi
done
for dep in $deps; do
    package=${dep#*:}
    if grep -qE "^ *${package}[ ,(]" <<<"$controlin"; then
        pass "debian/control.in builds with $package"
    else
        fail "debian/control.in's Build-Depends lack $package"
    fi
done

# The quick loop installs only what it runs, and says what before it does:
# a clean machine seen through DEPS_ROOT (no file there), apt-get recorded
# instead of run. The full test command keeps installing the rest.
given() {  # LIST: what ensure_deps LIST prints and would run
    : >"$tmp/ran"
    ( as_root() { echo "RUN $*" >>"$tmp/ran"; }; DEPS_ROOT="$tmp/clean" ensure_deps "$1" ) 2>&1
    cat "$tmp/ran"
}
quick=$(given quick) full=$(given full)
quick_install=$(grep -m1 'RUN .*apt-get install' <<<"$quick")
full_only="sqlsmith patroni etcd-server ent rng-tools5 libipc-run-perl postgresql-$PG_MAJOR-plproxy python3-psycopg2 faketime debootstrap libpqxx-dev"
extra=$(for p in $full_only; do grep -qE "(^| )$p( |$)" <<<"$quick_install" && echo "$p"; done)
check "the quick loop installs nothing only the full run uses" "" "$extra"
missing=$(for p in g++ make clang-format postgresql-server-dev-$PG_MAJOR libgtest-dev libcurl4-openssl-dev nlohmann-json3-dev; do
    grep -qE "(^| )${p//+/\\+}( |$)" <<<"$quick_install" || echo "$p"; done)
check "... and everything it runs: the build, the structure check, the unit tests, pg_regress" "" "$missing"
[ "$(grep -n 'installing missing packages: ' <<<"$quick" | cut -d: -f1)" -lt "$(grep -n '^RUN' <<<"$quick" | head -1 | cut -d: -f1)" ] &&
    pass "... and it says which packages before it installs them" || fail "the quick loop does not say what it installs first: $quick"
missing=$(for p in $full_only; do grep -qE "(^| )$p( |$)" <<<"$(grep -m1 'RUN .*apt-get install' <<<"$full")" || echo "$p"; done)
check "the full test command installs the rest" "" "$missing"
grep -qE '^ensure_deps quick ' scripts/quick.sh && pass "scripts/quick.sh asks for the quick list" ||
    fail "scripts/quick.sh does not call ensure_deps quick"
# The fuzzer's clang and Google Benchmark are the soak run's and the
# benchmark's (scripts/soak.sh, scripts/bench.sh), not the test command's.
soak_only="clang libbenchmark-dev libclang-rt-14-dev"
soak_install=$(grep -m1 'RUN .*apt-get install' <<<"$(given soak)")
missing=$(for p in $soak_only; do grep -qE "(^| )$p( |$)" <<<"$soak_install" || echo "$p"; done)
check "scripts/soak.sh and scripts/bench.sh install the fuzzer's compiler and Google Benchmark" "" "$missing"
extra=$(for p in $soak_only; do grep -qE "(^| )$p( |$)" <<<"$(grep -m1 'RUN .*apt-get install' <<<"$full")" && echo "$p"; done)
check "... which the test command does not install" "" "$extra"
grep -qE '^ensure_deps soak ' scripts/soak.sh && grep -qE '^ensure_deps soak$' scripts/bench.sh &&
    pass "scripts/soak.sh and scripts/bench.sh ask for the soak list" || fail "scripts/soak.sh or scripts/bench.sh does not call ensure_deps soak"
# The fault-injection runs docs/testing.md shows run alone install what
# their Python needs (issue 59: test/etcd/nemesis/run.sh alone on a fresh
# machine ended in "No module named 'psycopg2'"): each one's ensure_packages
# line, run against a clean machine, would install python3-psycopg2.
for runner in test/etcd/nemesis/run.sh test/citus/nemesis_run.sh; do
    line=$(sed -n '/^ensure_packages /{:a;/\\$/{N;ba};p;q}' "$runner" | sed 's/||.*//; s/\\$//' | tr -d '\n')
    : >"$tmp/ran"
    ( as_root() { echo "RUN $*" >>"$tmp/ran"; }; DEPS_ROOT="$tmp/clean"; eval "$line" ) >/dev/null 2>&1
    grep -q 'apt-get install.* python3-psycopg2' "$tmp/ran" && pass "$runner alone installs python3-psycopg2 on a fresh machine" ||
        fail "$runner alone would not install python3-psycopg2 (its ensure_packages line: ${line:-none})"
done
# A Debian root's Citus is the release of the root's PostgreSQL, whatever
# this machine's own is (issue 65: a vendor folder holding only Citus
# 14.0.1 was skipped for the 18 root, "no citus-13.2.2.tar.gz", because the
# tarball was chosen by the host's PostgreSQL 15). The root's side is
# recorded, not run; no ../shared/vendor beside the working directory.
mkdir -p "$tmp/vendor14" "$tmp/root18/build" "$tmp/elsewhere/clone"
: >"$tmp/vendor14/citus-14.0.1.tar.gz"
out=$( (. scripts/roots.sh && . scripts/citus.sh
        root_dir() { echo "$tmp/root$1"; }  # test double
        root_run() { echo "ROOT $*"; }      # test double
        as_root() { "$@"; }                 # test double
        export SHARDID_VENDOR=$tmp/vendor14 PG_MAJOR=15
        cd "$tmp/elsewhere/clone" && citus_root_ensure 18) 2>&1)
rc=$?
[ "$rc" = 0 ] && [ -f "$tmp/root18/build/vendor/citus-14.0.1.tar.gz" ] && grep -q '^ROOT 18 .*citus_ensure' <<<"$out" &&
    pass "citus_root_ensure 18 on a PostgreSQL 15 machine takes citus-14.0.1.tar.gz from a folder holding only it" ||
    fail "citus_root_ensure 18 on a PostgreSQL 15 machine with only citus-14.0.1.tar.gz: exit $rc, $(tail -1 <<<"$out")"
