#!/usr/bin/perl
# Incorporation by reference: timeline 8 takes copies of timeline 7's
# entries (two real sk-timelines).  The copy must be the one referred to,
# signed by the configured peer, valid here at its own time, in the peer's
# SN order; it binds the name here too, and survives a restart.

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
my $ca = make_ca($d, 'testca');
my $only7 = make_ca($d, 'only7ca');
my %sk = map { $_ => ed25519_key($d, $_) } qw(example other);
my %crt = (
    example => issue($d, $ca, $sk{example}, 'example.com', "$d/example"),
    other   => issue($d, $only7, $sk{other}, 'other.com', "$d/other"),
);

mkdir "$d/$_" for qw(a b c);
my $a = start_timeline("$d/a", tid => 7, operator_key => "$d/operator.pub");
ok($a->{up}, 'timeline 7 listens') or BAIL_OUT(slurp($a->{log}));
my $c = start_timeline("$d/c", tid => 9, operator_key => "$d/operator.pub");
ok($c->{up}, 'timeline 9 listens (not a peer of 8)');
my $b = start_timeline("$d/b", tid => 8, operator_key => "$d/operator.pub",
    peer => "7 $d/a/timeline.pub");
ok($b->{up}, 'timeline 8 listens, with 7 as its peer')
    or BAIL_OUT(slurp($b->{log}));

my $r;
for my $t ($a, $b, $c) {
    is(append($t, root_entry(cert => "$ca.crt", key => $op))->{code}, 201,
        "timeline $t->{conf}{tid} trusts the test CA");
}
is(append($a, root_entry(cert => "$only7.crt", key => $op, serial => 2))
    ->{code}, 201, 'only timeline 7 trusts the second CA');

sub stored {
    my ($t, $entry) = @_;
    my $x = append($t, $entry);
    is($x->{code}, 201, "stored on $t->{conf}{tid}") or diag($x->{body});
    return $x->{body};
}
my $bind = stored($a, bind_entry(name => 'example.com', key => $sk{example},
    chain => [$crt{example}]));
my $obind = stored($a, bind_entry(name => 'other.com', key => $sk{other},
    chain => [$crt{other}]));
my $cs = stored($a, cs_entry(name => 'example.com', services => 'https,smtps',
    key => $sk{example}));
my $cbind = stored($c, bind_entry(name => 'example.com', key => $sk{example},
    chain => [$crt{example}]));

sub expect {
    my ($t, $entry, $ref, $code, $re, $name) = @_;
    $r = append($t, $entry, $ref);
    is($r->{code}, $code, "$name: $code")
        and ($re ? like($r->{body}, $re, "$name: says why") : pass($name))
        or diag($r->{body});
}

# What is refused.
expect($b, incorporate_entry($bind), undef, 400,
    qr/^form: an Incorporate needs the entry itself in field "ref"/,
    'no copy');
expect($b, cs_entry(name => 'example.com', services => 'x',
    key => $sk{example}), $bind, 400,
    qr/^form: field "ref" is only for an Incorporate/, 'ref with a Bind');
expect($b, incorporate_entry($cbind), $cbind, 403,
    qr/^incorporate: timeline 9 is not a configured peer/, 'not a peer');
(my $forged = $bind) =~ s/^Services: https$/Services: imaps/m;
expect($b, incorporate_entry($bind), $forged, 403,
    qr/^incorporate: Incorporated-Hash is not the SHA-256 of ref/,
    'a copy that is not the entry referred to');
expect($b, incorporate_entry($forged), $forged, 403,
    qr/^incorporate: ref: timeline 7's Signature/,
    'a copy the peer did not sign');
# Timeline 7's SNs: a Map-Root entry ends each batch (each append here).
my ($bind_sn) = $bind =~ /^SN: (\d+)$/m;
is($bind_sn, 4, "the Bind is timeline 7's SN 4 (0 and 2 roots, 1 and 3 "
    . 'Map-Roots)');
(my $other_sn = incorporate_entry($bind)) =~ s/^Incorporated-SN: 4$/Incorporated-SN: 5/m;
expect($b, $other_sn, $bind, 403,
    qr/^incorporate: ref is TID 7 SN 4, not the Incorporated-TID/,
    'the reference names another SN');
my $root = http('GET', "$a->{url}/entry/0")->{body};
expect($b, incorporate_entry($root), $root, 403,
    qr/^incorporate: a Add-Root-CA entry is not incorporated/,
    'an operator entry');
expect($b, incorporate_entry($obind), $obind, 403,
    qr/^incorporate: bind: chain: not valid to a trusted root/,
    'a Bind whose CA this timeline does not trust');
expect($b, incorporate_entry($bind), "Bind: 1\n\n", 400, qr/^ref: /,
    'a malformed copy');

# What is taken.
expect($b, incorporate_entry($bind), $bind, 201, qr/\AIncorporate: 1\n/,
    "timeline 7's Bind");
my ($isn) = $r->{body} =~ /^SN: (\d+)$/m;
like($r->{body}, qr/^TID: 8$/m, 'stamped by timeline 8');
$r = http('GET', "$b->{url}/incorporated/$isn");
is($r->{body}, $bind, '/incorporated/<sn> serves the copy, byte for byte');
is(http('GET', "$b->{url}/incorporated/0")->{code}, 404,
    '/incorporated/<sn> of another entry: 404');
expect($b, bind_entry(name => 'example.com', key => $sk{example},
    chain => [$crt{example}]), undef, 403,
    qr/^bind: example.com already has a Bind on this timeline/,
    'the incorporated Bind binds the name here');
expect($b, incorporate_entry($bind), $bind, 403,
    qr/^incorporate: timeline 7 SN 4 is not after the last one incorporated/,
    'the same copy twice');
expect($b, incorporate_entry($cs), $cs, 201, undef,
    "timeline 7's Change-Services");
expect($b, cs_entry(name => 'example.com', services => 'imaps',
    key => $sk{other}), undef, 403, qr/^change-services: SK-Signature/,
    'the incorporated SK is in force here');

# A restart replays the copies.
stop_daemon($b->{pid});
restart_timeline($b);
ok($b->{up}, 'timeline 8 restarts') or diag(slurp($b->{log}));
expect($b, bind_entry(name => 'example.com', key => $sk{example},
    chain => [$crt{example}]), undef, 403, qr/already has a Bind/,
    'after the restart the name is still bound');
expect($b, incorporate_entry($cs), $cs, 403, qr/is not after the last one/,
    'and the peer order is remembered');
is(http('GET', "$b->{url}/incorporated/$isn")->{body}, $bind,
    'the copy is still served');
my $ub = stored($a, unbind_entry(name => 'example.com', key => $sk{example}));
expect($b, incorporate_entry($ub), $ub, 201, undef, "timeline 7's Unbind");
expect($b, cs_entry(name => 'example.com', services => 'imaps',
    key => $sk{example}), undef, 403, qr/^change-services: example.com is not bound/,
    'the incorporated Unbind ends the record here');

# incorporated.log: a torn tail is cut, a damaged copy refuses to start.
stop_daemon($b->{pid});
my $inc = slurp("$d/b/incorporated.log");
spew("$d/b/incorporated.log", $inc . substr($bind, 0, 150));
restart_timeline($b);
ok($b->{up}, 'restarts after a torn copy');
like(slurp($b->{log}), qr/incorporated.log: truncating a torn tail of 150 bytes/,
    'torn copy logged');
is(slurp("$d/b/incorporated.log"), $inc, 'and cut');
stop_daemon($b->{pid});
(my $bad = $inc) =~ s/\ABind: 1\n/Bxnd: 1\n/;
spew("$d/b/incorporated.log", $bad);
restart_timeline($b);
ok(!$b->{up}, 'a damaged copy: refuses to start');
like(slurp($b->{log}), qr/incorporated.log: offset 0/, '... naming the offset');
stop_daemon($b->{pid});
is(slurp("$d/b/incorporated.log"), $bad, 'the damaged file left as it was');
spew("$d/b/incorporated.log", $inc);

# A peer key that is not there refuses to start, naming it.
mkdir "$d/d";
spew("$d/bad.conf", "listen = 127.0.0.1:1\ndata_dir = $d/d\ntid = 9\n"
    . "peer = 7 $d/nonesuch.pub\n");
$r = run_cmd([$SKTimeline::TL, '-c', "$d/bad.conf"]);
is($r->{rc}, 78, 'a missing peer key: EX_CONFIG');
like($r->{err}, qr/peer 7: .*nonesuch.pub/, '... naming the peer');

# A "peer" value that is not exactly a plain TID and a KEYFILE is a
# configuration error (-n), naming the file and line: "-5" used to start
# with TID 2^64 - 5, an overflow with 2^64 - 1, and trailing words were
# dropped.
for my $case (["-5 $d/a/timeline.pub", qr/illegal value "-5"/],
    ["-5 $d/a/timeline.pub trailing junk", qr/want "TID KEYFILE"/],
    ["99999999999999999999999 $d/a/timeline.pub", qr/illegal value "9{23}"/],
    ["18446744073709551616 $d/a/timeline.pub", qr/illegal value/],
    ["7 $d/a/timeline.pub junk", qr/want "TID KEYFILE"/],
    ["+7 $d/a/timeline.pub", qr/illegal value "\+7"/],
    ["0 $d/a/timeline.pub", qr/TID must be above 0/])
{
    spew("$d/bad.conf", "listen = 127.0.0.1:1\ndata_dir = $d/d\ntid = 9\n"
        . "peer = $case->[0]\n");
    $r = run_cmd([$SKTimeline::TL, '-n', '-c', "$d/bad.conf"]);
    is($r->{rc}, 78, "peer = $case->[0]: EX_CONFIG");
    like($r->{err}, qr/bad\.conf: line 4: "peer": $case->[1]/,
        '... naming the file and line');
}
spew("$d/bad.conf", "listen = 127.0.0.1:1\ndata_dir = $d/d\ntid = 9\n"
    . "peer = 7 $d/a/timeline.pub\npeer = 7 $d/b/timeline.pub\n");
like(run_cmd([$SKTimeline::TL, '-n', '-c', "$d/bad.conf"])->{err},
    qr/bad\.conf: line 5: "peer": TID 7 given twice/, 'a peer given twice');
spew("$d/bad.conf", "listen = 127.0.0.1:1\ndata_dir = $d/d\ntid = 9\n"
    . "peer = 9 $d/a/timeline.pub\n");
like(run_cmd([$SKTimeline::TL, '-n', '-c', "$d/bad.conf"])->{err},
    qr/bad\.conf: "peer": TID 9 is this timeline's own/, 'itself as a peer');

stop_daemon($_->{pid}) for $a, $c;
unlike(slurp($_->{log}), qr/Sanitizer|runtime error/, 'no sanitizer reports')
    for $a, $b, $c;

done_testing();
