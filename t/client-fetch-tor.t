#!/usr/bin/perl

# client-fetch-tor.t -- `sk fetch`'s onion routes over a private Tor
# network on loopback (t/lib/SKTorNet.pm): three real sk-timelines and an
# sk-mirror hold the names' records, Debian's nginx with the module is the
# real site, and a v3 onion service made from the SK itself (`sk onion
# -k`: the address the client derives from the SK) stands in front of it.
#   primary impostor: refused in the handshake, then the SK's own onion
#     serves the real site (the impostor receives nothing)
#   primary blocked: the SK's own onion
#   a listed IP:port route comes before the onion: it answers, no Tor
#   a listed onion whose server has no carrier: refused like any other
#   Tor stopped too: every route down, exit non-zero, nothing sent

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;

use SKTest;
use NginxTest;
use SKTimeline;
use SKMirror;
use SKPeers;
use SKSite;
use SKTorNet;

my $skip = nginx_skip() // tor_skip();
plan skip_all => $skip if $skip;
plan skip_all => 'sk-timeline or sk-mirror not built'
    unless -x $SKTimeline::TL && -x $SKMirror::MR;

my ($ngx, $d, $port) = NginxTest->setup;
my %p = map { $_ => free_port() } qw(imp fakeimp closed);
my $tor_user = $> == 0 && getpwnam('debian-tor') ? 'debian-tor' : undef;
my @user = $tor_user ? ('--user', $tor_user) : ();

# fake.test lists an onion whose server is an impostor without a carrier:
# its address first, then the record that lists it.
my $r = sk('onion', '--new', '-P', "$p{fakeimp}:127.0.0.1:$p{fakeimp}",
    '-o', "$d/hs-fake", @user);
is($r->{rc}, 0, 'sk onion --new: the impostor\'s onion') or diag($r->{err});
my $fake_onion = $r->{out} =~ s/\n\z//r;

my $w = world($d, names => {
    'example.com' => 'https',
    'both.test'   => "https;127.0.0.1:$port",
    'fake.test'   => "https;$fake_onion",
});
ok(1, 'timelines and mirror hold every entry');
my $ca = NginxTest::make_ca($d);
$ngx->write_conf(site($w, $d, $port, 'example.com', 'both.test'));
$ngx->start;

# Impostors with certificates from the same CA, no carrier.
my ($icert, $ikey) = make_cert($d, 'example.com', 'rsa');
my ($fcert, $fkey) = make_cert($d, 'fake.test', 'rsa');
my %log = map { $_ => "$d/peer-$_.log" } qw(imp fakeimp);
start_peer('tls', $p{imp}, $log{imp}, $icert, $ikey);
start_peer('tls', $p{fakeimp}, $log{fakeimp}, $fcert, $fkey);

# The SK's own onion, as the client derives it: the SK is the onion key.
# It maps the ports the URLs below use to nginx.
my $own = onion_of($w->{sk}{'example.com'});
$r = sk('onion', '-k', $w->{sk}{'example.com'}, '-P', "443:127.0.0.1:$port",
    '-o', "$d/hs-own", @user);
is($r->{rc}, 0, 'sk onion -k: the SK\'s own onion') or diag($r->{err});
is($r->{out}, "$own\n", '... at the address derived from the SK');

my $net = SKTorNet->start;
$net->onion("$d/hs-own", map { "$_ 127.0.0.1:$port" } $p{imp}, $p{closed});
$net->onion("$d/hs-fake", "$p{fakeimp} 127.0.0.1:$p{fakeimp}");
my $socks = $net->client;
ok($net->wait_onion($own, $p{closed}), 'the SK\'s onion is reachable')
    or diag($net->last_error);
ok($net->wait_onion($fake_onion, $p{fakeimp}), 'the listed onion too')
    or diag($net->last_error);

sub fetch {
    my ($url, @more) = @_;
    my ($host, $pt) = $url =~ m{^\w+://([^:/]+):(\d+)};
    my $r = sk('fetch', '--trust', $w->{trust}, '--cache', "$d/cache",
        '--cacert', $ca, '--tor', "127.0.0.1:$socks", '--resolve',
        "$host:$pt:127.0.0.1", '--connect-timeout', 30, '--json', '-o',
        "$d/body", @more, $url);
    $r->{j} = eval { decode_json($r->{out}) } // {};
    $r->{body} = -e "$d/body" ? slurp("$d/body") : undef;
    unlink "$d/body";
    return $r;
}
sub kinds {
    my ($r) = @_;
    return [map { "$_->{kind}/$_->{result}" } @{$r->{j}{routes} // []}];
}

# The primary route serves an impostor: refused, then the onion.
$r = fetch("https://example.com:$p{imp}/", '-H', 'Cookie: s=SECRET');
is($r->{rc}, 0, 'impostor: fetched through the onion') or diag($r->{err});
is($r->{body}, "the real example.com\n", '... the real site\'s page');
is($r->{j}{route}, "$own:$p{imp}", '... from the SK\'s own onion');
is_deeply(kinds($r), ['primary/refused', 'sk-onion/ok'],
    '... the URL\'s host refused first');
like($r->{j}{routes}[0]{error} // '', qr/^reject \(no-carrier\)/,
    '... for want of a carrier');
is($r->{j}{routes}[1]{via}, "127.0.0.1:$socks", '... through Tor');
like(slurp($log{imp}), qr/^handshake failed/, '... the impostor\'s '
    . 'handshake failed');
unlike(slurp($log{imp}), qr/received|SECRET/, '... and it got nothing');

# The primary route blocked: the onion.
$r = fetch("https://example.com:$p{closed}/");
is($r->{rc}, 0, 'blocked: fetched through the onion') or diag($r->{err});
is($r->{body}, "the real example.com\n", '... the real page');
is_deeply(kinds($r), ['primary/failed', 'sk-onion/ok'],
    '... after the URL\'s host failed');

# A listed IP:port route comes first: it answers, Tor is not used.
$r = fetch("https://both.test:$p{closed}/");
is($r->{rc}, 0, 'a listed address route first: fetched') or diag($r->{err});
is($r->{body}, "the real both.test\n", '... the real page');
is_deeply(kinds($r), ['primary/failed', 'address/ok'],
    '... through the address, the onion never tried');

# A listed onion whose server presents no carrier: refused like any
# other; then the SK's own onion (not published) fails too.
$r = fetch("https://fake.test:$p{fakeimp}/", '--connect-timeout', 15);
is($r->{rc}, 1, 'an onion without the carrier: refused (exit 1)')
    or diag($r->{err});
is($r->{j}{routes}[0]{result}, 'refused', '... the URL\'s host (the same '
    . 'impostor) refused');
is($r->{j}{routes}[1]{kind}, 'onion', '... then the listed onion');
is($r->{j}{routes}[1]{result}, 'refused', '... refused too');
like($r->{j}{routes}[1]{error} // '', qr/^reject \(no-carrier\): fake\.test has an SK/,
    '... by the SK check, through Tor') or diag(explain($r->{j}));
unlike(slurp($log{fakeimp}), qr/received/,
    '... the impostor got no request on either route');

# Tor stopped too: no route left, nothing sent.
$net->stop_client;
spew($log{imp}, '');
$r = fetch("https://example.com:$p{closed}/");
is($r->{rc}, 5, 'every route down, Tor stopped: exit 5') or diag($r->{err});
is_deeply(kinds($r), ['primary/failed', 'sk-onion/failed'],
    '... each route failed');
like($r->{err}, qr/\Q$own\E:$p{closed} \(the SK's own onion, through Tor at 127\.0\.0\.1:$socks\): failed: /,
    '... the message names the onion route') or diag($r->{err});
$r = fetch("https://example.com:$p{imp}/");
is($r->{rc}, 1, 'the impostor and no Tor: refused (exit 1)');
unlike(slurp($log{imp}), qr/received/, '... and the impostor got nothing');
ok(!defined $r->{body}, '... no page written');

$net->stop;
is($ngx->alerts, '', 'no alerts in the nginx log');
$ngx->stop;
stop_world($w);
done_testing();
