#!/usr/bin/perl

# client-dnssec.t -- a name registered with DNSSEC evidence only, end to
# end on loopback (docs/protocol.md, "DNSSEC evidence"): the zones ".",
# "test." and "example.test." signed here (tests/unit/dnssec_zones.sh)
# with the SK's record, served by a real NSD through a real validating
# Unbound (SKDNS); the chain asked of it by `sk dnssec chain --resolver`
# and put in a Bind (`sk entry bind --dnssec-chain`) with no CA-Cert-Chain.
#   three real sk-timelines with evidence = ca, dnssec accept it
#   a real sk-mirror with the same anchors checks it again and serves it
#   nginx with ngx_sk_module serves the SK's carrier: `sk verify` and
#     `sk fetch` accept it
#   an impostor with a certificate from the same CA and no carrier:
#     refused by both

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Digest::SHA qw(sha256_hex);
use Test::More;

use SKTest;
use NginxTest;
use SKTimeline;
use SKMirror;
use SKSite;
use SKDNS;

plan skip_all => 'sk-timeline or sk-mirror not built'
    unless -x $SKTimeline::TL && -x $SKMirror::MR;
plan skip_all => 'no ldns-signzone, openssl or curl'
    unless has_cmd('ldns-signzone') && has_cmd('openssl') && has_cmd('curl');
plan skip_all => 'no nsd or unbound' unless have_dns();

my ($ngx, $d, $port) = NginxTest->setup;
my $name = 'example.test';

# The SK and the private hierarchy publishing its hash.
my $sk = ed25519_key($d, "sk-$name");
my $hex = sha256_hex(SKTimeline::ossl('pkey', '-in', $sk, '-pubout',
    '-outform', 'DER'));
mkdir "$d/z";
my $r = run_cmd(["$SKTest::ROOT/tests/unit/dnssec_zones.sh", "$d/z", $hex]);
is($r->{rc}, 0, 'zones signed with the SK\'s record') or diag($r->{err});
my $dns = start_dns("$d/dns", "$d/z");
ok($dns->{up}, 'NSD and Unbound serve the private hierarchy')
    or BAIL_OUT(slurp($dns->{log}));

$r = sk('dnssec', 'chain', '-n', $name, '--resolver', $dns->{resolver},
    '-o', "$d/chain");
is($r->{rc}, 0, 'sk dnssec chain through the resolver') or diag($r->{err});
$r = sk('entry', 'bind', '-k', $sk, '-n', $name, '-s', 'https',
    '--dnssec-chain', "$d/chain");
is($r->{rc}, 0, 'sk entry bind --dnssec-chain') or diag($r->{err});
my $bind = $r->{out};
unlike($bind, qr/^CA-Cert-Chain:/m, '... a Bind with no CA evidence');

my (%t, @tl);
for my $tid (7, 8, 9) {
    mkdir "$d/tl$tid";
    $t{$tid} = start_timeline("$d/tl$tid", tid => $tid,
        evidence => 'ca, dnssec', dnssec_anchors => "$d/z/root.ds",
        chunk_interval => 1);
    ok($t{$tid}{up}, "timeline $tid listens")
        or BAIL_OUT(slurp($t{$tid}{log}));
    $r = append($t{$tid}, $bind);
    is($r->{code}, 201, "timeline $tid accepts the DNSSEC Bind")
        or diag($r->{body});
    push @tl, [$tid, $t{$tid}{url}, "$d/tl$tid/timeline.pub",
        "sk-timeline-$tid"];
}

my $m = start_mirror("$d/m", \@tl, dnssec_anchors => "$d/z/root.ds");
ok($m->{up}, 'sk-mirror listens') or BAIL_OUT(slurp($m->{log}));
my %keys = map { $_->[0] => [$_->[2], $_->[3]] } @tl;
ok(wait_until(sub {
    my $q = query($m, $name);
    my $a = check_answer($q->{body}, $m->{pub}, \%keys, $name);
    return $q->{code} == 200 && $a->{ok} && 3 == grep {
        ($a->{timelines}{$_}{entries}[0]{text} // '') =~ /^DNSSEC-Chain: /m
    } 7, 8, 9;
}, 20), 'the mirror checks the Bind again and serves it from all three')
    or diag(slurp($m->{log}));
my $trust = "$d/trust.conf";
spew($trust, join('', map { "timeline = $_->[0] $_->[2]\n" } @tl)
    . "mirror = $m->{url} $m->{pub}\nt1 = 0\n");

# nginx: the site with the SK's carrier; an impostor on another port with
# a certificate from the same CA and no carrier.
my $ca = NginxTest::make_ca($d);
my $servers = site({ sk => { $name => $sk } }, $d, $port, $name);
my ($icert, $ikey) = make_cert($d, $name, 'rsa');
my $p_imp = $ngx->port('imp');
$ngx->write_conf(<<"EOF");
$servers
    server {
        listen 127.0.0.1:$p_imp ssl;
        server_name $name;
        root $d/www-$name;
        ssl_certificate $icert;
        ssl_certificate_key $ikey;
    }
EOF
$r = $ngx->test_conf;
is($r->{rc}, 0, 'nginx -t accepts the configuration') or diag($r->{err});
$ngx->start;

my $cache = "$d/cache";
sub verify {
    my ($p) = @_;
    return sk('verify', '--trust', $trust, '--cache', $cache, '--connect',
        "127.0.0.1:$p", "https://$name:$p");
}
sub fetch {
    my ($p) = @_;
    return sk('fetch', '--trust', $trust, '--cache', $cache, '--cacert',
        $ca, '--tor', '127.0.0.1:' . free_port(), '--connect-timeout', 3,
        '--resolve', "$name:$p:127.0.0.1", "https://$name:$p/");
}

$r = verify($port);
is($r->{rc}, 0, 'sk verify: accept') or diag($r->{out} . $r->{err});
like($r->{out}, qr/^accept: https:\/\/example\.test:$port: carrier for example\.test by the SK in force \(sha256:$hex\)/,
    '... the carrier of the SK the DNSSEC record names') or diag($r->{out});
like($r->{out}, qr/record of example\.test: 3 entries, answer/,
    '... from the three timelines\' entries') or diag($r->{out});
$r = fetch($port);
is($r->{rc}, 0, 'sk fetch: fetched') or diag($r->{err});
is($r->{out}, "the real example.test\n", '... the real page');

$r = verify($p_imp);
is($r->{rc}, 1, 'sk verify: the impostor is rejected');
like($r->{out}, qr/^reject: .*the server presented no carrier/,
    '... no carrier') or diag($r->{out});
$r = fetch($p_imp);
isnt($r->{rc}, 0, 'sk fetch: the impostor is refused');
like($r->{err}, qr/reject \(no-carrier\): example\.test has an SK/,
    '... in the handshake, saying why') or diag($r->{err});
is($r->{out}, '', '... and nothing of its page is output');

$ngx->stop;
stop_daemon($_->{pid}) for $m, values %t;
stop_dns($dns);
unlike(join('', map { slurp($_->{log}) } $m, values %t),
    qr/Sanitizer|runtime error/, 'no sanitizer reports');
done_testing();
