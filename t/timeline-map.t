#!/usr/bin/perl
# sk-timeline's name map (docs/protocol.md, "The name map"): every batch
# ends in a Map-Root entry, so every checkpoint's last entry is one, and
# its Map-Hash is the map recomputed independently from the log's entries
# (tests/unit/map_replay.c: values in memory, root by sk_map_root_sorted).
# A POSTed Map-Root entry is refused; a restart keeps the root; a log
# written without the map (name_map = no) gets its map built and a
# Map-Root appended at start; a timeline whose stored map does not give
# its last Map-Root rebuilds it, and refuses to start if the log itself
# does not give it (the map_lie fault hook writes such a log).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SKTest;
use SKTimeline;

my $REPLAY = "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/tests/map_replay';
plan skip_all => 'sk-timeline or map_replay not built'
    unless -x $SKTimeline::TL && -x $REPLAY;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'ca');
my %sk = map { $_ => ed25519_key($d, $_) } qw(a b heir new);
my %crt = (a => issue($d, $ca, $sk{a}, 'a.example', "$d/a"),
    b => issue($d, $ca, $sk{b}, 'b.example', "$d/b"),
    heir => issue($d, $ca, $sk{heir}, 'heir.example', "$d/heir"),
    new => issue($d, $ca, $sk{new}, 'a.example', "$d/new"));

# The log recomputed: map_replay's lines and exit code.
sub replay {
    my ($dir) = @_;
    my $f = "$d/log.replay";
    spew($f, read_log($dir));
    my $r = run_cmd(['sh', '-c', "exec '$REPLAY' <'$f'"]);
    return $r;
}

sub last_entry {
    my ($t) = @_;
    my $cp = http('GET', "$t->{url}/checkpoint")->{body};
    my $size = (split /\n/, $cp)[1] // 0;
    return ($size, $size > 0
        ? http('GET', "$t->{url}/entry/" . ($size - 1))->{body} : '');
}

sub ok_append {
    my ($t, $e, $what) = @_;
    my $r = append($t, $e);
    is($r->{code}, 201, $what) or diag($r->{body});
    my ($size, $last) = last_entry($t);
    like($last, qr/\AMap-Root: 1\n/, "... the checkpoint (size $size) ends "
        . 'in a Map-Root entry');
    return $r->{body};
}

mkdir "$d/tl";
my $t = start_timeline("$d/tl", operator_key => "$d/operator.pub",
    chunk_interval => 3600);
ok($t->{up}, 'sk-timeline listens') or BAIL_OUT(slurp($t->{log}));

ok_append($t, root_entry(cert => "$ca.crt", key => $op), 'the CA trusted');
ok_append($t, bind_entry(name => 'a.example', key => $sk{a},
    chain => [$crt{a}], rebinders => 'heir.example'), 'Bind a.example');
ok_append($t, bind_entry(name => 'b.example', key => $sk{b},
    chain => [$crt{b}]), 'Bind b.example');
ok_append($t, bind_entry(name => 'heir.example', key => $sk{heir},
    chain => [$crt{heir}]), 'Bind heir.example');
ok_append($t, cs_entry(name => 'a.example', services => 'https,smtps',
    key => $sk{a}), 'Change-Services a.example');
ok_append($t, unbind_entry(name => 'a.example', key => $sk{a}),
    'Unbind a.example');
ok_append($t, rebind_entry(name => 'a.example', key => $sk{new},
    chain => [$crt{new}], rebinder => 'heir.example',
    rebinder_key => $sk{heir}), 'Rebind a.example by heir.example');
is(append($t, bind_entry(name => 'b.example', key => $sk{b},
    chain => [$crt{b}]))->{code}, 403, 'a second Bind of b.example: 403');

# Every Map-Root of the log against the map recomputed from its entries.
my $r = replay("$d/tl");
is($r->{rc}, 0, 'every Map-Hash is the map of the entries before it')
    or diag($r->{out}, $r->{err});
like($r->{out}, qr/^entries 14 maproots 7 names 3$/m,
    '7 appends, 7 batches: 7 Map-Root entries over 3 names');
unlike($r->{out}, qr/ bad /, 'no Map-Root disagrees');

# The type is the timeline's own.
my ($size, $mr) = last_entry($t);
(my $posted = $mr) =~ s/^(SN|TID|Timestamp|Signature): .*$/$1: N\/A/mg;
$r = append($t, $posted);
is($r->{code}, 403, 'a POSTed Map-Root entry: 403');
like($r->{body}, qr/Map-Root/, '... saying why') or diag($r->{body});

# A restart keeps the root: no Map-Root due, the next batch's agrees.
stop_daemon($t->{pid});
$t = restart_timeline($t);
ok($t->{up}, 'restarted') or BAIL_OUT(slurp($t->{log}));
my ($size2) = last_entry($t);
is($size2, $size, 'nothing appended at start: the log ended in a Map-Root');
unlike(slurp($t->{log}), qr/rebuilding|no Map-Root/,
    'the stored map gave the last Map-Hash');
is(append($t, bind_entry(name => 'b.example', key => $sk{b},
    chain => [$crt{b}]))->{code}, 403, 'b.example is still bound');
ok_append($t, cs_entry(name => 'b.example', services => 'smtps',
    key => $sk{b}), 'Change-Services b.example after the restart');
$r = replay("$d/tl");
is($r->{rc}, 0, 'its Map-Hash is the recomputed map too')
    or diag($r->{out}, $r->{err});
stop_daemon($t->{pid});

# Migration: a log without Map-Root entries (name_map = no writes one).
mkdir "$d/old";
my $o = start_timeline("$d/old", operator_key => "$d/operator.pub",
    chunk_interval => 3600, name_map => 'no');
ok($o->{up}, 'a timeline with name_map = no') or BAIL_OUT(slurp($o->{log}));
is(append($o, root_entry(cert => "$ca.crt", key => $op))->{code}, 201,
    'the CA trusted');
is(append($o, bind_entry(name => 'a.example', key => $sk{a},
    chain => [$crt{a}]))->{code}, 201, 'Bind a.example');
is(append($o, bind_entry(name => 'b.example', key => $sk{b},
    chain => [$crt{b}]))->{code}, 201, 'Bind b.example');
($size, $mr) = last_entry($o);
is($size, 3, 'three entries, no Map-Root');
stop_daemon($o->{pid});
$o->{conf}{name_map} = 'yes';
$o = restart_timeline($o);
ok($o->{up}, 'restarted with the map') or BAIL_OUT(slurp($o->{log}));
like(slurp($o->{log}), qr/3 entries and no Map-Root entry after them: the name map is built from the log, a Map-Root entry appended/,
    'the start says it builds the map');
($size, $mr) = last_entry($o);
is($size, 4, 'a Map-Root entry appended at start');
like($mr, qr/\AMap-Root: 1\n.*^Map-Names: 2$/ms, '... over 2 names');
$r = replay("$d/old");
is($r->{rc}, 0, 'its Map-Hash is the recomputed map')
    or diag($r->{out}, $r->{err});
is(append($o, bind_entry(name => 'a.example', key => $sk{a},
    chain => [$crt{a}]))->{code}, 403, 'a.example stays bound');
stop_daemon($o->{pid});

# The fault hook: a lying timeline's Map-Hash is not the map's.
mkdir "$d/liar";
my $l = start_timeline("$d/liar", operator_key => "$d/operator.pub",
    chunk_interval => 3600, map_lie => 'yes');
ok($l->{up}, 'a timeline with map_lie = yes') or BAIL_OUT(slurp($l->{log}));
is(append($l, root_entry(cert => "$ca.crt", key => $op))->{code}, 201,
    'the CA trusted');
is(append($l, bind_entry(name => 'a.example', key => $sk{a},
    chain => [$crt{a}]))->{code}, 201, 'Bind a.example');
$r = replay("$d/liar");
is($r->{rc}, 1, 'map_replay finds its Map-Hash wrong');
like($r->{out}, qr/^maproot 3 bad 1$/m, '... at SN 3');
stop_daemon($l->{pid});
# Without the hook its own log does not give its last Map-Root: the stored
# map is rebuilt from the log, which does not give it either.
$l->{conf}{map_lie} = 'no';
$l = restart_timeline($l);
ok(!$l->{up}, 'refuses to start without the hook');
my $log = slurp($l->{log});
like($log, qr{index/data\.mdb: the stored name map: SN 3 of \S+entries\.log is a Map-Root entry with Map-Hash}, 
    'names the stored map first, and rebuilds it') or diag($log);
like($log, qr{the name map built from the log: SN 3 of \S+/entries\.log is a Map-Root entry with Map-Hash \S+, but the map gives},
    '... then refuses, naming the log') or diag($log);

done_testing();
