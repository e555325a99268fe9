#!/usr/bin/env bash
# Runs inside a Debian root made by scripts/roots.sh (as root, from the copy
# of the tree at /build/shardid-$PG_MAJOR), for the root's PostgreSQL $PG_MAJOR:
#
#   package      build the Debian source and binary packages with
#                dpkg-buildpackage (pg_buildext), install the .deb into the
#                root, which has nothing else of shardid's, check what it
#                installed, CREATE EXTENSION, generate and decode, then run
#                the package test debian/tests/installcheck (pg_buildext
#                installcheck: the whole pg_regress suite, preloaded and not)
#   integration  the libpqxx integration tests and shell scenarios
#   tap          PostgreSQL's TAP framework: failover, recovery, switchover
#   partman      pg_partman 5 (where the root has it: trixie's
#                postgresql-17-partman) managing tables partitioned by the
#                time inside shardid's IDs
#   upgrade      test/upgrade/paths.sh and test/upgrade/cluster.sh
#                (pg_upgradecluster, with the package's hook) from
#                PostgreSQL 15 (this machine's, copied into the 17 root by
#                scripts/roots.sh, with shardid built for it here) to the
#                root's version, against the installed package
#   citus        test/citus/'s suites (but upgrade.sh, from 15) with Citus built in the root from the
#                vendored source at $SHARDID_VENDOR (17 and 18: Citus 14.0.1)
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

# Turns: 18's and 19's suites share a root, and dpkg has one lock: their
# package-manager steps take turns (fd 8, a lock in the root), their builds
# need not. postgresql-common finds a port by trying from 5432 on
# (pg_buildext installcheck, pg_upgradecluster): those steps take turns
# with every root's and the host's (fd 9, which the test command opens on
# its lock file: SHARDID_PORT_FD).
dpkg_turn() { exec 8>/var/lib/dpkg/shardid-turn.lock && flock 8; }
dpkg_turn_over() { flock -u 8 2>/dev/null; }
port_turn() { [ -z "${SHARDID_PORT_FD:-}" ] || flock "$SHARDID_PORT_FD"; }
port_turn_over() { [ -z "${SHARDID_PORT_FD:-}" ] || flock -u "$SHARDID_PORT_FD"; }

package_suite() {
    local name="package ($PGV)" out deb debdir readme_deb=""

    # A clean root: no package of shardid's, no file of shardid's.
    dpkg_turn
    dpkg -s "$pkg" >/dev/null 2>&1 && dpkg --purge "$pkg" >/dev/null 2>&1
    out="PASS the root has no file of shardid's before the package is installed"
    [ -n "$(shardid_files)" ] && out="FAIL the root has files of shardid's before the package: $(shardid_files | tr '\n' ' ')"

    # dpkg-buildpackage: the source package (3.0 quilt: an orig tarball of
    # the tree without debian/) and the binary package, unsigned. Without
    # debug information (the Makefile's SHARDID_CXXFLAGS): GCC generates
    # the same code with or without it, and it is about a quarter of each
    # package's compile, four packages in the test command.
    export SHARDID_CXXFLAGS=-g0 DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:+$DEB_BUILD_OPTIONS }noddebs"
    debdir=$work/deb
    mkdir -p "$debdir/shardid-$semver"
    cp -a . "$debdir/shardid-$semver/"
    rm -rf "$debdir/shardid-$semver/build" "$debdir/shardid-$semver/results"
    tar -C "$debdir" --exclude="shardid-$semver/debian" -czf "$debdir/shardid_$semver.orig.tar.gz" "shardid-$semver"
    # On the README's release (PostgreSQL 15, Debian 12) the README's own
    # commands build and install it, as a newcomer copies them.
    local readme_block
    readme_block=$(awk '/^```sh$/ {b=""; inb=1; next} /^```$/ {if (inb && b ~ /dpkg-buildpackage/) {printf "%s", b; exit} inb=0; next}
                        inb {b = b $0 "\n"}' README.md)
    if [ "$PG_MAJOR" = 15 ]; then
        # As on a fresh Debian 12: the build dependencies beyond the server
        # headers are not there; the README's commands must install them.
        DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq libcurl4-openssl-dev nlohmann-json3-dev >/dev/null 2>&1
        dpkg -s nlohmann-json3-dev >/dev/null 2>&1 &&
            out+=$'\n'"FAIL nlohmann-json3-dev could not be removed before the README's commands"
        # In a copy of its own (mk-build-deps leaves files in the tree); apt
        # answers its question itself.
        mkdir -p "$work/readme" && cp -a "$debdir/shardid-$semver" "$work/readme/"
        echo 'APT::Get::Assume-Yes "true";' >"$work/apt-yes.conf"
        if [ -n "$readme_block" ] && (cd "$work/readme/shardid-$semver" && export APT_CONFIG="$work/apt-yes.conf" &&
                                      set -e && eval "$readme_block") \
            >"$work/readme-package.log" 2>&1 && dpkg -s "$pkg" >/dev/null 2>&1; then
            out+=$'\n'"PASS README's package commands install the build dependencies, build and install $pkg"
            # The binary package the suite tests below (built once: the
            # source package is made on its own then).
            readme_deb=$(ls "$work/readme/${pkg}_${semver}"-*_*.deb 2>/dev/null | head -1)
            dpkg --purge "$pkg" >/dev/null 2>&1
        else
            tail -30 "$work/readme-package.log"
            out+=$'\n'"FAIL README's package commands failed: $(tr '\n' ';' <<<"$readme_block")"
        fi
    fi
    # A version newer than the release's postgresql-common knows (19 from
    # experimental on sid) is named, as docs/install.md tells users to.
    if ! /usr/share/postgresql-common/supported-versions 2>/dev/null | grep -qx "$PG_MAJOR"; then
        export PG_SUPPORTED_VERSIONS=$PG_MAJOR
    fi
    # Where README's commands built the binary package (15), the source
    # package alone, and README's .deb is the one installed and tested.
    local build_what=() built_what="the source and binary packages"
    if [ -n "$readme_deb" ]; then
        build_what=(-S)
        built_what="the source package (-S; the binary package is README's, built above)"
    fi
    dpkg_turn_over
    if (cd "$debdir/shardid-$semver" && PG_UPDATECONTROL=yes pg_buildext updatecontrol &&
        dpkg-buildpackage -us -uc "${build_what[@]}") >"$work/dpkg-buildpackage.log" 2>&1 &&
       { [ -z "$readme_deb" ] || cp "$readme_deb" "$debdir/"; }; then
        out+=$'\n'"PASS dpkg-buildpackage builds $built_what"
    else
        tail -30 "$work/dpkg-buildpackage.log"
        out+=$'\n'"FAIL dpkg-buildpackage failed"
    fi
    # updatecontrol rewrites debian/control from control.in: the build
    # dependencies must survive it.
    local builddeps
    builddeps=$(sed -n '/^Build-Depends:/,/^[A-Z]/p' "$debdir/shardid-$semver/debian/control")
    if grep -q libcurl4-openssl-dev <<<"$builddeps" && grep -q nlohmann-json3-dev <<<"$builddeps" &&
       grep -q "^Package: postgresql-$PG_MAJOR-shardid" "$debdir/shardid-$semver/debian/control"; then
        out+=$'\n'"PASS pg_buildext updatecontrol keeps every build dependency and names postgresql-$PG_MAJOR-shardid"
    else
        out+=$'\n'"FAIL debian/control after pg_buildext updatecontrol: $(tr '\n' ' ' <<<"$builddeps")"
    fi
    deb=$(ls "$debdir"/"${pkg}_${semver}"-*_*.deb 2>/dev/null | head -1)
    if [ -n "$deb" ] && ls "$debdir"/shardid_"$semver"-*.dsc >/dev/null 2>&1; then
        out+=$'\n'"PASS it produces $(basename "$deb") and a .dsc"
        mkdir -p /build/packages && cp "$debdir"/*.deb "$debdir"/*.dsc "$debdir"/*.tar.* /build/packages/ 2>/dev/null
    else
        out+=$'\n'"FAIL no ${pkg}_${semver} package: $(ls "$debdir" | tr '\n' ' ')"
        count_lines "$out"; record "$name" "$ok" "$bad"; dpkg_turn_over; return 1
    fi

    # Install it as an administrator would; apt resolves its dependencies
    # from what the root has.
    dpkg_turn
    if DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$deb" >"$work/apt.log" 2>&1; then
        out+=$'\n'"PASS apt installs $(basename "$deb")"
    else
        tail -20 "$work/apt.log"
        out+=$'\n'"FAIL apt could not install $(basename "$deb")"
    fi
    local listed
    listed=$(dpkg -L "$pkg" 2>/dev/null)
    local f missing=""
    for f in "$("$PG_CONFIG" --pkglibdir)/shardid.so" "$("$PG_CONFIG" --pkglibdir)/shardid_etcd.so" \
             "$("$PG_CONFIG" --sharedir)/extension/shardid.control" \
             $(cd sql && ls shardid--*.sql | sed "s|^|$("$PG_CONFIG" --sharedir)/extension/|") \
             "/etc/postgresql-common/pg_upgradecluster.d/shardid-$PG_MAJOR"; do
        grep -qx "$f" <<<"$listed" && [ -f "$f" ] || missing+=" $f"
    done
    if [ -z "$missing" ]; then
        out+=$'\n'"PASS the package installs both libraries (shardid, shardid_etcd), the control file, every SQL script and its pg_upgradecluster hook"
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
    local dir port=$(test_port 15480) got
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
    dpkg_turn_over
    count_lines "$out"
    record "$name" "$ok" "$bad"

    # The package test, as autopkgtest runs it: not as root, from the
    # source tree, against the installed package.
    local t="$work/autopkgtest"
    test_copy "$t" .
    rm -rf "$t/build" "$t/results"
    port_turn
    out=$(cd "$t" && as_pg sh debian/tests/installcheck 2>&1)
    local rc=$?
    port_turn_over
    record_regress "pg_regress ($PGV, installed .deb, pg_buildext installcheck)" "$out" "$t"
    if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then
        tail -30 <<<"$out"
        record "package test ($PGV, debian/tests/installcheck)" 0 1
    fi
}

# pg_partman 5 managing partitions by the time inside shardid's IDs: (1) a
# bigint snowflake key with partman's integer partitioning, one hour of IDs
# per partition (3,600,000 ms << 22 sequence and shard bits: the partitions
# start at whole UTC hours, the snowflake epoch being one); (2) a text key
# of fixed-width base62 snowflake IDs with p_time_encoder / p_time_decoder
# over shardid's functions (pg_partman 5.2 takes an encoder only for text
# and uuid keys).
partman_suite() {
    local name="pg_partman ($PGV)" dir port=$(test_port 15490) out=""
    if [ ! -f "$("$PG_CONFIG" --sharedir)/extension/pg_partman.control" ]; then
        broken "$name" "pg_partman is not installed in this root"; return
    fi
    dir=$(pg_tmpdir)
    if ! { cluster_init "$dir" "shared_preload_libraries = 'shardid'" "shardid.node_id = 3" &&
           cluster_start "$dir" "$port"; }; then
        broken "$name" "a server did not start"; rm -rf "$dir"; return
    fi
    pq() { cluster_psql "$dir" "$port" -At "$@"; }
    t() {  # NAME SQL: one boolean
        local got
        got=$(pq -c "$2" 2>&1)
        if [ "$got" = t ]; then out+="PASS $1"$'\n'; else out+="FAIL $1: $got"$'\n'; fi
    }
    pq >/dev/null <<'SQL' || out+="FAIL pg_partman and shardid set up"$'\n'
CREATE SCHEMA partman;
CREATE EXTENSION pg_partman SCHEMA partman;
CREATE EXTENSION shardid;
-- (1) a bigint key: partman's integer partitioning, an hour of IDs each.
CREATE TABLE public.events (id bigint NOT NULL DEFAULT next_snowflake_id(), payload text) PARTITION BY RANGE (id);
SELECT partman.create_parent(p_parent_table := 'public.events', p_control := 'id',
                             p_interval := ((3600000::bigint) << 22)::text, p_premake := 3,
                             p_start_partition := snowflake_min_id(date_trunc('hour', now()) - interval '3 hours')::text);
-- (2) a text key of base62 snowflake IDs, with an encoder and a decoder
-- made of shardid's IMMUTABLE STRICT functions.
CREATE FUNCTION public.snowflake62_encoder(ts timestamptz) RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT public.base62_encode(public.snowflake_min_id(ts), 11) $$;
CREATE FUNCTION public.snowflake62_decoder(key text) RETURNS timestamptz LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT public.snowflake_timestamp(public.base62_decode(key)) $$;
CREATE TABLE public.posts (key text COLLATE "C" NOT NULL DEFAULT base62_encode(next_snowflake_id(), 11), body text)
    PARTITION BY RANGE (key);
SELECT partman.create_parent(p_parent_table := 'public.posts', p_control := 'key', p_interval := '1 hour',
                             p_premake := 3, p_time_encoder := 'public.snowflake62_encoder',
                             p_time_decoder := 'public.snowflake62_decoder');
SQL
    pq >/dev/null <<'SQL' || out+="FAIL rows inserted"$'\n'
INSERT INTO events (id, payload)
    SELECT id_compose('snowflake', now() - g * interval '1 minute', 3, 0), 'old ' || g FROM generate_series(1, 170, 3) g;
INSERT INTO events (payload) SELECT 'new ' || g FROM generate_series(1, 1000) g;
INSERT INTO posts (key, body)
    SELECT base62_encode(id_compose('snowflake', now() - g * interval '1 minute', 3, 0), 11), 'old ' || g
    FROM generate_series(1, 170, 3) g;
INSERT INTO posts (body) SELECT 'new ' || g FROM generate_series(1, 1000) g;
SELECT partman.run_maintenance();
SQL
    t "pg_partman $(pq -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_partman'") made hourly partitions of a bigint snowflake key, ahead of now" \
      "SELECT count(*) >= 6 FROM partman.show_partitions('public.events')"
    t "each partition of the bigint key starts at a whole UTC hour (snowflake_timestamp of its lower bound)" \
      "SELECT bool_and(date_trunc('hour', snowflake_timestamp(lower) AT TIME ZONE 'UTC') = snowflake_timestamp(lower) AT TIME ZONE 'UTC')
       FROM (SELECT (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \(''?(-?[0-9]+)'))[1]::bigint AS lower
             FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = 'public.events'::regclass AND pg_get_expr(c.relpartbound, c.oid) <> 'DEFAULT') s"
    t "every row of the bigint key is in the partition of its hour, none in the default" \
      "SELECT count(*) = 0 FROM events_default"
    local plan
    plan=$(pq -c "EXPLAIN (COSTS OFF) SELECT count(*) FROM events
                  WHERE id >= snowflake_min_id(date_trunc('hour', now())) AND id < snowflake_min_id(now())")
    if [ "$(grep -c 'Scan on events_' <<<"$plan")" = 1 ] && grep -q 'Subplans Removed' <<<"$plan"; then
        out+="PASS this hour's rows are read from one partition of the bigint key (executor pruning)"$'\n'
    else
        out+="FAIL this hour's rows are read from one partition: $(tr '\n' ' ' <<<"$plan")"$'\n'
    fi
    t "encoder and decoder: pg_partman made hourly partitions of the base62 key" \
      "SELECT count(*) >= 6 FROM partman.show_partitions('public.posts')"
    t "each base62 partition's bounds decode to whole hours, an hour apart" \
      "SELECT bool_and(date_trunc('hour', snowflake62_decoder(lo) AT TIME ZONE 'UTC') = snowflake62_decoder(lo) AT TIME ZONE 'UTC'
                       AND snowflake62_decoder(hi) - snowflake62_decoder(lo) = interval '1 hour')
       FROM (SELECT m[1] AS lo, m[2] AS hi FROM (SELECT regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \(''([^'']+)''\) TO \(''([^'']+)''\)') AS m
             FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = 'public.posts'::regclass AND pg_get_expr(c.relpartbound, c.oid) <> 'DEFAULT') b) s"
    t "every base62 row is in the partition of its hour, none in the default" \
      "SELECT count(*) = 0 FROM posts_default"
    t "a base62 row's partition is the one the decoder names for its ID's hour" \
      "SELECT bool_and(snowflake62_decoder(key) >= snowflake62_decoder(substring(pg_get_expr(c.relpartbound, c.oid) FROM 'FROM \(''([^'']+)''\)'))
                       AND snowflake62_decoder(key) < snowflake62_decoder(substring(pg_get_expr(c.relpartbound, c.oid) FROM 'TO \(''([^'']+)''\)')))
       FROM posts p JOIN pg_class c ON c.oid = p.tableoid"
    t "the encoder and decoder round-trip every partition boundary" \
      "SELECT bool_and(snowflake62_decoder(snowflake62_encoder(h)) = h)
       FROM generate_series(date_trunc('hour', now()) - interval '30 days', date_trunc('hour', now()) + interval '30 days', interval '1 hour') h"
    cluster_stop "$dir" immediate
    rm -rf "$dir"
    count_lines "$out"
    record "$name" "$ok" "$bad"
}

# test/upgrade/paths.sh from 15 (root_add_host_server: in /usr/lib/postgresql/15)
# to this root's version: shardid built for 15 from a copy of the tree.
upgrade_suite() {
    local out rc old=/usr/lib/postgresql/15/bin
    if [ ! -x "$old/pg_config" ]; then
        broken "upgrade ($PGV, 15 to $PG_MAJOR)" "the root has no PostgreSQL 15"
        return
    fi
    # shardid for 15: as the test command built and installed it on the
    # host (scripts/roots.sh, root_add_host_shardid), else built here.
    [ -f "$("$old/pg_config" --pkglibdir)/shardid.so" ] ||
    { rm -rf "$work/pg15-build" && cp -a . "$work/pg15-build" && rm -rf "$work/pg15-build/build" &&
        make -s -C "$work/pg15-build" -j2 PG_CONFIG="$old/pg_config" >"$work/pg15-build.log" 2>&1 &&
        make -s -C "$work/pg15-build" PG_CONFIG="$old/pg_config" install >>"$work/pg15-build.log" 2>&1; } || {
        tail -20 "$work/pg15-build.log"
        broken "upgrade ($PGV, 15 to $PG_MAJOR)" "shardid did not build for PostgreSQL 15 in the root"
        return
    }
    OLD_BIN=$old NEW_BIN=$(dirname "$PG_CONFIG") run_script "upgrade ($PGV, 15 to $PG_MAJOR)" test/upgrade/paths.sh
    # Debian's pg_upgradecluster with the installed package's hook.
    OLD_VERSION=15 NEW_VERSION=$PG_MAJOR run_script "upgrade ($PGV, pg_upgradecluster 15 to $PG_MAJOR)" test/upgrade/cluster.sh
}

# test/citus/'s suites against the installed package (but upgrade.sh, whose
# old server is 15), with Citus built in this root from the vendored source
# (scripts/citus.sh: cached in the root).
root_citus_suite() {
    local script
    # (The citus lane's other suites, which run while Citus builds, are
    # PostgreSQL 15's.)
    for script in $(suite_files script citus); do
        case $script in test/citus/upgrade.sh) continue ;; test/citus/*) ;; *) continue ;; esac
        run_script "citus ($PGV, $(basename "$script" .sh))" "$script"
    done
}

[[ $suites == *" package "* ]] && package_suite
if [[ $suites == *" integration "* ]]; then
    if [ -z "$(shardid_files)" ]; then broken "integration ($PGV)" "shardid is not installed"; else run_integration; fi
fi
[[ $suites == *" partman "* ]] && partman_suite
[[ $suites == *" upgrade "* ]] && upgrade_suite
if [[ $suites == *" citus "* ]]; then
    if [ -z "$(shardid_files)" ]; then broken "citus ($PGV)" "shardid is not installed"; else root_citus_suite; fi
fi
if [[ $suites == *" tap "* ]]; then
    # The failover scenario with 200,000 rows replayed (1,000,000 natively
    # on 15: the same code at scale; here, each version's replay).
    export SHARDID_FAILOVER_ROWS=${SHARDID_FAILOVER_ROWS:-200000}
    if [ -z "$(shardid_files)" ]; then broken "tap ($PGV)" "shardid is not installed"; else run_tap; fi
fi
finish
