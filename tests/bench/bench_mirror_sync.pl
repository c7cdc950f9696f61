#!/usr/bin/perl
# bench_mirror_sync.pl -- an sk-timeline whose log holds COUNT entries (an
# Add-Root-CA, then Binds of n<i>.bench.example, made by mirror_gen and
# signed with the timeline's key), published in chunks of at most 50000;
# then a fresh sk-mirror bootstraps from /chunks and the time until it
# holds every entry is taken.  Each entry costs the mirror its timeline
# signature, a Merkle leaf, and for a Bind its SK-Signature and a chain
# check; `mirror_gen verify` runs exactly those checks in one thread over
# the same log (the reference).  Both are single-threaded per timeline.
#
#   mirror-sync   entries merged/s, ref = crypto-bound checks/s  target 0.7
#
# Environment: BUILD, COUNT (100000).

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

my $d = tmpdir();
my $ca = make_ca($d, 'testca');
my $sk = ed25519_key($d, 'sk');
my $ee = issue($d, $ca, $sk, '*.bench.example', "$d/ee");
mkdir "$d/tl";
ed25519_key("$d/tl", 'timeline');
my $r = run_cmd([$gen, 'gen', "$d/tl/timeline.key", 1, $count, $sk,
    "$ca.crt", $ee, "$d/tl/entries.log"]);
die "bench_mirror_sync: gen: $r->{err}" if $r->{rc} != 0;
# A log made offline: --repair checks it and writes the signed head a
# timeline keeps of what it signed (docs/timeline.md, "Damage").
spew("$d/tl/tl.conf", "listen = 127.0.0.1:1\ndata_dir = $d/tl\ntid = 1\n");
$r = run_cmd([$SKTimeline::TL, '--repair', '-c', "$d/tl/tl.conf"]);
die "bench_mirror_sync: --repair: $r->{out}$r->{err}" if $r->{rc} != 0;

my $t0 = time;
my $t = start_timeline("$d/tl", tid => 1, chunk_interval => 1,
    chunk_max_entries => 50000);
# It replays the whole log first: allow for it.
$t->{up} ||= wait_for_port($t->{port}, 600);
$t->{up} or die "bench_mirror_sync: sk-timeline: " . slurp($t->{log});
my $last = $count - 1;
wait_until(sub { http('GET', "$t->{url}/status")->{body}
    =~ /^Max-Published-SN: $last$/m }, 900)
    or die "bench_mirror_sync: not published: " . slurp($t->{log});
printf "timeline: %d entries published in %.1f s\n", $count, time - $t0;

$t0 = time;
my $m = start_mirror("$d/m", [[1, $t->{url}, "$d/tl/timeline.pub"]],
    poll_interval => 600, fetch_timeout_ms => 120000);
wait_until(sub {
    my $s = mirror_status($m);
    $s && $s->{timelines}[0]{entries} == $count
        && $s->{timelines}[0]{state} eq 'Idle' }, 900)
    or die "bench_mirror_sync: mirror did not catch up: " . slurp($m->{log});
my $secs = time - $t0;
my $rate = $count / $secs;

$r = run_cmd([$gen, 'verify', "$d/tl/timeline.pub", "$ca.crt",
    "$d/tl/entries.log"]);
die "bench_mirror_sync: verify: $r->{err}" if $r->{rc} != 0;
my $ref = $r->{out} + 0;
printf "mirror: %d entries merged in %.1f s\n", $count, $secs;
printf "BENCH mirror-sync %.0f entries/s ref=%.0f ratio=%.3f target=0.7\n",
    $rate, $ref, $rate / $ref;
stop_daemon($_->{pid}) for $m, $t;
