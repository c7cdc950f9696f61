#!/usr/bin/perl
# sk-mirror decides each new entry it syncs from authenticated name state
# (docs/mirror.md, "Checking a timeline"): which SK is in force for an
# Unbind or a Change-Services, whether a Bind is a name's first, come from
# the name's entries in the copy, and the index rows that list them must
# give the name's value in the map, proven from the Map-Root entry of the
# checkpoint the mirror checked.  Two real sk-timelines (with name maps),
# a real sk-mirror synced from both, stopped; a names row of its index
# (data.mdb: LMDB has no checksums) is changed, with its bucket's digest
# made to fit, so that the row check alone does not tell:
#  1. owner.example's Bind row on timeline 1 pointed at other.example's
#     Bind (its SN changed): the SK in force would be other's;
#  2. the row renamed (owneR.example): owner.example would have no Bind.
# Restarted, the mirror syncs the owner's own Change-Services, signed by
# the SK in force: taken (the answer lists it, the timeline stays Idle, no
# evidence), the damage logged naming data.mdb, the table and the name,
# the index rebuilt from the copies.  Without the map check the mirror
# refused it and held the honest timeline to have reneged.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use Digest::SHA qw(sha256);
use SKTest;
use SKTimeline;
use SKMirror;
use SKFault;

plan skip_all => 'sk-timeline or sk-mirror not built'
    unless -x $SKTimeline::TL && -x $SKMirror::MR;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'ca');
my %key = map { $_ => ed25519_key($d, $_) } qw(owner other);
my %crt = map { $_ => issue($d, $ca, $key{$_}, "$_.example", "$d/$_") }
    qw(owner other);

my ($t, $tl, $got) = start_timelines($d, [1, 2],
    [root_entry(cert => "$ca.crt", key => $op),
     map { bind_entry(name => "$_.example", key => $key{$_},
         chain => [$crt{$_}]) } qw(owner other)], chunk_interval => 1);
my %t = %$t;
my %keys = map { $_ => ["$d/tl$_/timeline.pub", "sk-timeline-$_"] } 1, 2;
is(join(' ', map { $_->{code} } map { @{$got->{$_}} } 1, 2),
    '201 201 201 201 201 201', 'each timeline: the CA trusted, both names bound');

sub tl_size {
    my ($tid) = @_;
    return (split /\n/, http('GET', "$t{$tid}{url}/checkpoint")->{body})[1]
        // -1;
}

my $m = start_mirror("$d/m", $tl);
ok($m->{up}, 'mirror listens') or BAIL_OUT(slurp($m->{log}));

# Timeline 1's state once the mirror holds its checkpoint or gave up on
# it (Corrupt); timeline 2 synced too.
sub settled {
    my $until = time + 60;
    while (time < $until) {
        my $s = mirror_status($m);
        my %by = map { $_->{tid} => $_ } @{$s ? $s->{timelines} : []};
        return 'Corrupt' if ($by{1}{state} // '') eq 'Corrupt';
        return 'Idle' if 2 == grep { ($by{$_}{state} // '') eq 'Idle'
            && $by{$_}{checkpoint_size} == tl_size($_) } 1, 2;
        select(undef, undef, undef, 0.2);
    }
    return 'not synced in 60 s';
}
is(settled(), 'Idle', 'mirror synced') or BAIL_OUT(slurp($m->{log}));

# The checked answer for a name: { tid => [SN, ...] } of its entries.
sub sns_of {
    my ($name) = @_;
    my $r = query($m, $name);
    my $c = check_answer($r->{body}, $m->{pub}, \%keys, $name);
    ok($c->{ok}, "$name: the answer checks") or diag($c->{err} // $r->{body});
    return { map { $_ => [map { $_->{sn} } @{$c->{timelines}{$_}{entries}}] }
        1, 2 };
}

my $mdb = "$d/m/data/index/data.mdb";

# A names row (bucket, name, NUL, be64 TID, be64 SN; the value a flag
# byte, 0 for these entries) and the SHA-256 it adds to its bucket.
sub nkey {
    my ($name, $tid, $sn) = @_;
    return substr(sha256($name), 0, 2) . "$name\0" . pack('Q>Q>', $tid, $sn);
}
sub nrow_hash { return sha256($_[0] . "\0") }

# Replace names row $old with $new and make its bucket's row (be64 count,
# then the XOR of its rows' hashes) fit again: @rows is every row of the
# bucket.
sub move_row {
    my ($old, $new, @rows) = @_;
    my $digest = "\0" x 32;
    $digest ^= nrow_hash($_) for @rows;
    my $bucket = pack('Q>', scalar @rows) . $digest;
    my $fitted = pack('Q>', scalar @rows)
        . ($digest ^ nrow_hash($old) ^ nrow_hash($new));
    my $n = damage($mdb, $old, sub { my ($data, $pos) = @_;
        substr($$data, $pos, length $new) = $new });
    my $nb = damage($mdb, $bucket, sub { my ($data, $pos) = @_;
        substr($$data, $pos, length $fitted) = $fitted });
    unlink "$d/m/data/index/lock.mdb";
    return ($n, $nb);
}

# One case: the damage, a restart, the owner's Change-Services on
# timeline 1 synced.
sub case {
    my ($what, $services, $old, $new, @rows) = @_;
    stop_daemon($m->{pid});
    my ($n, $nb) = move_row($old, $new, @rows);
    ok($n > 0 && $nb > 0, "$what: the row and its bucket's digest changed "
        . "in data.mdb") or diag("rows $n, buckets $nb");
    my $from = -s $m->{log};
    restart_mirror($m);
    ok($m->{up}, "$what: the mirror starts") or diag(slurp($m->{log}));
    is(settled(), 'Idle', "$what: synced as it was");
    is(append($t{1}, cs_entry(name => 'owner.example', services => $services,
        key => $key{owner}))->{code}, 201,
        "$what: the owner's Change-Services taken by timeline 1");
    my $state = settled();
    my $log = substr(slurp($m->{log}), $from);
    is($state, 'Idle', "$what: the mirror takes it: timeline 1 stays Idle")
        or diag($log);
    is(http('GET', "$m->{url}/reneged/1")->{code}, 404,
        "$what: no evidence against timeline 1");
    like($log, qr{index \S+/index/data\.mdb: names: owner\.example: timeline 1: the rows of its \d+ entries below SN \d+ do not give the value its name map proves.*rebuilding the index from the copies},
        "$what: the damage logged, naming the file, the table and the name")
        or diag($log);
    like($log, qr{index \S+ rebuilt from the copies}, "$what: rebuilt");
    my $sns = sns_of('owner.example');
    my $cs = http('GET', "$t{1}{url}/entry/$sns->{1}[-1]")->{body};
    like($cs, qr/^Change-Services: 1\n.*^Services: \Q$services\E$/ms,
        "$what: the answer lists the Change-Services") or diag($cs);
    return $sns;
}

my $owner = sns_of('owner.example');
my $other = sns_of('other.example');
isnt(substr(sha256('owner.example'), 0, 2),
    substr(sha256('other.example'), 0, 2), 'the two names in two buckets');

# 1. owner.example's Bind on timeline 1 -> other.example's Bind.
my @rows = map { nkey('owner.example', $_, $owner->{$_}[0]) } 1, 2;
my $sns = case('pointed at another Bind', 'smtps', $rows[0],
    nkey('owner.example', 1, $other->{1}[0]), @rows);

# 2. owner.example's Bind on timeline 1 renamed: no Bind left for it.
@rows = ((map { nkey('owner.example', 1, $_) } @{$sns->{1}}),
    nkey('owner.example', 2, $sns->{2}[0]));
(my $renamed = $rows[0]) =~ s/owner\.example/owneR.example/;
case('renamed', 'imaps', $rows[0], $renamed, @rows);

stop_daemon($m->{pid});
stop_daemon($t{$_}{pid}) for 1, 2;
done_testing();
