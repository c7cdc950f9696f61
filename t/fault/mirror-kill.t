#!/usr/bin/perl
# sk-mirror under kill -9 while it syncs: two timelines of COUNT entries
# each (made by mirror_gen, published in small chunks, so the mirror
# appends, replaces heads and commits its index many times a second) and
# the mirror killed with SIGKILL at random moments and restarted.  It
# syncs through tiles committing every 100 entries on the timeline's
# consistency proofs (tiles_commit), so a restart keeps what the killed
# one committed.  Each
# restart must succeed without repairing its index (no "rebuilding" line:
# the index is only ever behind the copy, and catches up from it), the
# sync must finish, and the answers must be those of a mirror that was
# never killed.  A prefix head damaged while the mirror is down stops
# its start, naming the file.  Then the index is damaged (garbage over data.mdb, then a
# deleted one): the mirror says so, rebuilds it from the copies, and
# answers the same again.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use Time::HiRes qw(sleep time);
use SKTest;
use SKTimeline;
use SKMirror;

plan skip_all => 'sk-timeline, sk-mirror or mirror_gen not built'
    unless -x $SKTimeline::TL && -x $SKMirror::MR && -x $SKMirror::GEN;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');

my ($COUNT, $KILLS) = (2500, 6);

my $d = tmpdir();
my ($t, $tl, $keys) = generated_timelines($d, [1, 2], $COUNT,
    chunk_interval => 1, chunk_max_entries => 100);
my %t = %$t;
my @tl = @$tl;
my %keys = %$keys;
# Each timeline holds the generated entries and the Map-Root entry it
# appended at start (it keeps a name map): its checkpoint's size.
my %size;
for my $tid (1, 2) {
    ok(wait_until(sub {
        $size{$tid} = (split /\n/, http('GET',
            "$t{$tid}{url}/checkpoint")->{body})[1] // 0;
        my $last = $size{$tid} - 1;
        $size{$tid} >= $COUNT && http('GET', "$t{$tid}{url}/status")->{body}
            =~ /^Max-Published-SN: $last$/m }, 120), "timeline $tid published");
}

sub entries {
    my ($m) = @_;
    my $s = mirror_status($m) or return (-1, -1);
    return map { $_->{entries} } sort { $a->{tid} <=> $b->{tid} }
        @{$s->{timelines}};
}

sub synced {
    my ($m) = @_;
    my $s = mirror_status($m) or return 0;
    return 2 == grep { $_->{entries} == $size{$_->{tid}}
        && $_->{state} eq 'Idle' } @{$s->{timelines}};
}

# What a query shows, without the answer's own Timestamp and Signature.
my @names = map { "n$_.bench.example" } 1, 99, 100, 101, 1234, $COUNT - 1;
push @names, 'absent.bench.example';
sub answers {
    my ($m) = @_;
    my %a;
    for my $n (@names) {
        my $r = query($m, $n);
        my $c = check_answer($r->{body}, $m->{pub}, \%keys, $n);
        return undef unless $r->{code} == 200 && $c->{ok};
        $a{$n} = join ';', map { my $tid = $_;
            "$tid:" . join ',', map { "$_->{sn}=" . length($_->{text}) }
                @{$c->{timelines}{$tid}{entries}} } sort keys %{$c->{timelines}};
    }
    return \%a;
}

# The reference: a mirror that is never killed.
my $ref = start_mirror("$d/ref", \@tl, poll_interval => 1,
    fetch_timeout_ms => 20000);
ok($ref->{up}, 'reference mirror listens') or BAIL_OUT(slurp($ref->{log}));
ok(wait_until(sub { synced($ref) }, 240), 'reference mirror synced');
my $want = answers($ref);
ok($want, 'reference answers check') or BAIL_OUT(slurp($ref->{log}));
like($want->{'n1234.bench.example'}, qr/^1:1234=\d+;2:1234=\d+$/,
    'n1234.bench.example: SN 1234 on both timelines');
is($want->{'absent.bench.example'}, '1:;2:', 'an absent name: no entries');
stop_daemon($ref->{pid});

# The storm.
my $m = start_mirror("$d/m", \@tl, poll_interval => 1, retry_min => 1,
    fetch_timeout_ms => 20000, tiles_commit => 100);
ok($m->{up}, 'mirror listens') or BAIL_OUT(slurp($m->{log}));

# Damaged while down: the prefix head of a sync under way.
ok(wait_until(sub { my ($a) = entries($m); $a > 0
    && -e "$d/m/data/tl-1/prefix" }, 120), 'a partial sync committed')
    or diag(slurp($m->{log}));
kill 'KILL', $m->{pid};
stop_daemon($m->{pid});
my $pf = "$d/m/data/tl-1/prefix";
my $good = slurp($pf);
# The first proof hash (the line after the size), one character changed:
# a fixed place, whatever the random keys made the hashes.
(my $bad = $good) =~ s/\A(\d+\n)(.)/$1 . ($2 eq 'A' ? 'B' : 'A')/e;
isnt($bad, $good, 'a proof hash changed');
spew($pf, $bad);
my $seen = length slurp($m->{log});
restart_mirror($m);
ok(!$m->{up}, 'a damaged prefix head: the mirror does not start');
like(substr(slurp($m->{log}), $seen), qr/tl-1\/prefix: the first \d+ entries are not a prefix/,
    '... naming it') or diag(substr(slurp($m->{log}), $seen));
stop_daemon($m->{pid});
spew($pf, $good);
$seen = length slurp($m->{log});
restart_mirror($m);
ok($m->{up}, 'restored: the mirror starts');
my ($kills, $ok, $partial) = (0, 1, 0);
srand($ENV{SEED} // time);
while ($kills < $KILLS && !synced($m)) {
    sleep(0.2 + rand(0.8));
    last if synced($m);
    kill 'KILL', $m->{pid};
    stop_daemon($m->{pid});
    $kills++;
    restart_mirror($m);
    $ok &&= $m->{up};
    my @n = entries($m);
    $partial++ if grep { $_ > 0 && $_ < $COUNT } @n;
    diag("kill $kills: restarted with " . join('+', @n) . " entries");
}
ok($partial, 'a restart kept what the killed mirror had committed');
ok($ok, "killed $kills times, every restart came up");
ok($kills >= 2, 'killed during the sync at least twice');
ok(wait_until(sub { synced($m) }, 240), 'the sync finished')
    or diag(slurp($m->{log}));
my $log = substr(slurp($m->{log}), $seen);
unlike($log, qr/rebuilding the index/, 'no restart rebuilt the index');
unlike($log, qr/configuration error|damaged/, 'nothing refused or damaged');
is_deeply(answers($m), $want, 'the same answers as the never-killed mirror');

# A damaged index: garbage over data.mdb.
stop_daemon($m->{pid});
my $mdb = "$d/m/data/index/data.mdb";
ok(-s $mdb, 'the index is on disk');
open my $f, '+<', $mdb or die "$mdb: $!";
binmode $f;
print $f "\xff" x 8192;
close $f;
restart_mirror($m);
ok($m->{up}, 'a damaged index: the mirror starts');
like(slurp($m->{log}), qr/index.*rebuilding the index from the copies/,
    '... saying it rebuilds the index');
ok(wait_until(sub { synced($m) }, 60), '... every entry back');
is_deeply(answers($m), $want, '... the same answers');

# A removed index: rebuilt silently from the copies, same answers.
stop_daemon($m->{pid});
system('rm', '-r', "$d/m/data/index");
restart_mirror($m);
ok($m->{up}, 'no index: the mirror starts');
ok(wait_until(sub { synced($m) }, 60), '... every entry back');
is_deeply(answers($m), $want, '... the same answers');

stop_daemon($m->{pid});
stop_daemon($t{$_}{pid}) for 1, 2;
done_testing();
