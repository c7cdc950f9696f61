#!/usr/bin/perl

# carrier-openssl.t -- carriers made by `sk` against the openssl CLI: a
# CA and server certificate made by openssl; `sk carrier` and
# `sk selfcert` for Ed25519, P-256 and RSA sovereign keys, which
# `openssl verify -partial_chain` accepts; the extension as `openssl
# x509 -text` shows it; `sk chain` giving leaf, CA, carrier in order;
# `sk verify-chain` passing, and failing with the reason, from a file and
# from a live `openssl s_server`, directly and behind SMTP STARTTLS.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use IO::Select;
use IO::Socket::INET;
use POSIX ();
use Test::More;

use SKTest;

plan skip_all => 'no openssl' unless has_cmd('openssl');

my $OID = '1.3.6.1.4.1.32473.2011.1';
my $d = tmpdir();

sub openssl {
    my $r = run_cmd(['openssl', @_]);
    die "openssl @_: $r->{err}" if $r->{rc};
    return $r->{out};
}

# The chain of a PEM file as openssl sees it: "subject|issuer" per cert.
sub chain_names {
    my ($pem) = @_;
    my $r = run_cmd(['sh', '-c', "openssl crl2pkcs7 -nocrl -certfile '$pem'"
        . " | openssl pkcs7 -print_certs -noout"]);
    my @subj = $r->{out} =~ /^subject=\s*(.*)$/mg;
    my @iss = $r->{out} =~ /^issuer=\s*(.*)$/mg;
    return [ map { "$subj[$_]|$iss[$_]" } 0 .. $#subj ];
}

# A CA and a server certificate for a.test, by openssl alone.
openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt',
    'ec_paramgen_curve:P-256', '-nodes', '-keyout', "$d/ca.key", '-out',
    "$d/ca.pem", '-subj', '/CN=Test CA', '-days', '30');
openssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256',
    '-nodes', '-keyout', "$d/srv.key", '-out', "$d/srv.csr", '-subj',
    '/CN=a.test', '-addext', 'subjectAltName=DNS:a.test,DNS:www.a.test');
openssl('x509', '-req', '-in', "$d/srv.csr", '-CA', "$d/ca.pem", '-CAkey',
    "$d/ca.key", '-CAcreateserial', '-out', "$d/srv.pem", '-days', '30',
    '-copy_extensions', 'copy');
spew("$d/chain.pem", slurp("$d/srv.pem") . slurp("$d/ca.pem"));

# An SK of each type, with its three backups.
for my $t (qw(ed25519 p256 rsa)) {
    my $r = sk('keygen', '-n', 'a.test', '-t', $t, '-o', "$d/$t.key",
        map { ('-b', "$d/$t.bak$_") } 1 .. 3);
    is($r->{rc}, 0, "sk keygen -t $t") or diag($r->{err});
    ok(-f "$d/$t.key" && -f "$d/$t.key.pub" && -f "$d/$t.bak3",
        "$t: key, public key and backups written");

    $r = sk('carrier', '-k', "$d/$t.key", '-c', "$d/srv.pem", '-o',
        "$d/carrier-$t.pem");
    is($r->{rc}, 0, "$t: sk carrier") or diag($r->{err});
    like($r->{out}, qr/^\Q$d\E\/carrier-$t\.pem: carrier for a\.test, key sha256:[0-9a-f]{64}, services https, valid until /,
        "$t: one line naming the carrier");

    $r = sk('selfcert', '-k', "$d/$t.key", '-n', 'a.test', '-o',
        "$d/sk-$t.pem");
    is($r->{rc}, 0, "$t: sk selfcert") or diag($r->{err});

    $r = run_cmd(['openssl', 'verify', '-partial_chain', '-trusted',
        "$d/sk-$t.pem", "$d/carrier-$t.pem"]);
    is($r->{rc}, 0, "$t: openssl verify accepts the carrier")
        or diag($r->{out}, $r->{err});
}

my $r = run_cmd(['openssl', 'verify', '-partial_chain', '-trusted',
    "$d/sk-p256.pem", "$d/carrier-ed25519.pem"]);
isnt($r->{rc}, 0, 'openssl verify rejects the carrier against another SK');

# What openssl sees in the carrier.
my $text = openssl('x509', '-in', "$d/carrier-ed25519.pem", '-noout',
    '-text');
like($text, qr/\Q$OID\E:\s*\n/, 'the extension, by its OID, non-critical');
unlike($text, qr/\Q$OID\E: critical/, 'not marked critical');
like($text, qr/Issuer: O = Sovereign Key, CN = a\.test/, 'issuer: the SK');
like($text, qr/Subject: CN = a\.test\n/, 'subject: the name (default: the '
    . 'first DNS SAN)');
like($text, qr/DNS:a\.test\s*\n/, 'SAN: the name alone');
like($text, qr/Signature Algorithm: ED25519/, 'signed by the Ed25519 SK');
like(openssl('x509', '-in', "$d/carrier-rsa.pem", '-noout', '-text'),
    qr/Signature Algorithm: rsassaPss.*?Salt Length: 0x20/s,
    'the RSA SK signs with PSS, 32-byte salt');
is(openssl('x509', '-in', "$d/carrier-ed25519.pem", '-noout', '-pubkey'),
    openssl('pkey', '-in', "$d/srv.key", '-pubout'),
    'the subject key is the server key');

# Options: services, days, name, a public key instead of a certificate.
$r = sk('carrier', '-k', "$d/ed25519.key", '--pubkey', "$d/srv.pem", '-n',
    'www.a.test', '-s', 'https,smtps', '-d', '1', '-o', "$d/short.pem",
    '--json');
is($r->{rc}, 0, 'sk carrier --pubkey -n -s -d --json') or diag($r->{err});
like($r->{out}, qr/^\{"carrier":.*"name":"www\.a\.test","services":"https,smtps"/,
    'JSON names the carrier');
is(run_cmd(['openssl', 'x509', '-in', "$d/short.pem", '-noout', '-checkend',
    '172800'])->{rc}, 1, '-d 1: expires within two days');
is(run_cmd(['openssl', 'x509', '-in', "$d/short.pem", '-noout', '-checkend',
    '3600'])->{rc}, 0, '-d 1: but not within the hour');

$r = sk('carrier', '-k', "$d/ed25519.key", '--pubkey', "$d/srv.pem", '-o',
    "$d/x.pem");
is($r->{rc}, 2, '--pubkey without -n: usage error');
$r = sk('carrier', '-k', "$d/ed25519.key", '-c', "$d/srv.pem", '-s',
    'HTTPS', '-o', "$d/x.pem");
is($r->{rc}, 1, 'a bad Services field fails');
like($r->{err}, qr/^sk: services: /, '... saying so');
ok(!-e "$d/x.pem", '... and writes nothing');

# sk chain: leaf, CA, then the carrier.
$r = sk('chain', '-i', "$d/chain.pem", '-a', "$d/carrier-ed25519.pem", '-o',
    "$d/out.pem");
is($r->{rc}, 0, 'sk chain') or diag($r->{err});
like($r->{out}, qr/out\.pem: 2 certificates \+ carrier for a\.test/,
    'one line: two certificates and the carrier');
is_deeply(chain_names("$d/out.pem"), [
    'CN = a.test|CN = Test CA',
    'CN = Test CA|CN = Test CA',
    'CN = a.test|O = Sovereign Key, CN = a.test',
], 'openssl sees leaf, CA, carrier in that order');

# Renewal: run on its own output, the old carrier is replaced.
$r = sk('chain', '-i', "$d/out.pem", '-a', "$d/carrier-ed25519.pem", '-o',
    "$d/out2.pem");
is($r->{rc}, 0, 'sk chain on its own output');
is(scalar @{chain_names("$d/out2.pem")}, 3, '... still three certificates');

# A carrier for another key; several carriers in one file.
openssl('req', '-x509', '-newkey', 'ed25519', '-nodes', '-keyout',
    "$d/other.key", '-out', "$d/other.pem", '-subj', '/CN=a.test', '-days',
    '1');
$r = sk('carrier', '-k', "$d/ed25519.key", '-c', "$d/other.pem", '-n',
    'a.test', '-o', "$d/carrier-other.pem");
is($r->{rc}, 0, 'a carrier for another key');
$r = sk('chain', '-i', "$d/chain.pem", '-a', "$d/carrier-other.pem", '-o',
    "$d/bad.pem");
is($r->{rc}, 1, 'sk chain refuses a carrier for another key');
like($r->{err}, qr/no carrier certifies the leaf's key sha256:/,
    '... saying why');
ok(!-e "$d/bad.pem", '... and writes nothing');

spew("$d/two.pem", slurp("$d/carrier-other.pem")
    . slurp("$d/carrier-p256.pem"));
$r = sk('chain', '-i', "$d/chain.pem", '-a', "$d/two.pem", '-o',
    "$d/out-p256.pem");
is($r->{rc}, 0, 'sk chain picks, of two carriers, the leaf key\'s');
is(sk('verify-chain', '-p', "$d/p256.key.pub", '-i',
    "$d/out-p256.pem")->{rc}, 0, '... the P-256 SK\'s one');

# sk verify-chain from files.
$r = sk('verify-chain', '-p', "$d/ed25519.key.pub", '-i', "$d/out.pem");
is($r->{rc}, 0, 'verify-chain passes with the SK') or diag($r->{err});
like($r->{out}, qr/^pass: .*chain of 3 certificates/, '... one line');

$r = sk('verify-chain', '-p', "$d/p256.key.pub", '-i', "$d/out.pem");
is($r->{rc}, 1, 'verify-chain fails with another SK');
like($r->{err}, qr/carrier for a\.test: made for SK sha256:[0-9a-f]{64}, not sha256:/,
    '... saying the carrier is for another SK');

$r = sk('verify-chain', '-p', "$d/p256.key.pub", '-i', "$d/out.pem",
    '--json');
like($r->{out}, qr/^\{"result":"fail",.*"check":"wrong-sk","reason":"carrier for a\.test: made for SK/,
    '... and in JSON: check wrong-sk');

$r = sk('verify-chain', '-p', "$d/ed25519.key.pub", '-i', "$d/chain.pem",
    '--json');
is($r->{rc}, 1, 'verify-chain fails on a chain without carrier');
like($r->{out}, qr/"check":"no-carrier"/, '... check no-carrier');

spew("$d/mismatch.pem", slurp("$d/chain.pem")
    . slurp("$d/carrier-other.pem"));
$r = sk('verify-chain', '-p', "$d/ed25519.key.pub", '-i', "$d/mismatch.pem",
    '--json');
is($r->{rc}, 1, 'verify-chain fails on a carrier for another key');
like($r->{out}, qr/"check":"key-mismatch","reason":"carrier for a\.test: certifies key sha256:/,
    '... check key-mismatch');

$r = sk('verify-chain', '-p', "$d/ed25519.key.pub");
is($r->{rc}, 2, 'verify-chain without a chain: usage');

# From a live server: openssl s_server sending leaf, CA, carrier.
my @certs = slurp("$d/out.pem") =~ /(-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----\n)/sg;
spew("$d/rest.pem", join('', @certs[1 .. $#certs]));
my $tls = free_port();
my $srv = run_daemon(['openssl', 's_server', '-accept', "127.0.0.1:$tls",
    '-cert', "$d/srv.pem", '-key', "$d/srv.key", '-cert_chain',
    "$d/rest.pem", '-quiet'], "$d/s_server.log");
ok(wait_for_port($tls), 'openssl s_server is up');

$r = sk('verify-chain', '-p', "$d/ed25519.key.pub", '--connect',
    "127.0.0.1:$tls", '--servername', 'a.test');
is($r->{rc}, 0, 'verify-chain --connect passes') or diag($r->{err});
like($r->{out}, qr/chain of 3 certificates/, '... and counts the chain');

$r = sk('verify-chain', '-p', "$d/rsa.key.pub", '--connect',
    "127.0.0.1:$tls", '--json');
is($r->{rc}, 1, 'verify-chain --connect fails with another SK');
like($r->{out}, qr/"check":"wrong-sk".*"chain_length":3/,
    '... check wrong-sk, chain of 3');

# SMTP: a fake server speaks ESMTP up to STARTTLS, with a multi-line EHLO
# reply, then relays the TLS bytes to s_server.
my $smtp = free_port();
my $l = IO::Socket::INET->new(Listen => 5, LocalAddr => '127.0.0.1',
    LocalPort => $smtp, Proto => 'tcp', ReuseAddr => 1) or die "listen: $!";
my $fake = fork;
die "fork: $!" unless defined $fake;
if ($fake == 0) {
    while (my $c = $l->accept) {
        print $c "220-smtp.a.test ESMTP\r\n220 fake\r\n";
        my $line = <$c>;
        print $c "250-smtp.a.test\r\n250-PIPELINING\r\n250-SIZE 1000\r\n"
            . "250-STARTTLS\r\n250 8BITMIME\r\n";
        $line = <$c>;
        if (!defined $line || $line !~ /^STARTTLS\r\n$/) {
            close $c;
            next;
        }
        print $c "220 2.0.0 ready\r\n";
        my $up = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
            PeerPort => $tls) or POSIX::_exit(1);
        my $sel = IO::Select->new($c, $up);
        RELAY: while (my @r = $sel->can_read(10)) {
            for my $from (@r) {
                my $to = $from == $c ? $up : $c;
                my $n = sysread($from, my $buf, 16384);
                last RELAY unless $n;
                syswrite($to, $buf);
            }
        }
        close $up;
        close $c;
    }
    POSIX::_exit(0);
}
close $l;

$r = sk('verify-chain', '-p', "$d/ed25519.key.pub", '--connect',
    "127.0.0.1:$smtp", '--starttls', 'smtp', '--servername', 'a.test');
is($r->{rc}, 0, 'verify-chain --starttls smtp passes') or diag($r->{err});
like($r->{out}, qr/chain of 3 certificates/, '... after EHLO and STARTTLS');

kill 'TERM', $fake;
waitpid($fake, 0);
stop_daemon($srv);

$r = sk('verify-chain', '-p', "$d/ed25519.key.pub", '--connect',
    "127.0.0.1:$tls", '--json');
is($r->{rc}, 1, 'verify-chain --connect to a closed port fails');
like($r->{out}, qr/"check":"connect"/, '... check connect');

done_testing();
