#!/usr/bin/perl
# Incorporate entries in the mirror: each copy is fetched from the
# timeline's /incorporated/<sn> and judged by its own rules before the
# entry is merged.  Two real sk-timelines (8 incorporates 7's Bind, then
# takes a Change-Services and, after a mirror restart, an Unbind for the
# name it only holds through the copy): both stay Idle.  Hostile timelines
# (static sites signed with their own keys): a copy forged in timeline 7's
# name, the same copy incorporated twice, a copy of an Add-Root-CA -- each
# Corrupt with "bad-incorporation" evidence a peer accepts; a copy served
# that is not the one referred to: Stuck.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Digest::SHA qw(sha256);
use SKTest;
use SKTimeline;
use SKMirror;

plan skip_all => 'sk-mirror or sk-timeline not built'
    unless -x $SKMirror::MR && -x $SKTimeline::TL;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'testca');
my $sk = ed25519_key($d, 'example');
my $crt = issue($d, $ca, $sk, 'example.com', "$d/example");

mkdir "$d/$_" for qw(a b);
my $a = start_timeline("$d/a", tid => 7, operator_key => "$d/operator.pub");
my $b = start_timeline("$d/b", tid => 8, operator_key => "$d/operator.pub",
    peer => "7 $d/a/timeline.pub");
ok($a->{up} && $b->{up}, 'timelines 7 and 8 listen (7 a peer of 8)')
    or BAIL_OUT(slurp($b->{log}));

sub stored {
    my ($t, $entry, $ref) = @_;
    my $x = append($t, $entry, $ref);
    is($x->{code}, 201, "stored on $t->{conf}{tid}") or diag($x->{body});
    return $x->{body};
}
my $root = root_entry(cert => "$ca.crt", key => $op);
stored($_, $root) for $a, $b;
my $bind = stored($a, bind_entry(name => 'example.com', key => $sk,
    chain => [$crt]));
my ($isn) = stored($b, incorporate_entry($bind), $bind) =~ /^SN: (\d+)$/m;
stored($b, cs_entry(name => 'example.com', services => 'https,smtps',
    key => $sk));

# Hostile timelines, forged with their own keys.
my $T = time;
my ($ftl, $fkeys) = forged_timelines($d, 9 .. 12);
my %tl = %$ftl;
my %keys = %$fkeys;
my ($bsn) = $bind =~ /^SN: (\d+)$/m;
my $forged = stamp($bind, 7, $bsn, $T, $tl{9}{key});    # 7's, by 9's key
my $stamped_root = ($a->{root} = stored($a, root_entry(cert => "$ca.crt",
    key => $op, serial => 5)));
sub hostile {
    my ($tid, %copies) = @_;    # SN => copy
    my @e = (stamp($root, $tid, 0, $T, $tl{$tid}{key}));
    for my $sn (sort keys %copies) {
        push @e, stamp(incorporate_entry($copies{$sn}[0]), $tid, $sn, $T + $sn,
            $tl{$tid}{key});
    }
    forge($tl{$tid}{dir}, key => $tl{$tid}{key}, tid => $tid, entries => \@e,
        incorporated => { map { $_ => $copies{$_}[1] // $copies{$_}[0] }
            keys %copies });
    $tl{$tid}{srv} = serve_forged($tl{$tid}{dir});
}
hostile(9, 1 => [$forged]);
hostile(10, 1 => [$bind], 2 => [$bind]);
hostile(11, 1 => [$stamped_root]);
hostile(12, 1 => [$bind, $forged]);     # serves another copy than named

my @conf = ([7, $a->{url}, "$d/a/timeline.pub", 'sk-timeline-7'],
    [8, $b->{url}, "$d/b/timeline.pub", 'sk-timeline-8'],
    map { [$_, $tl{$_}{srv}{url}, @{$keys{$_}}] } sort keys %tl);
my $m = start_mirror("$d/m1", \@conf);
ok($m->{up}, 'sk-mirror listens') or BAIL_OUT(slurp($m->{log}));

sub entries {
    my ($tid) = @_;
    my $s = mirror_status($m) or return -1;
    return (grep { $_->{tid} == $tid } @{$s->{timelines}})[0]{entries};
}

# What timeline 8 holds (its entries and the Map-Root entries ending each
# batch): its checkpoint's size.
sub size8 {
    return (split /\n/, http('GET', "$b->{url}/checkpoint")->{body})[1] // -1;
}
ok(wait_until(sub { tl_state($m, 7) eq 'Idle' && tl_state($m, 8) eq 'Idle'
    && entries(8) == size8() }, 20), 'the honest incorporation: 8 Idle, merged')
    or diag(slurp($m->{log}));
is(slurp("$d/m1/data/tl-8/incorporated"), "Incorporate: $isn "
    . length($bind) . "\n$bind", 'the copy is kept for the names\' rules');

ok(wait_state($m, 9, 'Corrupt'), 'a copy forged in 7\'s name: Corrupt');
like(http('GET', "$m->{url}/reneged/9")->{body},
    qr/\AReason: SN 1: the incorporated entry \(timeline 7 SN $bsn\) is not signed by timeline 7.*\nKind: bad-incorporation\n\nStatement: entry \d+\n/s,
    '... evidence: the Incorporate and the copy');
ok(wait_state($m, 10, 'Corrupt'), 'one copy incorporated twice: Corrupt');
like(http('GET', "$m->{url}/reneged/10")->{body},
    qr/\AReason: SN 2: an Incorporate of timeline 7 SN $bsn, not after SN $bsn incorporated at SN 1\nKind: bad-incorporation\n(.*Statement: ){3}/s,
    '... evidence with the earlier Incorporate');
ok(wait_state($m, 11, 'Corrupt'), 'a copy of an Add-Root-CA: Corrupt');
like(mirror_status($m)->{timelines}[4]{reason},
    qr/an Incorporate of a Add-Root-CA entry/, '... saying why');
ok(wait_state($m, 12, 'Stuck'), 'a copy other than the one named: Stuck');
like(mirror_status($m)->{timelines}[5]{reason},
    qr{GET /incorporated/1: the copy of Incorporate SN 1 is not the entry its Incorporated-Hash names},
    '... saying why');
is(tl_state($m, 8), 'Idle', 'the honest incorporating timeline: still Idle');

# A second mirror learns the renegations from the first and checks the
# evidence itself against its own copies.
my $m2 = start_mirror("$d/m2", \@conf, peers => [$m->{url}]);
ok(wait_until(sub { tl_state($m2, 9) eq 'Corrupt'
    && tl_state($m2, 10) eq 'Corrupt' }, 20),
    'a peer accepts the bad-incorporation evidence');

# Restart: the copy is read back, and an Unbind of the name 8 holds only
# through it is judged against it.
stop_daemon($m->{pid});
restart_mirror($m);
ok($m->{up}, 'the mirror restarts') or diag(slurp($m->{log}));
my $held = entries(8);
stored($b, unbind_entry(name => 'example.com', key => $sk));
ok(wait_until(sub { entries(8) > $held && entries(8) == size8() }, 20),
    'an Unbind signed by the incorporated SK: merged after the restart');
is(tl_state($m, 8), 'Idle', '... and 8 stays Idle');
unlike(slurp($m->{log}), qr/timeline 8: .*Corrupt/, 'never held against 8');

# A damaged record refuses to start, naming the file, the offset and the
# field, and is left as it was: it used to be taken for a record past the
# stored entries (SN "-1" read as 2^64 - 1) and cut, with every copy
# behind it (docs/mirror.md, Storage).
stop_daemon($m->{pid});
my $incf = "$d/m1/data/tl-8/incorporated";
my $good = slurp($incf);
(my $bad = $good) =~ s/\AIncorporate: \d+ /Incorporate: -1 /
    or BAIL_OUT('no record to damage');
spew($incf, $bad);
$m->{pid} = run_daemon([$SKMirror::MR, '-c', "$m->{dir}/mirror.conf"],
    $m->{log});
ok(wait_until(sub { !daemon_alive($m->{pid}) }, 20),
    'a record with SN "-1": sk-mirror refuses to start');
like(slurp($m->{log}), qr{tl-8/incorporated: offset 0: "SN": illegal value "-1"},
    '... naming the file, offset and field');
is(slurp($incf), $bad, '... and leaves the file as it was');
spew($incf, $good);

stop_daemon($_->{pid}) for $m, $m2, $a, $b, map { $tl{$_}{srv} } keys %tl;
done_testing();
