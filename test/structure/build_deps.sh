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
