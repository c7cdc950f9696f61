#!/usr/bin/perl
# Redis failing under nginx with sovereign_key_cache redis://: nginx reads
# Redis only when it loads its configuration (in the master), so the
# workers keep serving the carriers they have whatever Redis does.  Hung
# (SIGSTOP) or killed (-9) at a reload: the reload finishes promptly,
# keeps the last good carriers and says why; Redis back (empty, as after a
# crash without persistence) and republished: the next reload serves the
# new carrier.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use Time::HiRes qw(time);
use SKTest;
use NginxTest;
use SKLoad;
use IO::Socket::INET;

my $skip = nginx_skip();
plan skip_all => $skip if $skip;
my $REDIS = has_cmd('redis-server');
plan skip_all => 'redis-server is not installed' unless $REDIS;

my $t = NginxTest->new;
my $d = $t->dir;
my $port = $t->port;
my $cs = carrier_set($d);
my ($c1, $c2, $crsa) = @$cs{qw(c1 c2 crsa)};

my $rport = free_port();
my $spec = "redis://127.0.0.1:$rport";
sub redis {
    my $pid = run_daemon([$REDIS, '--port', $rport, '--bind', '127.0.0.1',
        '--save', '', '--appendonly', 'no', '--dir', $d], "$d/redis.log");
    wait_for_port($rport, 10) or die 'redis-server did not start';
    return $pid;
}
sub publish {
    my ($file) = @_;
    my $r = sk('publish', '-a', $file, '--cache', $spec);
    is($r->{rc}, 0, "sk publish $file") or diag($r->{err});
}
sub ec { return served_chain($port, tls => '1.3',
    sigalgs => 'ECDSA+SHA256')->[2] // '' }
sub rsa { return served_chain($port, tls => '1.3',
    sigalgs => 'rsa_pss_rsae_sha256')->[2] // '' }
sub handshakes {
    my ($want, $what) = @_;
    my $bad = grep { ec() ne $want } 1 .. 10;
    is($bad, 0, "$what: 10 handshakes, each with the carrier");
}
sub timed_reload {
    my ($what) = @_;
    my $t0 = time;
    ok($t->reload, "$what: reload");
    my $secs = time - $t0;
    ok($secs < 8, "$what: ... done in under 8 s")
        or diag(sprintf '%.1f s', $secs);
}

my $redis = redis();
publish("$d/c1.pem");
publish("$d/c-rsa.pem");
carrier_set_conf($t, $cs, $spec);
$t->start;
is(ec(), $c1, 'the carrier from Redis');

# Hung.
kill 'STOP', $redis;
handshakes($c1, 'Redis hung');
timed_reload('Redis hung');
is(ec(), $c1, 'Redis hung: the last good carrier');
is(rsa(), $crsa, '... for each key');
like($t->log, qr/\[warn\].*sovereign_key_cache "\Q$spec\E" unavailable \(.*timed out after \d+ ms\), keeping the last good carrier/,
    '... and the log says Redis timed out');
kill 'CONT', $redis;

# Killed.
kill 'KILL', $redis;
waitpid($redis, 0);
ok(!wait_for_port($rport, 0.5), 'Redis killed');
handshakes($c1, 'Redis gone');
timed_reload('Redis gone');
is(ec(), $c1, 'Redis gone: the last good carrier');
like($t->log, qr/\[warn\].*sovereign_key_cache "\Q$spec\E" unavailable \(.*(refused|connect)/i,
    '... and the log says Redis refused');

# Back, empty; republished.
$redis = redis();
publish("$d/c2.pem");
publish("$d/c-rsa.pem");
ok($t->reload, 'Redis back: reload');
is(ec(), $c2, 'Redis back: the new carrier');
is(rsa(), $crsa, '... and the other key\'s');

# nginx -t against a redis-cluster:// cache whose nodes hang (accept,
# never answer) or drip (a real redis-server behind a link passing 20
# bytes a second, every read well within the 1 s timeout): the test ends
# in a few seconds, not one timeout per node, per call and per
# certificate, and says why.
my @mute = map { IO::Socket::INET->new(Listen => 8, LocalAddr => '127.0.0.1',
    LocalPort => 0, Proto => 'tcp') or die "listen: $!" } 1 .. 20;
my $link = slow_link($rport, 20);
my $t2 = NginxTest->new;
carrier_set_conf($t2, $cs, 'redis-cluster://'
    . join(',', map { '127.0.0.1:' . $_->sockport } @mute)
    . ",127.0.0.1:$link->{port}");
my $t0 = time;
my $r = $t2->test_conf;
my $secs = time - $t0;
ok($secs < 5, 'nginx -t, cluster nodes hung or dripping: done in under 5 s')
    or diag(sprintf '%.1f s', $secs);
like($r->{err}, qr/sovereign_key_cache "redis-cluster:[^"]*" unavailable \(.*(timed out|slot map)/,
    '... and the log says the cache is unavailable')
    or diag($r->{err});
kill 'TERM', $link->{pid};
waitpid($link->{pid}, 0);
close $_ for @mute;

$t->stop;
stop_daemon($redis);
is($t->alerts, '', 'no alerts or sanitizer reports');
done_testing();
