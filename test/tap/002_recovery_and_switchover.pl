# Crash recovery with the node state in WAL, and a switchover and back with
# pg_rewind: every ID a node issues stays above every ID issued before it
# by either server.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

sub file_mark
{
	my ($node) = @_;
	my $text = PostgreSQL::Test::Utils::slurp_file($node->data_dir . '/shardid.hwm');
	return $text =~ /^mark (\d+)$/m ? $1 : -1;
}

# 1. Crash recovery: the mark replayed from WAL and the mark in the file
#    are both upper bounds of what was issued; recovery keeps the larger,
#    and writes it back to the file, so the two agree afterwards.
my $a = PostgreSQL::Test::Cluster->new('a');
$a->init(allows_streaming => 1);
$a->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'shardid'
shardid.node_id = 5
wal_log_hints = on
});
$a->start;
$a->safe_psql('postgres', q{
CREATE EXTENSION shardid;
CREATE TABLE t (id bigint PRIMARY KEY DEFAULT next_snowflake_id(), trace bigint UNIQUE DEFAULT next_trace_id(), server text);
});
$a->safe_psql('postgres', q{INSERT INTO t (server) SELECT 'a1' FROM generate_series(1, 100000)});
my $before = file_mark($a);
# A lower mark in the file than in WAL (as after a lost file write): the
# replayed one wins.
$a->safe_psql('postgres', q{SELECT pg_sleep(1.2); INSERT INTO t (server) SELECT 'a1' FROM generate_series(1, 1000)});
my $in_wal = file_mark($a);
$a->stop('immediate');  # no shutdown checkpoint: the restart runs crash recovery
open(my $fh, '>', $a->data_dir . '/shardid.hwm') or die;
print $fh "shardid node state v2\nmark $before\ngenerator -1\nrun -1\n";
close $fh;
$a->start;
my $floor = $a->safe_psql('postgres',
	q{SELECT next_trace_id() > 0; SELECT (extract(epoch FROM restart_floor) * 1000)::bigint FROM shardid_status LIMIT 1});
$floor = (split /\n/, $floor)[-1];
ok($floor >= $in_wal, "crash recovery resumes above the mark in WAL ($floor >= $in_wal), not the older one in the file ($before)");
is(file_mark($a) >= $floor ? 1 : 0, 1, 'and the file holds it again afterwards');
$a->safe_psql('postgres', q{INSERT INTO t (server) SELECT 'a2' FROM generate_series(1, 1000)});
is($a->safe_psql('postgres', q{SELECT (SELECT min(id) FROM t WHERE server = 'a2') > (SELECT max(id) FROM t WHERE server = 'a1')
                                AND (SELECT min(trace) FROM t WHERE server = 'a2') > (SELECT max(trace) FROM t WHERE server = 'a1')}),
	't', 'IDs after crash recovery are above every ID before it');

# 2. Switchover to a standby and back, the old primary rewound and
#    rejoined as a standby in between.
$a->backup('b0');
my $b = PostgreSQL::Test::Cluster->new('b');
$b->init_from_backup($a, 'b0', has_streaming => 1);
$b->start;
$a->safe_psql('postgres', q{INSERT INTO t (server) SELECT 'a3' FROM generate_series(1, 10000)});
$a->wait_for_catchup($b, 'replay');
$a->stop('fast');
$b->promote;
$b->safe_psql('postgres', q{INSERT INTO t (server) SELECT 'b1' FROM generate_series(1, 10000)});
is($b->safe_psql('postgres', q{SELECT (SELECT min(id) FROM t WHERE server = 'b1') > (SELECT max(id) FROM t WHERE server <> 'b1')}),
	't', 'switchover: the new primary issues above the old one');

command_ok(['pg_rewind', '--target-pgdata', $a->data_dir, '--source-server', $b->connstr('postgres')],
	'the old primary is rewound to the new one');
$a->enable_streaming($b);
$a->start;
$b->safe_psql('postgres', q{INSERT INTO t (server) SELECT 'b2' FROM generate_series(1, 10000)});
$b->wait_for_catchup($a, 'replay');
$b->stop('fast');
$a->promote;
$a->safe_psql('postgres', q{INSERT INTO t (server) SELECT 'a4' FROM generate_series(1, 10000)});
is($a->safe_psql('postgres', q{SELECT (SELECT min(id) FROM t WHERE server = 'a4') > (SELECT max(id) FROM t WHERE server <> 'a4')
                                AND (SELECT min(trace) FROM t WHERE server = 'a4') > (SELECT max(trace) FROM t WHERE server <> 'a4')
                                AND (SELECT count(*) = count(DISTINCT id) FROM t)}),
	't', 'and back: the rewound, rejoined first primary, promoted again, issues above both');
$a->stop;

done_testing();
