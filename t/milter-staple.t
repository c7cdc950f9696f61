#!/usr/bin/perl
# sk-milter StapleProof: the chain file Postfix serves carries, after the
# carrier, the certificate holding the stapled proof, fetched from a real
# sk-mirror of real sk-timelines and shared through the KeyCache.  With
# the mirror stopped, `sk verify smtp://` and smtps:// decide from it with
# no mirror; swaks and `openssl s_client -starttls smtp` still work; the
# milter logs each staple's age, keeps the last good one while the mirror
# is down until staple_max_age, then writes the chain without it.  The
# outbound policy learns a next hop's SK from the staple its host serves
# (no TrustFile, no KeyCache record, no mirror) and pins delivery to it.
# Its /metrics has every series the Grafana dashboard's sk-milter row
# names; a real Prometheus with the alert rules sees the staple's faults
# by their cause: a timeline of three paused (the mirror answers, that
# timeline's checkpoint stands still), then the mirror stopped, then the
# staple dropped.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Digest::SHA qw(sha256_hex);
use JSON::PP;
use Test::More;
use SKTest;
use SKSite;
use SKPostfix qw(make_cert private_hosts_reexec private_hosts);
use SKPrometheus;
use SKTimeline ();
use SKMirror ();

my $skm = $ENV{SKM_BIN}
    // "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/sk-milter';
plan(skip_all => "no $skm") unless -x $skm;
plan(skip_all => 'no postfix') unless has_cmd('postfix');
plan(skip_all => 'sk-timeline or sk-mirror not built')
    unless -x $SKTimeline::TL && -x $SKMirror::MR;

# The policy needs example.com to resolve to 127.0.0.1: a private mount
# namespace with its own /etc/hosts, where one can be had.
my $nohosts = private_hosts_reexec();
my $dir = tmpdir();
chmod 0755, $dir;
$nohosts //= private_hosts($dir, 'example.com');
my $w = world($dir, names => { 'example.com' => 'smtp,smtps' },
    mirror => { query_cache => 0 });
my $m = $w->{mirror};
my $cache = "$dir/cache";
mkdir $cache;

# The milter's trust file: refresh often, a staple 20 s at most.
my $srvtrust = "$dir/srv-trust.conf";
spew($srvtrust, slurp($w->{trust}) . "staple_refresh = 3\n"
    . "staple_retry = 1\nstaple_max_age = 20\n");

my ($key, $crt) = make_cert($dir, 'example.com');
my $r = sk('carrier', '-k', $w->{sk}{'example.com'}, '-c', $crt, '-n',
    'example.com', '-s', 'smtp,smtps', '-o', "$dir/carrier.pem");
is($r->{rc}, 0, 'sk carrier') or diag($r->{err});
spew("$dir/source.pem", slurp($key) . slurp($crt), 0600);
spew("$dir/served.pem", slurp($key) . slurp($crt), 0600);

my $pf = SKPostfix->new(dir => $dir, chain => "$dir/served.pem");
$pf->start;

my ($mport, $pport, $xport) = (free_port(), free_port(), free_port());
my $conf = join('', map { "$_\n" } "MetricsListen 127.0.0.1:$xport",
    "Socket inet:$mport\@127.0.0.1", 'Name example.com', 'Syslog no',
    "PolicySocket inet:$pport\@127.0.0.1", "PolicyCache $dir/pcache",
    "KeyCache $cache", "CarrierFile $dir/carrier.pem",
    "ChainFile $dir/source.pem $dir/served.pem",
    "PostfixCommand postfix -c $pf->{etc} reload",
    "Probe starttls 127.0.0.1:$pf->{smtp}", 'RefreshInterval 1',
    'StapleProof yes', "StapleTrust $srvtrust");

# The configuration checks.
spew("$dir/bad.conf", $conf =~ s/^StapleTrust .*\n//mr);
$r = run_cmd([$skm, '-n', '-c', "$dir/bad.conf"]);
is($r->{rc}, 78, 'StapleProof without StapleTrust: a configuration error');
like($r->{err}, qr/line \d+: StapleProof needs StapleTrust/, '... saying so')
    or diag($r->{err});
spew("$dir/bad.conf", $conf =~ s/^StapleTrust .*$/StapleTrust $dir\/none/mr);
$r = run_cmd([$skm, '-n', '-c', "$dir/bad.conf"]);
like($r->{err}, qr/StapleTrust: .*none/, 'a missing StapleTrust file')
    or diag($r->{err});

spew("$dir/sk-milter.conf", $conf);
my $log = "$dir/milter.log";
my $mpid = run_daemon([$skm, '-f', '-c', "$dir/sk-milter.conf"], $log);
sub mlog { return -e $log ? slurp($log) : '' }

ok(wait_until(sub { mlog() =~ /wrote \Q$dir\E\/served\.pem with its carrier and a staple \d+ s old/ }, 20),
    'the chain file gets the carrier and a staple') or diag(mlog());
like(mlog(), qr/staple example\.com: from mirror \Q$m->{url}\E: \d+ s old/,
    'the milter logs where the staple came from and its age');
ok(-s "$cache/proof/example.com", '... and shares it in the KeyCache');
ok(wait_until(sub { mlog() =~ /probe starttls .*carrier served/ }, 20),
    'Postfix reloaded and serves it') or diag(mlog());

sub starttls_chain {
    my $r = run_cmd(['sh', '-c', "openssl s_client -connect "
        . "127.0.0.1:$pf->{smtp} -starttls smtp -showcerts </dev/null"]);
    return [$r->{out} =~ /(-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----)/sg];
}
my $certs = starttls_chain();
is(scalar @$certs, 3, 'openssl s_client -starttls smtp: leaf, carrier, '
    . 'staple certificate');

$r = sk('staple', 'show', '--connect', "127.0.0.1:$pf->{smtp}",
    '--starttls', 'smtp', '--trust', $w->{trust}, '--json');
my $j = eval { decode_json($r->{out}) } // {};
is($r->{rc}, 0, 'sk staple show over STARTTLS: a staple that checks')
    or diag($r->{out} . $r->{err});
is($j->{form}, 'chain', '... in the chain');

# sk-milter's /metrics as NAME{LABELS} => VALUE.
sub metrics {
    return map { /^(\S+) (\S+)$/ ? ($1 => $2) : () } split /\n/,
        run_cmd(['curl', '-s', "http://127.0.0.1:$xport/metrics"])->{out};
}
sub refreshes { return {metrics()}->{'sk_milter_staple_refreshes_total'
    . "{result=\"$_[0]\"}"} // 0 }
my $p = start_prometheus($dir, { 'sk-milter' => ["127.0.0.1:$xport"] },
    ["$SKTest::ROOT/dist/prometheus/sk-alerts.yml"]);
ok($p->{up}, 'prometheus ready') or diag(slurp($p->{log}));
sub pending {
    my ($name) = @_;
    return prom_wait($p, "count(ALERTS{alertname=\"$name\","
        . 'alertstate="pending"})', sub { $_[0] == 1 }, 15);
}

# Timeline 9 paused: the mirror still answers (two of three servable),
# with timeline 9's checkpoint standing still: the staple cannot be
# renewed, and the cause is the timeline, not the mirror.
my $t9 = $w->{timelines}{9}{pid};
kill 'STOP', $t9;
ok(wait_until(sub { refreshes('timeline_stale') >= 1 }, 20),
    'timeline 9 paused: the refreshes fail as timeline_stale') or diag(mlog());
ok(pending('SKMilterStapleTimelineStale'), '... SKMilterStapleTimelineStale');
is(refreshes('mirror_down'), 0, '... never as mirror_down');
kill 'CONT', $t9;
my $ok = refreshes('ok');
ok(wait_until(sub { refreshes('ok') > $ok }, 20),
    'timeline 9 back: the staple is renewed') or diag(mlog());

# Every mirror stopped: the clients decide from the staple.
stop_daemon($m->{pid});
my $n = 0;
for my $t (['smtp', $pf->{smtp}], ['smtps', $pf->{smtps}]) {
    $r = sk('verify', '--trust', $w->{trust}, '--cache', "$dir/cc" . $n++,
        '--connect', "127.0.0.1:$t->[1]", '--json',
        "$t->[0]://example.com:$t->[1]");
    $j = eval { decode_json($r->{out}) } // {};
    is($r->{rc}, 0, "mirror down: sk verify $t->[0]:// accepts")
        or diag($r->{out} . $r->{err});
    is($j->{from}, 'staple', '... from the staple');
    is($j->{staple}, 'chain', '... the certificate form');
}

# Outbound: nothing here knows example.com's SK but the staple its host
# serves; the policy pins delivery to the key its carrier certifies.
SKIP: {
    skip "policy: $nohosts", 5 if $nohosts;
    skip 'no postmap', 5 unless has_cmd('postmap');
    my $r = run_cmd(['postmap', '-c', $pf->{etc}, '-q',
        "[example.com]:$pf->{smtp}", "socketmap:inet:127.0.0.1:$pport:sk"]);
    my $spki = run_cmd(['sh', '-c', "openssl x509 -in $crt -pubkey -noout"
        . " | openssl pkey -pubin -outform DER"])->{out};
    (my $fp = sha256_hex($spki)) =~ s/(..)(?!$)/$1:/g;
    chomp(my $v = $r->{out});
    is($v, "fingerprint match=$fp", 'policy: the SK learnt from the staple '
        . 'pins delivery') or diag($r->{err} . mlog());
    like(mlog(), qr/policy \[example\.com\]:\d+: pinned match=\S+ \(example\.com's SK from example\.com's staple \(answer of \Q$m->{url}\E\)\)/,
        '... saying where it came from') or diag(mlog());
    my %mv = metrics();
    cmp_ok($mv{sk_milter_staples_requested_total} // 0, '>=', 1,
        'metrics: the policy handshake asked for the staple');
    cmp_ok($mv{sk_milter_staples_received_total} // 0, '>=', 1,
        '... and got it');
    is($mv{'sk_milter_policy_answers_total{result="ok"}'}, 1,
        '... one ok policy answer');
}

# Clients that know nothing of it.
SKIP: {
    skip 'no swaks', 2 unless has_cmd('swaks');
    $r = run_cmd(['swaks', '--server', '127.0.0.1', '--port', $pf->{smtp},
        '--tls', '--quit-after', 'TLS', '--to', 'user@example.net']);
    is($r->{rc}, 0, 'swaks --tls still works') or diag($r->{out} . $r->{err});
    like($r->{out}, qr/TLS started/, '... TLS started');
}
$r = run_cmd(['sh', '-c', "printf 'QUIT\\r\\n' | openssl s_client -connect "
    . "127.0.0.1:$pf->{smtp} -starttls smtp -quiet"]);
like($r->{out}, qr/^2\d\d /m, 'openssl s_client -starttls smtp still talks '
    . 'SMTP') or diag($r->{out} . $r->{err});

# The milter with the mirror down: keeps the staple until too old.
ok(wait_until(sub { mlog() =~ /staple example\.com: kept the answer of \Q$m->{url}\E, \d+ s old, \d+ s before staple_max_age: mirror \Q$m->{url}\E: unreachable/ }, 15),
    'mirror down: the milter keeps the last good staple, saying why')
    or diag(mlog());
my %mv = metrics();
cmp_ok($mv{sk_milter_staples_sent_total} // 0, '>=', 1,
    'metrics: chain files written with a staple');
cmp_ok($mv{'sk_milter_staple_age_seconds{name="example.com"}'} // -1, '>=', 0,
    '... its age');
cmp_ok($mv{'sk_milter_staple_refreshes_total{result="mirror_down"}'} // 0,
    '>=', 1, '... the refreshes failing, the cause named: the mirror is down');
is($mv{'sk_milter_staple_served{name="example.com"}'}, 1,
    '... the staple still served');
ok(pending('SKMilterStapleMirrorDown'), '... SKMilterStapleMirrorDown');
is_deeply([dashboard_check(undef, 'sk-milter', run_cmd(['curl', '-s',
    "http://127.0.0.1:$xport/metrics"])->{out})], [],
    'the Grafana dashboard\'s sk-milter row: only metrics sk-milter has');
is(scalar @{starttls_chain()}, 3, '... and Postfix still serves it');
ok(wait_until(sub { mlog() =~ /staple example\.com: dropped the answer .* beyond staple_max_age \(20 s\).*; the chain files get no staple/ }, 30),
    'beyond staple_max_age: dropped, saying why') or diag(mlog());
ok(wait_until(sub { @{starttls_chain()} == 2 }, 20),
    '... and the chain Postfix serves is leaf and carrier again')
    or diag(mlog());
# Dropped, the staple's age goes on (it froze before, and the alert on it
# cleared while no staple was sent), and served says 0.
ok(wait_until(sub { my %m = metrics();
    ($m{'sk_milter_staple_age_seconds{name="example.com"}'} // 0) > 21 }, 10),
    'metrics: the age goes on past staple_max_age (20 s) once dropped');
%mv = metrics();
is($mv{'sk_milter_staple_served{name="example.com"}'}, 0,
    '... and the staple is no longer served');
ok(pending('SKMilterStapleNotServed'), '... SKMilterStapleNotServed');
stop_daemon($p->{pid});

is(stop_daemon($mpid), 0, 'clean exit');
$pf->stop;
stop_world($w);
done_testing();
