#!/usr/bin/perl
# sk-mirror reads a timeline's root-CA history by sk-timeline's rules
# (docs/protocol.md, "Operator entries"): a root change whose CA-Serial is
# not above the newest one's changes nothing, so a replayed Add-Root-CA
# after a Remove-Root-CA does not trust the root again, and a Bind chained
# to it is an unbacked Bind (Corrupt); a new Add-Root-CA with a later
# serial does; a root added twice and removed once is gone.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Digest::SHA qw(sha256);
use SKTest;
use SKTimeline;
use SKMirror;

plan skip_all => 'sk-mirror not built' unless -x $SKMirror::MR;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'testca');
my $sk = ed25519_key($d, 'x');
my $crt = issue($d, $ca, $sk, 'x.example', "$d/x");
my $bind = bind_entry(name => 'x.example', key => $sk, chain => [$crt]);
my $T = time + 10;

sub remove_entry {
    my ($serial) = @_;
    my $der = run_cmd(['openssl', 'x509', '-in', "$ca.crt", '-outform',
        'DER'])->{out};
    my $f = { 'CA-Cert-Hash' => b64url(sha256($der)), 'CA-Serial' => $serial,
        map { $_ => 'N/A' } qw(SN TID Timestamp Signature) };
    sign_entry('Remove-Root-CA', $f, 'Operator-Signature', $op);
    return canon('Remove-Root-CA', $f);
}

my %hist = (
    31 => [root_entry(cert => "$ca.crt", key => $op, serial => 1),
           remove_entry(2),
           root_entry(cert => "$ca.crt", key => $op, serial => 1), $bind],
    32 => [root_entry(cert => "$ca.crt", key => $op, serial => 1),
           remove_entry(2),
           root_entry(cert => "$ca.crt", key => $op, serial => 3), $bind],
    33 => [root_entry(cert => "$ca.crt", key => $op, serial => 1),
           root_entry(cert => "$ca.crt", key => $op, serial => 2),
           remove_entry(3), $bind],
    34 => [root_entry(cert => "$ca.crt", key => $op, serial => 1), $bind],
);
my (%tl, @conf);
for my $tid (sort keys %hist) {
    my $key = ed25519_key($d, "tl$tid");
    my @e = @{$hist{$tid}};
    mkdir "$d/f$tid";
    forge("$d/f$tid", key => $key, tid => $tid, entries => [map {
        stamp($e[$_], $tid, $_, $T + $_, $key) } 0 .. $#e]);
    $tl{$tid} = serve_forged("$d/f$tid");
    push @conf, [$tid, $tl{$tid}{url}, "$d/tl$tid.pub", "sk-timeline-$tid"];
}
my $m = start_mirror("$d/m", \@conf);
ok($m->{up}, 'sk-mirror listens') or BAIL_OUT(slurp($m->{log}));

ok(wait_state($m, 31, 'Corrupt'),
    'a Bind after a replayed Add-Root-CA (serial not above): Corrupt');
like(http('GET', "$m->{url}/reneged/31")->{body}, qr/^Kind: unbacked-bind$/m,
    '... an unbacked Bind');
like(slurp($m->{log}), qr/timeline 31: SN 2: Add-Root-CA with CA-Serial 1 not above 2, the newest root change's: it changes nothing/,
    '... the replay logged');
ok(wait_state($m, 32, 'Idle'), 'a root added again with a later serial: Idle');
ok(wait_state($m, 33, 'Corrupt'),
    'a root added twice and removed once is not trusted: Corrupt');
ok(wait_state($m, 34, 'Idle'), 'an honest history: Idle');

stop_daemon($m->{pid});
stop_daemon($tl{$_}{pid}) for keys %tl;
unlike(slurp($m->{log}), qr/Sanitizer|runtime error/, 'no sanitizer reports');
done_testing();
