package SKRedisCluster;

# SKRedisCluster -- a private Redis Cluster of real redis-servers (masters
# only) on free loopback ports, for the tests of libsk's
# redis-cluster:// cache (t/mirror-redis-cluster.t, t/nginx-redis-cluster.t).
#
#   redis_cluster_skip()      a reason to skip (no redis-server or
#                             redis-cli), or undef
#   my $cl = SKRedisCluster->new(DIR[, masters => 3])
#                             start the servers (cluster-enabled, own bus
#                             port, no persistence), each in DIR/rPORT;
#                             returns at once
#   $cl->form                 wait for them, `redis-cli --cluster create`,
#                             wait for cluster_state:ok everywhere; 1 or 0
#                             ($cl->{create} holds redis-cli's answer)
#   $cl->ports                the masters' ports, in start order
#   $cl->spec(PORT...)        "redis-cluster://127.0.0.1:P,..." (all masters
#                             when no port is given)
#   $cl->cli(PORT, ARGS...)   redis-cli -p PORT ARGS: its stdout
#   $cl->id(PORT)             the node's cluster id
#   $cl->find(PATTERN)        (PORT, KEY): the master holding the first key
#                             matching the SCAN pattern; () if none
#   $cl->slot(KEY)            CLUSTER KEYSLOT
#   $cl->migrating(SLOT, FROM, TO, KEY...)
#                             start moving SLOT from master FROM to TO by the
#                             book (IMPORTING on TO, MIGRATING on FROM) and
#                             MIGRATE the keys: the slot stays in migration,
#                             FROM answers ASK for them; 1 if MIGRATE said OK
#   $cl->migrated(SLOT, FROM, TO, KEY)
#                             end it (SETSLOT NODE on every running master);
#                             1 once FROM answers MOVED for KEY (of SLOT)
#   $cl->command(PORT, ARGS...)
#                             one command over a connection kept open (no
#                             redis-cli to start): the reply's first line
#                             ("+OK", "-MOVED 12 127.0.0.1:7001", "$-1")
#   $cl->give(SLOT, TO)       SETSLOT SLOT NODE TO on every running master:
#                             an empty slot changes hands at once
#   $cl->stop_master(PORT)    stop one master (TERM); its wait status
#   $cl->stop                 stop the running ones
#
# Leftovers are killed by SKTest's END block.

use strict;
use warnings;

use Exporter 'import';
use IO::Socket::INET;

use SKTest;

our @EXPORT = qw(redis_cluster_skip);

our $REDIS = has_cmd('redis-server');
our $CLI = has_cmd('redis-cli');

sub redis_cluster_skip {
    return 'redis-server is not installed' unless $REDIS;
    return 'redis-cli is not installed' unless $CLI;
    return undef;
}

sub new {
    my ($class, $dir, %opt) = @_;
    my $self = bless { dir => $dir, ports => [], pid => {}, id => {} },
        $class;

    for (1 .. ($opt{masters} // 3)) {
        my ($p, $bus) = (free_port(), free_port());
        mkdir "$dir/r$p" or die "mkdir $dir/r$p: $!";
        push @{$self->{ports}}, $p;
        $self->{pid}{$p} = run_daemon([$REDIS, '--port', $p,
            '--bind', '127.0.0.1', '--cluster-enabled', 'yes',
            '--cluster-port', $bus,
            '--cluster-config-file', "$dir/r$p/nodes.conf",
            '--cluster-node-timeout', 2000, '--save', '',
            '--appendonly', 'no', '--dir', "$dir/r$p"], "$dir/r$p.log");
    }
    return $self;
}

sub ports { return @{$_[0]{ports}} }

sub running { my ($self) = @_; return grep { $self->{pid}{$_} } $self->ports }

sub cli {
    my ($self, $p, @args) = @_;
    return run_cmd([$CLI, '-p', $p, @args])->{out};
}

sub form {
    my ($self) = @_;
    my @p = $self->ports;

    return 0 unless wait_until(sub {
        @p == grep { $self->cli($_, 'PING') =~ /PONG/ } @p }, 10);
    $self->{create} = run_cmd([$CLI, '--cluster', 'create',
        (map { "127.0.0.1:$_" } @p), '--cluster-yes']);
    return 0 unless wait_until(sub { @p == grep {
        $self->cli($_, 'CLUSTER', 'INFO') =~ /cluster_state:ok/ } @p }, 20);
    for my $p (@p) {
        ($self->{id}{$p}) = $self->cli($p, 'CLUSTER', 'MYID')
            =~ /([0-9a-f]{40})/;
    }
    return 1;
}

sub spec {
    my ($self, @p) = @_;
    @p = $self->ports unless @p;
    return 'redis-cluster://' . join(',', map { "127.0.0.1:$_" } @p);
}

sub id { return $_[0]{id}{$_[1]} }

sub find {
    my ($self, $pattern) = @_;

    for my $p ($self->running) {
        my ($k) = $self->cli($p, '--scan', '--pattern', $pattern)
            =~ /^(\S+)$/m;
        return ($p, $k) if defined $k;
    }
    return ();
}

sub slot {
    my ($self, $key) = @_;
    return ($self->cli(($self->running)[0], 'CLUSTER', 'KEYSLOT', $key)
        =~ /(\d+)/)[0];
}

sub migrating {
    my ($self, $slot, $from, $to, @keys) = @_;

    $self->cli($to, 'CLUSTER', 'SETSLOT', $slot, 'IMPORTING',
        $self->id($from));
    $self->cli($from, 'CLUSTER', 'SETSLOT', $slot, 'MIGRATING',
        $self->id($to));
    return $self->cli($from, 'MIGRATE', '127.0.0.1', $to, '', 0, 5000,
        'KEYS', @keys) =~ /OK/ ? 1 : 0;
}

sub migrated {
    my ($self, $slot, $from, $to, $key) = @_;

    $self->cli($_, 'CLUSTER', 'SETSLOT', $slot, 'NODE', $self->id($to))
        for $self->running;
    return wait_until(sub {
        $self->cli($from, 'GET', $key) =~ /MOVED $slot 127\.0\.0\.1:$to/ },
        10) ? 1 : 0;
}

sub command {
    my ($self, $p, @args) = @_;
    my $s = $self->{conn}{$p} //= IO::Socket::INET->new(
        PeerAddr => '127.0.0.1', PeerPort => $p, Proto => 'tcp',
        Timeout => 5) or die "redis 127.0.0.1:$p: $!";
    print $s join('', '*' . @args . "\r\n",
        map { '$' . length($_) . "\r\n$_\r\n" } @args);
    my $line = <$s> // '';
    $line =~ s/\r\n\z//;
    <$s> if $line =~ /^\$(\d+)$/;     # a bulk string's bytes
    return $line;
}

sub give {
    my ($self, $slot, $to) = @_;
    $self->command($_, 'CLUSTER', 'SETSLOT', $slot, 'NODE', $self->id($to))
        for $self->running;
}

sub stop_master {
    my ($self, $p) = @_;
    my $pid = delete $self->{pid}{$p};
    close delete $self->{conn}{$p} if $self->{conn}{$p};
    return defined $pid ? stop_daemon($pid) : undef;
}

sub stop {
    my ($self) = @_;
    $self->stop_master($_) for $self->ports;
}

1;
