#!/usr/bin/perl

# nginx-carrier.t -- ngx_sk_module appends to each ssl_certificate's chain
# the carrier made for that certificate's key (RSA and ECDSA in one
# server), on TLS 1.2 and 1.3 and over HTTP/2; `sk verify-chain --connect`
# passes with the right SK and fails, saying why, with another; clients
# that know nothing of SKs (curl, gnutls-cli, Python's ssl) verify as
# usual.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Test::More;

use SKTest;
use NginxTest;

my ($t, $d, $port) = NginxTest->setup;

make_ca($d);
my ($rsa, $rsa_key) = make_cert($d, 'a.test', 'rsa');
my ($ec, $ec_key) = make_cert($d, 'a.test', 'ec');
my ($sk, $pub) = make_sk($d, 'a.test');
my ($sk2, $pub2) = make_sk($d, 'other.test');

my $c_rsa = make_carrier($sk, $rsa, 'a.test', "$d/carrier-rsa.pem");
my $c_ec = make_carrier($sk, $ec, 'a.test', "$d/carrier-ec.pem");
spew("$d/carriers.pem", slurp($c_rsa) . slurp($c_ec));

$t->write_conf(<<"EOF");
    server {
        listen 127.0.0.1:$port ssl http2;
        server_name a.test;
        ssl_certificate $rsa;
        ssl_certificate_key $rsa_key;
        ssl_certificate $ec;
        ssl_certificate_key $ec_key;
        sovereign_key_public $pub;
        sovereign_key_carrier $d/carriers.pem;
        location / { }
    }
EOF

my $r = $t->test_conf;
is($r->{rc}, 0, 'nginx -t accepts the configuration') or diag($r->{err});
$t->start;

my $ca = slurp("$d/ca.pem");
my $want_rsa = pem_certs(slurp($c_rsa))->[0];
my $want_ec = pem_certs(slurp($c_ec))->[0];

# Each signature algorithm selects one certificate; its own carrier follows
# its chain.
my @cases = (
    ['1.3', 'ECDSA+SHA256', undef, $want_ec, $ec],
    ['1.3', 'rsa_pss_rsae_sha256', undef, $want_rsa, $rsa],
    ['1.2', undef, 'ECDHE-ECDSA-AES128-GCM-SHA256', $want_ec, $ec],
    ['1.2', undef, 'ECDHE-RSA-AES128-GCM-SHA256', $want_rsa, $rsa],
);
for my $c (@cases) {
    my ($tls, $sigalgs, $cipher, $want, $cert) = @$c;
    my $what = "TLS $tls " . ($sigalgs // $cipher);
    my $chain = served_chain($port, tls => $tls, sigalgs => $sigalgs,
        cipher => $cipher, servername => 'a.test');
    is(scalar @$chain, 3, "$what: leaf, CA, carrier");
    is($chain->[0], pem_certs(slurp($cert))->[0], "$what: the leaf");
    is($chain->[1], $ca, "$what: then the CA");
    is($chain->[2], $want, "$what: then that key's carrier");
}

# The SK checks.
$r = sk('verify-chain', '-p', $pub, '--connect', "127.0.0.1:$port");
is($r->{rc}, 0, 'sk verify-chain --connect passes with the SK')
    or diag($r->{err});
$r = sk('verify-chain', '-p', $pub2, '--connect', "127.0.0.1:$port");
is($r->{rc}, 1, 'sk verify-chain --connect fails with another SK');
like($r->{err}, qr/^sk: 127\.0\.0\.1:$port: .*made for SK sha256:[0-9a-f]{64}, not sha256:[0-9a-f]{64}/,
    '... and says why')
    or diag($r->{err});

# Clients that know nothing of SKs, with CA verification on.
my $url = "https://a.test:$port/";
my @resolve = ('--resolve', "a.test:$port:127.0.0.1");
$r = run_cmd(['curl', '-sS', '--cacert', "$d/ca.pem", @resolve, $url]);
is($r->{out}, "hello\n", 'curl verifies and fetches') or diag($r->{err});
$r = run_cmd(['curl', '-sS', '--http2', '-o', '/dev/null', '-w',
    '%{http_version}', '--cacert', "$d/ca.pem", @resolve, $url]);
is($r->{out}, '2', 'curl over HTTP/2') or diag($r->{err});
for my $ecdsa (0, 1) {
    # curl with the RSA-only or ECDSA-only TLS 1.2 suites
    my $ciphers = $ecdsa ? 'ECDHE-ECDSA-AES128-GCM-SHA256'
        : 'ECDHE-RSA-AES128-GCM-SHA256';
    $r = run_cmd(['curl', '-sS', '--tlsv1.2', '--tls-max', '1.2',
        '--ciphers', $ciphers, '--cacert', "$d/ca.pem", @resolve, $url]);
    is($r->{out}, "hello\n", "curl TLS 1.2 $ciphers") or diag($r->{err});
}

SKIP: {
    my $gnutls = has_cmd('gnutls-cli');
    skip 'gnutls-cli is not installed', 2 unless $gnutls;
    # GnuTLS (libtasn1) refuses any certificate with an OID arc of 2^64 or
    # more: the carrier OID keeps its arcs small so these clients connect.
    for my $prio ('NORMAL', 'NORMAL:-VERS-TLS1.3') {
        $r = run_cmd(['sh', '-c', "printf 'GET / HTTP/1.0\\r\\nHost: a.test\\r\\n\\r\\n' | "
            . "$gnutls --x509cafile $d/ca.pem --verify-hostname a.test "
            . "--sni-hostname a.test --priority $prio -p $port 127.0.0.1"]);
        like($r->{out}, qr/\r\n\r\nhello\n/, "gnutls-cli ($prio) verifies and fetches")
            or diag($r->{out} . $r->{err});
    }
}

# Session resumption: a resumed session sends no certificates, and must
# still work with the module; the next full handshake has the carrier again.
for my $tls ('1.2', '1.3') {
    my $flag = $tls eq '1.2' ? '-tls1_2' : '-tls1_3';
    my @sc = ('sh', '-c', "printf 'GET / HTTP/1.0\\r\\nHost: a.test\\r\\n\\r\\n' | "
        . "openssl s_client -connect 127.0.0.1:$port -servername a.test "
        . "$flag -ign_eof");
    $r = run_cmd([@sc[0, 1], "$sc[2] -sess_out $d/sess-$tls"]);
    like($r->{out}, qr/^New, TLSv\Q$tls\E/m, "TLS $tls: first handshake is full");
    $r = run_cmd([@sc[0, 1], "$sc[2] -sess_in $d/sess-$tls"]);
    like($r->{out}, qr/^Reused, TLSv\Q$tls\E/m, "TLS $tls: session resumed")
        or diag($r->{out});
    like($r->{out}, qr/\r\n\r\nhello\n/, "TLS $tls: resumed session serves the page");
    is(scalar @{served_chain($port, tls => $tls, servername => 'a.test')}, 3,
        "TLS $tls: the next full handshake has the carrier again");
}

$r = run_cmd(['python3', '-c', <<'EOF', "$d/ca.pem", $port]);
import socket, ssl, sys
ctx = ssl.create_default_context(cafile=sys.argv[1])
with socket.create_connection(("127.0.0.1", int(sys.argv[2]))) as s:
    with ctx.wrap_socket(s, server_hostname="a.test") as t:
        t.sendall(b"GET / HTTP/1.0\r\nHost: a.test\r\n\r\n")
        data = b""
        while True:
            b = t.recv(4096)
            if not b:
                break
            data += b
print(data.split(b"\r\n\r\n", 1)[1].decode(), end="")
EOF
is($r->{out}, "hello\n", 'python3 ssl verifies and fetches') or diag($r->{err});

$t->stop;
is($t->alerts, '', 'no alerts or sanitizer reports');

done_testing();
