#!/usr/bin/perl
# sk-mirror and the timelines' name maps (docs/protocol.md, "The name
# map"), against real sk-timelines: three with maps, one without (from
# before maps), and one that lies about its map (map_lie: a wrong
# Map-Hash in every Map-Root entry).  Answers carry each checkpoint's
# last entry with its inclusion proof and, for a mapped timeline, the
# name's map proof, checked here twice: by the model in SKMirror.pm and
# by libsk (tests/unit/map_check.c); a present name's entries are its
# whole history whatever Since says, an absent name's proof is a proof
# of absence.  The liar is caught: map-root evidence, Corrupt,
# /reneged/<tid>, and libsk's check accepts that evidence and refuses it
# tampered or made from an honest timeline.  A mirror index from before
# maps builds its maps from the copies at start.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MIME::Base64 qw(decode_base64);
use SKTest;
use SKTimeline;
use SKMirror;

my $CHECK = "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/tests/map_check';
plan skip_all => 'sk-timeline, sk-mirror or map_check not built'
    unless -x $SKTimeline::TL && -x $SKMirror::MR && -x $CHECK;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'testca');
my %sk = map { $_ => ed25519_key($d, $_) } qw(example a);
my %crt = (example => issue($d, $ca, $sk{example}, 'example.com',
    "$d/example"), a => issue($d, $ca, $sk{a}, 'a.example', "$d/a"));

# 7, 8, 9 mapped; 10 lies about its map; 11 has none.
my %opt = (10 => [map_lie => 'yes'], 11 => [name_map => 'no']);
my (%t, %keys, @tl);
for my $tid (7 .. 11) {
    mkdir "$d/tl$tid";
    $t{$tid} = start_timeline("$d/tl$tid", tid => $tid,
        operator_key => "$d/operator.pub", chunk_interval => 1,
        @{$opt{$tid} // []});
    ok($t{$tid}{up}, "timeline $tid listens") or BAIL_OUT(slurp($t{$tid}{log}));
    $keys{$tid} = ["$d/tl$tid/timeline.pub", "sk-timeline-$tid"];
    push @tl, [$tid, $t{$tid}{url}, $keys{$tid}[0]];
}

sub reg {
    my ($tid, $entry, $what) = @_;
    my $r = append($t{$tid}, $entry);
    is($r->{code}, 201, "timeline $tid: $what") or diag($r->{body});
}

for my $tid (7 .. 11) {
    reg($tid, root_entry(cert => "$ca.crt", key => $op), 'trusts the CA');
    reg($tid, bind_entry(name => 'example.com', key => $sk{example},
        chain => [$crt{example}]), 'Bind example.com');
}
reg(9, cs_entry(name => 'example.com', services => 'smtps',
    key => $sk{example}), 'Change-Services example.com');
reg(8, bind_entry(name => 'a.example', key => $sk{a}, chain => [$crt{a}]),
    'Bind a.example');

# Synced: each honest timeline's checkpoint is the mirror's.
sub tl_size {
    my ($tid) = @_;
    return (split /\n/, http('GET', "$t{$tid}{url}/checkpoint")->{body})[1]
        // -1;
}

sub synced {
    my ($m) = @_;
    my $s = mirror_status($m) or return 0;
    my %by = map { $_->{tid} => $_ } @{$s->{timelines}};
    return 4 == grep { $by{$_}{state} eq 'Idle'
        && $by{$_}{checkpoint_size} == tl_size($_) } 7, 8, 9, 11;
}

my $m = start_mirror("$d/m", \@tl);
ok($m->{up}, 'mirror listens') or BAIL_OUT(slurp($m->{log}));
ok(wait_until(sub { synced($m) }, 60), 'mirror synced the honest timelines')
    or BAIL_OUT(slurp($m->{log}));

# The Map-Proof text and Map-Hash of timeline TID's block in an answer.
sub map_part {
    my ($body, $tid) = @_;
    my ($block) = $body =~ /^Timeline: $tid \w+\n(.*?)^Entries: /ms;
    my ($hash) = ($block // '') =~ /^Map-Hash: (\S+)$/m;
    my ($proof) = ($block // '') =~ /^(Map-Proof: .*)\z/ms;
    return ($proof, $hash);
}

sub libsk_proof {
    my ($name, $body, $tid) = @_;
    my ($proof, $hash) = map_part($body, $tid);
    return 'no map proof' unless defined $proof && defined $hash;
    my $f = "$d/proof";
    spew($f, $proof);
    my $r = run_cmd(['sh', '-c', "'$CHECK' proof '$name' '$hash' < '$f'"]);
    return $r->{rc} == 0 ? $r->{out} : "refused: $r->{err}";
}

sub answer {
    my ($name, $since) = @_;
    my $r = query($m, $name, $since);
    is($r->{code}, 200, "$name: 200") or diag($r->{body});
    my $c = check_answer($r->{body}, $m->{pub}, \%keys, $name);
    ok($c->{ok}, "$name: every signature, inclusion and map proof checks")
        or diag($c->{err});
    return ($c, $r->{body});
}

# A present name: its whole history, proven.
my ($c, $body) = answer('example.com');
is($c->{timelines}{$_}{map}, 'present', "timeline $_: example.com proven "
    . "present") for 7, 8, 9;
is($c->{timelines}{11}{map}, 'unmapped', 'timeline 11 (no map): unmapped');
like($c->{timelines}{$_}{last}, qr/\AMap-Root: 1$/m,
    "timeline $_: the checkpoint's last entry is a Map-Root") for 7, 8, 9;
is(scalar @{$c->{timelines}{9}{entries}}, 2,
    'timeline 9: both entries of example.com');
is($c->{timelines}{10}{state}, 'Corrupt', 'timeline 10 (the liar): Corrupt');
for my $tid (7, 9) {
    my @e = @{$c->{timelines}{$tid}{entries}};
    my $v = b64url(map_value([map { $_->{sn} } @e],
        [map { leaf_hash($_->{text}) } @e]));
    is(libsk_proof('example.com', $body, $tid), "present $v\n",
        "timeline $tid: libsk verifies the proof, the entries give the value");
}

# Since asks for newer entries, but a mapped timeline's block carries the
# whole history (a hole could not be checked); the unmapped one's does not.
($c) = answer('example.com', 4000000000);
is(scalar @{$c->{timelines}{9}{entries}}, 2,
    'since in the future: timeline 9 still lists the whole history');
is(scalar @{$c->{timelines}{11}{entries}}, 0,
    '... the unmapped timeline 11 lists none');

# An absent name: a proof of absence from each mapped timeline.
($c, $body) = answer('nobody.example');
is($c->{timelines}{$_}{map}, 'absent', "timeline $_: nobody.example "
    . "proven absent") for 7, 8, 9;
is(libsk_proof('nobody.example', $body, $_), "absent\n",
    "timeline $_: libsk verifies the absence") for 7, 8, 9;
($c, $body) = answer('a.example');
is($c->{timelines}{8}{map}, 'present', 'a.example: present on 8');
is($c->{timelines}{7}{map}, 'absent', '... absent on 7');

# A map proof changed by one byte does not verify.
(my $bad = (map_part($body, 8))[0]) =~ s/^([A-Za-z0-9+\/])/$1 eq 'A' ? 'B' : 'A'/me;
spew("$d/proof", $bad);
my $r = run_cmd(['sh', '-c', "'$CHECK' proof a.example '"
    . (map_part($body, 8))[1] . "' < '$d/proof'"]);
is($r->{rc}, 1, 'a map proof with a sibling changed is refused by libsk');

# The liar: map-root evidence anyone can check.
like(slurp($m->{log}), qr/timeline 10: \w+ -> Corrupt: .*Map-Root entry SN/,
    'the liar is logged as Corrupt, naming its Map-Root entry')
    or diag(slurp($m->{log}));
is(http('GET', "$m->{url}/reneged")->{body}, "10\n", '/reneged lists 10');
my $ev = http('GET', "$m->{url}/reneged/10")->{body};
like($ev, qr/\AReason: .*Map-Root.*\nKind: map-root\n\n/,
    '/reneged/10: map-root evidence');

sub libsk_evidence {
    my ($tid, $text) = @_;
    spew("$d/ev", $text);
    return run_cmd(['sh', '-c',
        "'$CHECK' evidence $tid '$keys{$tid}[0]' < '$d/ev'"]);
}

$r = libsk_evidence(10, $ev);
is($r->{rc}, 0, 'libsk (sk_evidence_check) accepts it') or diag($r->{err});

my @st = split /(?=^Statement: )/m, $ev;
my $head = shift @st;
$r = libsk_evidence(10, $head . join '', @st[0 .. $#st - 1]);
is($r->{rc}, 1, 'evidence with an entry left out is refused');
like($r->{err}, qr/every entry before it/, '... saying why');
(my $forged = $ev) =~ s/^(Map-Hash: )(.)/$1 . ($2 eq 'A' ? 'B' : 'A')/me;
$r = libsk_evidence(10, $forged);
is($r->{rc}, 1, 'evidence with its Map-Hash changed is refused');

# The same evidence made from an honest timeline's own entries is refused.
my @e7;
for my $sn (0 .. 100) {
    my $e = http('GET', "$t{7}{url}/entry/$sn");
    last if $e->{code} != 200;
    push @e7, $e->{body};
    last if $e->{body} =~ /\AMap-Root: 1$/m && $sn > 1;
}
ok($e7[-1] =~ /\AMap-Root: 1$/m, 'timeline 7: entries up to a Map-Root');
$r = libsk_evidence(7, "Reason: made up\nKind: map-root\n\n"
    . join('', map { "Statement: entry " . length($_) . "\n$_" }
        $e7[-1], @e7[0 .. $#e7 - 1]));
is($r->{rc}, 1, 'map-root evidence against an honest timeline is refused');
like($r->{err}, qr/the map root matches/, '... the map root matches');

# A mirror index from before maps: the map rows and records dropped, the
# start builds the maps from the copies and answers prove as before.
stop_daemon($m->{pid});
$r = run_cmd([$CHECK, 'drop', "$d/m/data/index", '7,8,9,11']);
is($r->{rc}, 0, 'the maps dropped from the stopped mirror\'s index')
    or diag($r->{err});
my $seen = length slurp($m->{log});
restart_mirror($m);
ok($m->{up}, 'the mirror starts again') or diag(slurp($m->{log}));
like(substr(slurp($m->{log}), $seen),
    qr/timeline 7: map: feeding entries 0 to \d+ from the copy/,
    'it builds timeline 7\'s map from its copy, and says so');
ok(wait_until(sub { synced($m) }, 30), 'synced again');
($c, $body) = answer('example.com');
is($c->{timelines}{$_}{map}, 'present', "timeline $_: example.com proven "
    . "present after the rebuild") for 7, 8, 9;

done_testing();
