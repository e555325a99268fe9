#!/usr/bin/env bash
# Runs inside a Debian root made by scripts/roots.sh (as root, from the copy
# of the tree at /build/shardid), for the root's PostgreSQL $PG_MAJOR:
#
#   package      build the Debian source and binary packages with
#                dpkg-buildpackage (pg_buildext), install the .deb into the
#                root, which has nothing else of shardid's, check what it
#                installed, CREATE EXTENSION, generate and decode, then run
#                the package test debian/tests/installcheck (pg_buildext
#                installcheck: the whole pg_regress suite, preloaded and not)
#   integration  the libpqxx integration tests and shell scenarios
#   tap          PostgreSQL's TAP framework: failover, recovery, switchover
#
# SHARDID_ROOT_SUITES names the suites (default: all three). Results are
# appended to $SHARDID_RESULTS for the caller; ends with "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
: "${PG_MAJOR:?}"
export PG_MAJOR
. scripts/lib.sh
. scripts/suites.sh

suites=" ${SHARDID_ROOT_SUITES:-package integration tap} "
work=$(pg_tmpdir)
trap 'rm -rf "$work"' EXIT
pkg=postgresql-$PG_MAJOR-shardid
extversion=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" shardid.control)
semver=$extversion.0

# Files of shardid's in this PostgreSQL's directories, whoever put them there.
shardid_files() {
    ls -d "$("$PG_CONFIG" --pkglibdir)"/shardid* "$("$PG_CONFIG" --sharedir)"/extension/shardid* 2>/dev/null
}

package_suite() {
    local name="package ($PGV)" out deb debdir

    # A clean root: no package of shardid's, no file of shardid's.
    dpkg -s "$pkg" >/dev/null 2>&1 && dpkg --purge "$pkg" >/dev/null 2>&1
    out="PASS the root has no file of shardid's before the package is installed"
    [ -n "$(shardid_files)" ] && out="FAIL the root has files of shardid's before the package: $(shardid_files | tr '\n' ' ')"

    # dpkg-buildpackage: the source package (3.0 quilt: an orig tarball of
    # the tree without debian/) and the binary package, unsigned.
    debdir=$work/deb
    mkdir -p "$debdir/shardid-$semver"
    cp -a . "$debdir/shardid-$semver/"
    rm -rf "$debdir/shardid-$semver/build" "$debdir/shardid-$semver/results"
    tar -C "$debdir" --exclude="shardid-$semver/debian" -czf "$debdir/shardid_$semver.orig.tar.gz" "shardid-$semver"
    if (cd "$debdir/shardid-$semver" && PG_UPDATECONTROL=yes pg_buildext updatecontrol &&
        dpkg-buildpackage -us -uc) >"$work/dpkg-buildpackage.log" 2>&1; then
        out+=$'\n'"PASS dpkg-buildpackage builds the source and binary packages"
    else
        tail -30 "$work/dpkg-buildpackage.log"
        out+=$'\n'"FAIL dpkg-buildpackage failed"
    fi
    deb=$(ls "$debdir"/"${pkg}_${semver}"-*_*.deb 2>/dev/null | head -1)
    if [ -n "$deb" ] && ls "$debdir"/shardid_"$semver"-*.dsc >/dev/null 2>&1; then
        out+=$'\n'"PASS it produces $(basename "$deb") and a .dsc"
        mkdir -p /build/packages && cp "$debdir"/*.deb "$debdir"/*.dsc "$debdir"/*.tar.* /build/packages/ 2>/dev/null
    else
        out+=$'\n'"FAIL no ${pkg}_${semver} package: $(ls "$debdir" | tr '\n' ' ')"
        count_lines "$out"; record "$name" "$ok" "$bad"; return 1
    fi

    # Install it as an administrator would; apt resolves its dependencies
    # from what the root has.
    if DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$deb" >"$work/apt.log" 2>&1; then
        out+=$'\n'"PASS apt installs $(basename "$deb")"
    else
        tail -20 "$work/apt.log"
        out+=$'\n'"FAIL apt could not install $(basename "$deb")"
    fi
    local listed
    listed=$(dpkg -L "$pkg" 2>/dev/null)
    local f missing=""
    for f in "$("$PG_CONFIG" --pkglibdir)/shardid.so" "$("$PG_CONFIG" --sharedir)/extension/shardid.control" \
             $(cd sql && ls shardid--*.sql | sed "s|^|$("$PG_CONFIG" --sharedir)/extension/|"); do
        grep -qx "$f" <<<"$listed" && [ -f "$f" ] || missing+=" $f"
    done
    if [ -z "$missing" ]; then
        out+=$'\n'"PASS the package installs the library, the control file and every SQL script"
    else
        out+=$'\n'"FAIL the package lacks:$missing"
    fi
    local dep
    dep=$(dpkg-query -W -f '${Depends}' "$pkg")
    if grep -q "postgresql-$PG_MAJOR" <<<"$dep"; then
        out+=$'\n'"PASS it depends on postgresql-$PG_MAJOR ($dep)"
    else
        out+=$'\n'"FAIL its dependencies do not name postgresql-$PG_MAJOR: $dep"
    fi

    # CREATE EXTENSION, generate, decode, on a server of the root's.
    local dir port=55480 got
    dir=$(pg_tmpdir)
    if cluster_init "$dir" "shared_preload_libraries = 'shardid'" "shardid.node_id = 5" "shardid.launch_id = 9" &&
       cluster_start "$dir" "$port"; then
        got=$(cluster_psql "$dir" "$port" -At 2>&1 <<SQL
CREATE EXTENSION shardid;
SELECT extversion FROM pg_extension WHERE extname = 'shardid';
SELECT current_setting('server_version_num')::int / 10000;
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT next_trace_id(), item text);
INSERT INTO orders (item) SELECT 'item ' || g FROM generate_series(1, 1000) g;
SELECT count(DISTINCT id), bool_and((trace_id_decode(id)).node_no = 5),
       bool_and(trace_id_timestamp(id) BETWEEN now() - interval '1 minute' AND clock_timestamp())
  FROM orders;
SELECT (snowflake_decode(next_snowflake_id(3))).shard;
SELECT mark_in_wal FROM shardid_status WHERE layout = 'snowflake';
SQL
)
        local want
        want=$(printf '%s\n' "$extversion" "$PG_MAJOR" "1000|t|t" "3" "t")
        if [ "$got" = "$want" ]; then
            out+=$'\n'"PASS CREATE EXTENSION shardid $extversion on PostgreSQL $PG_MAJOR; 1,000 TraceIds generated and decoded; the node state is in WAL"
        else
            out+=$'\n'"FAIL generate and decode on the installed package: expected $(tr '\n' ' ' <<<"$want"), got $(tr '\n' ' ' <<<"$got")"
        fi
    else
        out+=$'\n'"FAIL a server with the packaged shardid preloaded did not start"
    fi
    cluster_stop "$dir" immediate
    rm -rf "$dir"
    count_lines "$out"
    record "$name" "$ok" "$bad"

    # The package test, as autopkgtest runs it: not as root, from the
    # source tree, against the installed package.
    local t="$work/autopkgtest"
    test_copy "$t" .
    rm -rf "$t/build" "$t/results"
    out=$(cd "$t" && as_pg sh debian/tests/installcheck 2>&1)
    local rc=$?
    record_regress "pg_regress ($PGV, installed .deb, pg_buildext installcheck)" "$out" "$t"
    if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then
        tail -30 <<<"$out"
        record "package test ($PGV, debian/tests/installcheck)" 0 1
    fi
}

[[ $suites == *" package "* ]] && package_suite
if [[ $suites == *" integration "* ]]; then
    if [ -z "$(shardid_files)" ]; then broken "integration ($PGV)" "shardid is not installed"; else run_integration; fi
fi
if [[ $suites == *" tap "* ]]; then
    if [ -z "$(shardid_files)" ]; then broken "tap ($PGV)" "shardid is not installed"; else run_tap; fi
fi
finish
