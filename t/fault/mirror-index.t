#!/usr/bin/perl
# sk-mirror's index damaged inside data.mdb (LMDB has no page checksums):
# a real mirror synced from two real timelines is stopped, bytes of its
# index are changed where a row lives (found by searching for the row's
# own bytes, every copy of them: LMDB keeps stale pages), and it is
# started again.  For each damage: sk-mirror --check names it (exit 1);
# then the answer for the name is never a signed answer that lacks an
# entry (a changed name key must not turn into a signed absence), never
# a 400, never the 500 of a copy that is intact; the damage is found (at
# start or at read), logged naming data.mdb, answered 503 with
# Retry-After meanwhile, and healed by a rebuild from the copies; the
# answer is then the undamaged one, and --check says ok.  The timelines
# keep name maps (they append a Map-Root entry at start), so the mirror's
# maps are damaged too: a name's key, its value, its leaf hash in the
# node above it; no answer, and no map proof, is made from them.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use Time::HiRes qw(sleep time);
use Digest::SHA qw(sha256);
use SKTest;
use SKTimeline;
use SKMirror;
use SKFault;

plan skip_all => 'sk-timeline, sk-mirror or mirror_gen not built'
    unless -x $SKTimeline::TL && -x $SKMirror::MR && -x $SKMirror::GEN;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');

# 300 entries: one full tile and a partial one, whose leaves a start
# reads back through the index.
my $COUNT = 300;
my $d = tmpdir();
my ($t, $tl, $keys) = generated_timelines($d, [1, 2], $COUNT,
    chunk_interval => 1);
my %t = %$t;
my @tl = @$tl;
my %keys = %$keys;

# Synced: the generated entries and the Map-Root entries the timelines
# appended since (each has a name map), up to their checkpoint.
sub synced {
    my ($m) = @_;
    my $s = mirror_status($m) or return 0;
    return 2 == grep { $_->{entries} > $COUNT && $_->{state} eq 'Idle'
        && $_->{checkpoint_size} == (split /\n/, SKTimeline::http('GET',
            "$t{$_->{tid}}{url}/checkpoint")->{body})[1] }
        @{$s->{timelines}};
}

# GET with the headers: {code, headers, body}.
sub get {
    my ($url) = @_;
    my $r = run_cmd(['curl', '-s', '-i', $url]);
    my ($head, $body) = split /\r\n\r\n/, $r->{out}, 2;
    my ($code) = ($head // '') =~ m{^HTTP/\S+ (\d+)};
    return { code => $code // 0, headers => $head // '', body => $body // '' };
}

# An answer's entries, "tid:sn=length;...", or undef if it does not check.
sub entries_of {
    my ($m, $body) = @_;
    my $c = check_answer($body, $m->{pub}, \%keys);
    return undef unless $c->{ok};
    return join ';', map { my $tid = $_;
        "$tid:" . join ',', map { "$_->{sn}=" . length($_->{text}) }
            @{$c->{timelines}{$tid}{entries}} } sort keys %{$c->{timelines}};
}

my $NAME = 'n7.bench.example';
my $m = start_mirror("$d/m", \@tl, poll_interval => 1,
    fetch_timeout_ms => 20000);
ok($m->{up}, 'mirror listens') or BAIL_OUT(slurp($m->{log}));
ok(wait_until(sub { synced($m) }, 120), 'mirror synced')
    or BAIL_OUT(slurp($m->{log}));
my $want = entries_of($m, get("$m->{url}/query/$NAME")->{body});
like($want // '', qr/^1:7=\d+;2:7=\d+$/, "$NAME: its entry on each timeline");

# The leaf of tl-1 SN sn, as the index holds it in that entry's row.
sub leaf_of {
    my ($sn) = @_;
    my $a = get("$m->{url}/query/n$sn.bench.example");
    my $c = check_answer($a->{body}, $m->{pub}, \%keys);
    return sha256("\0" . $c->{timelines}{1}{entries}[0]{text});
}
my ($leaf7, $leaf290) = (leaf_of(7), leaf_of(290));
my $answer7 = check_answer(get("$m->{url}/query/$NAME")->{body}, $m->{pub},
    \%keys);
is($answer7->{timelines}{1}{map}, 'present', "$NAME: proven by the map");
stop_daemon($m->{pid});

my $mdb = "$d/m/data/index/data.mdb";
my $pristine = slurp($mdb);
my $conf = "$m->{dir}/mirror.conf";

sub check_index {
    my $r = run_cmd([$SKMirror::MR, '--check', '-c', $conf]);
    return ($r->{rc}, $r->{out} . $r->{err});
}

my ($rc, $out) = check_index();
is($rc, 0, '--check: an undamaged index: exit 0') or diag($out);
like($out, qr/index\/: ok: 60\d entries/, '... and says so');

# Restore the undamaged index, then apply $edit at every offset where
# $pattern is (the live row and any stale copy of it); how many.
sub restored_and_damaged {
    my ($pattern, $edit) = @_;
    my $n = damage($mdb, $pattern, $edit, $pristine);
    unlink "$d/m/data/index/lock.mdb";
    return $n;
}

# Start on the damaged index and ask for the name until the undamaged
# answer comes back; every answer meanwhile must be that one or a 503.
sub heal {
    my ($case, $at_read) = @_;
    my $seen = length slurp($m->{log});
    restart_mirror($m);
    ok($m->{up}, "$case: the mirror starts") or diag(slurp($m->{log}));
    my (@codes, $bad, $retry, $got);
    my $until = time + 60;
    while (time < $until) {
        my $r = get("$m->{url}/query/$NAME");
        push @codes, $r->{code};
        if ($r->{code} == 503) {
            $retry ||= $r->{headers} =~ /^Retry-After: \d+/mi
                && $r->{body} =~ /rebuil/;
            sleep 0.2;
            next;
        }
        $got = $r->{code} == 200 ? entries_of($m, $r->{body}) : undef;
        if (!defined $got || $got ne $want) {
            $bad = "HTTP $r->{code}: " . ($got // substr($r->{body}, 0, 200));
            last;
        }
        last;
    }
    ok(!$bad && defined $got && $got eq $want,
        "$case: the answer lists every entry, or is a 503")
        or diag($bad // "no answer in 60 s: @codes");
    ok(!grep({ $_ == 400 } @codes), "$case: never a 400");
    my $log = substr(slurp($m->{log}), $seen);
    like($log, qr/index \S+(?:data\.mdb)?.*rebuilding the index from the copies/,
        "$case: the damage is logged") or diag($log);
    if ($at_read) {
        ok($retry, "$case: found at read: 503 with Retry-After meanwhile")
            or diag("@codes");
        like($log, qr/data\.mdb: .*\n.*index \S+ rebuilt from the copies/s,
            "$case: found at read, logged with data.mdb, rebuilt")
            or diag($log);
    }
    stop_daemon($m->{pid});
    my ($crc, $cout) = check_index();
    is($crc, 0, "$case: healed, --check says ok") or diag($cout);
}

sub case {
    my ($case, $pattern, $edit, $table, $at_read) = @_;
    ok(restored_and_damaged($pattern, $edit) > 0, "$case: its bytes found in data.mdb");
    my ($crc, $cout) = check_index();
    is($crc, 1, "$case: --check exits 1");
    like($cout, qr/index\/: table $table: row .*\n(?:.*\n)*.*differ from the copies/,
        "$case: --check names the table ($table)") or diag($cout);
    heal($case, $at_read);
}

my $nkey = "$NAME\0" . pack('Q>Q>', 1, 7);

# One byte of the name's key: the name must not become absent.
case('a name key changed', $nkey, flip(0, 0x01), 'names', 1);

# The SN in the name's key (past every entry: "no entry row" before).
case('the SN of a names row changed', $nkey,
    flip(length($NAME) + 1 + 8 + 5, 0x01), 'names', 1);

# The leaf hash in the entry's row: the copy is intact, the index is not.
case('a leaf hash changed', $leaf7, flip(0, 0x01), 'entries', 1);

# The leaf changed and the row's check (the 8 bytes after the row: the
# SHA-256 of key and row) made again to fit: only the tiles tell that
# the index, not the copy, is damaged.
case('a leaf changed, its row check made to fit', $leaf7, sub {
    my ($data, $pos) = @_;
    substr($$data, $pos, 1) ^= "\x01";
    substr($$data, $pos + 33, 8) =
        substr(sha256(substr($$data, $pos - 36, 16 + 53)), 0, 8);
}, 'entries', 1);

# The offset in the entry's row (be64 offset, be32 length, be64
# timestamp, then the leaf).
case('an offset changed', $leaf7, flip(-20 + 7, 0x01), 'entries', 1);

# The SN in the key of a row whose leaf a start reads back (past the
# last full tile): that row is missing at start.
case('a row missing (its key changed)', $leaf290, flip(-36 + 8 + 5, 0x01),
    'entries', 0);

# The map (map.leaf: space | key -> count | newest SN | chain; map.node:
# a node's two halves): the name's row on timeline 1, and its leaf hash
# where the node above it holds it.
my $key = sha256($NAME);
my $chain = sha256("\x13" . ("\0" x 32) . $leaf7);
my $value = map_value([7], [$leaf7]);
case('a map key changed', pack('Q>', 1) . $key, flip(8, 0x01), 'map.leaf',
    1);
case('a map value\'s chain changed', $chain, flip(0, 0x01), 'map.leaf', 1);
case('a node hash changed', sha256("\x10$key$value"), flip(0, 0x01),
    'map.node', 1);

stop_daemon($t{$_}{pid}) for 1, 2;
done_testing();
