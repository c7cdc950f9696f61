#!/usr/bin/perl
# answer_cache: two sk-mirror front-ends with one key share signed answers
# through a private Redis (unix socket); a new entry for the name deletes
# the shared answer once merged; with Redis gone, answers are built fresh.

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
my $sock = "$d/redis.sock";
my $redis = run_daemon([$REDIS, '--port', 0, '--unixsocket', $sock,
    '--unixsocketperm', '700', '--save', '', '--appendonly', 'no',
    '--dir', $d], "$d/redis.log");
ok(wait_until(sub { -S $sock }, 10), 'redis-server is up');
sub rcli { return run_cmd(['redis-cli', '-s', $sock, @_])->{out} }

my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'testca');
my $key = ed25519_key($d, 'example');
my $crt = issue($d, $ca, $key, 'example.com', "$d/example");
my ($tt, $ttl, $got) = start_timelines($d, [1, 2],
    [root_entry(cert => "$ca.crt", key => $op),
     bind_entry(name => 'example.com', key => $key, chain => [$crt])],
    chunk_interval => 1);
my %t = %$tt;
my @tl = @$ttl;
is($got->{$_}[1]{code}, 201, "timeline $_: Bind") for 1, 2;
my %keys = map { $_->[0] => [$_->[2], "sk-timeline-$_->[0]"] } @tl;

my $a = start_mirror("$d/a", \@tl, answer_cache => "unix:$sock");
ok($a->{up}, 'front-end A listens') or BAIL_OUT(slurp($a->{log}));
ok(wait_until(sub { -f "$d/a/data/mirror.key" }, 5), 'A made the key');
my $b = start_mirror("$d/b", \@tl, answer_cache => "unix:$sock",
    key => "$d/a/data/mirror.key");
ok($b->{up}, 'front-end B, same key, listens') or BAIL_OUT(slurp($b->{log}));
for my $m ($a, $b) {
    ok(wait_until(sub { 2 == grep { tl_state($m, $_) eq 'Idle' } 1, 2 }, 15),
        'both timelines Idle');
}

my $ra = query($a, 'example.com');
is($ra->{code}, 200, 'A answers');
ok(check_answer($ra->{body}, $a->{pub}, \%keys)->{ok}, '... a valid answer');
my @k = split /\n/, rcli('--scan', '--pattern', 'sk:mirror-answer:*');
is(scalar @k, 1, 'one answer in Redis');
is(mirror_status($a)->{cache}{misses}, 1, '... built on a shared-cache miss');
like($k[0], qr/^sk:mirror-answer:[0-9a-f]{16}:example\.com$/,
    '... under the mirror key\'s id and the name');
like(rcli('GET', $k[0]), qr/\ASK-Mirror-Cache: 1,2 \d+ 2\nSK-Mirror-Answer: 1\n/,
    '... with the servable timelines, when it was built, from how many entries');
my $rb = query($b, 'example.com');
is($rb->{body}, $ra->{body}, 'B serves the very answer A built');
is(mirror_status($b)->{cache}{hits}, 1, '... from the shared cache');
is(mirror_status($b)->{cache}{misses}, 0, '... not counted a miss');

is(append($t{1}, cs_entry(name => 'example.com', services => 'smtps',
    key => $key))->{code}, 201, 'Change-Services on timeline 1');
ok(wait_until(sub {
    my $x = check_answer(query($b, 'example.com')->{body}, $a->{pub}, \%keys);
    $x->{ok} && @{$x->{timelines}{1}{entries}} == 2 }, 10),
    'the new entry voids the shared answer: B answers with it');

stop_daemon($redis);
my $r = query($a, 'example.com');
is($r->{code}, 200, 'Redis gone: A still answers');
ok(check_answer($r->{body}, $a->{pub}, \%keys)->{ok}, '... a valid answer');
like(slurp($a->{log}), qr/answer_cache: /, '... and logs the outage');

stop_daemon($_->{pid}) for $a, $b, $t{1}, $t{2};
done_testing();
