#!/usr/bin/perl
# bench_mirror_sync.pl -- TIMELINES sk-timelines (one per core by default),
# each holding COUNT / TIMELINES entries (an Add-Root-CA, then Binds of
# n<i>.bench.example with an RSA-2048 chain, made by mirror_gen, a few
# certificates per CA reused, and signed with that timeline's key, checked
# by `sk-timeline --repair`), published in chunks of at most 50000; then a
# fresh sk-mirror bootstraps from all of them at once (one sync thread per
# timeline) and the time until it holds every entry is taken.  Each entry
# costs the mirror its timeline signature, a Merkle leaf, and for a Bind
# its SK-Signature and a chain check; `mirror_gen verify` runs exactly
# those checks over the same logs, one thread per log, all at once (the
# reference: what the crypto allows on these cores).
#
#   mirror-sync   entries merged/s, ref = crypto-bound checks/s  target 0.7
#
# Environment: BUILD, COUNT (100000), TIMELINES (cores, at least 2).

use strict;
use warnings;
use Time::HiRes qw(time);
use SKTest;
use SKTimeline;
use SKMirror;

my $count = $ENV{COUNT} // 100000;
my $gen = "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/bench/mirror_gen';
for my $need ($SKTimeline::TL, $SKMirror::MR, $gen) {
    if (!-x $need) { print "bench_mirror_sync: $need not built: skipped\n"; exit 0 }
}

my $ntl = $ENV{TIMELINES} // do { my $n = `nproc` + 0; $n < 2 ? 2 : $n };
my $per = int($count / $ntl);
$count = $per * $ntl;
my $d = tmpdir();
my (@t, @ver);
my $t0 = time;
for my $tid (1 .. $ntl) {
    my $dir = "$d/tl$tid";
    mkdir $dir;
    ed25519_key($dir, 'timeline');
    my $r = run_cmd([$gen, 'gen', "$dir/timeline.key", $tid, $per, $dir]);
    die "bench_mirror_sync: gen: $r->{err}" if $r->{rc} != 0;
    # A log made offline: --repair checks every entry's timeline signature
    # and writes the signed head (docs/timeline.md, "Damage").
    spew("$dir/tl.conf", "listen = 127.0.0.1:1\ndata_dir = $dir\ntid = $tid\n");
    $r = run_cmd([$SKTimeline::TL, '--repair', '-c', "$dir/tl.conf"]);
    die "bench_mirror_sync: --repair: $r->{out}$r->{err}" if $r->{rc} != 0;
    push @ver, "$dir/timeline.pub", "$dir/root.crt", $dir;
}
printf "generated: %d timelines of %d entries in %.1f s\n", $ntl, $per,
    time - $t0;

$t0 = time;
for my $tid (1 .. $ntl) {
    my $dir = "$d/tl$tid";
    my $t = start_timeline($dir, tid => $tid, chunk_interval => 1,
        chunk_max_entries => 50000);
    # It may replay the whole log first: allow for it.
    $t->{up} ||= wait_for_port($t->{port}, 600);
    $t->{up} or die "bench_mirror_sync: sk-timeline: " . slurp($t->{log});
    push @t, $t;
}
# A timeline with a name map appends a Map-Root entry at start: each
# holds its checkpoint's size, at least $per.
my %size;
for my $t (@t) {
    wait_until(sub {
        $size{$t->{conf}{tid}} = my $n = (split /\n/, http('GET',
            "$t->{url}/checkpoint")->{body})[1] // 0;
        my $top = $n - 1;
        $n >= $per && http('GET', "$t->{url}/status")->{body}
            =~ /^Max-Published-SN: $top$/m }, 900)
        or die "bench_mirror_sync: not published: " . slurp($t->{log});
}
printf "timelines: %d entries published in %.1f s\n", $count, time - $t0;

$t0 = time;
my $m = start_mirror("$d/m",
    [map { [$_, $t[$_ - 1]{url}, "$d/tl$_/timeline.pub"] } 1 .. $ntl],
    poll_interval => 600, fetch_timeout_ms => 120000);
wait_until(sub {
    my $s = mirror_status($m);
    $s && $ntl == grep { $_->{entries} == $size{$_->{tid}}
        && $_->{state} eq 'Idle' } @{$s->{timelines}} }, 900)
    or die "bench_mirror_sync: mirror did not catch up: " . slurp($m->{log});
my $secs = time - $t0;
my $rate = $count / $secs;

my $r = run_cmd([$gen, 'verify', @ver]);
die "bench_mirror_sync: verify: $r->{err}" if $r->{rc} != 0;
my $ref = $r->{out} + 0;
printf "mirror: %d entries of %d timelines merged in %.1f s\n", $count,
    $ntl, $secs;
printf "BENCH mirror-sync %.0f entries/s ref=%.0f ratio=%.3f target=0.7\n",
    $rate, $ref, $rate / $ref;
print "# ref: the same entries' checks (mirror_gen verify), one thread per "
    . "timeline, $ntl timelines on " . (`nproc` + 0) . " cores\n";
stop_daemon($_->{pid}) for $m, @t;
