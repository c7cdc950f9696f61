#!/usr/bin/perl
# answer_cache = redis-cluster://SEEDS: two sk-mirror front-ends (one
# key) share signed answers through a real Redis Cluster of three masters
# on loopback.  Each knows other seeds; the key's slot is migrated to
# another master while they serve: during the migration a front-end
# follows the ASK redirection, after it the MOVED one, and both keep
# answering from the shared cache.  A master stopped: answers are built
# fresh.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SKTest;
use SKTimeline;
use SKMirror;

my $REDIS = redis_or_skip();

my $d = tmpdir();
my (@port, %pid, %id);
for my $i (0 .. 2) {
    my ($p, $bus) = (free_port(), free_port());
    push @port, $p;
    mkdir "$d/r$p";
    $pid{$p} = run_daemon([$REDIS, '--port', $p, '--bind', '127.0.0.1',
        '--cluster-enabled', 'yes', '--cluster-port', $bus,
        '--cluster-config-file', "$d/r$p/nodes.conf",
        '--cluster-node-timeout', 2000, '--save', '', '--appendonly', 'no',
        '--dir', "$d/r$p"], "$d/r$p.log");
}
sub rcli { my $p = shift; return run_cmd(['redis-cli', '-p', $p, @_])->{out} }
ok(wait_until(sub { 3 == grep { rcli($_, 'PING') =~ /PONG/ } @port }, 10),
    'three cluster-enabled redis-servers up');
my $r = run_cmd(['redis-cli', '--cluster', 'create',
    map({ "127.0.0.1:$_" } @port), '--cluster-yes']);
ok(wait_until(sub { 3 == grep { rcli($_, 'CLUSTER', 'INFO')
    =~ /cluster_state:ok/ } @port }, 20), 'the cluster is formed')
    or diag($r->{out}, $r->{err});
$id{$_} = (rcli($_, 'CLUSTER', 'MYID') =~ /([0-9a-f]{40})/)[0] for @port;

my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'testca');
my $key = ed25519_key($d, 'example');
my $crt = issue($d, $ca, $key, 'example.com', "$d/example");
my ($tt, $ttl, $got) = start_timelines($d, [1, 2],
    [root_entry(cert => "$ca.crt", key => $op),
     bind_entry(name => 'example.com', key => $key, chain => [$crt])]);
my %t = %$tt;
my @tl = @$ttl;
is($got->{$_}[1]{code}, 201, "timeline $_: Bind") for 1, 2;
my %keys = map { $_->[0] => [$_->[2], "sk-timeline-$_->[0]"] } @tl;

my $a = start_mirror("$d/a", \@tl,
    answer_cache => "redis-cluster://127.0.0.1:$port[0]");
ok($a->{up}, 'front-end A listens (one seed)') or BAIL_OUT(slurp($a->{log}));
ok(wait_until(sub { -f "$d/a/data/mirror.key" }, 5), 'A made the key');
my $b = start_mirror("$d/b", \@tl,
    answer_cache => "redis-cluster://127.0.0.1:$port[1],[::1]:1,127.0.0.1:$port[2]",
    key => "$d/a/data/mirror.key");
ok($b->{up}, 'front-end B, same key, other seeds, listens')
    or BAIL_OUT(slurp($b->{log}));
for my $m ($a, $b) {
    ok(wait_until(sub { 2 == grep { tl_state($m, $_) eq 'Idle' } 1, 2 }, 15),
        'both timelines Idle');
}
sub hits { return mirror_status($_[0])->{cache}{hits} }

my $ra = query($a, 'example.com');
ok(check_answer($ra->{body}, $a->{pub}, \%keys)->{ok}, 'A answers');
my ($owner) = grep { rcli($_, '--scan', '--pattern', 'sk:mirror-answer:*')
    =~ /\S/ } @port;
ok($owner, 'the answer is in the cluster');
my ($k) = rcli($owner, '--scan', '--pattern', 'sk:mirror-answer:*')
    =~ /^(\S+)$/m;
my $slot = (rcli($owner, 'CLUSTER', 'KEYSLOT', $k) =~ /(\d+)/)[0];
my $rb = query($b, 'example.com');
is($rb->{body}, $ra->{body}, 'B serves the very answer A built');
is(hits($b), 1, '... from the shared cache');

# Migrate the key's slot to another master, by the book.
my ($to) = grep { $_ != $owner } @port;
rcli($to, 'CLUSTER', 'SETSLOT', $slot, 'IMPORTING', $id{$owner});
rcli($owner, 'CLUSTER', 'SETSLOT', $slot, 'MIGRATING', $id{$to});
like(rcli($owner, 'MIGRATE', '127.0.0.1', $to, '', 0, 5000, 'KEYS', $k),
    qr/OK/, "slot $slot: the key moved to $to, the slot still migrating");
$rb = query($b, 'example.com');
is($rb->{body}, $ra->{body}, 'B, sent there by ASK, serves it');
is(hits($b), 2, '... from the shared cache');
rcli($_, 'CLUSTER', 'SETSLOT', $slot, 'NODE', $id{$to}) for @port;
ok(wait_until(sub { rcli($owner, 'GET', $k) =~ /MOVED $slot 127\.0\.0\.1:$to/ }, 10),
    '... the migration done: the old master answers MOVED');
my $ra2 = query($a, 'example.com');
is($ra2->{body}, $ra->{body}, 'A, sent there by MOVED, serves it');
is(hits($a), 1, '... from the shared cache');
$rb = query($b, 'example.com');
is(hits($b), 3, 'B follows the new slot map too');

stop_daemon($pid{$to});
$r = query($a, 'example.com');
is($r->{code}, 200, 'the master of the slot stopped: A still answers');
ok(check_answer($r->{body}, $a->{pub}, \%keys)->{ok}, '... a valid answer');
like(slurp($a->{log}), qr/answer_cache: redis-cluster:.*127\.0\.0\.1:$to/,
    '... and logs which node failed');

stop_daemon($_->{pid}) for $a, $b, $t{1}, $t{2};
stop_daemon($pid{$_}) for grep { $_ != $to } @port;
done_testing();
