#!/usr/bin/perl

# nginx-config.t -- what `nginx -t` refuses, each with a message naming the
# problem: a missing carrier file, a carrier of another SK, an expired
# carrier, a carrier for a key no certificate has, a world-readable SK key
# in single-host mode, and the directive combinations that make no sense.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Test::More;

use SKTest;
use NginxTest;

my ($t, $d, $port) = NginxTest->setup;

make_ca($d);
my ($ec, $ec_key) = make_cert($d, 'a.test', 'ec');
my ($ec_b, $ec_b_key) = make_cert($d, 'b.test', 'ec');
my ($sk, $pub) = make_sk($d, 'a.test');
my ($sk2, $pub2) = make_sk($d, 'other.test');
my $good = make_carrier($sk, $ec, 'a.test', "$d/good.pem");
my $other_sk = make_carrier($sk2, $ec, 'a.test', "$d/other-sk.pem");
my $other_key = make_carrier($sk, $ec_b, 'b.test', "$d/other-key.pem");
my $expired = expired_carrier($sk, $ec, 'a.test', "$d/expired.pem");

# A world-readable copy of the SK key for single-host mode.
spew("$d/open.key", slurp($sk), 0644);

sub conf {
    my ($sk_lines, %opt) = @_;
    my $cert = $opt{cert} // "ssl_certificate $ec; ssl_certificate_key $ec_key;";
    $t->write_conf(<<"EOF");
    server {
        listen 127.0.0.1:$port ssl;
        server_name a.test;
        $cert
        $sk_lines
    }
EOF
    my $r = $t->test_conf;
    return ($r->{rc}, $r->{err});
}

sub refused {
    my ($lines, $re, $what, %opt) = @_;
    my ($rc, $err) = conf($lines, %opt);
    isnt($rc, 0, "$what: nginx -t fails");
    like($err, $re, "$what: the message says why") or diag($err);
}

my ($rc, $err) = conf("sovereign_key_public $pub; sovereign_key_carrier $good;");
is($rc, 0, 'a good carrier passes nginx -t') or diag($err);

refused("sovereign_key_public $pub; sovereign_key_carrier $d/nope.pem;",
    qr{\[emerg\].*\Q$d/nope.pem\E.*(no such file|cannot open|not found)}i,
    'missing carrier file');
refused("sovereign_key_public $pub; sovereign_key_carrier $other_sk;",
    qr{\[emerg\].*other-sk\.pem: .*made for SK sha256:[0-9a-f]{64}, not sha256:[0-9a-f]{64}},
    'carrier of another SK');
refused("sovereign_key_public $pub; sovereign_key_carrier $expired;",
    qr{\[emerg\].*expired\.pem: .*expired at \d{4}-}, 'expired carrier');
refused("sovereign_key_public $pub; sovereign_key_carrier $other_key;",
    qr{\[emerg\].*other-key\.pem: carrier for key sha256:[0-9a-f]{64} matches no "ssl_certificate" in \S+nginx.conf:\d+},
    'carrier for another key');
refused("sovereign_key $d/open.key;",
    qr{\[emerg\].*open\.key.*permissions.*too open}i,
    'world-readable SK key in single-host mode');
refused("sovereign_key $d/nope.key;",
    qr{\[emerg\].*nope\.key}i, 'missing SK key in single-host mode');
refused("sovereign_key_carrier $good;",
    qr{\[emerg\].*"sovereign_key_public" is required}, 'no SK to check with');
refused("sovereign_key_public $d/nope.pub; sovereign_key_carrier $good;",
    qr{\[emerg\].*nope\.pub}, 'missing SK public key');
refused("sovereign_key_public $pub; sovereign_key_carrier $good; sovereign_key_cache $d;",
    qr{\[emerg\].*only one of}, 'carrier and cache together');
# Cache addresses go through libsk's parser (the one sk-mirror and
# sk-milter use): its message, after the directive's name.
refused("sovereign_key_cache ftp://x;",
    qr{\[emerg\] sovereign_key_cache: cache "ftp://x": unknown scheme "ftp" \(want redis://, redis-cluster://, unix: or an absolute directory\) in \S+nginx\.conf:\d+},
    'a cache spec of no known kind');
refused("sovereign_key_public $pub; sovereign_key_cache redis://127.0.0.1:0;",
    qr{\[emerg\] sovereign_key_cache: cache "redis://127\.0\.0\.1:0": bad port "0"},
    'a redis:// cache with a bad port');
refused("sovereign_key_public $pub; sovereign_key_cache redis-cluster://127.0.0.1:7000,h;",
    qr{\[emerg\] sovereign_key_cache: cache "redis-cluster://127\.0\.0\.1:7000,h": seed "h": want HOST:PORT},
    'a redis-cluster:// cache with a seed without a port');
refused("sovereign_key_public $pub; sovereign_key_cache redis-cluster://;",
    qr{\[emerg\] sovereign_key_cache: cache "redis-cluster://": no seed node},
    'a redis-cluster:// cache with no seed');
refused("sovereign_key_public $pub; sovereign_key_carrier $good; sovereign_key_staple_cache redis-cluster://h:1/0;",
    qr{\[emerg\] sovereign_key_staple_cache: cache "redis-cluster://h:1/0": seed "h:1/0"},
    'a bad staple cache address');
refused("sovereign_key_onion nothere.onion;",
    qr{\[emerg\] invalid onion address "nothere\.onion"}, 'a bad onion address');
refused("sovereign_key_onion auto;",
    qr{\[emerg\] "sovereign_key_onion auto" needs "sovereign_key_onion_dir"},
    'onion auto without a dir');
# An onion dir whose secret key others can read: refused like any private
# key (the public key and hostname may be 0644, as tor writes them).
my $hs = "$d/hs-open";
my $made = sk('onion', '--new', '-P', '443', '-o', $hs);
is($made->{rc}, 0, 'sk onion --new') or diag($made->{err});
chmod 0644, "$hs/hs_ed25519_public_key", "$hs/hostname";
($rc, $err) = conf("sovereign_key_public $pub; sovereign_key_carrier $good; "
    . "sovereign_key_onion auto; sovereign_key_onion_dir $hs;");
is($rc, 0, 'onion dir with a 0600 secret key passes nginx -t') or diag($err);
chmod 0644, "$hs/hs_ed25519_secret_key";
refused("sovereign_key_public $pub; sovereign_key_carrier $good; "
    . "sovereign_key_onion auto; sovereign_key_onion_dir $hs;",
    qr{\[emerg\].*\Q$hs\E/hs_ed25519_secret_key: permissions 0644 are too open},
    'world-readable onion secret key');
refused("sovereign_key_public $pub; sovereign_key_carrier $good;",
    qr{\[emerg\].*with variables}, 'ssl_certificate with variables',
    cert => "ssl_certificate \$ssl_server_name.pem; ssl_certificate_key $ec_key;");
refused("sovereign_key $sk; sovereign_key $sk;",
    qr{\[emerg\] "sovereign_key" directive is duplicate}, 'duplicate directive');
refused("sovereign_key $sk days=0;",
    qr{\[emerg\] invalid parameter "days=0"}, 'bad sovereign_key parameter');

# A carrier file written at http level is judged there: a server it does
# not match is skipped, a carrier matching no server is an error.
$t->write_conf(<<"EOF");
    sovereign_key_public $pub;
    sovereign_key_carrier $good;
    server {
        listen 127.0.0.1:$port ssl;
        server_name a.test;
        ssl_certificate $ec; ssl_certificate_key $ec_key;
    }
    server {
        listen 127.0.0.1:$port ssl;
        server_name b.test;
        ssl_certificate $ec_b; ssl_certificate_key $ec_b_key;
    }
    server {
        listen 127.0.0.1:$port;
        server_name plain.test;
    }
EOF
my $r = $t->test_conf;
is($r->{rc}, 0, 'http-level carrier: other servers are skipped') or diag($r->{err});

done_testing();
