#!/usr/bin/perl
# Floods on sk-timeline (issue 40), each a few seconds, from several
# loopback addresses (build/bench/flood), while a victim from another
# address posts valid Binds one at a time, each on a fresh connection,
# given 10 s as `sk` gives them:
#   - Binds carrying 190 junk certificates, 400 connections from 8
#     addresses: refused unread (max_chain_bytes), every victim Bind taken
#   - a malformed Bind with 200 certificates, 64 connections from ONE
#     address, no key needed: refused unread, past rate_per_client 429
#     and closed; the victim's median stays well under a second
#   - valid Binds for fresh names with rate_global = 50, from 4
#     addresses: the places of rate_global go in the clients' turn, so
#     the victim's Binds are taken (d77dcaa: every one 503)
#   - the attackers leave with appends queued: those are dropped, not
#     checked (refused{reason="gone"})
# Latencies are asserted loosely (a loaded CI machine), and printed.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use SKTest;
use SKTimeline;
use SKLoad;

my $client = "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/bench/tl_client';
plan skip_all => 'sk-timeline, tl_client or flood not built'
    unless -x $SKTimeline::TL && -x $client && -x $SKLoad::FLOOD;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');
raise_nofile();

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $sk = ed25519_key($d, 'sk');
my $root = make_ca($d, 'root');
my $inter = make_intermediate($d, $root, 'inter');
my @attackers = addrs(8);
my $victims = 200;      # a victim address a flood: its own budget
sub victim_addr { return '127.0.1.' . $victims++ }
my ($NFLOOD, $NVICTIM) = (1500, 20);

sub metric {
    my ($t, $reason) = @_;
    my $r = http('GET', "http://$t->{conf}{metrics_listen}/metrics");
    return ($r->{body} =~ /^sk_timeline_refused_total\{reason="\Q$reason\E"\} (\d+)$/m)[0];
}

# A timeline whose Binds for fresh names (n<i>.bench.example) tl_client
# writes as requests: the flood's, then the victim's.
sub timeline {
    my ($name, %conf) = @_;
    my $t = binds_timeline($d, $name, $NFLOOD, 3 * $NVICTIM,
        metrics_listen => '127.0.0.1:' . free_port(), %conf);
    ok(!$t->{err}, "$name: its root and Binds made") or BAIL_OUT($t->{err});
    return $t;
}

# The victim's Binds under a flood: { victim, flood }.
my $vnext = 0;
sub under {
    my ($t, $from, $conns, $mode, $arg) = @_;
    my $f = flood($t->{port}, $from, $conns, $mode, $arg);
    my $v = victim($t->{port}, victim_addr(), $NVICTIM, 'post',
        $t->{victim}, $vnext);
    $vnext += $NVICTIM;
    return { victim => $v, flood => flood_end($f) };
}

sub report {
    my ($what, $r) = @_;
    diag(sprintf "%s: victim %d of %d, p50 %.0f ms, p99 %.0f ms; flood "
        . "sent %d, answered %s", $what, $r->{victim}{ok}, $r->{victim}{n},
        1000 * $r->{victim}{p50}, 1000 * $r->{victim}{p99},
        $r->{flood}{sent} // 0, join(',', map { "$_:$r->{flood}{codes}{$_}" }
            sort keys %{$r->{flood}{codes}}));
}

my $t = timeline('tl');

# Junk: a valid Bind carrying 190 certificates that are no part of its
# path; a malformed Bind of 200 (SKLoad's hostile_appends).
my ($junk, $bad) = hostile_appends($d, $sk, $inter);
my $r = under($t, \@attackers, 400, 'post', $junk);
report('190 junk certificates, 400 connections, 8 addresses', $r);
is($r->{victim}{ok}, $NVICTIM, 'junk chains: every victim Bind taken')
    or diag($r->{victim}{out});
ok($r->{victim}{p99} < 8, 'junk chains: ... the slowest within 8 s');
ok(($r->{flood}{codes}{413} // 0) > 0,
    'junk chains: refused unread (413, max_chain_bytes)');

# Malformed, from one address: what a key is not needed for.
$r = under($t, ['127.0.0.2'], 64, 'post', $bad);
report('malformed, 200 certificates, 64 connections, one address', $r);
is($r->{victim}{ok}, $NVICTIM, 'malformed: every victim Bind taken')
    or diag($r->{victim}{out});
ok($r->{victim}{p50} < 1, 'malformed: ... half within 1 s');
ok(($r->{flood}{codes}{429} // 0) > 0,
    'malformed: the address answered 429 past rate_per_client');
ok((metric($t, 'rate') // 0) > 0, '... counted (reason "rate")');
stop_daemon($t->{pid});

# Valid Binds for fresh names against rate_global = 50, from 4 addresses;
# then the attackers leave with appends queued.
$t = timeline('tlg', rate_global => 50, rate_per_client => 0);
$vnext = 0;
$r = under($t, [@attackers[0 .. 3]], 64, 'post', $t->{flood});
report('fresh Binds, rate_global 50, 4 addresses', $r);
is($r->{victim}{ok}, $NVICTIM,
    'rate_global 50: the victim\'s Binds get their places')
    or diag($r->{victim}{out});
ok(($r->{flood}{codes}{503} // 0) > 0, '... the flood\'s over it 503');
ok((metric($t, 'rate_global') // 0) > 0, '... counted (reason "rate_global")');
ok(wait_until(sub { (metric($t, 'gone') // 0) > 0 }, 10),
    'queued appends of attackers gone: dropped unchecked (reason "gone")')
    or diag(http('GET', "http://$t->{conf}{metrics_listen}/metrics")->{body});
stop_daemon($t->{pid});
unlike(slurp($_->{log}), qr/Sanitizer|runtime error/, 'no sanitizer reports')
    for $t;

done_testing();
