#!/usr/bin/perl
# Redis failing under sk-mirror's answer_cache: hung (SIGSTOP), and
# stopped then started again with its data (appendonly).  Queries keep
# being answered promptly, from the mirror's own copy, and the log says
# what is wrong without a line per query; an entry merged while Redis was
# away is in every answer after it returns (no stale shared answer); once
# Redis answers again the mirror uses it again.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use Time::HiRes qw(time sleep);
use SKTest;
use SKTimeline;
use SKMirror;
use SKLoad;

my $REDIS = redis_or_skip();

my $d = tmpdir();
my $rport = free_port();
sub redis {
    my $pid = run_daemon([$REDIS, '--port', $rport, '--bind', '127.0.0.1',
        '--save', '', '--appendonly', 'yes', '--appendfsync', 'always',
        '--dir', $d], "$d/redis.log");
    wait_for_port($rport, 10) or die "redis-server did not start";
    return $pid;
}
sub rcli { return run_cmd(['redis-cli', '-p', $rport, @_])->{out} }
my $redis = redis();

my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'testca');
my $key = ed25519_key($d, 'example');
my $crt = issue($d, $ca, $key, 'example.com', "$d/example");
my ($tt, $ttl) = start_timelines($d, [1, 2],
    [root_entry(cert => "$ca.crt", key => $op),
     bind_entry(name => 'example.com', key => $key, chain => [$crt])],
    chunk_interval => 1);
my %t = %$tt;
my @tl = @$ttl;
my %keys = map { $_->[0] => [$_->[2], "sk-timeline-$_->[0]"] } @tl;
my $m = start_mirror("$d/m", \@tl, answer_cache => "redis://127.0.0.1:$rport",
    query_cache => 600);
ok($m->{up}, 'sk-mirror listens') or BAIL_OUT(slurp($m->{log}));
ok(wait_until(sub { 2 == grep { tl_state($m, $_) eq 'Idle' } 1, 2 }, 15),
    'both timelines Idle');

# Entries of timeline TID in the answer to a query for example.com.
sub entries {
    my ($r, $tid) = @_;
    my $a = check_answer($r->{body}, $m->{pub}, \%keys);
    return -1 unless $a->{ok};
    return scalar @{$a->{timelines}{$tid}{entries}};
}
my $r = query($m, 'example.com');
is(entries($r, 1), 1, 'an answer with the Bind');
my ($k) = split /\n/, rcli('--scan', '--pattern', 'sk:mirror-answer:*');
ok($k, '... kept in Redis');

# Hung: connections are accepted, nothing is answered.
kill 'STOP', $redis;
my $lines = () = slurp($m->{log}) =~ /answer_cache/g;
my ($worst, $bad) = (0, 0);
my $t0 = time;
for (1 .. 20) {
    $r = timed('GET', "$m->{url}/query/example.com", undef, 10);
    $bad++ if $r->{code} != 200 || entries($r, 1) != 1;
    $worst = $r->{secs} if $r->{secs} > $worst;
}
is($bad, 0, 'Redis hung: 20 queries, each a valid answer');
ok($worst < 1.5, 'Redis hung: none waited 1.5 s')
    or diag(sprintf 'worst %.2f s', $worst);
$r = timed('GET', "$m->{url}/status", undef, 10);
ok($r->{code} == 200 && $r->{secs} < 0.5, '... /status answered at once');
my $more = (() = slurp($m->{log}) =~ /answer_cache/g) - $lines;
# One line per retry, and the pause doubles from 1 s: over T seconds at
# most 2 + log2(T) lines, however many queries came (a loaded machine
# takes longer over the 20).
my $most = 2 + int(log(time - $t0 + 1) / log(2));
ok($more >= 1 && $more <= $most,
    "Redis hung: said so, not once per query ($more lines, at most $most)");
like(slurp($m->{log}), qr/answer_cache: .*\d+ ms.*answers are built fresh/,
    '... naming the timeout');
kill 'CONT', $redis;
ok(wait_until(sub {
    query($m, 'example.com');
    slurp($m->{log}) =~ /answer_cache: Redis answers again/ }, 40),
    'Redis resumed: the mirror uses it again, and says so');

# Down, with its data on disk; an Unbind merged meanwhile.
query($m, 'example.com');
like(rcli('GET', $k), qr/SK-Mirror-Answer/, 'an answer in Redis');
stop_daemon($redis);
is(append($t{$_}, unbind_entry(name => 'example.com', key => $key))->{code},
    201, "timeline $_: Unbind") for 1, 2;
ok(wait_until(sub { entries(query($m, 'example.com'), 1) == 2 }, 15),
    'Redis down: the Unbind is answered at once');
$redis = redis();
like(rcli('GET', $k), qr/SK-Mirror-Answer/,
    'Redis back with the answer from before the Unbind');
ok(wait_until(sub { query($m, 'example.com');
    rcli('GET', $k) =~ /^Unbind: 1$/m }, 40),
    '... the mirror uses it again: the shared answer holds the Unbind')
    or diag(rcli('GET', $k));
my ($stale, $n) = (0, 0);
for (1 .. 10) {
    $n++;
    $stale++ if entries(query($m, 'example.com'), 1) != 2;
}
is($stale, 0, "no answer without the Unbind after Redis returned ($n asked)");

stop_daemon($_->{pid}) for $m, $t{1}, $t{2};
stop_daemon($redis);
unlike(slurp($m->{log}), qr/Sanitizer|runtime error/, 'no sanitizer reports');
done_testing();
