#!/usr/bin/perl

# tor-network.t -- the private Tor network of t/lib/SKTorNet.pm carries a
# real fetch: Debian's nginx with ngx_sk_module serves HTTPS with a
# carrier; two onion services stand in front of it (the HiddenServiceDir
# and torrc snippet nginx wrote for sovereign_key_onion_dir, and one from
# `sk onion --new` mapping port 443); curl, through the client's SocksPort
# with the proxy resolving the onion name, fetches https://a.test/ with
# TLS for a.test (SNI, certificate checked against the test CA) and gets
# the page and the chain with the carrier.  With the Tor client stopped
# the same fetch fails.  Everything stays on loopback.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Test::More;
use Time::HiRes qw(time);

use SKTest;
use NginxTest;
use SKTorNet;

my $t0 = time;
my $skip = nginx_skip() // tor_skip();
plan skip_all => $skip if $skip;

my $t = NginxTest->new;
my $d = $t->dir;
my $port = $t->port('https');

my $tor_user = $> == 0 && getpwnam('debian-tor') ? 'debian-tor' : undef;

make_ca($d);
my ($ec, $ec_key) = make_cert($d, 'a.test', 'ec');
my ($sk, $pub) = make_sk($d, 'a.test');
my $carrier = make_carrier($sk, $ec, 'a.test', "$d/carrier.pem");
my $hs = "$d/hs";

$t->write_conf(<<"EOF");
    server {
        listen 127.0.0.1:$port ssl;
        server_name a.test;
        ssl_certificate $ec; ssl_certificate_key $ec_key;
        sovereign_key_public $pub;
        sovereign_key_carrier $carrier;
        sovereign_key_onion_dir $hs@{[$tor_user ? " user=$tor_user" : '']};
        location / { }
    }
EOF
$t->start;
my $onion_a = slurp("$hs/hostname") =~ s/\n\z//r;
like($onion_a, qr/^[a-z2-7]{55}d\.onion$/, 'nginx wrote an onion address');

# A second service: a separate key from `sk onion`, virtual port 443 (what
# an SK client tries) to nginx.
my $r = sk('onion', '--new', '-P', "443:127.0.0.1:$port", '-o', "$d/hs443",
    ($tor_user ? ('--user', $tor_user) : ()));
is($r->{rc}, 0, 'sk onion --new') or diag($r->{err});
my $onion_b = $r->{out} =~ s/\n\z//r;

my $t_net = time;
my $net = SKTorNet->start;
my $t_consensus = time;
$net->onion(include => "$hs.torrc");
$net->onion("$d/hs443", "443 127.0.0.1:$port");
my $socks = $net->client;
ok($net->wait_onion($onion_a, $port), "onion A reachable through the client")
    or diag($net->last_error, $net->log('client'), $net->log('onion0'));
ok($net->wait_onion($onion_b, 443), "onion B reachable through the client")
    or diag($net->last_error, $net->log('client'), $net->log('onion1'));
my $t_up = time;

# curl connects to the onion through the proxy (socks5h: tor resolves the
# name), while TLS and HTTP are for a.test.  %{certs} is the chain it got.
sub fetch {
    my ($onion, $oport) = @_;
    my $r = run_cmd(['curl', '-sS', '--max-time', '30',
        '--proxy', "socks5h://127.0.0.1:$socks",
        '--connect-to', "a.test:443:$onion:$oport", '--cacert', "$d/ca.pem",
        '-w', '%{stderr}%{certs}', 'https://a.test/']);
    return $r;
}

my $ca = slurp("$d/ca.pem");
my $want_carrier = pem_certs(slurp($carrier))->[0];
for my $c (['A (nginx\'s dir)', $onion_a, $port], ['B (sk onion)', $onion_b, 443]) {
    my ($what, $onion, $oport) = @$c;
    $r = fetch($onion, $oport);
    is($r->{rc}, 0, "$what: curl through the onion") or diag($r->{err});
    is($r->{out}, "hello\n", "$what: the page");
    my $chain = pem_certs($r->{err});
    is(scalar @$chain, 3, "$what: leaf, CA, carrier");
    is($chain->[0], pem_certs(slurp($ec))->[0], "$what: nginx's leaf");
    is($chain->[2], $want_carrier, "$what: then the carrier");
}
my $t_first = time;

# The onion route is not a way around TLS: a name the certificate does
# not cover fails, as on the direct route.
$r = run_cmd(['curl', '-sS', '--max-time', '30', '--proxy',
    "socks5h://127.0.0.1:$socks", '--connect-to', "b.test:443:$onion_b:443",
    '--cacert', "$d/ca.pem", 'https://b.test/']);
is($r->{rc}, 60, 'wrong name: curl refuses the certificate')
    or diag($r->{err});

# Per-request figures: a fresh TLS connection each time, over the
# rendezvous circuit tor already has.
my @lat;
for (1 .. 5) {
    my $s = time;
    $r = fetch($onion_b, 443);
    push @lat, sprintf '%.0f', 1000 * (time - $s);
    is($r->{out}, "hello\n", "fetch $_ through the onion");
}
my $rss = 0;
for my $pid ($net->pids) {
    my ($kb) = eval { slurp("/proc/$pid/status") } =~ /^VmRSS:\s+(\d+)/m;
    $rss += $kb // 0;
}
diag(sprintf 'network up (consensus) %.1f s; onions reachable %.1f s after '
    . 'start; first fetches done %.1f s after start; per fetch (curl, new '
    . 'TLS) %s ms; %d tors, RSS %.0f MiB',
    $t_consensus - $t_net, $t_up - $t_net, $t_first - $t_net,
    join(' ', @lat), scalar($net->pids), $rss / 1024);

# Every route down: without the client the fetch fails.
$net->stop_client;
$r = fetch($onion_b, 443);
is($r->{rc}, 7, 'Tor client stopped: curl cannot reach the proxy')
    or diag($r->{err});
is($r->{out}, '', '... and gets nothing');

# And back: a restarted client on the same SocksPort reaches the onion.
$net->client;
ok($net->wait_onion($onion_b, 443, 60), 'restarted client reaches onion B')
    or diag($net->last_error);
is(fetch($onion_b, 443)->{out}, "hello\n", '... and fetches the page');

my @pids = $net->pids;
$net->stop;
ok(!grep({ kill 0, $_ } @pids), 'every tor stopped');
$t->stop;
is($t->alerts, '', 'no nginx alerts');
diag(sprintf 'tor-network.t wall time %.1f s', time - $t0);

done_testing();
