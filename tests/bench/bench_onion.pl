#!/usr/bin/perl
# bench_onion.pl -- how long `sk fetch` takes through the onion route, next
# to the direct route, on a private Tor network on loopback
# (t/lib/SKTorNet.pm: 3 authorities, 3 relays, the SK's own onion service
# in front of Debian's nginx with the module, a client).  The decision is
# cached; the direct fetches go to nginx, the onion ones to a closed port
# first (refused at once) and then to the SK's own onion, as when the site
# is blocked.  Alternating, medians:
#
#   fetch-onion   ms per fetch through the onion, ref = ms per direct
#                 fetch; the issue sets no target (a report)
#
# Environment: BUILD, FETCHES (15).

use strict;
use warnings;
use Time::HiRes qw(time);
use SKTest;
use SKTimeline ();
use SKMirror ();
use NginxTest ();
use SKSite;
use SKTorNet;

my $fetches = $ENV{FETCHES} // 15;

for my $need ($SKTimeline::TL, $SKMirror::MR, $SKTest::SK) {
    if (!-x $need) { print "bench_onion: $need not built: skipped\n"; exit 0 }
}
if (my $skip = NginxTest::nginx_skip() // tor_skip()) {
    print "bench_onion: $skip: skipped\n";
    exit 0;
}

my $ngx = NginxTest->new;
my ($d, $port) = ($ngx->dir, $ngx->port);
my $closed = free_port();
my $w = world($d, names => { 'example.com' => 'https' }, tids => [1, 2]);
my $ca = NginxTest::make_ca($d);
$ngx->write_conf(site($w, $d, $port, 'example.com'));
$ngx->start;

my $user = $> == 0 && getpwnam('debian-tor') ? 'debian-tor' : undef;
my $r = sk('onion', '-k', $w->{sk}{'example.com'}, '-P',
    "$closed:127.0.0.1:$port", '-o', "$d/hs", $user ? ('--user', $user) : ());
die "bench_onion: sk onion: $r->{err}" if $r->{rc} != 0;
(my $onion = $r->{out}) =~ s/\n\z//;
my $net = SKTorNet->start;
$net->onion("$d/hs", "$closed 127.0.0.1:$port");
my $socks = $net->client;
$net->wait_onion($onion, $closed)
    or die "bench_onion: the onion is unreachable: " . $net->last_error;

sub fetch_ms {
    my ($pt) = @_;
    my $t0 = time;
    my $r = sk('fetch', '--trust', $w->{trust}, '--cache', "$d/cache",
        '--cacert', $ca, '--tor', "127.0.0.1:$socks", '--resolve',
        "example.com:$pt:127.0.0.1", '-o', '/dev/null',
        "https://example.com:$pt/");
    die "bench_onion: fetch on port $pt: $r->{err}" if $r->{rc} != 0;
    return (time - $t0) * 1000;
}

sub med {
    my @v = sort { $a <=> $b } @_;
    return $v[int(@v / 2)];
}

fetch_ms($port);                # the cache holds the decision from here
fetch_ms($closed);              # and the client has a circuit
my (@direct, @onion);
for (1 .. $fetches) {
    push @direct, fetch_ms($port);
    push @onion, fetch_ms($closed);
}
my ($o, $dm) = (med(@onion), med(@direct));
printf "%d fetches each, after one that built the circuit\n", $fetches;
printf "BENCH fetch-onion %.1f ms ref=%.1f ratio=%.2f target=none\n",
    $o, $dm, $o / $dm;

$net->stop;
$ngx->stop;
stop_world($w);
