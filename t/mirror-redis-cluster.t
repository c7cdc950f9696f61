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

use SKRedisCluster;

redis_or_skip();

my $d = tmpdir();
my $cl = SKRedisCluster->new($d);
my @port = $cl->ports;
ok($cl->form, 'three cluster-enabled redis-servers form the cluster')
    or diag($cl->{create}{out}, $cl->{create}{err});
my $r;

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
    answer_cache => $cl->spec($port[0]));
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
my ($owner, $k) = $cl->find('sk:mirror-answer:*');
ok($owner, 'the answer is in the cluster');
my $slot = $cl->slot($k);
my $rb = query($b, 'example.com');
is($rb->{body}, $ra->{body}, 'B serves the very answer A built');
is(hits($b), 1, '... from the shared cache');

# Migrate the key's slot to another master, by the book.
my ($to) = grep { $_ != $owner } @port;
ok($cl->migrating($slot, $owner, $to, $k),
    "slot $slot: the key moved to $to, the slot still migrating");
$rb = query($b, 'example.com');
is($rb->{body}, $ra->{body}, 'B, sent there by ASK, serves it');
is(hits($b), 2, '... from the shared cache');
ok($cl->migrated($slot, $owner, $to, $k),
    '... the migration done: the old master answers MOVED');
my $ra2 = query($a, 'example.com');
is($ra2->{body}, $ra->{body}, 'A, sent there by MOVED, serves it');
is(hits($a), 1, '... from the shared cache');
$rb = query($b, 'example.com');
is(hits($b), 3, 'B follows the new slot map too');

# MOVED, one slot after another, each met with a stale map: every
# redirection is followed to the node it names (a misread node name went
# into the 64-entry node table each time, and once it was full MOVED was
# an error).
(my $prefix = $k) =~ s/example\.com$//;
my ($moved, $bad) = (0, 0);
for my $i (1 .. 300) {
    last if $moved == 64;
    my $key = "${prefix}n$i.example.com";
    # To $port[0], from whichever master holds it (MOVED names it).
    my ($s, $from) = $cl->command($port[0], 'GET', $key)
        =~ /^-MOVED (\d+) 127\.0\.0\.1:(\d+)$/ or next;
    $cl->give($s, $port[0]);
    $moved++ if $cl->command($from, 'GET', $key) =~ /^-MOVED $s /;
    $bad++ if query($a, "n$i.example.com")->{code} != 200;
}
is($moved, 64, '64 slots moved to one master, one at a time');
is($bad, 0, '... A answered each name');
unlike(slurp($a->{log}), qr/answer_cache: .*MOVED/,
    '... following every MOVED (none was an error)');

$cl->stop_master($to);
$r = query($a, 'example.com');
is($r->{code}, 200, 'the master of the slot stopped: A still answers');
ok(check_answer($r->{body}, $a->{pub}, \%keys)->{ok}, '... a valid answer');
like(slurp($a->{log}), qr/answer_cache: redis-cluster:.*127\.0\.0\.1:$to/,
    '... and logs which node failed');

stop_daemon($_->{pid}) for $a, $b, $t{1}, $t{2};
$cl->stop;
done_testing();
