#!/usr/bin/perl
# CA-Cert-Chain on a real sk-timeline (issue 40): a chain is the costliest
# part of an entry to parse, and what a Bind carries is kept in certs.log
# for good, so
#   - more than max_chain certificates (8): 400 before anything is decoded
#   - more than max_chain_bytes (24576): 413, the same
#   - a chain that is not exactly the verified path (a certificate off the
#     path, even with the path whole): 403, nothing of it stored; the path
#     with or without its root: 201
#   - a Bind for a bound name is refused for that before its signatures are
#     checked (a replay costs a lookup): even a bad SK-Signature gets the
#     "already has a Bind" answer

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SKTest;
use SKTimeline;

plan skip_all => 'sk-timeline not built' unless -x $SKTimeline::TL;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'root');
my $inter = make_intermediate($d, $ca, 'inter');
my $other = make_ca($d, 'other');
my %sk = map { $_ => ed25519_key($d, $_) } qw(a b c e f g);
my %crt = map { $_ => issue($d, $inter, $sk{$_}, "$_.example", "$d/$_") }
    keys %sk;
my $fat = issue($d, $other, $sk{g}, 'fat.example', "$d/fat",
    'nsComment=' . ('x' x 4000) . "\n");

mkdir "$d/tl";
my $t = start_timeline("$d/tl", operator_key => "$d/operator.pub",
    chunk_interval => 1);
ok($t->{up}, 'timeline listens') or BAIL_OUT(slurp($t->{log}));
is(append($t, root_entry(cert => "$ca.crt", key => $op))->{code}, 201,
    'Add-Root-CA');

my $r = append($t, bind_entry(name => 'a.example', key => $sk{a},
    chain => [$crt{a}, "$inter.crt"]));
is($r->{code}, 201, 'the path without its root: 201') or diag($r->{body});
$r = append($t, bind_entry(name => 'b.example', key => $sk{b},
    chain => [$crt{b}, "$inter.crt", "$ca.crt"]));
is($r->{code}, 201, 'the path with its root: 201') or diag($r->{body});

$r = append($t, bind_entry(name => 'c.example', key => $sk{c},
    chain => [$crt{c}, "$inter.crt", "$ca.crt", "$other.crt"]));
is($r->{code}, 403, 'the whole path and a certificate past it: 403')
    or diag($r->{body});
like($r->{body}, qr/^bind: chain: CA-Cert-Chain is not the verified path: (?#
    )certificate 4 of 4 is past the root/, '... saying which');
$r = append($t, bind_entry(name => 'c.example', key => $sk{c},
    chain => [$crt{c}, "$other.crt", "$inter.crt"]));
is($r->{code}, 403, 'a certificate off the path in the middle: 403');
like($r->{body}, qr/certificate 2 of 3 is not the path's next/,
    '... saying which');
my $other_b64 = der_b64("$other.crt");
unlike(slurp("$d/tl/certs.log"), qr/\Q$other_b64\E/,
    'certs.log holds none of them');

$r = append($t, bind_entry(name => 'e.example', key => $sk{e},
    chain => [$crt{e}, ("$inter.crt") x 8]));
is($r->{code}, 400, '9 certificates: 400');
like($r->{body}, qr/^entry: CA-Cert-Chain of 9 certificates, more than 8 (?#
    )\(max_chain\)/, '... naming max_chain');
$r = append($t, bind_entry(name => 'f.example', key => $sk{f},
    chain => [$crt{f}, ($fat) x 6]));
is($r->{code}, 413, 'a chain of more than 24576 bytes: 413');
like($r->{body}, qr/^entry: CA-Cert-Chain of \d+ bytes, more than 24576 (?#
    )\(max_chain_bytes\)/, '... naming max_chain_bytes');

# A replay of a bound name's Bind, its SK-Signature spoilt: refused for the
# name, which needs no signature checked.
my $replay = bind_entry(name => 'a.example', key => $sk{a},
    chain => [$crt{a}, "$inter.crt"]);
$replay =~ s/^(SK-Signature: )(.)/$1 . ($2 eq 'A' ? 'B' : 'A')/me;
$r = append($t, $replay);
is($r->{code}, 403, 'a Bind for a bound name, bad signature: 403');
like($r->{body}, qr/^bind: a\.example already has a Bind on this timeline/,
    '... for the name, before any signature');

stop_daemon($t->{pid});
done_testing();
