#!/usr/bin/perl
# bench_staple.pl -- the stapled SK proof.  Three real sk-timelines hold
# a Bind for example.com, an sk-mirror serves it; Debian's nginx with the
# module staples it (S: carrier + sovereign_key_staple extension) next to
# the same nginx without the module (N); ECDSA P-256 leaf, TLS 1.3, full
# handshakes.
#
#   nginx-staple-cpu      handshakes per server-CPU-second of S, every
#                         client asking for the staple, vs N, in
#                         interleaved pairs of windows at a fixed offered
#                         rate (nginx_client "staple"); the ratio is the
#                         median of the pair ratios              target 0.97
#   staple-first-contact  ms from nothing known to the SK decision on a
#                         first contact, from the staple (staple_client
#                         staple) vs from a mirror query before
#                         connecting (staple_client mirror); medians of
#                         interleaved windows, lower is better, the target
#                         an upper bound                         target 0.5
#   staple-first-contact-rtt40
#                         the same with a network's round trip (RTT ms,
#                         40) between the client and the mirror: the
#                         mirror is reached through delay_proxy, which
#                         holds each direction's bytes RTT/2 and a new
#                         connection's first bytes one round trip more
#                         (its TCP handshake); the staple path asks no
#                         mirror                                 target 0.5
#   staple-bytes          bytes the staple adds to a handshake (S, asked
#                         vs not asked), for 3 timelines; ref = the
#                         staple's own size
#
# Environment: BUILD, PAIRS (8), WINDOW (seconds, 2), RATE (offered
# handshakes/s, 600), THREADS (4), CONTACTS (per window, 20), FIRSTS
# (windows per mode, 5), RTT (ms, 40).

use strict;
use warnings;
use JSON::PP;
use SKTest;
use SKTimeline ();
use SKMirror ();
use NginxTest ();
use SKSite;

my $pairs = $ENV{PAIRS} // 8;
my $window = $ENV{WINDOW} // 2;
my $rate = $ENV{RATE} // 600;
my $threads = $ENV{THREADS} // 4;
my $contacts = $ENV{CONTACTS} // 20;
my $firsts = $ENV{FIRSTS} // 5;
my $rtt = $ENV{RTT} // 40;
my $bench = "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/bench';

for my $need ($SKTimeline::TL, $SKMirror::MR, $SKTest::SK,
    "$bench/nginx_client", "$bench/staple_client", "$bench/delay_proxy")
{
    if (!-x $need) { print "bench_staple: $need not built: skipped\n"; exit 0 }
}
if (my $why = NginxTest::nginx_skip()) {
    print "bench_staple: $why: skipped\n";
    exit 0;
}

my $s = NginxTest->new;
my ($d, $ps) = ($s->dir, $s->port);
my $w = world($d, names => { 'example.com' => 'https' });
my $ca = NginxTest::make_ca($d);
my ($cert, $key) = NginxTest::make_cert($d, 'example.com', 'ec');
my $sk = $w->{sk}{'example.com'};
(my $pub = $sk) =~ s/\.key$/.pub/;
NginxTest::make_carrier($sk, $cert, 'example.com', "$d/carrier.pem");
mkdir "$d/scache";
chmod 0777, "$d/scache";

sub server {
    my ($port, $extra) = @_;
    return "    server {\n        listen 127.0.0.1:$port ssl;\n"
        . "        server_name example.com;\n"
        . "        ssl_protocols TLSv1.3;\n        ssl_session_tickets off;\n"
        . "        ssl_session_cache off;\n"
        . "        ssl_certificate $cert;\n        ssl_certificate_key $key;\n"
        . "$extra    }\n";
}
$s->write_conf(server($ps, "        sovereign_key_public $pub;\n"
    . "        sovereign_key_carrier $d/carrier.pem;\n"
    . "        sovereign_key_staple extension;\n"
    . "        sovereign_key_trust $w->{trust};\n"
    . "        sovereign_key_staple_cache $d/scache;\n"
    . "        location = /sk { sovereign_key_status; }\n"));
$s->start;

# N: the same server, nginx without the module.
my $n = NginxTest->new;
my $pn = $n->port;
$n->write_conf(server($pn, ''));
my $conf = slurp($n->dir . '/nginx.conf');
$conf =~ s/^load_module [^\n]*\n//m;
spew($n->dir . '/nginx.conf', $conf);
$n->start;

my $served = wait_until(sub {
    my $r = run_cmd(['curl', '-sk', '--resolve', "example.com:$ps:127.0.0.1",
        "https://example.com:$ps/sk"]);
    my $j = eval { decode_json($r->{out}) } // {};
    return $j->{staple}{served} ? $j->{staple}{bytes} : 0;
}, 20);
die "bench_staple: nginx serves no staple:\n" . $s->log unless $served;

my ($ws) = $s->worker_pids;
my ($wn) = $n->worker_pids;
my $hz = `getconf CLK_TCK` + 0;

sub ticks {
    my ($pid) = @_;
    my @f = split ' ', (slurp("/proc/$pid/stat") =~ /\) (.*)/)[0];
    return $f[11] + $f[12];
}

# One window: handshakes, server CPU seconds, bytes in per handshake.
sub window {
    my ($port, $worker, @extra) = @_;
    my $t0 = ticks($worker);
    my $r = run_cmd(["$bench/nginx_client", '127.0.0.1', $port,
        'example.com', $ca, $threads, $window, $rate, @extra]);
    my $cpu = (ticks($worker) - $t0) / $hz;
    my %f = $r->{out} =~ /(\w+)=(\S+)/g;
    die "bench_staple: nginx_client: $r->{err}" if $r->{rc} || !$f{handshakes};
    die "bench_staple: nginx_client: $f{errors} errors\n" if $f{errors};
    return ($f{handshakes}, $cpu, $f{bytes_in} / $f{handshakes});
}

sub median {
    my @v = sort { $a <=> $b } @_;
    return @v % 2 ? $v[$#v / 2] : ($v[@v / 2 - 1] + $v[@v / 2]) / 2;
}

# nginx-staple-cpu: S (staple asked) and N, interleaved pairs.
window($ps, $ws, 'staple');
window($pn, $wn);
my (%hs, %cpu, @ratio);
for my $i (1 .. $pairs) {
    my %r;
    for my $v ($i % 2 ? ('s', 'n') : ('n', 's')) {
        my ($h, $c) = $v eq 's' ? window($ps, $ws, 'staple')
            : window($pn, $wn);
        $hs{$v} += $h;
        $cpu{$v} += $c;
        $r{$v} = $h / $c;
    }
    push @ratio, $r{s} / $r{n};
}

# staple-bytes: the same server, asked and not asked.
my (undef, undef, $asked) = window($ps, $ws, 'staple');
my (undef, undef, $plain) = window($ps, $ws);

# The mirror behind a round trip: a second trust file naming it through
# delay_proxy.
my $pp = free_port();
my $proxy = run_daemon(["$bench/delay_proxy", $pp, '127.0.0.1',
    $w->{mirror}{port}, $rtt / 2], "$d/delay_proxy.log");
die "bench_staple: delay_proxy did not start: " . slurp("$d/delay_proxy.log")
    unless wait_for_port($pp);
(my $trust_rtt = slurp($w->{trust}))
    =~ s{^(mirror = http://127\.0\.0\.1:)\d+}{$1$pp}m or die;
spew("$d/trust-rtt.conf", $trust_rtt);

# staple-first-contact: staple_client, staple and mirror windows, on
# loopback and with the round trip, interleaved.
my (%ms, %fbytes);
my %trust = (staple => $w->{trust}, mirror => $w->{trust},
    'staple-rtt' => "$d/trust-rtt.conf", 'mirror-rtt' => "$d/trust-rtt.conf");
my @modes = sort keys %trust;
for my $i (1 .. $firsts) {
    for my $v ($i % 2 ? @modes : reverse @modes) {
        (my $mode = $v) =~ s/-rtt$//;
        my $r = run_cmd(["$bench/staple_client", $trust{$v}, 'example.com',
            $ps, '127.0.0.1', $contacts, $mode]);
        die "bench_staple: staple_client $v: $r->{err}" if $r->{rc};
        my %f = $r->{out} =~ /(\w+)=(\S+)/g;
        push @{$ms{$v}}, $f{ms};
        $fbytes{$v} = $f{bytes_in};
    }
}
stop_daemon($proxy);

my $rs = $hs{s} / $cpu{s};
my $rn = $hs{n} / $cpu{n};
printf "pairs=%d window=%ss offered=%d/s threads=%d; first contacts: %d x %d "
    . "per mode\n", $pairs, $window, $rate, $threads, $firsts, $contacts;
printf "server CPU per handshake: staple %.1f us, no module %.1f us\n",
    1e6 / $rs, 1e6 / $rn;
printf "first contact bytes in: staple %d, mirror %d\n", $fbytes{staple},
    $fbytes{mirror};
printf "BENCH nginx-staple-cpu %.1f hs/cpu-s ref=%.1f ratio=%.4f "
    . "target=0.97\n", $rs, $rn, median(@ratio);
my %med = map { $_ => median(@{$ms{$_}}) } @modes;
# A mirror query over a new connection takes two round trips (TCP, then
# the HTTP request): what the proxy added, in round trips, shows it works.
printf "round trip %d ms added: mirror path +%.1f ms (%.2f round trips), "
    . "staple path %+.1f ms\n", $rtt, $med{'mirror-rtt'} - $med{mirror},
    ($med{'mirror-rtt'} - $med{mirror}) / $rtt,
    $med{'staple-rtt'} - $med{staple};
die "bench_staple: the proxy added less than one round trip\n"
    if $med{'mirror-rtt'} - $med{mirror} < $rtt;
for my $v ('', '-rtt') {
    printf "BENCH staple-first-contact%s %.3f ms ref=%.3f ratio=%.4f "
        . "target=0.5\n", $v && "-rtt$rtt", $med{"staple$v"},
        $med{"mirror$v"}, $med{"staple$v"} / $med{"mirror$v"};
}
printf "BENCH staple-bytes %.1f bytes ref=%d ratio=%.4f target=1.05\n",
    $asked - $plain, $served, ($asked - $plain) / $served;

$s->stop;
$n->stop;
stop_world($w);
