# An ID that reached a client is never issued again after a synchronous
# failover (second hostile review, section 7). A primary with a synchronous
# standby whose clock is 15 s behind; four clients take IDs in autocommit,
# two as an ID service (SELECT next_snowflake_id(): nothing is inserted, the
# client keeps the ID) and two with INSERT ... RETURNING; the walsender
# stalls (SIGSTOP) for 3 s; the primary dies as a machine does (kill -9 of
# the postmaster and of every process of the server at once); the standby is promoted and issues 1,000 IDs. None may be
# at or below the highest ID any client received: an ID is handed out only
# once the WAL record of the mark that covers it is confirmed by the
# synchronous standbys. Negative control: the same with the clients at
# synchronous_commit = local (no wait, as for their commits) reissues.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep);

my $faketime = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
-e $faketime or BAIL_OUT("libfaketime is missing (Debian package faketime)");

# The processes whose parent is PID (from /proc: pid (comm) state ppid ...;
# comm may hold spaces and parentheses, so the last ")" ends it).
sub children_of
{
	my ($ppid) = @_;
	my @kids;
	opendir(my $dh, '/proc') or return ();
	for my $pid (grep { /^\d+$/ } readdir $dh)
	{
		open(my $fh, '<', "/proc/$pid/stat") or next;
		my $stat = <$fh>;
		close $fh;
		push @kids, $pid if defined $stat && $stat =~ /.*\)\s+\S+\s+(\d+)/ && $1 == $ppid;
	}
	closedir $dh;
	return @kids;
}

# Runs the scenario; returns (IDs the clients received, highest of them,
# received during the stall, new IDs at or below the highest, error).
sub scenario
{
	my ($name, $client_options) = @_;
	my $p = PostgreSQL::Test::Cluster->new("primary_$name");
	$p->init(allows_streaming => 1);
	$p->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'shardid'
shardid.node_id = 3
});
	$p->start;
	$p->safe_psql('postgres', q{
CREATE EXTENSION shardid;
CREATE TABLE t (id bigint PRIMARY KEY DEFAULT next_snowflake_id(), v int);
});
	$p->backup('b');
	my $s = PostgreSQL::Test::Cluster->new("standby_$name");
	$s->init_from_backup($p, 'b', has_streaming => 1);
	$s->append_conf('postgresql.conf', "shardid.max_clock_lead = '1min'");
	{
		local $ENV{LD_PRELOAD} = $faketime;
		local $ENV{FAKETIME} = '-15s';
		local $ENV{FAKETIME_DONT_FAKE_MONOTONIC} = '1';
		$s->start;
	}
	$p->append_conf('postgresql.conf', "synchronous_standby_names = '*'");
	$p->reload;
	$p->poll_query_until('postgres', "SELECT sync_state = 'sync' FROM pg_stat_replication") or die 'no sync standby';

	my $dir = $p->basedir;
	my %sql = (select => "SELECT next_snowflake_id();\n", insert => "INSERT INTO t (v) VALUES (1) RETURNING id;\n");
	for my $kind (keys %sql)
	{
		PostgreSQL::Test::Utils::append_to_file("$dir/$kind.sql", $sql{$kind} x 200000);
	}
	my @clients;
	for my $i (1 .. 4)
	{
		my $kind = $i <= 2 ? 'select' : 'insert';
		local $ENV{PGOPTIONS} = $client_options;
		push @clients, IPC::Run::start(['psql', '-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1', '-h', $p->host,
			'-p', $p->port, '-d', 'postgres', '-f', "$dir/$kind.sql", '-o', "$dir/got$i"],
			'>', \my $out, '2>', \my $err);
	}
	usleep(1_500_000);
	my $walsender = $p->safe_psql('postgres', 'SELECT pid FROM pg_stat_replication');
	kill 'STOP', $walsender;
	# IDs above this one were made at or after the stall began (a read: it
	# does not wait for the standby).
	my $stalled_at = $p->safe_psql('postgres', 'SELECT snowflake_min_id(clock_timestamp())');
	usleep(3_000_000);
	# Every process of the primary at once, the walsender among them: its
	# backends outlive a postmaster killed alone, and one that waits for an
	# LWLock the stopped walsender held waits forever (a fresh-machine run:
	# four backends of the killed primary in futex waits, the test's
	# clients waiting on them for 12 minutes).
	kill 'KILL', $p->{_pid}, children_of($p->{_pid});
	$p->{_pid} = undef;
	$_->finish for @clients;
	my @got;
	for my $i (1 .. 4)
	{
		push @got, grep { /^\d+$/ } split /\n/, PostgreSQL::Test::Utils::slurp_file("$dir/got$i");
	}
	my $max = 0;
	$max = $_ > $max ? $_ : $max for @got;
	my $during = grep { $_ > $stalled_at } @got;
	$s->promote;
	my ($rc, $out, $err) = $s->psql('postgres',
		"SELECT count(*) FILTER (WHERE id <= $max) FROM (SELECT next_snowflake_id() AS id FROM generate_series(1, 1000)) g");
	$s->stop;
	return (scalar @got, $max, $during, $out, $err);
}

my ($n, $max, $during, $below, $err) = scenario('wait', '');
ok($n > 1000, "precondition: the clients received IDs before the stall ($n)");
is($below, '0', "promoted standby: 1,000 new IDs, none at or below the highest a client received "
	  . "($during received during the stall)") or diag($err);

($n, $max, $during, $below, $err) = scenario('control', '-c synchronous_commit=local');
ok($during > 0 && $below > 0,
	"negative control: clients that do not wait for the standby receive IDs during the stall ($during) "
	  . "that the promoted standby issues again ($below of 1,000)") or diag($err);

done_testing();
