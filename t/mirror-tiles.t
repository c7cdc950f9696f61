#!/usr/bin/perl
# sk-mirror syncing from tlog-tiles entry bundles: two real sk-timelines
# are synced through /tile/entries/ (the log says "source tiles") and the
# answers verify; a forged timeline with 300 entries is synced through one
# full and one partial bundle; a forged timeline whose /tile/ 404s is
# synced from chunks ("source chunks"); tampered bundles -- one byte
# changed, cut short, extra bytes -- send their timelines to the chunks,
# the log naming the bundle's URL and the offset; with a bad chunk too:
# Stuck, the reason naming both, nothing stored; bundles whose root is
# not the signed checkpoint's: Corrupt, none stored.
# The mirror commits every 256 entries (tiles_commit) once the timeline's
# consistency proof leads from the copy to the signed checkpoint: the
# 300-entry timeline in two commits; one whose proof does not lead there
# is synced from its chunks instead, saying why.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SKTest;
use SKTimeline;
use SKMirror;

plan skip_all => 'sk-timeline or sk-mirror not built'
    unless -x $SKTimeline::TL && -x $SKMirror::MR;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'testca');
my %sk = map { $_ => ed25519_key($d, $_) } qw(x example);
my $crt = issue($d, $ca, $sk{x}, 'x.example', "$d/x");
my $excrt = issue($d, $ca, $sk{example}, 'example.com', "$d/example");
my $T = time + 10;

my (%t, %keys);
for my $tid (7, 8) {
    mkdir "$d/tl$tid";
    $t{$tid} = start_timeline("$d/tl$tid", tid => $tid,
        operator_key => "$d/operator.pub", chunk_interval => 1);
    ok($t{$tid}{up}, "timeline $tid listens") or BAIL_OUT(slurp($t{$tid}{log}));
    $keys{$tid} = ["$d/tl$tid/timeline.pub", "sk-timeline-$tid"];
    is(append($t{$tid}, root_entry(cert => "$ca.crt", key => $op))->{code},
        201, "timeline $tid trusts the CA");
    is(append($t{$tid}, bind_entry(name => 'example.com',
        key => $sk{example}, chain => [$excrt]))->{code}, 201,
        "timeline $tid: Bind example.com");
}

# Forged timelines: 31 without tiles, 32 with 300 entries in tiles, 33-35
# with a tampered last bundle, 38 with a tampered bundle and a bad chunk.
my ($ftl, $fkeys) = forged_timelines($d, 31 .. 38);
my %tl = %$ftl;
%keys = (%keys, %$fkeys);
my $root = root_entry(cert => "$ca.crt", key => $op);
my $bind = bind_entry(name => 'x.example', key => $sk{x}, chain => [$crt]);
my @cs = map { cs_entry(name => 'x.example', services => $_, key => $sk{x}) }
    qw(https smtps);

sub history {
    my ($tid, $n) = @_;
    my @spec = ($root, $bind, map { $cs[$_ % 2] } 0 .. $n - 3);
    return stamp_history($tl{$tid}, map { [$spec[$_], $T + $_] } 0 .. $#spec);
}

my %tamper = (
    33 => sub { my $b = shift; substr($b, 40, 1) ^= 'A'; $b },
    34 => sub { my $b = shift; substr($b, 0, length($b) - 7) },
    35 => sub { $_[0] . "\0\0" },
);
publish_forged($tl{31}, history(31, 4));
publish_forged($tl{32}, history(32, 300), tiles => 1, chunks => [[0, 299]]);
publish_forged($tl{$_}, history($_, 4), tiles => 1,
    tamper_bundle => $tamper{$_}) for 33 .. 35;
publish_forged($tl{38}, history(38, 4), tiles => 1,
    tamper_bundle => $tamper{33}, bad_chunk_sig => 0);
# 36: honest bundles, but a signed checkpoint whose root is not theirs.
publish_forged($tl{36}, history(36, 4), tiles => 1, cp_root => "\x55" x 32);
# 37: honest bundles and chunks, a consistency proof that is not.
publish_forged($tl{37}, history(37, 300), tiles => 1, chunks => [[0, 299]],
    bad_proof => 1);
$tl{$_}{srv} = serve_forged($tl{$_}{dir}) for 31 .. 38;

my @conf = ((map { [$_, $t{$_}{url}, @{$keys{$_}}] } 7, 8),
    (map { [$_, $tl{$_}{srv}{url}, @{$keys{$_}}] } 31 .. 38));
my $m = start_mirror("$d/m", \@conf, tiles_commit => 256);
ok($m->{up}, 'sk-mirror listens') or BAIL_OUT(slurp($m->{log}));

for my $tid (7, 8, 31, 32) {
    ok(wait_state($m, $tid, 'Idle', 20), "timeline $tid: Idle")
        or diag(slurp($m->{log}));
}
my $log = slurp($m->{log});
like($log, qr/timeline 7: source tiles/, 'timeline 7 synced from tiles');
like($log, qr/timeline 8: source tiles/, 'timeline 8 synced from tiles');
like($log, qr/timeline 32: source tiles/,
    'the forged timeline with tiles synced from them');
like($log, qr/timeline 31: source chunks: GET \/tile\/entries: HTTP 404/,
    'a timeline whose /tile/ 404s: synced from chunks');
unlike($log, qr/timeline 31: source tiles/, '... and never from tiles');
like(slurp("$tl{32}{dir}.log"), qr/^GET \/proof\/consistency\?from=256&to=300$/m,
    'timeline 32: the first 256 entries committed on a consistency proof');
ok(wait_state($m, 37, 'Idle', 20), 'timeline 37: Idle')
    or diag(slurp($m->{log}));
like(slurp($m->{log}), qr/timeline 37: source chunks: the first 256 (?#
    )entries are not a prefix of the checkpoint of size 300/,
    'a consistency proof that does not lead to the checkpoint: chunks');
ok(!-e "$d/m/data/tl-32/prefix" && !-e "$d/m/data/tl-37/prefix",
    'the checkpoint replaced the prefix head');

my %st = map { $_->{tid} => $_ } @{mirror_status($m)->{timelines}};
is("$st{7}{entries} $st{8}{entries} $st{31}{entries} $st{32}{entries}",
    '4 4 4 300', 'every entry stored (300: one full bundle, one partial; '
    . '7 and 8 end each batch with a Map-Root entry)');
is($st{37}{entries}, 300, 'timeline 37: every entry, from its chunk');

my $r = query($m, 'example.com');
is($r->{code}, 200, 'query example.com: 200');
my $a = check_answer($r->{body}, $m->{pub}, \%keys);
ok($a->{ok}, 'answer: every signature and proof verifies') or diag($a->{err});
is(join(' ', map { "$_:" . join(',', map { $_->{sn} }
    @{$a->{timelines}{$_}{entries}}) } 7, 8), '7:2 8:2',
    'the Bind from each tiled timeline');
$r = query($m, 'x.example');
$a = check_answer($r->{body}, $m->{pub}, \%keys, 'x.example');
ok($a->{ok}, 'x.example: answer verifies') or diag($a->{err});
is(join(',', map { $_->{sn} } @{$a->{timelines}{32}{entries}}),
    join(',', 1 .. 299),
    'x.example: its 299 entries (SN 1-299) from the tiled forged timeline');

# A new entry on a real timeline: the next round takes it from the
# partial bundle of the new width.
is(append($t{7}, bind_entry(name => 'x.example', key => $sk{x},
    chain => [$crt]))->{code}, 201, 'timeline 7: Bind x.example');
ok(wait_until(sub { my $s = mirror_status($m);
    (grep { $_->{tid} == 7 } @{$s->{timelines}})[0]{entries} == 6 }, 15),
    'timeline 7: the new entry synced');

my %why = (33 => qr/entries\/000\.p\/4: entry at offset \d+/,
    34 => qr/entries\/000\.p\/4: entry 3 at offset \d+ of length \d+, beyond/,
    35 => qr/entries\/000\.p\/4: 2 trailing bytes at offset \d+/);
for my $tid (33 .. 35) {
    ok(wait_state($m, $tid, 'Idle', 15), "tampered bundle $tid: Idle");
    my ($s) = grep { $_->{tid} == $tid } @{mirror_status($m)->{timelines}};
    is($s->{entries}, 4, '... every entry, from the chunks');
    like(slurp($m->{log}), qr/timeline $tid: source chunks: (?#
        )\Q$tl{$tid}{srv}{url}\E\/tile\/$why{$tid}/,
        '... the log naming the URL and offset') or diag(slurp($m->{log}));
}
ok(wait_state($m, 38, 'Stuck', 15), 'a tampered bundle and a bad chunk: Stuck');
my ($s38) = grep { $_->{tid} == 38 } @{mirror_status($m)->{timelines}};
my ($url38, $why38) = ($tl{38}{srv}{url}, $why{33});
like($s38->{reason}, qr/\Q$url38\E\/tile\/$why38.*; then from chunks: (?#
    ).*signature/, '... the reason naming the bundle, then the chunk')
    or diag($s38->{reason});
is($s38->{entries}, 0, '... nothing stored');
ok(!grep({ tl_state($m, $_) eq 'Corrupt' } 33 .. 35, 38),
    'none is held as reneged');

ok(wait_state($m, 36, 'Corrupt', 15),
    'bundles whose root is not the signed checkpoint\'s: Corrupt');
my ($s36) = grep { $_->{tid} == 36 } @{mirror_status($m)->{timelines}};
like($s36->{reason}, qr/checkpoint of size 4 does not have the root/,
    '... saying why') or diag($s36->{reason});
is($s36->{entries}, 0, '... none of its entries stored');

done_testing();
