#!/usr/bin/perl

# nginx-status.t -- sovereign_key_onion adds an exact Onion-Location
# (a fixed address, and "auto" from a HiddenServiceDir `sk onion` wrote);
# sovereign_key_status serves the server's SK record as exact JSON.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Test::More;
use Time::Local qw(timegm);

use SKTest;
use NginxTest;

my $skip = nginx_skip();
plan skip_all => $skip if $skip;

my $t = NginxTest->new;
my $d = $t->dir;
my ($p1, $p2, $p3) = map { $t->port($_) } qw(fixed auto plain);

make_ca($d);
my ($rsa, $rsa_key) = make_cert($d, 'a.test', 'rsa');
my ($ec, $ec_key) = make_cert($d, 'a.test', 'ec');
my ($sk, $pub) = make_sk($d, 'a.test');
my $c_rsa = make_carrier($sk, $rsa, 'a.test', "$d/c-rsa.pem", '-s', 'https,smtps');
my $c_ec = make_carrier($sk, $ec, 'a.test', "$d/c-ec.pem", '-s', 'https,smtps');
spew("$d/carriers.pem", slurp($c_ec) . slurp($c_rsa));

# Two onion addresses from `sk onion`: one typed into the config, one read
# from its HiddenServiceDir.
my @onions;
for my $n (1, 2) {
    my $r = sk('onion', '--new', '-P', '80', '-o', "$d/hs$n");
    die "sk onion: $r->{err}" if $r->{rc};
    push @onions, slurp("$d/hs$n/hostname") =~ s/\n\z//r;
}
my $hs2_before = slurp("$d/hs2/hs_ed25519_secret_key");

$t->write_conf(<<"EOF");
    ssl_certificate $rsa;
    ssl_certificate_key $rsa_key;
    ssl_certificate $ec;
    ssl_certificate_key $ec_key;

    server {
        listen 127.0.0.1:$p1 ssl;
        server_name a.test;
        sovereign_key_public $pub;
        sovereign_key_carrier $d/carriers.pem;
        sovereign_key_onion $onions[0];
        location / { }
        location = /.well-known/sovereign-key { sovereign_key_status; }
    }
    server {
        listen 127.0.0.1:$p2 ssl;
        server_name a.test;
        sovereign_key_public $pub;
        sovereign_key_carrier $d/carriers.pem;
        sovereign_key_onion auto;
        sovereign_key_onion_dir $d/hs2;
        location / { }
        location = /.well-known/sovereign-key { sovereign_key_status; }
    }
    server {
        listen 127.0.0.1:$p3;
        location / { }
        location = /.well-known/sovereign-key { sovereign_key_status; }
    }
EOF
$t->start;

sub get {
    my ($port, $path, @opt) = @_;
    my $scheme = $port == $p3 ? 'http' : 'https';
    my $r = run_cmd(['curl', '-sS', '-i', '--cacert', "$d/ca.pem", '--resolve',
        "a.test:$port:127.0.0.1", @opt, "$scheme://a.test:$port$path"]);
    my ($head, $body) = split /\r\n\r\n/, $r->{out}, 2;
    return ($head // '', $body // '', $r->{err});
}

my ($h, $b) = get($p1, '/index.html?x=1&y=%20');
like($h, qr{^HTTP/1.1 200}, 'page served');
my @ol = $h =~ /^Onion-Location: (.*?)\r?$/mgi;
is_deeply(\@ol, ["http://$onions[0]/index.html?x=1&y=%20"],
    'one Onion-Location with the request URI, exact');
($h) = get($p1, '/missing');
like($h, qr{^Onion-Location: http://$onions[0]/missing\r?$}m,
    'Onion-Location on a 404 too');
($h) = get($p2, '/a/b');
like($h, qr{^Onion-Location: http://$onions[1]/a/b\r?$}m,
    'auto: the address of the HiddenServiceDir');
is(slurp("$d/hs2/hs_ed25519_secret_key"), $hs2_before,
    'auto: the existing onion key is untouched');
($h) = get($p3, '/');
unlike($h, qr/Onion-Location/i, 'no Onion-Location where not configured');

# The JSON, built independently from openssl's view of the same files.
sub der_sha256 {
    my ($cmd) = @_;
    my $r = run_cmd(['sh', '-c', "$cmd | openssl dgst -sha256 -r"]);
    return 'sha256:' . ($r->{out} =~ /^([0-9a-f]{64})/)[0];
}

my %mon = (Jan => 0, Feb => 1, Mar => 2, Apr => 3, May => 4, Jun => 5,
    Jul => 6, Aug => 7, Sep => 8, Oct => 9, Nov => 10, Dec => 11);
sub cert_time {
    my ($file, $which) = @_;
    my $r = run_cmd(['openssl', 'x509', '-in', $file, '-noout', "-$which"]);
    my ($mo, $dd, $hh, $mi, $ss, $yy) =
        $r->{out} =~ /=(\w+)\s+(\d+) (\d+):(\d+):(\d+) (\d+) GMT/ or die $r->{out};
    return timegm($ss, $mi, $hh, $dd, $mon{$mo}, $yy);
}

my $skfp = der_sha256("openssl pkey -pubin -in $pub -outform DER");
my @carriers;
# OpenSSL keeps a server's certificates by type: RSA before ECDSA.
for my $c ([$rsa, $c_rsa], [$ec, $c_ec]) {
    my $fp = der_sha256("openssl x509 -in $c->[0] -noout -pubkey "
        . "| openssl pkey -pubin -outform DER");
    push @carriers, sprintf '{"key":"%s","not_before":%d,"not_after":%d}',
        $fp, cert_time($c->[1], 'startdate'), cert_time($c->[1], 'enddate');
}
my $carriers = join ',', @carriers;

for my $c ([$p1, $onions[0]], [$p2, $onions[1]]) {
    my ($port, $onion) = @$c;
    ($h, $b) = get($port, '/.well-known/sovereign-key');
    like($h, qr{^HTTP/1.1 200}, "status on port $port");
    like($h, qr{^Content-Type: application/json\r?$}m, '... as JSON');
    is($b, qq({"name":"a.test","sk":"$skfp","services":"https,smtps",)
        . qq("carriers":[$carriers],"onion":"$onion"}\n), '... exact');
}
($h) = get($p3, '/.well-known/sovereign-key');
like($h, qr{^HTTP/1.1 404}, 'status: 404 for a server without an SK');
($h) = get($p1, '/.well-known/sovereign-key', '-X', 'POST');
like($h, qr{^HTTP/1.1 405}, 'status: POST not allowed');
($h, $b) = get($p1, '/.well-known/sovereign-key', '-I');
is($b, '', 'status: HEAD has no body');

$t->stop;
is($t->alerts, '', 'no alerts or sanitizer reports');

done_testing();
