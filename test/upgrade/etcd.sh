#!/usr/bin/env bash
# test/upgrade/paths.sh with node ids, generator ids and run ids from etcd
# (docs/install.md, "Upgrading PostgreSQL"): the old server's words in etcd
# (its node id's mark, its shard values' words, the counters it took) name
# a state the new data directory lacks. pg_upgrade --link goes on with the
# same etcd; a dump and a logical copy go to a server whose etcd forgot
# everything (another prefix), so that only the adopted state bounds what
# the old server issued. Prints PASS/FAIL lines. Run from the repository
# root.
exec env UPGRADE_SOURCE=etcd UPGRADE_PORT=16960 UPGRADE_PATHS="${UPGRADE_PATHS:-link dump logical}" bash test/upgrade/paths.sh
