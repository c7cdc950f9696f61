#!/usr/bin/perl

# nginx-metrics.t -- sovereign_key_metrics: the module's counters in the
# Prometheus text format, from a shared memory zone, with a real
# sk-timeline and sk-mirror behind the staple and nginx running 2 workers:
#   handshakes with the carrier, per server label, staples requested and
#     sent (sk staple show asks for 0xFF53, openssl s_client does not),
#     staple refreshes by result and cache errors (a server whose mirror
#     and cache are down), carrier expiry, staple age and served gauges;
#   a server with an ECDSA certificate that has a carrier and an RSA one
#     that has none: only the ECDSA handshakes count as carrying one;
#   connections spread over both workers (reuseport), and every answer,
#     whichever worker gives it, holds the sum of both;
#   `promtool check metrics` on the answer; a real Prometheus scrapes it
#   and runs the Grafana dashboard's nginx queries on it;
#   the alert rules on it, each staple fault caused for real and named by
#     its cause: a server whose mirror is down (and cache), one whose trust
#     file names a timeline the mirror does not carry (milter-staple.t
#     stops a timeline); nginx stopped: SKNginxDown;
#   a reload keeps the counts.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Time::Local qw(timegm);

use SKTest;
use NginxTest;
use SKSite;
use SKPrometheus;
use SKTimeline ();
use SKMirror ();

my ($ngx, $d, $pe) = NginxTest->setup;
plan skip_all => 'sk-timeline or sk-mirror not built'
    unless -x $SKTimeline::TL && -x $SKMirror::MR;
plan skip_all => 'no openssl, curl, prometheus or promtool'
    unless has_cmd('openssl') && have_prometheus();

my $w = world($d, names => { 'example.com' => 'https',
    'other.example' => 'https', 'missing.example' => 'https' },
    tids => [7, 8]);
my $m = $w->{mirror};
my $trust = $w->{trust};
(my $skpub = $w->{sk}{'example.com'}) =~ s/\.key$/.pub/;
(my $opub = $w->{sk}{'other.example'}) =~ s/\.key$/.pub/;
(my $mpub = $w->{sk}{'missing.example'}) =~ s/\.key$/.pub/;

spew("$d/srv-trust.conf", slurp($trust) . "staple_retry = 1\n");
# missing.example's server trusts a timeline 10 no mirror carries (as one
# Defunct or reneged, long gone from the answers).
spew("$d/miss-trust.conf", slurp($trust) . "timeline = 10 $d/tl7/timeline.pub"
    . " sk-timeline-10\nstaple_retry = 1\n");
# other.example's server: its mirror and its cache are down.
my $dead = free_port();
(my $bad = slurp($trust)) =~ s/\Q$m->{url}\E/http:\/\/127.0.0.1:$dead/g;
spew("$d/bad-trust.conf", $bad . "staple_retry = 1\n");

NginxTest::make_ca($d);
my ($ec, $eckey) = make_cert($d, 'example.com', 'ec');
my ($rsa, $rsakey) = make_cert($d, 'example.com', 'rsa');
my ($oc, $ockey) = make_cert($d, 'other.example', 'ec');
my ($mc, $mckey) = make_cert($d, 'missing.example', 'ec');
my $carrier = make_carrier($w->{sk}{'example.com'}, $ec, 'example.com',
    "$d/c-ec.pem");
make_carrier($w->{sk}{'other.example'}, $oc, 'other.example', "$d/c-o.pem");
make_carrier($w->{sk}{'missing.example'}, $mc, 'missing.example',
    "$d/c-m.pem");
mkdir "$d/scache";
chmod 0777, "$d/scache";

# A second server stapling example.com: still one series for the name.
my ($po, $pm, $p2, $pd, $pmiss) = map { $ngx->port($_) } qw(other metrics
    second dual missing);
$ngx->write_conf(<<"EOF", workers => 2);
    log_format pid '\$pid';
    server {
        listen 127.0.0.1:$pe ssl reuseport;
        server_name example.com;
        access_log $d/pids.log pid;
        ssl_certificate $ec;
        ssl_certificate_key $eckey;
        ssl_session_cache off;
        ssl_session_tickets off;
        sovereign_key_public $skpub;
        sovereign_key_carrier $d/c-ec.pem;
        sovereign_key_staple extension;
        sovereign_key_trust $d/srv-trust.conf;
        sovereign_key_staple_cache $d/scache;
        location = /sk { sovereign_key_status; }
    }
    server {
        listen 127.0.0.1:$p2 ssl;
        server_name example.com;
        ssl_certificate $ec;
        ssl_certificate_key $eckey;
        sovereign_key_public $skpub;
        sovereign_key_carrier $d/c-ec.pem;
        sovereign_key_staple extension;
        sovereign_key_trust $d/srv-trust.conf;
        sovereign_key_staple_cache $d/scache;
    }
    server {
        listen 127.0.0.1:$po ssl;
        server_name other.example;
        ssl_certificate $oc;
        ssl_certificate_key $ockey;
        sovereign_key_public $opub;
        sovereign_key_carrier $d/c-o.pem;
        sovereign_key_staple extension;
        sovereign_key_trust $d/bad-trust.conf;
        sovereign_key_staple_cache redis://127.0.0.1:$dead;
    }
    server {
        listen 127.0.0.1:$pmiss ssl;
        server_name missing.example;
        ssl_certificate $mc;
        ssl_certificate_key $mckey;
        sovereign_key_public $mpub;
        sovereign_key_carrier $d/c-m.pem;
        sovereign_key_staple extension;
        sovereign_key_trust $d/miss-trust.conf;
        sovereign_key_staple_cache $d/scache;
    }
    server {
        listen 127.0.0.1:$pd ssl;
        server_name dual.example.com;
        ssl_certificate $rsa;
        ssl_certificate_key $rsakey;
        ssl_certificate $ec;
        ssl_certificate_key $eckey;
        ssl_session_cache off;
        ssl_session_tickets off;
        sovereign_key_public $skpub;
        sovereign_key_carrier $d/c-ec.pem;
    }
    server {
        listen 127.0.0.1:$pm reuseport;
        location = /metrics { sovereign_key_metrics; }
    }
EOF
my $r = $ngx->test_conf;
is($r->{rc}, 0, 'nginx -t accepts sovereign_key_metrics') or diag($r->{err});
$ngx->start;

sub metrics {
    my $s = scrape("http://127.0.0.1:$pm/metrics");
    my %v;
    $v{$1} = $2 + 0 while $s->{body} =~ /^(\S+) (\S+)$/mg;
    return ($s, \%v);
}

sub served {
    my $r = run_cmd(['curl', '-sk', '--resolve',
        "example.com:$pe:127.0.0.1", "https://example.com:$pe/sk"]);
    return (eval { decode_json($r->{out}) } // {})->{staple}{served};
}
# Both workers hold the staple before any handshake is counted: 24
# connections in a row served it (reuseport spreads them by hash, so 6
# all reached one worker in 1 run of 32, while the other had none yet).
ok(wait_until(sub { !grep { !served() } 1 .. 24 }, 30),
    'the workers fetched the staple') or diag($ngx->log);
my ($s, $v0) = metrics();

# Real handshakes: 6 that ask for the staple, 6 that do not.
my $asked = 6;
for (1 .. $asked) {
    $r = sk('staple', 'show', '--connect', "127.0.0.1:$pe", '--servername',
        'example.com', '--trust', $trust);
    is($r->{rc}, 0, 'sk staple show: a staple that checks')
        or diag($r->{out} . $r->{err});
}
for (1 .. 6) {
    $r = run_cmd(['sh', '-c', "printf 'GET /sk HTTP/1.0\\r\\nHost: "
        . "example.com\\r\\n\\r\\n' | openssl s_client -quiet -connect "
        . "127.0.0.1:$pe -servername example.com 2>/dev/null"]);
    like($r->{out}, qr/"served":true/, 'openssl s_client: a plain handshake');
}

($s, my $v) = metrics();
is($s->{code}, 200, '/metrics answers');
is($s->{type}, 'text/plain; version=0.0.4; charset=utf-8',
    '... in the Prometheus text format');
$r = promtool({ stdin => $s->{body} }, 'check', 'metrics');
is($r->{rc}, 0, '... which promtool checks') or diag($r->{out} . $r->{err});
like($s->{body}, qr/^# HELP sk_nginx_carrier_handshakes_total .+\n# TYPE sk_nginx_carrier_handshakes_total counter$/m,
    '... HELP and TYPE lines');

my $ex = '{server="example.com"}';
sub delta { ($v->{$_[0]} // 0) - ($v0->{$_[0]} // 0) }
is(delta("sk_nginx_staple_requests_total$ex"), $asked,
    'every ClientHello asking for 0xFF53 counted, for its server');
is(delta("sk_nginx_staples_sent_total$ex"), $asked, 'each got the staple');
is(delta("sk_nginx_carrier_handshakes_total$ex"), $asked + 6,
    'full handshakes with the carrier, asking or not');
is(delta("sk_nginx_handshakes_total$ex"), $asked + 6, '... all of them');
like($s->{body}, qr/^sk_nginx_build_info\{version="[^"]+",nginx="[\d.]+"\} 1$/m,
    'the build: sk and nginx versions');

# An RSA certificate without a carrier beside an ECDSA one with: 4
# handshakes on each, and only the ECDSA ones carried a carrier (every
# handshake of the server counted once had it any carrier).
sub total {
    my ($x, $name) = @_;
    my $t = 0;
    $t += $x->{$_} for grep { /^\Q$name\E(\{|$)/ } keys %$x;
    return $t;
}
my (undef, $d0) = metrics();
for my $alg (('ecdsa_secp256r1_sha256') x 4, ('rsa_pss_rsae_sha256') x 4) {
    $r = run_cmd(['sh', '-c', "openssl s_client -connect 127.0.0.1:$pd "
        . "-servername dual.example.com -sigalgs $alg -showcerts "
        . "</dev/null 2>/dev/null"]);
    is(scalar(() = $r->{out} =~ /BEGIN CERTIFICATE/g),
        $alg =~ /^ecdsa/ ? 3 : 2, "$alg: a full handshake, "
        . ($alg =~ /^ecdsa/ ? 'the carrier after the chain' : 'no carrier'));
}
my (undef, $d1) = metrics();
is(total($d1, 'sk_nginx_carrier_handshakes_total')
    - total($d0, 'sk_nginx_carrier_handshakes_total'), 4,
    'carrier handshakes: the 4 whose chain carried the carrier, not all 8');
is($d1->{'sk_nginx_handshakes_total{server="dual.example.com"}'}
    - ($d0->{'sk_nginx_handshakes_total{server="dual.example.com"}'} // 0),
    8, '... of 8 full handshakes on that server');

# Both workers served, and any worker's answer is the sum.
my %pids;
$pids{$_}++ for split /\n/, slurp("$d/pids.log");
is(scalar(keys %pids), 2, 'the connections went to both workers')
    or diag(explain(\%pids));
my %total;
for (1 .. 8) {
    my (undef, $x) = metrics();
    $total{$x->{"sk_nginx_carrier_handshakes_total$ex"}}++;
}
is_deeply([keys %total], [$v->{"sk_nginx_carrier_handshakes_total$ex"}],
    'every answer (from either worker) gives the same sum');

# The gauges.
my %mon = (Jan => 0, Feb => 1, Mar => 2, Apr => 3, May => 4, Jun => 5,
    Jul => 6, Aug => 7, Sep => 8, Oct => 9, Nov => 10, Dec => 11);
my ($mo, $dd, $hh, $mi, $ss, $yy) = run_cmd(['openssl', 'x509', '-in',
    $carrier, '-noout', '-enddate'])->{out}
    =~ /=(\w+)\s+(\d+) (\d+):(\d+):(\d+) (\d+) GMT/;
my $left = timegm($ss, $mi, $hh, $dd, $mon{$mo}, $yy) - time;
my $exp = $v->{'sk_nginx_carrier_expiry_seconds{name="example.com"}'};
ok(defined $exp && abs($exp - $left) <= 5,
    "carrier expiry: $left s left") or diag($s->{body});
ok(defined $v->{'sk_nginx_carrier_expiry_seconds{name="other.example"}'},
    '... per name');
my $age = $v->{'sk_nginx_staple_age_seconds{name="example.com"}'};
ok(defined $age && $age >= 0 && $age < 600, 'staple age')
    or diag($s->{body});
is(scalar(() = $s->{body} =~ /^sk_nginx_staple_age_seconds\{name="example.com"\}/mg),
    1, '... one series for a name two servers staple');
ok(!defined $v->{'sk_nginx_staple_age_seconds{name="other.example"}'},
    '... none for a name that never had a staple');
is($v->{'sk_nginx_staple_served{name="example.com"}'}, 1,
    'served: example.com\'s staple');
is($v->{'sk_nginx_staple_served{name="other.example"}'}, 0,
    '... not other.example\'s');
ok(($v->{'sk_nginx_staple_refreshes_total{server="example.com",'
    . 'result="ok"}'} // 0) >= 1,
    'successful refreshes counted') or diag($s->{body});

# other.example's refreshes fail, every second, and its cache is down:
# the cause named (its mirror is down).
my $oe = '{server="other.example"';
ok(wait_until(sub { ((metrics())[1]{"sk_nginx_staple_refreshes_total$oe,"
    . 'result="mirror_down"}'} // 0) >= 4 }, 10),
    'staple refresh failures counted, with their cause: the mirror is down');
ok((metrics())[1]{"sk_nginx_cache_errors_total$oe}"} >= 4,
    'cache errors counted');

# A real Prometheus reads the same, with the alert rules.
my $p = start_prometheus($d, { 'sk-nginx' => ["127.0.0.1:$pm"] },
    ["$SKTest::ROOT/dist/prometheus/sk-alerts.yml"]);
ok($p->{up}, 'prometheus is up') or diag(slurp($p->{log}));
my $hs = $v->{"sk_nginx_carrier_handshakes_total$ex"};
ok(prom_wait($p, "sk_nginx_carrier_handshakes_total$ex", sub { $_[0] >= $hs },
    15), 'Prometheus scraped the handshakes');
ok(prom_wait($p, 'sk_nginx_carrier_expiry_seconds{name="example.com"}',
    sub { abs($_[0] - $left) < 30 }, 5), '... and the carrier expiry');
is_deeply([dashboard_check($p, 'nginx', (metrics())[0]{body})], [],
    'dashboard: the nginx queries run, on the module\'s metrics');

# Each staple fault names its cause.
sub pending {
    my ($name, $sel, $secs) = @_;
    return prom_wait($p, "count(ALERTS{alertname=\"$name\",$sel,"
        . 'alertstate="pending"})', sub { $_[0] == 1 }, $secs // 15);
}
sub alerts {
    my $a = prom_query($p, 'ALERTS') // [];
    return join ' ', sort map { join '/', $_->{metric}{alertname},
        $_->{metric}{server} // $_->{metric}{name} // '' } @$a;
}
ok(pending('SKNginxStapleMirrorDown', 'server="other.example"'),
    'other.example (its mirror down): SKNginxStapleMirrorDown');
ok(pending('SKNginxCacheErrors', 'server="other.example"'),
    '... SKNginxCacheErrors (its cache down)');
ok(pending('SKNginxStapleTimelineMissing', 'server="missing.example"'),
    'missing.example (its trust file names timeline 10): '
    . 'SKNginxStapleTimelineMissing');
ok(pending('SKNginxStapleNotServed', 'name="missing.example"')
    && pending('SKNginxStapleNotServed', 'name="other.example"'),
    'neither gets a staple: SKNginxStapleNotServed for both names');
is(alerts(), 'SKNginxCacheErrors/other.example '
    . 'SKNginxStapleMirrorDown/other.example '
    . 'SKNginxStapleNotServed/missing.example '
    . 'SKNginxStapleNotServed/other.example '
    . 'SKNginxStapleTimelineMissing/missing.example',
    '... and no other alert (example.com is healthy)');


# A reload keeps the zone and its counts; the new workers count on.
my $before = (metrics())[1]{"sk_nginx_carrier_handshakes_total$ex"};
$ngx->reload;
run_cmd(['sh', '-c', "openssl s_client -connect 127.0.0.1:$pe -servername "
    . "example.com </dev/null >/dev/null 2>&1"]);
is((metrics())[1]{"sk_nginx_carrier_handshakes_total$ex"}, $before + 1,
    'a reload keeps the counts, and the new workers add to them');

$ngx->stop;
ok(pending('SKNginxDown', 'job="sk-nginx"'), 'nginx stopped: SKNginxDown');
kill 'TERM', $p->{pid};
is($ngx->alerts, '', 'no alerts or sanitizer reports');
stop_world($w);

done_testing();
