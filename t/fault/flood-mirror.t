#!/usr/bin/perl
# Floods on sk-mirror (issue 40), each a few seconds, from several
# loopback addresses (build/bench/flood), while a victim from another
# address asks for a name one query at a time, each on a fresh connection,
# given 10 s as `sk` gives them:
#   - 4,320 idle connections from 72 addresses, 60 each (under
#     connections_per_ip, over connections, 4096): a newcomer takes the
#     place of a waiting connection of a client holding the most, so the
#     victim is answered at once (d77dcaa: it waited in the listen backlog,
#     4 s at the median)
#   - names never asked before, from 8 addresses: they share the range
#     answers of the maps' absent ranges, a few built and signed, and each
#     address is answered 429 past rate_per_client
# Latencies are asserted loosely (a loaded CI machine), and printed.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use SKTest;
use SKTimeline;
use SKMirror;
use SKLoad;

plan skip_all => 'sk-timeline, sk-mirror or flood not built'
    unless -x $SKTimeline::TL && -x $SKMirror::MR && -x $SKLoad::FLOOD;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');
raise_nofile();
my $nofile = `sh -c 'ulimit -n'`;
plan skip_all => "open files limited to $nofile (want 16384)"
    unless $nofile =~ /^\d+$/ && $nofile >= 16384;

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'testca');
my $sk = ed25519_key($d, 'a');
my $crt = issue($d, $ca, $sk, 'a.example', "$d/a");
my ($t, $tl) = start_timelines($d, [1, 2], [root_entry(cert => "$ca.crt",
    key => $op), bind_entry(name => 'a.example', key => $sk,
    chain => [$crt])], chunk_interval => 1);
# rate_per_client below its default, so that a flood slowed by ASan on a
# loaded machine still goes past it.
my $m = start_mirror("$d/m", $tl, metrics_listen => '127.0.0.1:'
    . free_port(), rate_per_client => 20, rate_burst => 40);
ok($m->{up}, 'sk-mirror listens') or BAIL_OUT(slurp($m->{log}));
ok(wait_until(sub { 2 == grep { tl_state($m, $_) eq 'Idle' } 1, 2 }, 20),
    'both timelines Idle');

sub metric {
    my ($reason) = @_;
    my $r = http('GET', "http://$m->{conf}{metrics_listen}/metrics");
    return ($r->{body}
        =~ /^sk_mirror_refused_total\{reason="\Q$reason\E"\} (\d+)$/m)[0] // 0;
}

sub report {
    my ($what, $v, $f) = @_;
    diag(sprintf "%s: victim %d of %d, p50 %.1f ms, p99 %.1f ms; flood "
        . "sent %d, answered %s", $what, $v->{ok}, $v->{n}, 1000 * $v->{p50},
        1000 * $v->{p99}, $f->{sent} // 0, join(',', map {
            "$_:$f->{codes}{$_}" } sort keys %{$f->{codes}}));
}

my $f = flood($m->{port}, [addrs(72)], 72 * 60, 'hold');
my $v = victim($m->{port}, '127.0.1.200', 30, 'get', '/query/a.example');
my $fr = flood_end($f);
report('4,320 idle connections from 72 addresses', $v, $fr);
is($v->{ok}, 30, 'connections: every query answered') or diag($v->{out});
ok($v->{p99} < 2, 'connections: ... the slowest within 2 s');
ok(metric('evicted') > 0, 'connections: waiting ones of the clients '
    . 'holding the most closed to make room (reason "evicted")');
like(slurp($m->{log}), qr/http: closed \d+ new connections .* and \d+ (?#
    )waiting ones of the clients holding the most, to make room/,
    '... and logged');

my $c0 = mirror_status($m)->{cache};
$f = flood($m->{port}, [addrs(8, 100)], 64, 'get',
    '/query/n%lu.absent.example');
$v = victim($m->{port}, '127.0.1.201', 30, 'get', '/query/a.example');
$fr = flood_end($f);
report('names never asked, 64 connections, 8 addresses', $v, $fr);
my $c1 = mirror_status($m)->{cache};
is($v->{ok}, 30, 'absent names: every query answered') or diag($v->{out});
ok($v->{p99} < 2, 'absent names: ... the slowest within 2 s');
my $answered = $fr->{codes}{200} // 0;
my $built = $c1->{misses} - $c0->{misses};
ok($answered > 50 && $built <= 16, "absent names: $answered answered, "
    . "$built of them built and signed (range answers)");
ok(($fr->{codes}{429} // 0) > 0 && metric('rate') > 0,
    'absent names: 429 past rate_per_client, counted (reason "rate")');

stop_daemon($_->{pid}) for $m, values %$t;
unlike(slurp($m->{log}), qr/Sanitizer|runtime error/, 'no sanitizer reports');
done_testing();
