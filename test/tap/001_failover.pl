# Failover: a promoted standby never reissues the old primary's IDs, because
# the node state (high-water mark, counter floors) travels in WAL through
# shardid's custom resource manager. The standby's server runs with its
# clock 15 s behind the primary's (libfaketime), so without the replayed
# mark its first IDs would sort below the old primary's newest ones; a
# negative control with the records turned off must see exactly that.
# Also: a hot standby answers every reader exactly as the primary does and
# refuses to generate (SQLSTATE 25006); with synchronous replication and
# the primary killed under load, nothing committed is reissued.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep);

my $faketime = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
-e $faketime or BAIL_OUT("libfaketime is missing (Debian package faketime)");

my $rows = $ENV{SHARDID_FAILOVER_ROWS} || 1000000;

# A primary (node 3) and a streaming standby made from its backup, whose
# server clock runs $behind behind. Returns both.
sub pair
{
	my (%o) = @_;
	my $primary = PostgreSQL::Test::Cluster->new("primary_$o{name}");
	$primary->init(allows_streaming => 1);
	$primary->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'shardid'
shardid.node_id = 3
shardid.launch_id = 7
shardid.wal_log_mark = $o{wal}
$o{primary_conf}
});
	$primary->start;
	$primary->safe_psql('postgres', q{
CREATE EXTENSION shardid;
CREATE TABLE t (id bigint PRIMARY KEY DEFAULT next_snowflake_id(),
                trace bigint UNIQUE DEFAULT next_trace_id(),
                u uuid UNIQUE DEFAULT next_uuidv7(),
                v int);
});
	$primary->backup('b');
	my $standby = PostgreSQL::Test::Cluster->new("standby_$o{name}");
	$standby->init_from_backup($primary, 'b', has_streaming => 1);
	$standby->append_conf('postgresql.conf', $o{standby_conf});
	{
		local $ENV{LD_PRELOAD} = $faketime;
		local $ENV{FAKETIME} = '-15s';
		local $ENV{FAKETIME_DONT_FAKE_MONOTONIC} = '1';
		$standby->start;
	}
	return ($primary, $standby);
}

# Promotes the standby after the primary's death and inserts 1,000 rows:
# returns (rows at or below the old maximum, error text).
sub after_failover
{
	my ($primary, $standby) = @_;
	my $old = $standby->safe_psql('postgres', 'SELECT max(id) || \'|\' || max(trace) || \'|\' || max(u::text) FROM t');
	my ($old_id, $old_trace, $old_u) = split /\|/, $old;
	$primary->kill9;
	$standby->promote;
	my ($rc, $out, $err) = $standby->psql('postgres',
		'INSERT INTO t (v) SELECT -1 FROM generate_series(1, 1000)');
	my $below = $standby->safe_psql('postgres',
		"SELECT count(*) FILTER (WHERE id <= $old_id OR trace <= $old_trace OR u::text <= '$old_u') FROM t WHERE v = -1");
	my $inserted = $standby->safe_psql('postgres', 'SELECT count(*) FROM t WHERE v = -1');
	return ($below, $inserted, $err);
}

# 1. The scenario: 1,000,000 rows, replayed, primary killed, promotion.
my ($p, $s) = pair(name => 'main', wal => 'on', primary_conf => '',
	standby_conf => "shardid.max_clock_lead = '1min'");
$p->safe_psql('postgres', "INSERT INTO t (v) SELECT g FROM generate_series(1, $rows) g");
$p->wait_for_catchup($s, 'replay');

# Hot standby: every reader gives what the primary gives, in a session that
# cached nothing; generators are refused with 25006.
my $readers = q{
SELECT count(*), sum(hashtext(concat_ws(',', snowflake_decode(id), snowflake_timestamp(id), trace_id_decode(trace, '2026-11-22'),
         instagram_decode(id), id_decode('twitter', id), base62_encode(id), base32_encode(id, 13),
         base62_decode(base62_encode(id)), base32_decode(base32_encode(id)), obfuscate_id(id), reveal_id(obfuscate_id(id)),
         snowflake_created_within(id, tstzrange('2026-01-01', 'infinity')),
         id_created_within('snowflake', id, '(,)'), snowflake_min_id(snowflake_timestamp(id)),
         decimal_id_decode(10000100065), eightbyte_id_decode(eightbyte_id_build(snowflake_timestamp(id), 1, 2, 3, 'spread')),
         call_number_compose(0, v % 1000, v % 16384), call_number_decode(call_number_compose(0, v % 1000, v % 16384)),
         uuidv7_decode(u), uuidv7_created_within(u, tstzrange('2026-01-01', 'infinity')), uuidv7_min(uuidv7_timestamp(u)))))
FROM t WHERE v % 97 = 0;
};
my $on_primary = $p->safe_psql('postgres', $readers);
my $on_standby = $s->safe_psql('postgres', $readers);
is($on_standby, $on_primary, 'hot standby: every reader gives the primary\'s answers');
for my $gen ('next_snowflake_id()', 'next_trace_id()', "next_id('twitter', 1)", 'next_decimal_id()',
	'next_call_number()', 'next_eightbyte_id()', "next_opaque_id()", 'next_uuidv7()')
{
	my ($rc, $out, $notice) = $s->psql('postgres', qq{
DO \$\$ BEGIN PERFORM $gen; RAISE EXCEPTION 'generated'; EXCEPTION WHEN OTHERS THEN RAISE NOTICE '%', SQLSTATE; END \$\$;
});
	like($notice, qr/25006/, "hot standby: $gen is refused with 25006");
}
my ($rc, $out, $err) = $s->psql('postgres', 'SELECT next_snowflake_id()');
like($err, qr/cannot generate shardid IDs on a standby server/, 'the message says the server is a standby');
is($p->safe_psql('postgres', 'SELECT bool_and(mark_in_wal) FROM shardid_status'), 't', 'shardid_status: the mark is carried in WAL');

# The primary's newest IDs just before it dies: the replayed mark then
# leads the standby's wall clock by about 15 s when the standby generates
# (the reader checks above take long on a busy machine, and a mark made
# before them could have fallen behind the slow clock by then).
$p->safe_psql('postgres', 'INSERT INTO t (v) SELECT g FROM generate_series(1, 10) g');
$p->wait_for_catchup($s, 'replay');
my ($below, $inserted, $ferr) = after_failover($p, $s);
is($inserted, 1000, 'promoted standby (clock 15 s behind, max_clock_lead 1min) inserts 1,000 rows') or diag($ferr);
is($below, 0, 'none of its IDs (snowflake, TraceId, UUIDv7) at or below the old primary\'s newest');
# now() is read after the IDs were made: an ID above it was above the
# standby's wall clock when it was made.
like($s->safe_psql('postgres', q{SELECT count(*) FILTER (WHERE snowflake_timestamp(id) > now()) || ' of ' || count(*)
                               || ', lead ' || coalesce(round(extract(epoch FROM min(snowflake_timestamp(id)) - now()), 1)::text, '-')
                               || ' s' FROM t WHERE v = -1}), qr/^1000 of 1000, /,
	'its logical clock leads its own (slow) wall clock, as the replayed mark demands: every new ID above it');
$s->stop;

# 2. The default lead limit (10 s): either above, or refused with 55000;
#    never at or below.
($p, $s) = pair(name => 'lead', wal => 'on', primary_conf => '', standby_conf => '');
$p->safe_psql('postgres', 'INSERT INTO t (v) SELECT g FROM generate_series(1, 100000) g');
$p->wait_for_catchup($s, 'replay');
($below, $inserted, $ferr) = after_failover($p, $s);
ok($below == 0 && ($inserted == 1000 || $ferr =~ /would lead the wall clock/),
	"default lead limit: above the old maximum or refused (inserted $inserted, below $below)") or diag($ferr);
$s->stop;

# 3. Synchronous replication, the primary killed under a concurrent load:
#    nothing the old primary committed is issued again.
($p, $s) = pair(name => 'sync', wal => 'on', primary_conf => '', standby_conf => "shardid.max_clock_lead = '1min'");
$p->append_conf('postgresql.conf', "synchronous_standby_names = '*'");
$p->reload;
$p->poll_query_until('postgres', "SELECT sync_state = 'sync' FROM pg_stat_replication") or die 'no sync standby';
my $script = $p->basedir . '/insert.sql';
PostgreSQL::Test::Utils::append_to_file($script, "INSERT INTO t (v) VALUES (1);\n");
my $pgbench = IPC::Run::start(['pgbench', '-n', '-c', '4', '-j', '2', '-T', '20', '-f', $script,
	'-h', $p->host, '-p', $p->port, 'postgres'], '>', \my $bench_out, '2>', \my $bench_err);
$p->poll_query_until('postgres', 'SELECT count(*) > 2000 FROM t') or die 'load did not start';
($below, $inserted, $ferr) = after_failover($p, $s);
eval { $pgbench->kill_kill; };
is($inserted, 1000, 'synchronous standby promoted mid-load inserts 1,000 rows') or diag($ferr);
is($below, 0, 'none at or below anything the old primary committed');
$s->stop;

# 4. Negative control: with the records off, the same failover reissues
#    (IDs below the old maximum, or duplicate keys), and the check sees it.
($p, $s) = pair(name => 'control', wal => 'off', primary_conf => '',
	standby_conf => "shardid.max_clock_lead = '1min'");
$p->safe_psql('postgres', 'INSERT INTO t (v) SELECT g FROM generate_series(1, 100000) g');
$p->wait_for_catchup($s, 'replay');
($below, $inserted, $ferr) = after_failover($p, $s);
ok($below > 0 || $ferr =~ /duplicate key/,
	"negative control: without the WAL records the promoted standby reissues (below $below, error: "
	  . ($ferr =~ /duplicate key/ ? 'duplicate key' : 'none') . ')');
$s->stop;

# 5. A standby without shardid preloaded cannot replay the records: its
#    startup stops with PostgreSQL's own error, naming the fix; with
#    shardid preloaded it replays and catches up.
($p, $s) = pair(name => 'nolib', wal => 'on', primary_conf => '',
	standby_conf => "shared_preload_libraries = ''");
$p->safe_psql('postgres', 'INSERT INTO t (v) SELECT g FROM generate_series(1, 1000) g');
my $stopped = 0;
for (1 .. 300)
{
	if (PostgreSQL::Test::Utils::slurp_file($s->logfile) =~ /resource manager with ID 150 not registered/) { $stopped = 1; last; }
	usleep(100_000);
}
ok($stopped, 'a standby without shardid stops at the first record: "resource manager with ID 150 not registered"');
# Its postmaster shuts itself down after the startup process's failure.
for (1 .. 100) { last unless -e $s->data_dir . "/postmaster.pid"; usleep(100_000); }
$s->_update_pid(0);
$s->append_conf('postgresql.conf', "shared_preload_libraries = 'shardid'");
$s->start;
$p->wait_for_catchup($s, 'replay');
is($s->safe_psql('postgres', 'SELECT count(*) FROM t'), '1000', 'with shardid preloaded it replays and catches up');

# 6. The records are readable: pg_walinspect shows shardid's own
#    description of them.
$p->safe_psql('postgres', 'CREATE EXTENSION pg_walinspect');
my $start = $p->safe_psql('postgres', 'SELECT pg_current_wal_lsn()');
$p->safe_psql('postgres', 'SELECT pg_sleep(1.2); INSERT INTO t (v) SELECT g FROM generate_series(1, 10) g');
like($p->safe_psql('postgres', qq{
SELECT resource_manager || '/' || record_type || ': ' || description FROM pg_get_wal_records_info('$start', pg_current_wal_lsn())
WHERE resource_manager = 'shardid' LIMIT 1}),
	qr{^shardid/NODE_STATE: high-water mark \d+ \(Unix ms\); retired marks end by -?\d+; generator id floor -?\d+; run id floor -?\d+; history \d+; history began \d+ \(Unix ms\); awaits its predecessor's state [01]; \d+ layout marks},
	'pg_walinspect describes the node-state records');
$p->stop;
$s->stop;

done_testing();
