#!/usr/bin/perl
# bench_flood.pl -- the floods of issue 40 (build/bench/flood, from several
# loopback addresses, on the same cores as the daemons) and a victim from
# another address making one request at a time on a fresh connection,
# given 10 s each, as `sk` does:
#
#   junk-chain        Binds carrying 190 junk certificates, 400
#                     connections from 8 addresses
#   malformed         a malformed Bind with 200 certificates, 64
#                     connections from one address
#   fresh-binds       valid Binds for fresh names, 64 connections from 4
#                     addresses, no per-client rate limit (the fair queue
#                     alone)
#   rate-global       the same against rate_global = 50
#   mirror-connections  4,320 idle connections from 72 addresses, held
#   mirror-churn      the same, each made again as soon as it is closed
#   mirror-absent     names never asked, 64 connections from 8 addresses
#
# The victim posts valid Binds (the timeline kinds; never the flood's
# names) or asks for a name (the mirror's); its p99 under each flood is
# printed against its p99 alone on the same daemon, measured just before:
#
#   BENCH flood-victim-p99-<kind> <us> us ref=<us alone> ratio=R target=10
#   BENCH flood-victim-success-<kind> <%> % ref=100 ratio=R target=1
#
# Environment: BUILD, VICTIMS (100 requests each), SECONDS_MIN (3: each
# flood runs at least this long, and as long as its victim).

use strict;
use warnings;
use SKTest;
use SKTimeline;
use SKMirror;
use SKLoad;

my $N = $ENV{VICTIMS} // 100;
my $client = "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/bench/tl_client';
for my $need ($SKTimeline::TL, $SKMirror::MR, $client, $SKLoad::FLOOD) {
    if (!-x $need) { print "bench_flood: $need not built: skipped\n"; exit 0 }
}
raise_nofile();
my $nofile = `sh -c 'ulimit -n'`;
chomp $nofile;

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $sk = ed25519_key($d, 'sk');
my $root = make_ca($d, 'root');
my $inter = make_intermediate($d, $root, 'inter');
# A victim address per kind: each asks within its own client's budget.
my $victims = 200;
sub victim_addr { return '127.0.1.' . $victims++ }
my $NFLOOD = 3000;

sub line {
    my ($kind, $alone, $v) = @_;
    printf "%s: victim %d of %d, p50 %.1f ms, p99 %.1f ms (alone: p50 %.1f, "
        . "p99 %.1f)\n", $kind, $v->{ok}, $v->{n}, 1000 * $v->{p50},
        1000 * $v->{p99}, 1000 * $alone->{p50}, 1000 * $alone->{p99};
    printf "BENCH flood-victim-p99-%s %.0f us ref=%.0f ratio=%.3f target=10\n",
        $kind, 1e6 * $v->{p99}, 1e6 * $alone->{p99},
        $v->{p99} / ($alone->{p99} || 1e-6);
    my $pct = $v->{n} ? 100 * $v->{ok} / $v->{n} : 0;
    printf "BENCH flood-victim-success-%s %.1f %% ref=100 ratio=%.3f "
        . "target=1\n", $kind, $pct, $pct / 100;
}

# A timeline, its root, and Binds for fresh names as requests.
sub timeline {
    my ($name, %conf) = @_;
    my $t = binds_timeline($d, $name, $NFLOOD, 10 * $N, %conf);
    die "bench_flood: $name: $t->{err}" if $t->{err};
    $t->{next} = 0;
    return $t;
}

sub tl_victim {
    my ($t) = @_;
    my $v = victim($t->{port}, victim_addr(), $N, 'post', $t->{victim},
        $t->{next});
    $t->{next} += $N;
    return $v;
}

sub flooded {
    my ($port, $from, $conns, $mode, $arg, $victim) = @_;
    my $f = flood($port, $from, $conns, $mode, $arg);
    my $v = $victim->();
    my $fr = flood_end($f);
    printf "  flood: sent %d, answered %s\n", $fr->{sent} // 0,
        join(',', map { "$_:$fr->{codes}{$_}" } sort keys %{$fr->{codes}});
    return $v;
}

my ($junk, $bad) = hostile_appends($d, $sk, $inter);

my @eight = addrs(8);
my $t = timeline('tl');
my $alone = tl_victim($t);
line('junk-chain', $alone, flooded($t->{port}, \@eight, 400, 'post',
    $junk, sub { tl_victim($t) }));
line('malformed', $alone, flooded($t->{port}, ['127.0.0.2'], 64, 'post',
    $bad, sub { tl_victim($t) }));
stop_daemon($t->{pid});

$t = timeline('tlf', rate_per_client => 0);
$alone = tl_victim($t);
line('fresh-binds', $alone, flooded($t->{port}, [@eight[0 .. 3]], 64,
    'post', $t->{flood}, sub { tl_victim($t) }));
stop_daemon($t->{pid});

$t = timeline('tlg', rate_per_client => 0, rate_global => 50);
$alone = tl_victim($t);
line('rate-global', $alone, flooded($t->{port}, [@eight[0 .. 3]], 64,
    'post', $t->{flood}, sub { tl_victim($t) }));
stop_daemon($t->{pid});

# The mirror: two timelines holding a.example.
my $ca = make_ca($d, 'testca');
my $ak = ed25519_key($d, 'a');
my $crt = issue($d, $ca, $ak, 'a.example', "$d/a");
my ($ts, $tl) = start_timelines($d, [1, 2], [root_entry(cert => "$ca.crt",
    key => $op), bind_entry(name => 'a.example', key => $ak,
    chain => [$crt])], chunk_interval => 1);
my $m = start_mirror("$d/m", $tl);
wait_until(sub { 2 == grep { tl_state($m, $_) eq 'Idle' } 1, 2 }, 30)
    or die "bench_flood: mirror not ready: " . slurp($m->{log});
my $ask = sub { victim($m->{port}, victim_addr(), 2 * $N, 'get',
    '/query/a.example') };
$alone = $ask->();
if ($nofile >= 16384) {
    line('mirror-connections', $alone, flooded($m->{port}, [addrs(72)],
        72 * 60, 'hold', undef, $ask));
    line('mirror-churn', $alone, flooded($m->{port}, [addrs(72)],
        72 * 60, 'churn', undef, $ask));
} else {
    print "mirror-connections: open files limited to $nofile: skipped\n";
}
line('mirror-absent', $alone, flooded($m->{port}, [addrs(8, 100)], 64,
    'get', '/query/n%lu.absent.example', $ask));
stop_daemon($_->{pid}) for $m, values %$ts;
