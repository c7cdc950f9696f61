#!/usr/bin/perl
# bench_mirror_tor.pl -- how long a client's mirror query takes through Tor
# to sk-mirror's onion service (onion_dir), next to the same query made
# directly, on a private Tor network on loopback (t/lib/SKTorNet.pm: 3
# authorities, 3 relays, the mirror's onion service, a client).  Each
# query is what a client sends, `GET /query/example.com?nonce=<new>` on a
# new connection (through the client tor's SOCKS port for the onion, its
# circuit built once before), read to the end and its nonce line checked.
# Alternating, medians:
#
#   mirror-query-tor   ms per query through the onion, ref = ms per direct
#                      query; the issue sets no target (a report)
#
# Environment: BUILD, QUERIES (30).

use strict;
use warnings;
use IO::Socket::INET;
use MIME::Base64 qw(encode_base64);
use Time::HiRes qw(time);
use SKTest;
use SKTimeline ();
use SKMirror ();
use SKSite;
use SKTorNet;

my $queries = $ENV{QUERIES} // 30;

for my $need ($SKTimeline::TL, $SKMirror::MR) {
    if (!-x $need) { print "bench_mirror_tor: $need not built: skipped\n"; exit 0 }
}
if (my $skip = tor_skip()) {
    print "bench_mirror_tor: $skip: skipped\n";
    exit 0;
}

my $d = tmpdir();
chmod 0755, $d;
my $w = world($d, names => { 'example.com' => 'https' }, tids => [1, 2],
    mirror => { onion_dir => "$d/m-onion" });
my $m = $w->{mirror};
chomp(my $onion = slurp("$d/m-onion/hostname"));
my $net = SKTorNet->start;
$net->onion(include => "$d/m-onion.torrc");
my $socks = $net->client;
$net->wait_onion($onion, 80)
    or die "bench_mirror_tor: the onion is unreachable: " . $net->last_error;

# One query on a new connection, through Tor or not: ms.
sub query_ms {
    my ($tor) = @_;
    my $nonce = encode_base64(join('', map { chr int rand 256 } 1 .. 32), '');
    $nonce =~ tr{+/}{-_};
    $nonce =~ s/=+$//;
    my $t0 = time;
    my ($s, $why) = $tor ? socks_connect($socks, $onion, 80)
        : IO::Socket::INET->new(PeerAddr => '127.0.0.1',
            PeerPort => $m->{port});
    die "bench_mirror_tor: connect: " . ($why // $!) unless $s;
    print $s "GET /query/example.com?nonce=$nonce HTTP/1.0\r\n"
        . "Host: mirror\r\n\r\n";
    local $/;
    my $resp = <$s> // '';
    close $s;
    my $ms = (time - $t0) * 1000;
    die "bench_mirror_tor: no answer for the nonce: "
        . substr($resp, 0, 200) unless $resp =~ /^Nonce: \Q$nonce\E$/m;
    return $ms;
}

sub med {
    my @v = sort { $a <=> $b } @_;
    return $v[int(@v / 2)];
}

query_ms(1);                    # the client's circuit to the onion
my (@direct, @tor);
for (1 .. $queries) {
    push @direct, query_ms(0);
    push @tor, query_ms(1);
}
my ($t, $dm) = (med(@tor), med(@direct));
printf "%d queries each, on new connections, after one that built the "
    . "circuit\n", $queries;
printf "BENCH mirror-query-tor %.1f ms ref=%.2f ratio=%.1f target=none\n",
    $t, $dm, $t / $dm;

$net->stop;
stop_world($w);
