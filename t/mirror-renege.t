#!/usr/bin/perl
# Renegade timelines, forged here with each timeline's own key and served
# as static sites: a duplicate SN with other content, a timestamp
# regression, a forked checkpoint, a Bind whose SK-Signature is bad, a Bind
# chained to a CA the timeline never trusted, a Change-Services not signed
# by the SK in force, a second Bind of one name -- each ends Corrupt with its
# evidence on /reneged/<tid>, and is no longer served.  A chunk with a bad
# signature, garbage instead of bzip2, a chunk past chunk_max, a malformed
# checkpoint: Stuck (not Corrupt), nothing of it merged, the mirror up.  A second mirror, which
# only ever sees the second, self-consistent history of the forked and
# duplicate-SN timelines, learns both renegations from the first through
# tracking, after checking the evidence itself.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
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
my $evil = make_ca($d, 'evilca');
my $evilcrt = issue($d, $evil, $sk{x}, 'x.example', "$d/xevil");
my $T = time + 10;          # claim times within the certificates' validity

my ($ftl, $fkeys) = forged_timelines($d, 11 .. 23);
my %tl = %$ftl;
my %keys = %$fkeys;

# Unstamped entries; stamped per timeline below.
my $root = root_entry(cert => "$ca.crt", key => $op);
my $bind = bind_entry(name => 'x.example', key => $sk{x}, chain => [$crt]);
my @cs = map { cs_entry(name => 'x.example', services => $_, key => $sk{x}) }
    qw(https smtps imaps https:8443);

sub history { my ($tid, @spec) = @_; stamp_history($tl{$tid}, @spec) }
sub publish { my ($tid, @a) = @_; publish_forged($tl{$tid}, @a) }

my %honest = map { $_ => history($_, [$root, $T], [$bind, $T + 1],
    [$cs[0], $T + 2], [$cs[1], $T + 3]) } 11 .. 16, 20, 21;
publish($_, $honest{$_}) for 11, 12, 13, 20, 21;
publish(14, history(14, [$root, $T],
    [bind_entry(name => 'x.example', key => $sk{x}, signer => $sk{y},
        chain => [$crt]), $T + 1]));
publish(17, history(17, [$root, $T],
    [bind_entry(name => 'x.example', key => $sk{x}, chain => [$evilcrt]),
        $T + 1]));
publish(15, $honest{15}, bad_chunk_sig => 0);
publish(16, $honest{16}, garbage_chunk => "BZh91AY&SY not really bzip2");
$honest{18} = history(18, [$root, $T]);
publish(18, $honest{18}, garbage_chunk => 'x' x 300000);
publish(23, history(23, [$root, $T], [$bind, $T + 1], [$bind, $T + 2]));
publish(22, history(22, [$root, $T], [$bind, $T + 1],
    [cs_entry(name => 'x.example', services => 'smtps', key => $sk{y}),
        $T + 2]));
$honest{19} = history(19, [$root, $T]);
publish(19, $honest{19});
spew("$tl{19}{dir}/www/%checkpoint", "sk-timeline-19\n1\nnot a note\n");

for my $tid (sort keys %tl) {
    $tl{$tid}{srv} = serve_forged($tl{$tid}{dir});
}
my @conf = map { [$_, $tl{$_}{srv}{url}, @{$keys{$_}}] } sort keys %tl;
my $m = start_mirror("$d/m1", \@conf, chunk_max => 200000);
ok($m->{up}, 'sk-mirror listens') or BAIL_OUT(slurp($m->{log}));

ok(wait_state($m, 14, 'Corrupt'), 'a Bind with a bad SK-Signature: Corrupt');
ok(wait_state($m, 17, 'Corrupt'),
    'a Bind chained to a CA the timeline never trusted: Corrupt');
ok(wait_state($m, 22, 'Corrupt'),
    'a Change-Services signed by another key than the SK: Corrupt');
ok(wait_state($m, 23, 'Corrupt'), 'a second Bind of one name: Corrupt');
like(mirror_status($m)->{timelines}[12]{reason},
    qr/x\.example already has a Bind on this timeline/, '... saying why');
like(mirror_status($m)->{timelines}[6]{reason},
    qr/not validly backed: chain: not valid to a trusted root/, '... saying why');
ok(wait_state($m, 15, 'Stuck'), 'a chunk with a bad signature: Stuck');
like(mirror_status($m)->{timelines}[4]{reason}, qr/bad signature/,
    '... saying so');
ok(wait_state($m, 16, 'Stuck'), 'garbage instead of bzip2: Stuck');
like(mirror_status($m)->{timelines}[5]{reason}, qr/bzip2/, '... saying so');
ok(wait_until(sub { 5 == grep { tl_state($m, $_) eq 'Idle' }
    11, 12, 13, 20, 21 }, 10), 'the honest histories: Idle');
ok(wait_state($m, 18, 'Stuck'), 'a chunk past chunk_max: Stuck');
like(mirror_status($m)->{timelines}[7]{reason}, qr/too big/, '... saying so');
ok(wait_state($m, 19, 'Stuck'), 'a malformed checkpoint: Stuck');
like(mirror_status($m)->{timelines}[8]{reason}, qr/checkpoint/,
    '... saying so');
my %size = map { $_->{tid} => $_->{entries} }
    @{mirror_status($m)->{timelines}};
is("$size{15} $size{16} $size{18} $size{19}", '0 0 0 0',
    'nothing of the bad chunks merged');
ok(!grep({ tl_state($m, $_) eq 'Corrupt' } 15, 16, 18, 19),
    'none is held as reneged');

# Then each renegade shows another history, signed with its own key.
my @dup = @{$honest{11}};
$dup[2] = stamp($cs[2], 11, 2, $T + 2, $tl{11}{key});
publish(11, [@dup, stamp($cs[3], 11, 4, $T + 4, $tl{11}{key})]);
publish(12, [@{$honest{12}}, stamp($cs[3], 12, 4, $T - 50, $tl{12}{key})]);
my @fork = @{$honest{13}};
$fork[3] = stamp($cs[3], 13, 3, $T + 3, $tl{13}{key});
publish(13, \@fork);

ok(wait_state($m, 11, 'Corrupt'), 'duplicate SN with other content: Corrupt');
ok(wait_state($m, 12, 'Corrupt'), 'timestamp regression: Corrupt');
ok(wait_state($m, 13, 'Corrupt'), 'forked checkpoint: Corrupt');

my $r = http('GET', "$m->{url}/reneged");
is($r->{body}, "11\n12\n13\n14\n17\n22\n23\n",
    '/reneged lists the seven, by TID');

my %kind = (11 => 'duplicate-sn', 12 => 'timestamp-regression',
    13 => 'forked-checkpoint', 14 => 'unbacked-bind', 17 => 'unbacked-bind',
    22 => 'unsigned-update', 23 => 'inconsistent-bind');
for my $tid (11 .. 14, 17, 22, 23) {
    $r = http('GET', "$m->{url}/reneged/$tid");
    is($r->{code}, 200, "/reneged/$tid: 200");
    like($r->{body}, qr/\AReason: .+\nKind: $kind{$tid}\n\nStatement: /,
        "... kind $kind{$tid}");
}
$r = http('GET', "$m->{url}/reneged/11");
my @st = $r->{body} =~ /^Statement: entry \d+\n(.*?\n\n)/msg;
is(scalar @st, 2, 'duplicate SN: two entry statements');
ok(@st == 2 && $st[0] ne $st[1] && ($st[0] =~ /^SN: 2$/m) && ($st[1] =~ /^SN: 2$/m)
    && check_sig($st[0], 11) && check_sig($st[1], 11),
    '... both SN 2, different, both signed by the timeline (openssl)');
$r = http('GET', "$m->{url}/reneged/13");
my @cp = $r->{body} =~ /^Statement: checkpoint \d+\n(sk-timeline-13\n4\n\S+)\n/mg;
ok(@cp == 2 && $cp[0] ne $cp[1], 'forked: two checkpoints of size 4, '
    . 'different roots');
is(http('GET', "$m->{url}/reneged/20")->{code}, 404,
    'an honest timeline has no evidence');

sub check_sig { return SKMirror::check_stamp($_[0], $keys{$_[1]}[0]) }

# Answers leave the renegades out.
$r = query($m, 'x.example');
my $a = check_answer($r->{body}, $m->{pub}, \%keys, 'x.example');
ok($a->{ok}, 'answer verifies') or diag($a->{err} . $r->{body});
is($a->{timelines}{11}{state}, 'Corrupt', 'the renegade is listed Corrupt');
is(scalar @{$a->{timelines}{11}{entries}}, 0, '... with nothing from it');
is(scalar @{$a->{timelines}{20}{entries}}, 3, 'honest ones serve entries');
isnt($a->{hash}, 'e3b0c442', 'Reneged-Hash no longer the empty list\'s');

# Restart: the evidence keeps them Corrupt.
stop_daemon($m->{pid});
restart_mirror($m);
ok($m->{up}, 'mirror restarts');
is(tl_state($m, 13), 'Corrupt', 'still Corrupt after a restart');

# A second mirror sees only the second histories of 11 and 13 (on their
# own, consistent) and learns from the first.
my @conf2 = grep { $_->[0] == 11 || $_->[0] == 13 || $_->[0] == 17
    || $_->[0] >= 20 } @conf;
my $m2 = start_mirror("$d/m2", \@conf2, peers => [$m->{url}]);
ok($m2->{up}, 'second mirror listens') or BAIL_OUT(slurp($m2->{log}));
ok(wait_state($m2, 11, 'Corrupt', 15) && wait_state($m2, 13, 'Corrupt', 15),
    'the second mirror learns both renegations through tracking');
ok(wait_state($m2, 17, 'Corrupt', 15) && wait_state($m2, 22, 'Corrupt', 15),
    '... and finds the unbacked Bind and the unsigned update');
like(slurp($m2->{log}), qr/timeline 13 reneged; its evidence verifies/,
    '... after checking the evidence');
is(http('GET', "$m2->{url}/reneged")->{body}, "11\n13\n17\n22\n23\n",
    'its list: the five it mirrors');
is(http('GET', "$m2->{url}/reneged/13")->{body},
    http('GET', "$m->{url}/reneged/13")->{body}, 'the same evidence');

# A peer's evidence that does not verify is ignored.
my $m3 = start_mirror("$d/m3", [grep { $_->[0] >= 20 } @conf],
    peers => ["$tl{20}{srv}{url}/fake"]);
mkdir "$tl{20}{dir}/www";
spew("$tl{20}{dir}/www/%fake%reneged", "20\n");
spew("$tl{20}{dir}/www/%fake%reneged%20", "Reason: made up\nKind: "
    . "duplicate-sn\n\nStatement: entry 3\nxyz");
ok(wait_until(sub { slurp($m3->{log}) =~ /timeline 20: ignoring evidence/ },
    10), 'a peer\'s unverifiable evidence is ignored');
is(tl_state($m3, 20), 'Idle', '... and the timeline stays Idle');

stop_daemon($_->{pid}) for $m, $m2, $m3;
stop_daemon($tl{$_}{srv}{pid}) for keys %tl;
done_testing();
