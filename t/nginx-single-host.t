#!/usr/bin/perl

# nginx-single-host.t -- sovereign_key FILE: the SK private key is on this
# host and the master makes a carrier for each certificate at
# configuration time (the less safe mode).  The served carriers verify
# with the SK; services= and days= reach the carrier; a server with no
# plain server_name is refused.  (The key-permission refusal is in
# nginx-config.t.)

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;

use SKTest;
use NginxTest;

my ($t, $d, $port) = NginxTest->setup;

make_ca($d);
my ($rsa, $rsa_key) = make_cert($d, 'a.test', 'rsa');
my ($ec, $ec_key) = make_cert($d, 'a.test', 'ec');
my ($sk, $pub) = make_sk($d, 'a.test');

$t->write_conf(<<"EOF");
    server {
        listen 127.0.0.1:$port ssl;
        server_name a.test www.a.test;
        ssl_certificate $rsa; ssl_certificate_key $rsa_key;
        ssl_certificate $ec; ssl_certificate_key $ec_key;
        sovereign_key $sk services=https,smtps days=7;
        location = /sk { sovereign_key_status; }
    }
EOF
my $r = $t->test_conf;
is($r->{rc}, 0, 'nginx -t passes') or diag($r->{err});
$t->start;

sub pubkey_of {
    my ($pem) = @_;
    my $w = tmpdir();
    spew("$w/c.pem", $pem);
    return run_cmd(['openssl', 'x509', '-in', "$w/c.pem", '-noout', '-pubkey'])->{out};
}

for my $c (['ECDSA+SHA256', 'ECDSA'], ['rsa_pss_rsae_sha256', 'RSA']) {
    my $chain = served_chain($port, tls => '1.3', sigalgs => $c->[0]);
    is(scalar @$chain, 3, "$c->[1]: leaf, CA, carrier");
    is(pubkey_of($chain->[2]), pubkey_of($chain->[0]),
        "$c->[1]: the carrier certifies the leaf's key");
    like(cert_subject($chain->[2]), qr/issuer=.*Sovereign Key/,
        "$c->[1]: issued by the SK");
}

$r = sk('verify-chain', '-p', $pub, '--connect', "127.0.0.1:$port");
is($r->{rc}, 0, 'sk verify-chain --connect passes') or diag($r->{err});

$r = run_cmd(['curl', '-sS', '--cacert', "$d/ca.pem", '--resolve',
    "a.test:$port:127.0.0.1", "https://a.test:$port/sk"]);
my $j = eval { decode_json($r->{out}) } // {};
is($j->{name}, 'a.test', 'status: the first server_name');
is($j->{services}, 'https,smtps', 'status: services=');
is(scalar @{$j->{carriers} // []}, 2, 'status: two carriers');
for my $c (@{$j->{carriers} // []}) {
    is($c->{not_after} - $c->{not_before}, 7 * 86400 + 3600,
        'days=7 (and an hour back)');
    cmp_ok(abs($c->{not_before} + 3600 - time), '<', 120, 'made now');
}
$t->stop;
is($t->alerts, '', 'no alerts or sanitizer reports');

# No plain server_name to put in the carrier.
$t->write_conf(<<"EOF");
    server {
        listen 127.0.0.1:$port ssl;
        server_name *.a.test;
        ssl_certificate $ec; ssl_certificate_key $ec_key;
        sovereign_key $sk;
    }
EOF
$r = $t->test_conf;
isnt($r->{rc}, 0, 'wildcard-only server_name: nginx -t fails');
like($r->{err}, qr/has no plain "server_name" to certify/, '... saying why');

done_testing();
