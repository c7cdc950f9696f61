#!/usr/bin/perl

# sk-check.t -- `sk check`, the carrier monitor: Nagios exit codes (0 OK,
# 1 WARNING 30 days ahead, 2 CRITICAL, 3 UNKNOWN) and status line, from a
# served chain, from carrier files and the cache (what the renewal hook
# asks about a renewed certificate), and from a live nginx.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Test::More;

use SKTest;
use NginxTest;

my $d = tmpdir();
make_ca($d);
my ($cert, $key) = make_cert($d, 'a.test', 'ec');
my ($cert2) = make_cert($d, 'a.test', 'rsa');
my ($sk, $pub) = make_sk($d, 'a.test');
my ($sk2, $pub2) = make_sk($d, 'other.test');

my $long = make_carrier($sk, $cert, 'a.test', "$d/long.pem");
my $short = make_carrier($sk, $cert, 'a.test', "$d/short.pem", '-d', '20');
my $tiny = make_carrier($sk, $cert, 'a.test', "$d/tiny.pem", '-d', '3');
my $other = make_carrier($sk2, $cert, 'a.test', "$d/other.pem");
is(sk('chain', '-i', $cert, '-a', $long, '-o', "$d/served.pem")->{rc}, 0,
    'served chain');

sub check {
    my ($want, $name, $re, @args) = @_;
    my $r = sk('check', @args);
    is($r->{rc}, $want, "$name: exit $want") or diag($r->{out}, $r->{err});
    like($r->{out}, $re, "$name: status line");
    return $r;
}

# The chain's own carrier.
check(0, 'served chain', qr{^SK OK: \Q$d\E/served\.pem: carrier for a\.test \(https\) by SK sha256:[0-9a-f]{64} valid until \S+Z, (89|90) days left \| days_left=(89|90);30;7\n\z},
    '-p', $pub, '-i', "$d/served.pem");
check(2, 'chain without carrier', qr{^SK CRITICAL: .*: no carrier for the key sha256:[0-9a-f]{64} in the chain\n\z},
    '-p', $pub, '-i', $cert);
check(2, 'another SK', qr{^SK CRITICAL: \Q$d\E/served\.pem: carrier for a\.test: made for SK sha256:[0-9a-f]{64}, not sha256:},
    '-p', $pub2, '-i', "$d/served.pem");

# Where the servers look: the good one valid longest wins.
check(0, 'carrier files', qr{^SK OK: .*(89|90) days left},
    '-p', $pub, '-i', $cert, '-a', $short, '-a', $other, '-a', $long);
check(1, '30 days ahead', qr{^SK WARNING: .*: the carrier for a\.test expires in (19|20) days \(\S+\): make a new one with sk carrier \| days_left=(19|20);30;7\n\z},
    '-p', $pub, '-i', $cert, '-a', $short);
check(0, '-w moves the warning', qr{^SK OK:},
    '-p', $pub, '-i', $cert, '-a', $short, '-w', '10');
check(2, 'critical within a week', qr{^SK CRITICAL: .*expires in [23] days},
    '-p', $pub, '-i', $cert, '-a', $tiny);
check(2, 'only another SK\'s carrier', qr{^SK CRITICAL: },
    '-p', $pub, '-i', $cert, '-a', $other);

# A renewed certificate with a new key: no carrier certifies it.
my $r = check(2, 'new key', qr{^SK CRITICAL: .*a\.test-rsa\.pem: no carrier for the key sha256:[0-9a-f]{64} in \Q$long\E\n\z},
    '-p', $pub, '-i', $cert2, '-a', $long);

# The key-material cache, as sk publish fills it.
mkdir "$d/cache";
is(sk('publish', '-a', $long, '--cache', "$d/cache")->{rc}, 0, 'published');
$r = check(0, 'cache', qr{^\{"status":"ok"}, '-p', $pub, '-i', $cert, '--cache',
    "$d/cache", '--json');
like($r->{out}, qr{^\{"status":"ok","check":"carrier",.*"name":"a\.test","services":"https","not_after":"\S+Z","days_left":(89|90)\}\n\z},
    'cache: --json');
$r = check(2, 'cache, new key', qr{"status":"critical","check":"no-carrier"},
    '-p', $pub, '-i', $cert2, '--cache', "$d/cache", '--json');

# UNKNOWN: what the check itself could not read or was not told.
check(3, 'missing chain file', qr{^SK UNKNOWN: \Q$d\E/none\.pem: },
    '-p', $pub, '-i', "$d/none.pem");
check(3, 'missing SK', qr{^SK UNKNOWN: }, '-p', "$d/none.pub", '-i', $cert);
$r = sk('check', '-p', $pub);
is($r->{rc}, 3, 'usage error: exit 3 (UNKNOWN)');
like($r->{err}, qr{need exactly one of -i CHAIN and --connect}, 'usage: says what');
is(sk('check', '-p', $pub, '-i', $cert, '-w', '5', '--critical', '9')->{rc},
    3, 'critical above warning: usage');

# A live server; a closed port is CRITICAL.
my $port = free_port();
check(2, 'nothing listening', qr{^SK CRITICAL: 127\.0\.0\.1:$port: },
    '-p', $pub, '--connect', "127.0.0.1:$port");

SKIP: {
    my $why = nginx_skip();
    skip($why, 2) if $why;
    my ($t, $nd, $nport) = NginxTest->setup;
    $t->write_conf(<<"EOF");
    server {
        listen 127.0.0.1:$nport ssl;
        server_name a.test;
        ssl_certificate $cert;
        ssl_certificate_key $key;
        sovereign_key_public $pub;
        sovereign_key_carrier $short;
        location / { }
    }
EOF
    $t->start;
    check(1, 'nginx serves a carrier 20 days from expiry',
        qr{^SK WARNING: 127\.0\.0\.1:$nport: the carrier for a\.test expires},
        '-p', $pub, '--connect', "127.0.0.1:$nport", '--servername',
        'a.test');
    $t->stop;
}

done_testing();
