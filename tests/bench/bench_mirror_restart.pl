#!/usr/bin/perl
# bench_mirror_restart.pl -- an sk-timeline of COUNT entries (mirror_gen:
# an Add-Root-CA, then Binds of n<i>.bench.example) and one of COUNT/10;
# a fresh sk-mirror syncs each; then it is restarted on its copies and
#
#   mirror-restart     seconds from exec to listening (the copies read,
#                      the index caught up), at COUNT
#   mirror-rss-entry   (RSS at COUNT - RSS at COUNT/10) / the entries
#                      between, once listening (bytes per entry), VmRSS
#                      and RssAnon (one timeline: no answers, so no
#                      queries; t/mirror-cache.t bounds the answer cache)
#
# With MR_BASE=/path/to/sk-mirror the same restarts are timed with that
# binary too, on the same copies (the copies' format is unchanged), for a
# before/after pair.  Environment: BUILD, COUNT (100000), MR_BASE.

use strict;
use warnings;
use Time::HiRes qw(time);
use SKTest;
use SKTimeline;
use SKMirror;

my $count = $ENV{COUNT} // 100000;
my $gen = "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/bench/mirror_gen';
for my $need ($SKTimeline::TL, $SKMirror::MR, $gen) {
    if (!-x $need) { print "bench_mirror_restart: $need not built: skipped\n"; exit 0 }
}

my $d = tmpdir();

sub rss {
    my ($pid) = @_;
    my $s = slurp("/proc/$pid/status");
    my ($rss) = $s =~ /^VmRSS:\s+(\d+) kB/m;
    my ($anon) = $s =~ /^RssAnon:\s+(\d+) kB/m;
    return ($rss * 1024, $anon * 1024);
}

# A timeline of n entries, synced into a mirror: the mirror's dir.
sub copy_of {
    my ($n, $tid) = @_;
    my $dir = "$d/tl$tid";
    mkdir $dir;
    ed25519_key($dir, 'timeline');
    my $r = run_cmd([$gen, 'gen', "$dir/timeline.key", $tid, $n, $dir]);
    die "gen: $r->{err}" if $r->{rc} != 0;
    spew("$dir/tl.conf", "listen = 127.0.0.1:1\ndata_dir = $dir\ntid = $tid\n");
    $r = run_cmd([$SKTimeline::TL, '--repair', '-c', "$dir/tl.conf"]);
    die "--repair: $r->{out}$r->{err}" if $r->{rc} != 0;
    my $t = start_timeline($dir, tid => $tid, chunk_interval => 1,
        chunk_max_entries => 50000);
    $t->{up} ||= wait_for_port($t->{port}, 600);
    $t->{up} or die "sk-timeline: " . slurp($t->{log});
    my $last = $n - 1;
    wait_until(sub { http('GET', "$t->{url}/status")->{body}
        =~ /^Max-Published-SN: $last$/m }, 900) or die "not published";
    my $t0 = time;
    my $m = start_mirror("$d/m$tid", [[$tid, $t->{url}, "$dir/timeline.pub"]],
        poll_interval => 600, fetch_timeout_ms => 120000);
    wait_until(sub { my $s = mirror_status($m);
        $s && $s->{timelines}[0]{entries} == $n }, 1800)
        or die "mirror did not catch up: " . slurp($m->{log});
    printf "%d entries synced in %.1f s\n", $n, time - $t0;
    stop_daemon($m->{pid});
    stop_daemon($t->{pid});
    return $m;
}

# Restart m with binary bin: seconds to listen, RSS then.
sub restart {
    my ($m, $bin) = @_;
    local $SKMirror::MR = $bin;
    my $t0 = time;
    restart_mirror($m);
    $m->{up} ||= wait_for_port($m->{port}, 600);
    my $secs = time - $t0;
    die "restart: " . slurp($m->{log}) unless $m->{up};
    my @rss = rss($m->{pid});
    stop_daemon($m->{pid});
    return ($secs, @rss);
}

# MIRRORS=DIR10,DIR100: mirror dirs (with mirror.conf and data/) of an
# earlier run, synced already: only the restarts are timed.
my ($small, $large);
if ($ENV{MIRRORS}) {
    ($small, $large) = map { my $dir = $_; my $c = slurp("$dir/mirror.conf");
        my ($port) = $c =~ /^listen = 127\.0\.0\.1:(\d+)$/m;
        { dir => $dir, port => $port, url => "http://127.0.0.1:$port",
          log => "$dir/mirror.log", conf => { map { /^(\S+) = (.*)$/ }
          grep { !/^(timeline|peer|query_cache_size) = / } split /\n/, $c },
          timelines => [map { [split / /] } $c =~ /^timeline = (.*)$/mg],
          peers => [] } } split /,/, $ENV{MIRRORS};
} else {
    $small = copy_of(int($count / 10), 1);
    $large = copy_of($count, 2);
}
my @bins = (['now', $SKMirror::MR]);
push @bins, ['base', $ENV{MR_BASE}] if $ENV{MR_BASE};
for my $b (@bins) {
    my ($name, $bin) = @$b;
    restart($large, $bin);              # warm the page cache once
    my ($s1, $r1, $a1) = restart($small, $bin);
    my ($s2, $r2, $a2) = restart($large, $bin);
    my $between = $count - int($count / 10);
    printf "BENCH mirror-restart-%s %.2f s at %d entries (%.2f s at %d)\n",
        $name, $s2, $count, $s1, int($count / 10);
    printf "BENCH mirror-rss-entry-%s %.0f B/entry (VmRSS %d MiB at %d), "
        . "anon %.0f B/entry (RssAnon %d MiB)\n", $name,
        ($r2 - $r1) / $between, $r2 / 1048576, $count,
        ($a2 - $a1) / $between, $a2 / 1048576;
}
