#!/usr/bin/perl

# client-fetch.t -- `sk fetch` end to end on loopback, without Tor: three
# real sk-timelines hold the names' entries, a real sk-mirror serves them,
# Debian's nginx with ngx_sk_module is the real site; impostors, a
# resetting server and SOCKS proxies are small Perl peers (SKPeers) that
# log what reaches them.
#   primary fine: fetched directly, no other route
#   primary impostor (no carrier; another SK's carrier): refused in the
#     handshake -- the impostor receives not a byte of the request --
#     then fetched through the record's IP:port route from the real nginx
#   primary blocked (port closed, connection reset): the IP:port route
#   every route down, Tor's port closed too: exit 5, each route listed
#   no SK: plain verified HTTPS, no fallback; a revoked SK: the same
#   http://: refused for an SK covering https, nothing sent; fetched as
#     is for a name without one
#   hostile routes in the record: refused with reasons, never tried, and
#     nothing but an onion address ever reaches the SOCKS port
#   hostile SOCKS proxies (garbage, truncated, hang): a clear error within
#     the timeouts; malformed URLs: usage errors; -o is all or nothing
#   the C API: docs/client.md's example program, compiled from the doc,
#     accepts the real site, refuses the impostor in the handshake

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Time::HiRes qw(time);

use SKTest;
use NginxTest;
use SKTimeline;
use SKMirror;
use SKPeers;
use SKSite;

plan skip_all => 'sk-timeline or sk-mirror not built'
    unless -x $SKTimeline::TL && -x $SKMirror::MR;
plan skip_all => 'no openssl' unless has_cmd('openssl');

my ($ngx, $d, $port) = NginxTest->setup;
my %p = map { $_ => $ngx->port($_) } qw(http);
$p{$_} = free_port() for qw(imp evil closed reset dead1 dead2 dead3 socks
    plainrec);

# The names, each bound by its own Ed25519 SK on three sk-timelines with
# the routes its record lists for https, served by an sk-mirror; the
# trust file asks the mirror on every run (t1 = 0).
my $long = 'a' x 300;
my $w = world($d, names => {
    'example.com' => "https;127.0.0.1:$port",
    'down.test'   => "https;127.0.0.1:$p{dead1};[::1]:$p{dead2}",
    'hostile.test' => "https;evil.example:443;1.2.3.4;0.0.0.0:443;[::1];"
        . "abc.onion;$long;127.0.0.1:$port",
    'revoked.test' => "https;127.0.0.1:$port",
}, unbind => ['revoked.test'], trust => "t1 = 0\n");
ok(1, 'timelines and mirror hold every entry');
my %sk = %{$w->{sk}};
my $trust = $w->{trust};
my $evil = ed25519_key($d, 'evil');

# The real site: nginx with each bound name's carrier, and a name with no
# SK at all; its pages say which site they are.
my $ca = NginxTest::make_ca($d);
my $servers = site($w, $d, $port, 'example.com', 'hostile.test',
    'revoked.test', 'nosk.test');
$ngx->write_conf(<<"EOF");
$servers
    server {
        listen 127.0.0.1:$p{http};
        server_name nosk.test example.com;
        root $d/www-nosk.test;
    }
EOF
my $r = $ngx->test_conf;
is($r->{rc}, 0, 'nginx -t accepts the configuration') or diag($r->{err});
$ngx->start;

# Impostors for example.com (and down.test) with certificates from the
# same CA: one without a carrier, one with a carrier made by another SK.
my ($icert, $ikey) = make_cert($d, 'example.com', 'rsa',
    ['example.com', 'down.test']);
my $ievil = make_carrier($evil, $icert, 'example.com', "$d/evil-carrier.pem");
spew("$d/imp-evil.pem", slurp($icert) . slurp($ievil));
my %log = map { $_ => "$d/peer-$_.log" } qw(imp evil reset plainrec);
start_peer('tls', $p{imp}, $log{imp}, $icert, $ikey);
start_peer('tls', $p{evil}, $log{evil}, "$d/imp-evil.pem", $ikey);
start_peer('reset', $p{reset}, $log{reset});
start_peer('plain', $p{plainrec}, $log{plainrec});

my $cache = "$d/cache";
sub fetch {
    my ($url, @more) = @_;
    my ($host, $pt) = $url =~ m{^\w+://([^:/]+):(\d+)};
    return sk('fetch', '--trust', $trust, '--cache', $cache, '--cacert',
        $ca, '--tor', "127.0.0.1:$p{dead3}", '--connect-timeout', 3,
        '--resolve', "$host:$pt:127.0.0.1", @more, $url);
}
sub fetch_json {
    my ($url, @more) = @_;
    my $r = fetch($url, '--json', '-o', "$d/body", @more);
    $r->{j} = eval { decode_json($r->{out}) } // {};
    $r->{body} = -e "$d/body" ? slurp("$d/body") : undef;
    unlink "$d/body";
    return $r;
}

# Primary route fine.
$r = fetch("https://example.com:$port/", '-v');
is($r->{rc}, 0, 'primary fine: fetched') or diag($r->{err});
is($r->{out}, "the real example.com\n", '... the real page on stdout');
# (Its other routes are counted once the first handshake learnt them.)
like($r->{err}, qr/route 1: example\.com:$port \(the URL's host\)\nsk:   accept: carrier for example\.com/,
    '... accepted on the first route (-v)') or diag($r->{err});
unlike($r->{err}, qr/route 2 of/, '... and no other route tried');
$r = fetch_json("https://example.com:$port/");
is($r->{j}{decision}, 'accept', 'json: accept');
is($r->{j}{route}, "example.com:$port", 'json: the URL\'s host answered');
is($r->{j}{status}, 200, 'json: HTTP status');
is(scalar @{$r->{j}{routes} // []}, 1, 'json: one route tried');
is($r->{body}, "the real example.com\n", '-o: the page');

# Primary route serves an impostor: refused in the handshake, then the
# record's IP:port route to the real nginx.
for my $case ([imp => 'no-carrier', 'no carrier'],
              [evil => 'wrong-sk', 'another SK\'s carrier']) {
    my ($which, $check, $what) = @$case;
    spew($log{$which}, '');
    $r = fetch_json("https://example.com:$p{$which}/", '-H',
        'Cookie: session=SECRET-COOKIE');
    is($r->{rc}, 0, "impostor ($what): fetched anyway")
        or diag($r->{out} . $r->{err});
    is($r->{body}, "the real example.com\n", '... the real site\'s page');
    is($r->{j}{route}, "127.0.0.1:$port", '... through the IP:port route');
    my @rt = @{$r->{j}{routes} // []};
    is($rt[0]{result}, 'refused', '... the URL\'s host refused');
    like($rt[0]{error} // '', qr/^reject \(\Q$check\E\): example\.com has an SK/,
        "... saying why ($check)");
    is_deeply([map { $_->{kind} } @rt], ['primary', 'address'],
        '... then the address route');
    my $seen = slurp($log{$which});
    like($seen, qr/^handshake failed/, '... the impostor saw a failed '
        . 'handshake') or diag($seen);
    unlike($seen, qr/handshake ok|received|SECRET|GET/,
        '... and not a byte of the request') or diag($seen);
}
spew($log{imp}, '');
$r = fetch("https://example.com:$p{imp}/", '-d', 'password=SECRET-BODY',
    '-o', "$d/post");
is($r->{rc}, 0, 'a POST: the real site answers') or diag($r->{err});
unlike(slurp($log{imp}), qr/SECRET|POST|received/,
    '... the impostor got no body either');

# Primary route blocked: the IP:port route.
for my $case ([closed => 'port closed'], [reset => 'connection reset']) {
    my ($which, $what) = @$case;
    $r = fetch_json("https://example.com:$p{$which}/");
    is($r->{rc}, 0, "primary blocked ($what): fetched")
        or diag($r->{out} . $r->{err});
    is($r->{body}, "the real example.com\n", '... the real page');
    is($r->{j}{routes}[0]{result}, 'failed', '... the URL\'s host failed');
    is($r->{j}{route}, "127.0.0.1:$port", '... the IP:port route answered');
}
like(slurp($log{reset}), qr/reset/, 'the resetting server was tried');

# Every route down, Tor's port closed too: nothing anywhere, exit 5.
my $own = onion_of($sk{'down.test'});
$r = fetch("https://down.test:$p{closed}/", '-o', "$d/out-down");
is($r->{rc}, 5, 'every route down: exit 5') or diag($r->{err});
like($r->{err}, qr/^sk: https:\/\/down\.test:$p{closed}\/: no route gave the page; tried, in order:\nsk:   down\.test:$p{closed} \(the URL's host\): failed: .*\nsk:   127\.0\.0\.1:$p{dead1} \(address\): failed: .*\nsk:   \[::1\]:$p{dead2} \(address\): failed: .*\nsk:   \Q$own\E:$p{closed} \(the SK's own onion, through Tor at 127\.0\.0\.1:$p{dead3}\): failed: .*\n\z/,
    '... each route listed with why') or diag($r->{err});
ok(!-e "$d/out-down", '... and -o left no file');
is(scalar(() = glob("$d/out-down*")), 0, '... nor a temporary one');
$r = fetch_json("https://down.test:$p{closed}/");
is($r->{j}{decision}, 'undecided', 'json: undecided');
is_deeply([map { "$_->{kind}/$_->{result}" } @{$r->{j}{routes}}],
    ['primary/failed', 'address/failed', 'address/failed',
     'sk-onion/failed'], 'json: every route failed');

# The URL's host an impostor, every other route down (Tor's port closed):
# the impostor's reject is the first route's alone; each route after it
# that never reached TLS reports its own connection failure.
$r = fetch("https://down.test:$p{imp}/");
is($r->{rc}, 1, 'impostor, then every route down: exit 1') or diag($r->{err});
like($r->{err}, qr/^sk: https:\/\/down\.test:$p{imp}\/: no route gave the page; tried, in order:\nsk:   down\.test:$p{imp} \(the URL's host\): refused: reject \(no-carrier\): .*\nsk:   127\.0\.0\.1:$p{dead1} \(address\): failed: (?!reject).*\nsk:   \[::1\]:$p{dead2} \(address\): failed: (?!reject).*\nsk:   \Q$own\E:$p{imp} \(the SK's own onion, through Tor at 127\.0\.0\.1:$p{dead3}\): failed: (?!reject).*\n\z/,
    '... each later route its own failure, not the impostor\'s reject')
    or diag($r->{err});
unlike($r->{err}, qr/no carrier.*\n.*no carrier/s,
    '... the reject is reported once');

# No SK: plain verified HTTPS, no fallback; the CA checks still apply.
$r = fetch_json("https://nosk.test:$port/");
is($r->{rc}, 0, 'no SK: fetched') or diag($r->{err});
is($r->{body}, "the real nosk.test\n", '... the page');
is($r->{j}{decision}, 'none', '... decision none');
is($r->{j}{check}, 'no-sk', '... no SK');
is(scalar @{$r->{j}{routes}}, 1, '... one route');
NginxTest::make_ca("$d/other") if mkdir "$d/other";
$r = sk('fetch', '--trust', $trust, '--cache', $cache, '--cacert',
    "$d/other/ca.pem", '--resolve', "nosk.test:$port:127.0.0.1",
    "https://nosk.test:$port/");
is($r->{rc}, 1, 'no SK, a certificate the CAs do not vouch for: refused')
    or diag($r->{err});
like($r->{err}, qr/the URL's host\): refused: certificate: /,
    '... by the CA check, no fallback') or diag($r->{err});

# A revoked SK (Unbind): no SK in force, so ordinary HTTPS.
$r = fetch_json("https://revoked.test:$port/", '-v');
is($r->{rc}, 0, 'revoked SK: fetched') or diag($r->{err});
is($r->{j}{decision}, 'none', '... decision none');
is($r->{j}{check}, 'unbound', '... the SK was revoked');
is(scalar @{$r->{j}{routes}}, 1, '... no alternate routes');

# http://: the SK demands TLS, so nothing is sent; a name without an SK
# is fetched as is.
spew($log{plainrec}, '');
$r = fetch("http://example.com:$p{plainrec}/");
is($r->{rc}, 4, 'http:// for an SK covering https: exit 4')
    or diag($r->{err});
like($r->{err}, qr/refused, nothing sent: example\.com has an SK .* must not be used without TLS; use https:\/\//,
    '... saying why') or diag($r->{err});
is(slurp($log{plainrec}), '', '... and nothing was sent');
$r = fetch("http://nosk.test:$p{http}/", '-v');
is($r->{rc}, 0, 'http:// for a name without an SK: fetched');
is($r->{out}, "the real nosk.test\n", '... the page');
like($r->{err}, qr/plain HTTP, unchecked/, '... saying it is unchecked');

# Hostile routes: refused with reasons, skipped; the valid one answers,
# and the SOCKS port sees nobody.
my $slog = "$d/socks.log";
my $socks = start_peer('socks', $p{socks}, $slog, 'garbage');
$r = sk('fetch', '--trust', $trust, '--cache', $cache, '--cacert', $ca,
    '--tor', "127.0.0.1:$p{socks}", '--resolve',
    "hostile.test:$p{closed}:127.0.0.1", '--json', '-o', "$d/body",
    "https://hostile.test:$p{closed}/");
my $j = eval { decode_json($r->{out}) } // {};
is($r->{rc}, 0, 'hostile routes: the valid one answers') or diag($r->{err});
is(slurp("$d/body"), "the real hostile.test\n", '... the real page');
my %why = map { ($_->{route} => $_->{why}) }
    grep { $_->{kind} eq 'invalid' } @{$j->{routes}};
like($why{'evil.example:443'} // '', qr/a DNS name is not a route/,
    '... a DNS name: refused');
like($why{'1.2.3.4'} // '', qr/needs ":PORT"/, '... no port: refused');
like($why{'0.0.0.0:443'} // '', qr/not a destination/,
    '... 0.0.0.0: refused');
like($why{'[::1]'} // '', qr/needs ":PORT"/, '... [::1]: refused');
like($why{'abc.onion'} // '', qr/onion address: length 9/,
    '... a bad onion: refused');
like($why{('a' x 255) . '...'} // '', qr/300 characters/,
    '... an overlong route: refused');
is(scalar(grep { $_->{result} eq 'skipped' } @{$j->{routes}}), 6,
    '... all six skipped');
is(slurp($slog), '', '... and nothing reached the SOCKS port');

# The same with the address route refused too (a CA we do not trust):
# only the SK's own onion goes to SOCKS, as a name for the proxy.
$own = onion_of($sk{'hostile.test'});
$r = sk('fetch', '--trust', $trust, '--cache', $cache, '--cacert',
    "$d/other/ca.pem", '--tor', "127.0.0.1:$p{socks}", '--resolve',
    "hostile.test:$p{closed}:127.0.0.1", '--connect-timeout', 10,
    "https://hostile.test:$p{closed}/");
is($r->{rc}, 1, 'every valid route refused or failed: exit 1 (refused)');
like($r->{err}, qr/127\.0\.0\.1:$port \(address\): refused: certificate/,
    '... the address route refused by the CA check') or diag($r->{err});
ok(wait_until(sub { slurp($slog) =~ /^connect/m }, 5),
    '... the onion went to SOCKS') or diag($r->{err} . slurp($slog));
is(join('', grep { /^connect/ } split /^/, slurp($slog)),
    "connect 3 $own $p{closed}\n",
    '... only the SK\'s onion, by name (ATYP 3), never another name')
    or diag(slurp($slog));
unlike(slurp($slog), qr/^after/m, '... and nothing after the garbage reply');
stop_peer($socks);

# Hostile SOCKS proxies: a clear error within the timeouts.
for my $mode (qw(garbage truncated hang refuse)) {
    spew($slog, '');
    $socks = start_peer('socks', $p{socks}, $slog, $mode);
    my $t0 = time;
    $r = sk('fetch', '--trust', $trust, '--cache', $cache, '--cacert', $ca,
        '--tor', "127.0.0.1:$p{socks}", '--connect-timeout', 2,
        '--resolve', "down.test:$p{closed}:127.0.0.1",
        "https://down.test:$p{closed}/");
    my $took = time - $t0;
    is($r->{rc}, 5, "SOCKS proxy answering $mode: exit 5")
        or diag($r->{err});
    like($r->{err}, qr/through Tor at 127\.0\.0\.1:$p{socks}\): failed: \S/,
        '... naming the onion route and the error') or diag($r->{err});
    ok($took < 12, "... in ${\ int($took)} s") or diag($r->{err});
    unlike(slurp($slog), qr/^after/m, '... nothing sent after the reply');
    stop_peer($socks);
}
# --max-time bounds the whole run, even with Tor's longer connect time.
$socks = start_peer('socks', $p{socks}, $slog, 'hang');
my $t0 = time;
$r = sk('fetch', '--trust', $trust, '--cache', $cache, '--cacert', $ca,
    '--tor', "127.0.0.1:$p{socks}", '--max-time', 3, '--resolve',
    "down.test:$p{closed}:127.0.0.1", "https://down.test:$p{closed}/");
ok(time - $t0 < 8, '--max-time 3 ends a hanging proxy') or diag($r->{err});
is($r->{rc}, 5, '... exit 5');
stop_peer($socks);

# Malformed URLs and options: usage errors, nothing attempted.
for my $u ('ftp://example.com/', 'https://', 'https:///x',
        'https://127.0.0.1/', 'https://[::1]/', 'https://exa mple.com/',
        'https://user@example.com/', 'https://example.com:0/',
        'https://example.com:99999/', 'https://example.com:1:2/',
        'https://EXAMPLE..com/', 'example.com', "https://example.com\n/") {
    $r = sk('fetch', '--trust', $trust, $u);
    (my $shown = $u) =~ s/\n/\\n/g;
    is($r->{rc}, 2, "malformed URL \"$shown\": usage error")
        or diag($r->{err});
}
$r = sk('fetch', '--trust', $trust, '--json', "https://example.com/");
is($r->{rc}, 2, '--json without -o: usage error');
like($r->{err}, qr/give -o FILE/, '... saying why');
$r = sk('fetch', '--trust', $trust, '-H', "X: a\r\nHost: evil",
    "https://example.com/");
is($r->{rc}, 2, 'a header with a line break: usage error');
$r = sk('fetch', '--trust', $trust, '--tor', 'tor.example:9050',
    "https://example.com/");
is($r->{rc}, 2, '--tor must be numeric');
$r = sk('fetch', '--trust', "$d/none.conf", "https://example.com/");
is($r->{rc}, 5, 'no trust file: exit 5');

# -o is written in full or not at all.
spew("$d/keep", "old\n");
$r = fetch("https://down.test:$p{closed}/", '-o', "$d/keep");
is(slurp("$d/keep"), "old\n", 'a failed fetch leaves -o FILE as it was');
$r = fetch("https://example.com:$port/", '-o', "$d/keep");
is(slurp("$d/keep"), "the real example.com\n", 'a good one replaces it');
is(scalar(() = glob("$d/keep.tmp*")), 0, '... no temporary file left');
$r = fetch("https://example.com:$port/", '-o', '/dev/null');
is($r->{rc}, 0, '-o /dev/null: fetched') or diag($r->{err});
ok(-c '/dev/null', '... and /dev/null is still a device');
$r = fetch("https://example.com:$port/", '-o', '-');
is($r->{out}, "the real example.com\n", '-o -: stdout');

# The C API: docs/client.md's example, compiled as the text stands, run
# against the same servers.
SKIP: {
    skip 'no C compiler', 14 unless has_cmd('cc');
    my $doc = slurp("$SKTest::ROOT/docs/client.md");
    my ($src) = $doc =~ /```c\n(.*?)```/s;
    spew("$d/sk_get.c", $src // '');
    # The libraries as the text lists them, so the text cannot go stale.
    my ($libs) = $doc =~ /^cc -o sk_get sk_get\.c .*?libsk\.a (.*)$/m;
    my @libs = split ' ', $libs // '';
    my $build = "$SKTest::ROOT/" . ($ENV{BUILD} // 'build');
    my @san = ($ENV{SAN} // '') eq '1'
        ? ('-fsanitize=address,undefined') : ();
    $r = run_cmd(['cc', '-std=c11', '-Wall', '-Wextra', '-Werror', @san,
        '-o', "$d/sk_get", "$d/sk_get.c", "-I$SKTest::ROOT/common/include",
        "$build/libsk.a", @libs]);
    is($r->{rc}, 0, 'docs/client.md: the example compiles') or diag($r->{err});
    my $get = sub {
        my ($cafile, @args) = @_;
        return run_cmd(['env', "SSL_CERT_FILE=$cafile", "$d/sk_get",
            $trust, @args, '127.0.0.1']);
    };
    $r = $get->($ca, 'example.com', $port);
    is($r->{rc}, 0, 'example: the real site') or diag($r->{err});
    like($r->{out}, qr/\r\n\r\nthe real example\.com\n\z/, '... its page');
    like($r->{err}, qr/^sk_get: accept \(carrier\): carrier for example\.com/,
        '... accepted by the SK') or diag($r->{err});
    spew($log{imp}, '');
    $r = $get->($ca, 'example.com', $p{imp});
    is($r->{rc}, 1, 'example: the impostor refused');
    like($r->{err}, qr/^sk_get: refused: example\.com has an SK .* presented no carrier/,
        '... saying why') or diag($r->{err});
    like(slurp($log{imp}), qr/^handshake failed/, '... in the handshake');
    unlike(slurp($log{imp}), qr/received|GET/, '... which got no request');
    # No mirror reachable, no staple, no cache: undecided, nothing sent.
    (my $cut = slurp($trust)) =~ s{^mirror = \S+}
        {'mirror = http://127.0.0.1:' . free_port()}me or die 'no mirror';
    spew("$d/trust-cut.conf", $cut);
    $r = run_cmd(['env', "SSL_CERT_FILE=$ca", "$d/sk_get",
        "$d/trust-cut.conf", 'example.com', $p{imp}, '127.0.0.1']);
    is($r->{rc}, 5, 'example: no mirror reachable: undecided');
    like($r->{err}, qr/^sk_get: undecided: no mirror gave a fresh enough answer for example\.com \(0 of 3 timelines fresh: nothing answered, no staple, nothing cached\)$/m,
        '... saying why') or diag($r->{err});
    $r = $get->($ca, 'nosk.test', $port);
    is($r->{rc}, 0, 'example: a name without an SK') or diag($r->{err});
    like($r->{err}, qr/^sk_get: none \(no-sk\)/, '... none');
    $r = $get->("$d/other/ca.pem", 'example.com', $port);
    is($r->{rc}, 1, 'example: the SK accepts, OpenSSL\'s CA check still '
        . 'applies');
    like($r->{err}, qr/refused: (unable to get local issuer certificate|self-signed certificate in certificate chain)/,
        '... saying so') or diag($r->{err});
}

is($ngx->alerts, '', 'no alerts in the nginx log');
$ngx->stop;
stop_world($w);
done_testing();
