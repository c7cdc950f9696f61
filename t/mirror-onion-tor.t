#!/usr/bin/perl

# mirror-onion-tor.t -- the mirror path censorship cannot simply cut
# (issue 38), on a private Tor network on loopback (t/lib/SKTorNet.pm, one
# for the file): sk-mirror publishes itself as an onion service
# (onion_dir: its HiddenServiceDir and DIR.torrc, which a tor includes),
# and a client's trust file names that onion beside the mirror's URL.
#   the URL blocked (a listener that takes the connection and never
#   answers: a timeout, not a refusal): sk verify, sk fetch and the C API
#   (tls_drive) ask the onion through Tor, each query with its nonce, and
#   decide: the impostor is refused, the real site fetched
#   mirror_tor = always: only the onion is asked, the URL never sees a
#   query (no mirror learns the client's address)

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use IO::Socket::INET;
use JSON::PP;
use Test::More;

use SKTest;
use NginxTest;
use SKTimeline;
use SKMirror;
use SKSite;
use SKTorNet;

my $DRIVE = "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/tests/tls_drive';
my $skip = nginx_skip() // tor_skip();
plan skip_all => $skip if $skip;
plan skip_all => 'sk-timeline or sk-mirror not built'
    unless -x $SKTimeline::TL && -x $SKMirror::MR;
plan skip_all => "no $DRIVE" unless -x $DRIVE;

my ($ngx, $d, $port) = NginxTest->setup;
my $w = world($d, names => { 'example.com' => 'https' },
    mirror => { onion_dir => "$d/m-onion" });
my $m = $w->{mirror};

# sk-mirror's onion service, as it wrote it at its start.
chomp(my $onion = -e "$d/m-onion/hostname" ? slurp("$d/m-onion/hostname")
    : '');
ok($onion =~ /^[a-z2-7]{56}\.onion$/, "sk-mirror's onion: $onion")
    or diag(slurp($m->{log}));
like(slurp("$d/m-onion.torrc"), qr/\AHiddenServiceDir \Q$d\E\/m-onion\nHiddenServicePort 80 127\.0\.0\.1:\Q$m->{port}\E\n\z/,
    '... and the torrc snippet a tor includes: port 80 to its listener');
like(slurp($m->{log}), qr/clients list it as: mirror = URL KEY onion=\Q$onion\E$/m,
    '... its log says how clients list it');
my $st = decode_json(SKTimeline::http('GET', "$m->{url}/status")->{body});
is($st->{onion}, "$onion:80", '... and /status shows it');

# The real site, and an impostor (another key, no carrier) on its own
# port.
my $ca = NginxTest::make_ca($d);
my $pi = $ngx->port('impostor');
my ($icert, $ikey) = make_cert($d, 'example.com', 'rsa');
mkdir "$d/www-imp";
spew("$d/www-imp/index.html", "impostor\n");
$ngx->write_conf(site($w, $d, $port, 'example.com')
    . "    server {\n        listen 127.0.0.1:$pi ssl;\n"
    . "        server_name example.com;\n        root $d/www-imp;\n"
    . "        access_log $d/access-imp.log;\n"
    . "        ssl_certificate $icert;\n        ssl_certificate_key $ikey;\n"
    . "    }\n");
$ngx->start;

# The direct path blocked: it connects, then nothing ever comes.
my $blackhole = IO::Socket::INET->new(LocalAddr => '127.0.0.1',
    LocalPort => 0, Listen => 128) or die "blackhole: $!";
my $blocked = 'http://127.0.0.1:' . $blackhole->sockport;

my $net = SKTorNet->start;
$net->onion(include => "$d/m-onion.torrc");
my $socks = $net->client;
ok($net->wait_onion($onion, 80), 'the mirror\'s onion is reachable')
    or diag($net->last_error);

my $tlines = join('', map { "timeline = $_ $d/tl$_/timeline.pub\n" }
    7, 8, 9);
sub trust {
    my ($name, $url, $more) = @_;
    spew("$d/$name.conf", $tlines . "mirror = $url $m->{pub} onion=$onion\n"
        . "tor = 127.0.0.1:$socks\nmirror_timeout = 1\n" . ($more // ''));
    return "$d/$name.conf";
}
my $trust = trust('blocked', $blocked);
my $n = 0;
sub verify {
    my ($tr, $p) = @_;
    my $r = sk('verify', '--trust', $tr, '--cache', "$d/cache" . $n++,
        '--connect', "127.0.0.1:$p", '--json', "https://example.com:$p");
    $r->{j} = eval { decode_json($r->{out}) } // {};
    return $r;
}
sub requests {
    return -e "$d/access-imp.log" ? () = slurp("$d/access-imp.log") =~ /GET/g
        : 0;
}

# sk verify: the URL times out, the onion answers.
my $r = verify($trust, $pi);
is($r->{rc}, 1, 'sk verify, the mirror blocked: the impostor is rejected')
    or diag($r->{out} . $r->{err});
my @tries = @{$r->{j}{mirrors} // []};
is($tries[0]{url} // '', $blocked, '... the mirror\'s URL asked first');
like($tries[0]{result} // '', qr/^unreachable: .*(?i:timed? ?out)/,
    '... and it timed out (blocked, not refused)');
is($tries[1]{url} // '', "http://$onion", '... then its onion');
like($tries[1]{result} // '', qr/^fresh: 3 of 3 /, '... which answered')
    or diag(explain(\@tries));
is($r->{j}{source}, "http://$onion", '... and decided');
$r = verify($trust, $port);
is($r->{rc}, 0, 'sk verify, the real site: accepted from the onion\'s answer')
    or diag($r->{out} . $r->{err});

# sk fetch: the real page; the impostor gets nothing.
$r = sk('fetch', '--trust', $trust, '--cache', "$d/cache-f1", '--cacert',
    $ca, '--resolve', "example.com:$port:127.0.0.1", '-o', "$d/body",
    "https://example.com:$port/");
is($r->{rc}, 0, 'sk fetch, the mirror blocked: fetched') or diag($r->{err});
is(-e "$d/body" ? slurp("$d/body") : '', "the real example.com\n",
    '... the real page');
my $before = requests();
$r = sk('fetch', '--trust', $trust, '--cache', "$d/cache-f2", '--cacert',
    $ca, '--resolve', "example.com:$pi:127.0.0.1", '-o', "$d/body2",
    "https://example.com:$pi/");
is($r->{rc}, 1, 'sk fetch, the impostor: refused') or diag($r->{err});
is(requests(), $before, '... no request reached it');

# The C API (sk/tls.h, with the fetch through Tor: tests/unit/tls_drive.c).
$r = run_cmd([$DRIVE, 'lookup', $trust, "$d/cache-c1", 'example.com', $pi,
    '127.0.0.1', $ca]);
is($r->{out}, "decision=reject sent=no\n",
    'sk_tls_lookup, the mirror blocked: reject') or diag($r->{err});
$r = run_cmd([$DRIVE, 'prepare', $trust, "$d/cache-c2", 'example.com',
    $port, '127.0.0.1', $ca]);
is($r->{out}, "decision=accept sent=yes\n",
    'sk_tls_prepare, the real site: accept, the request sent')
    or diag($r->{err});

# mirror_tor = always: the URL (a server that logs what it gets) is never
# asked, the onion answers.
mkdir "$d/fm";
mkdir "$d/fm/www";
my $fm = SKMirror::serve_forged("$d/fm");
$r = verify(trust('always', $fm->{url}, "mirror_tor = always\n"), $port);
is($r->{rc}, 0, 'mirror_tor = always: accepted') or diag($r->{err});
is($r->{j}{source}, "http://$onion", '... from the onion');
is(scalar(@{$r->{j}{mirrors} // []}), 1, '... the only mirror path asked');
unlike(slurp("$d/fm.log"), qr/GET/,
    '... the mirror\'s URL never saw a query');

$net->stop;
is($ngx->alerts, '', 'no alerts in the nginx log');
$ngx->stop;
stop_daemon($fm->{pid});
stop_world($w);
done_testing();
