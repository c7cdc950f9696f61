#!/usr/bin/perl
# The client honours Reneged-Hash: when a mirror's answer carries a hash
# other than the one whose list the client went through, libsk fetches
# /reneged and each listed timeline's evidence, verifies it with the keys
# it ships with, and distrusts that timeline for good (the cache keeps
# the evidence): its entries leave the record, it no longer counts among
# the timelines, and a second mirror that never saw the renegation cannot
# bring it back.  Evidence a client cannot check alone (a Change-Services
# judged against the name's earlier entries) is reported, not acted upon.
# Timelines are static sites forged with their own keys (as in
# mirror-renege.t).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use JSON::PP;
use Test::More;
use SKTest;
use SKTimeline;
use SKMirror;

plan skip_all => 'sk-mirror not built' unless -x $SKMirror::MR;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'testca');
my %sk = map { $_ => ed25519_key($d, $_) } qw(x y);
my $crt = issue($d, $ca, $sk{x}, 'x.example', "$d/x");
my $T = time + 10;

my ($ftl, $fkeys) = forged_timelines($d, 11 .. 14);
my %tl = %$ftl;
my %keys = %$fkeys;
my $root = root_entry(cert => "$ca.crt", key => $op);
my $bind = bind_entry(name => 'x.example', key => $sk{x}, chain => [$crt]);
my @cs = map { cs_entry(name => 'x.example', services => $_, key => $sk{x}) }
    qw(https smtps imaps);
sub history { my ($tid, @spec) = @_; stamp_history($tl{$tid}, @spec) }
sub publish { my ($tid, $entries) = @_; publish_forged($tl{$tid}, $entries) }
my %honest = map { $_ => history($_, [$root, $T], [$bind, $T + 1],
    [$cs[0], $T + 2]) } 11 .. 13;
publish($_, $honest{$_}) for 11 .. 13;
# 14: a Change-Services not signed by the SK in force (unsigned-update).
publish(14, history(14, [$root, $T], [$bind, $T + 1],
    [cs_entry(name => 'x.example', services => 'smtps', key => $sk{y}),
        $T + 2]));
$tl{$_}{srv} = serve_forged($tl{$_}{dir}) for sort keys %tl;
my @conf = map { [$_, $tl{$_}{srv}{url}, @{$keys{$_}}] } sort keys %tl;

my $m = start_mirror("$d/m1", \@conf);
ok($m->{up}, 'sk-mirror listens') or BAIL_OUT(slurp($m->{log}));
ok(wait_until(sub { 3 == grep { tl_state($m, $_) eq 'Idle' } 11 .. 13
    and tl_state($m, 14) eq 'Corrupt' }, 20), '11-13 Idle, 14 Corrupt');

my $cache = "$d/cache";
my $tlines = join('', map { "timeline = $_ $keys{$_}[0]\n" } 11 .. 14);
sub trust {
    my ($file, $mm) = @_;
    spew($file, $tlines . "mirror = $mm->{url} $mm->{pub}\nt1 = 0\n"
        . "fresh_percent = 50\n");
    return $file;
}
my $closed = free_port();
sub verify {
    my ($tr) = @_;
    my $r = sk('verify', '--trust', $tr, '--cache', $cache, '--connect',
        "127.0.0.1:$closed", '--json', 'https://x.example');
    my $j = eval { decode_json($r->{out}) } // { raw => "$r->{out} $r->{err}" };
    $j->{log} = join "\n", map { $_->{result} } @{$j->{mirrors} // []};
    return $j;
}
sub tids { return join ',', sort map { $_->{tid} } @{$_[0]{checkpoints}} }

my $t1 = trust("$d/trust1", $m);
my $j = verify($t1);
is($j->{freshness}, 'answer', 'an answer') or diag(explain($j));
is($j->{timelines}, 4, 'four timelines trusted');
is(tids($j), '11,12,13', '... three of them served');
like($j->{log}, qr/reports timeline 14 as reneged; not checkable by a client, still trusted/,
    'unsigned-update evidence: reported, not acted upon');

# 11 signs a second entry with SN 2: the mirror holds it Corrupt.
my @dup = @{$honest{11}};
$dup[2] = stamp($cs[1], 11, 2, $T + 2, $tl{11}{key});
publish(11, [@dup, stamp($cs[2], 11, 3, $T + 3, $tl{11}{key})]);
ok(wait_state($m, 11, 'Corrupt'), 'duplicate SN: the mirror holds 11 Corrupt');

$j = verify($t1);
like($j->{log}, qr/timeline 11 reneged \(the client checked the evidence: two different signed entries with SN 2\): no longer trusted/,
    'the client fetched the evidence, checked it, distrusts 11')
    or diag(explain($j));
is($j->{timelines}, 3, '... three timelines left');
ok(-s "$cache/reneged/11", '... the evidence kept in the cache');
is(tids($j), '12,13', '... nothing of 11 in the record');

# A second mirror that only ever saw 11's second history serves it as
# Idle: the client, with its cache, still does not trust it.
my $m2 = start_mirror("$d/m2", \@conf);
ok(wait_until(sub { tl_state($m2, 11) eq 'Idle' }, 20),
    'a fresh mirror holds 11 as Idle');
$j = verify(trust("$d/trust2", $m2));
is($j->{timelines}, 3, 'the cache keeps 11 distrusted');
is(tids($j), '12,13', '... its checkpoint and entries left out')
    or diag(explain($j));

# Damaged evidence in the cache is said, and 11 stays out.
spew("$cache/reneged/11", "Reason: x\nKind: duplicate-sn\n\n");
my $r = sk('verify', '--trust', "$d/trust2", '--cache', $cache, '--connect',
    "127.0.0.1:$closed", '--json', 'https://x.example');
$j = eval { decode_json($r->{out}) } // {};
like(join("\n", map { $_->{result} } @{$j->{mirrors} // []}),
    qr{reneged/11: evidence \(duplicate-sn\): want two statements},
    'damaged evidence in the cache: named') or diag($r->{out});
is($j->{timelines}, 3, '... and 11 still distrusted');

stop_daemon($_) for $m->{pid}, $m2->{pid}, map { $tl{$_}{srv}{pid} } keys %tl;
done_testing();
