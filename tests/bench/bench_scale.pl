#!/usr/bin/perl
# bench_scale.pl -- how sk-timeline and sk-mirror grow with the number of
# entries (issue 15, "Benchmark"; docs/benchmarks.md, "Scale").
#
# One timeline log of the largest size is generated (mirror_gen: Binds of
# n<i>.bench.example, RSA-2048 chains, a few certificates per CA, on every
# core); each smaller size is a prefix of it.  Each size's data directory
# is checked and given its signed head by `sk-timeline --repair`, and kept
# in SK_BENCH_CACHE/scale-<sizes> so the next run starts from there.
#
# Then, size by size (ascending), on one port: the timeline of that size
# starts (and publishes its chunks), stops, and is restarted (timed); a
# fresh mirror syncs it (timed: the sync rate), stops, and is restarted
# (timed);
# VmRSS and VmHWM of both are read from /proc once each has answered; the
# query latency of existing, absent and cached names is measured; disk
# bytes are counted.  Printed, each next to the same figure at the
# smallest size (the target ratio is the absolute target over that
# reference, where the issue gives one):
#
#   scale-mirror-rss-per-name@N   RSS slope from the smallest size to N,
#                                 bytes per entry; ref = 32      target 1
#   scale-mirror-restart@N        exec to the first answered query, s;
#                                 target min(2, 5 s / ref)
#   scale-timeline-restart@N      exec to the first answered /checkpoint
#   scale-query-p99-{existing,absent,cached}@N  us, of a serving mirror
#                                 (after WARM s of queries); target 1 ms / ref
#   scale-query-p99-existing-cold@N  the same in the first WINDOW s after
#                                 the restart, reported apart: the index is
#                                 mapped in (page faults) as queries touch it
#   scale-{mirror,timeline}-disk-per-entry@N    bytes per entry
#   absence-proof-bytes@N         bytes of the big timeline's block in an
#                                 answer for an absent name (checkpoint,
#                                 last entry, its proof, the map proof);
#                                 target 2048; ref = a present name's
#                                 proof bytes (checkpoint + one entry's
#                                 Proof lines), as answers were before maps
#
# and an extrapolation to PROJECT_NAMES (200 million) names on
# PROJECT_TIMELINES (10) timelines from linear fits of the measured
# figures: the lines docs/benchmarks.md's "Scale" section takes.
#
# Environment: BUILD, SCALE_SIZES ("200000 1000000 2000000"), SK_BENCH_CACHE
# (BUILD/bench-cache), WINDOW (query seconds per kind, 3), WARM (seconds
# of queries for existing names before the p99 figures, 15), CONNS (4),
# PROJECT_NAMES, PROJECT_TIMELINES, GEN_THREADS/GEN_CAS/GEN_CERTS
# (mirror_gen).

use strict;
use warnings;
use File::Path qw(make_path remove_tree);
use File::Temp qw(tempdir);
use HTTP::Tiny;
use Time::HiRes qw(time sleep);
use SKTest;
use SKTimeline;
use SKMirror;

my $build = $ENV{BUILD} // 'build';
my @sizes = sort { $a <=> $b } split ' ',
    ($ENV{SCALE_SIZES} // '200000 1000000 2000000');
my $cache = $ENV{SK_BENCH_CACHE} // "$SKTest::ROOT/$build/bench-cache";
my $window = $ENV{WINDOW} // 3;
my $warm = $ENV{WARM} // 15;
my $conns = $ENV{CONNS} // 4;
my $proj_names = $ENV{PROJECT_NAMES} // 200e6;
my $proj_tls = $ENV{PROJECT_TIMELINES} // 10;
my $gen = "$SKTest::ROOT/$build/bench/mirror_gen";
my $client = "$SKTest::ROOT/$build/bench/mirror_client";
my $cores = `nproc` + 0;

for my $need ($SKTimeline::TL, $SKMirror::MR, $gen, $client) {
    if (!-x $need) { print "bench_scale: $need not built: skipped\n"; exit 0 }
}
die "bench_scale: SCALE_SIZES needs 2 or more sizes of 2 or more entries\n"
    if @sizes < 2 || $sizes[0] < 2;

# The data: cached, or generated and checked now.

my $set = "$cache/scale-" . join('-', @sizes);
prepare($set) unless grep({ -e "$set/$_/.complete" } @sizes, 'side')
    == @sizes + 1;
exit 0 if $ENV{SCALE_PREPARE_ONLY};

sub prepare {
    my ($dir) = @_;
    my $max = $sizes[-1];
    my $g = "$dir/gen";
    remove_tree($dir);
    make_path($g);
    ed25519_key($g, 'timeline');
    my $t0 = time;
    my $r = run_cmd([$gen, 'gen', "$g/timeline.key", 1, $max, $g,
        @sizes[0 .. $#sizes - 1]]);
    die "bench_scale: mirror_gen: $r->{err}" if $r->{rc} != 0;
    my $gsecs = time - $t0;
    my %off = $r->{out} =~ /^MARK (\d+) (\d+)$/mg;
    $off{$max} = -s "$g/entries.log";
    my $rsecs = 0;
    for my $n (@sizes) {
        my $d = "$dir/$n";
        make_path($d);
        for my $f (qw(timeline.key timeline.pub root.crt certs.log)) {
            system('cp', '-p', "$g/$f", "$d/$f") == 0
                or die "bench_scale: cp $f";
        }
        if ($n == $max) {
            rename "$g/entries.log", "$d/entries.log"
                or die "bench_scale: $g/entries.log: $!";
        } else {
            system("head -c $off{$n} '$g/entries.log' >'$d/entries.log'") == 0
                or die "bench_scale: cutting $n entries";
        }
        spew("$d/tl.conf", "listen = 127.0.0.1:1\ndata_dir = $d\ntid = 1\n");
        $t0 = time;
        $r = run_cmd([$SKTimeline::TL, '--repair', '-c', "$d/tl.conf"]);
        die "bench_scale: --repair $n: $r->{out}$r->{err}" if $r->{rc} != 0;
        $rsecs += time - $t0;
        spew("$d/.complete", '');
    }
    remove_tree($g);
    # A mirror answers only with two timelines or more: the second is a
    # small one (a root and one Bind), the same at every size.
    my $side = "$dir/side";
    make_path($side);
    ed25519_key($side, 'timeline');
    $r = run_cmd([$gen, 'gen', "$side/timeline.key", 2, 2, $side]);
    die "bench_scale: mirror_gen: $r->{err}" if $r->{rc} != 0;
    spew("$side/tl.conf", "listen = 127.0.0.1:1\ndata_dir = $side\ntid = 2\n");
    $r = run_cmd([$SKTimeline::TL, '--repair', '-c', "$side/tl.conf"]);
    die "bench_scale: --repair side: $r->{out}$r->{err}" if $r->{rc} != 0;
    spew("$side/.complete", '');
    my $all = 0;
    $all += $_ for @sizes;
    printf "generated: %d entries in %.1f s on %d cores (%.2f s per 100k);"
        . " sk-timeline --repair checked %d in %.1f s (%.2f s per 100k)\n",
        $max, $gsecs, $cores, $gsecs * 1e5 / $max, $all, $rsecs,
        $rsecs * 1e5 / $all;
}

# Measuring.

my $ua = HTTP::Tiny->new(timeout => 30, keep_alive => 0);
my $work = tempdir("$SKTest::ROOT/$build/bench/scale.XXXXXX", CLEANUP => 1);
my $port = free_port();
my $url = "http://127.0.0.1:$port";
my (%fig, $m);
my $side = start_timeline("$set/side", tid => 2, chunk_interval => 1);
$side->{up} ||= wait_for_port($side->{port}, 60);
$side->{up} or die "bench_scale: side timeline: " . slurp($side->{log});

sub proc_kb {
    my ($pid, $field) = @_;
    open my $f, '<', "/proc/$pid/status" or return 0;
    while (<$f>) { return $1 * 1024 if /^\Q$field\E:\s+(\d+) kB/ }
    return 0;
}

sub du {
    my ($dir) = @_;
    my $out = `du -sb '$dir'`;
    return (split ' ', $out)[0];
}

# Start cmd (logging to log) and time it until GET url answers 200.
sub timed_start {
    my ($cmd, $log, $probe, $limit) = @_;
    my $t0 = time;
    my $pid = run_daemon($cmd, $log);
    while (time - $t0 < $limit) {
        die "bench_scale: $cmd->[0] exited: " . slurp($log)
            unless daemon_alive($pid);
        return ($pid, time - $t0) if $ua->get($probe)->{status} == 200;
        sleep 0.005;
    }
    die "bench_scale: $cmd->[0]: no answer at $probe in $limit s\n";
}

# Bytes of timeline 1's block in the answer for an absent name, and of
# the proof a present name's answer carried before maps (checkpoint and
# one entry's Proof lines).
sub proof_bytes {
    my ($m) = @_;
    my $a = $ua->get("$m->{url}/query/a1.absent.example")->{content};
    my ($block) = $a =~ /^(Timeline: 1 .*?)^Timeline: 2 /ms;
    my $p = $ua->get("$m->{url}/query/n1.bench.example")->{content};
    my ($cp) = $p =~ /^Timeline: 1 \w+\nCheckpoint: (\d+)\n/m;
    my ($np) = $p =~ /^Timeline: 1 .*?^Entry: .*?^Proof: (\d+)$/ms;
    die "bench_scale: no block for timeline 1 in $a$p"
        unless $block && $cp && defined $np;
    return (length $block, $cp + length("Proof: $np\n") + 45 * $np);
}

sub load {
    my ($path, @range) = @_;
    return load_for($window, $path, @range);
}

sub load_for {
    my ($secs, $path, @range) = @_;
    my $r = run_cmd([$client, '127.0.0.1', $m->{port}, $path, $secs,
        $conns, @range]);
    die "bench_scale: mirror_client $path: $r->{out}$r->{err}"
        if $r->{rc} != 0;
    my ($rps, $p50, $p99) = split ' ', $r->{out};
    return $p99;
}

for my $n (@sizes) {
    my $d = "$set/$n";
    my $tconf = { dir => $d, port => $port, url => $url,
        log => "$work/tl-$n.log.txt",
        conf => { listen => "127.0.0.1:$port", data_dir => $d, tid => 1,
            chunk_interval => 1, chunk_max_entries => 50000,
            chunk_nice => 0 } };
    SKTimeline::write_conf($tconf);
    my @tcmd = ($SKTimeline::TL, '-c', "$d/tl.conf");

    # First start (it may build what it keeps).  The publisher may take
    # a core for a while (bzip2 of every chunk): it runs at nice 0, since
    # the figures wait for it to finish, and the mirror syncs meanwhile,
    # as mirrors do while a timeline publishes.
    my ($tpid) = timed_start(\@tcmd, $tconf->{log}, "$url/checkpoint", 3600);
    # A timeline with a name map appends a Map-Root entry to what it
    # holds: the tree is n entries and those.
    my $size = $n;
    my $tree = sub {
        $size = (split /\n/, $ua->get("$url/checkpoint")->{content})[1]
            // $size };

    # The mirror syncs the timeline: timed from when its status first
    # answers to when it holds all of it.  A mirror of its own at each
    # size: a timeline with a name map ends what it holds with a Map-Root
    # entry, so a smaller size's log is no longer a prefix of a larger
    # one's.  Its data is kept in the cache with the rate it synced at, so
    # a second run measures a restart and queries only (the sync of
    # millions of entries is most of a first run's time).
    my $mdir = "$set/mirror-$n";
    my $synced = "$mdir/.synced";
    $m = start_mirror($mdir, [[1, $url, "$d/timeline.pub"],
        [2, $side->{url}, "$set/side/timeline.pub"]],
        poll_interval => 1, fetch_timeout_ms => 120000,
        rate_per_client => 0);      # one load client
    my ($t0, $from, $t1);
    wait_until(sub {
        my $s = mirror_status($m) or return 0;
        my ($st) = grep { $_->{tid} == 1 } @{$s->{timelines}};
        ($t0, $from) = (time, $st->{entries}) if !defined $t0;
        return $st->{entries} == $tree->() && $st->{state} eq 'Idle' }, 7200)
        or die "bench_scale: $n: mirror did not catch up: "
            . slurp($m->{log});
    $t1 = time;
    stop_daemon($m->{pid}, 300);
    if ($from < $size - 1 || !-e $synced) {
        $fig{$n}{sync_rate} = ($size - $from) / (($t1 - $t0) || 0.001);
        spew($synced, "$fig{$n}{sync_rate}\n");
    } else {
        $fig{$n}{sync_rate} = slurp($synced) + 0;
        $fig{$n}{sync_cached} = 1;
    }
    wait_until(sub {
        my $last = $tree->() - 1;
        $ua->get("$url/status")->{content} =~ /^Max-Published-SN: $last$/m },
        3600) or die "bench_scale: $n: not published: " . slurp($tconf->{log});
    stop_daemon($tpid, 300);

    my $secs;
    ($tpid, $secs) = timed_start(\@tcmd, $tconf->{log}, "$url/checkpoint",
        3600);
    $fig{$n}{tl_restart} = $secs;
    $fig{$n}{tl_rss} = proc_kb($tpid, 'VmRSS');
    $fig{$n}{tl_hwm} = proc_kb($tpid, 'VmHWM');

    my $probe = "$m->{url}/query/n1.bench.example";
    ($m->{pid}, $secs) = timed_start([$SKMirror::MR, '-c',
        "$m->{dir}/mirror.conf"], $m->{log}, $probe, 7200);
    $fig{$n}{mr_restart} = $secs;
    $fig{$n}{mr_rss} = proc_kb($m->{pid}, 'VmRSS');
    $fig{$n}{mr_hwm} = proc_kb($m->{pid}, 'VmHWM');
    # A restarted mirror maps its index in as queries touch pages no
    # query touched before: those first seconds are reported apart, then
    # the latency of a serving mirror is measured.
    $fig{$n}{"p99_existing-cold"} = load('/query/n%lu.bench.example', $n);
    load_for($warm, '/query/n%lu.bench.example', $n) if $warm > 0;
    $fig{$n}{p99_existing} = load('/query/n%lu.bench.example', $n);
    $fig{$n}{p99_absent} = load('/query/a%lu.absent.example', 1e9);
    $fig{$n}{p99_cached} = load('/query/n1.bench.example');
    $fig{$n}{mr_rss_after} = proc_kb($m->{pid}, 'VmRSS');
    ($fig{$n}{absent_bytes}, $fig{$n}{present_bytes}) = proof_bytes($m);
    stop_daemon($m->{pid}, 300);
    stop_daemon($tpid, 300);
    $fig{$n}{mr_disk} = du("$m->{dir}/data");
    $fig{$n}{tl_disk} = du($d);
    printf "%d entries: timeline restart %.2f s, RSS %.1f MiB (peak %.1f),"
        . " disk %.0f B/entry; mirror sync %.0f entries/s%s, restart %.2f s,"
        . " RSS %.1f MiB (peak %.1f; %.1f after %d s of queries),"
        . " disk %.0f B/entry; p99 existing %d us, absent %d us,"
        . " cached %d us (existing %d us in the first %d s)\n", $n,
        $fig{$n}{tl_restart}, $fig{$n}{tl_rss} / 2**20,
        $fig{$n}{tl_hwm} / 2**20, $fig{$n}{tl_disk} / $n, $fig{$n}{sync_rate},
        $fig{$n}{sync_cached} ? ' (when cached)' : '',
        $fig{$n}{mr_restart}, $fig{$n}{mr_rss} / 2**20,
        $fig{$n}{mr_hwm} / 2**20, $fig{$n}{mr_rss_after} / 2**20,
        4 * $window + $warm, $fig{$n}{mr_disk} / $n, $fig{$n}{p99_existing},
        $fig{$n}{p99_absent}, $fig{$n}{p99_cached},
        $fig{$n}{"p99_existing-cold"}, $window;
}
stop_daemon($side->{pid}, 60);

# The figures, each next to the smallest size's.

my $s0 = $sizes[0];
my $f0 = $fig{$s0};
sub line {
    my ($name, $n, $v, $unit, $ref, $target, $fmt) = @_;
    $fmt //= '%.3f';
    printf "BENCH %s\@%d $fmt %s ref=$fmt ratio=%.3f target=%.3f\n", $name,
        $n, $v, $unit, $ref, $ref > 0 ? $v / $ref : 0, $target;
}
sub slope {
    my ($k, $n) = @_;
    return ($fig{$n}{$k} - $f0->{$k}) / ($n - $s0);
}
for my $n (@sizes[1 .. $#sizes]) {
    line('scale-mirror-rss-per-name', $n, slope('mr_rss', $n), 'bytes/entry',
        32, 1, '%.1f');
}
for my $n (@sizes) {
    line('scale-mirror-restart', $n, $fig{$n}{mr_restart}, 's',
        $f0->{mr_restart}, min(2, 5 / $f0->{mr_restart}));
}
for my $n (@sizes) {
    line('scale-timeline-restart', $n, $fig{$n}{tl_restart}, 's',
        $f0->{tl_restart}, min(2, 5 / $f0->{tl_restart}));
}
for my $k (qw(existing absent cached existing-cold)) {
    for my $n (@sizes) {
        line("scale-query-p99-$k", $n, $fig{$n}{"p99_$k"}, 'us',
            $f0->{"p99_$k"}, 1000 / ($f0->{"p99_$k"} || 1), '%d');
    }
}
for my $k (qw(mirror timeline)) {
    my $key = $k eq 'mirror' ? 'mr_disk' : 'tl_disk';
    for my $n (@sizes) {
        line("scale-$k-disk-per-entry", $n, $fig{$n}{$key} / $n,
            'bytes/entry', $f0->{$key} / $s0, 1, '%.0f');
    }
}
for my $n (@sizes) {
    line('absence-proof-bytes', $n, $fig{$n}{absent_bytes}, 'bytes',
        $fig{$n}{present_bytes}, 2048 / ($fig{$n}{present_bytes} || 1),
        '%d');
}
print "# rss-per-name: VmRSS once restarted and answering, slope from the "
    . "smallest size (target <= 32 B/entry); restart: target <= 5 s at every "
    . "size and <= 2x the smallest; p99 target <= 1 ms "
    . "($conns connections, ${window} s per kind); $cores cores\n";

sub min { return $_[0] < $_[1] ? $_[0] : $_[1] }

# Least-squares line through (size, figure): (slope, intercept).
sub fit {
    my ($k) = @_;
    my ($sx, $sy, $sxx, $sxy, $c) = (0, 0, 0, 0, scalar @sizes);
    for my $n (@sizes) {
        my $y = $fig{$n}{$k};
        $sx += $n; $sy += $y; $sxx += $n * $n; $sxy += $n * $y;
    }
    my $b = ($c * $sxy - $sx * $sy) / ($c * $sxx - $sx * $sx);
    return ($b, ($sy - $b * $sx) / $c);
}

sub at {
    my ($k, $x) = @_;
    my ($b, $a) = fit($k);
    return $a + $b * $x;
}

my $per_tl = $proj_names / $proj_tls;
my ($rb, $ra) = fit('mr_rss');
my ($hb) = fit('mr_hwm');
my ($tb) = fit('tl_rss');
my ($rsb) = fit('mr_restart');
my ($tsb) = fit('tl_restart');
my $dmb = $fig{$sizes[-1]}{mr_disk} / $sizes[-1];
my $dtb = $fig{$sizes[-1]}{tl_disk} / $sizes[-1];
my $sync = $fig{$sizes[-1]}{sync_rate};
my $gib = 2**30;
printf "# Extrapolation to %.0f million names on %d timelines (%.0f million "
    . "each), linear fits over %s entries:\n", $proj_names / 1e6, $proj_tls,
    $per_tl / 1e6, join('/', @sizes);
printf "#   mirror RAM:   %.1f B/entry -> %.1f GiB (restart peak %.1f GiB,"
    . " %.1f B/entry)\n", $rb, at('mr_rss', $proj_names) / $gib,
    at('mr_hwm', $proj_names) / $gib, $hb;
printf "#   timeline RAM: %.1f B/entry -> %.2f GiB per timeline of %.0f "
    . "million\n", $tb, at('tl_rss', $per_tl) / $gib, $per_tl / 1e6;
printf "#   disk:         mirror %.0f B/entry -> %.0f GiB; timeline %.0f "
    . "B/entry -> %.0f GiB each, %.0f GiB for all %d\n", $dmb,
    $dmb * $proj_names / $gib, $dtb, $dtb * $per_tl / $gib,
    $dtb * $proj_names / $gib, $proj_tls;
printf "#   restart:      mirror %.3f us/entry -> %.0f s; timeline %.3f "
    . "us/entry -> %.0f s\n", $rsb * 1e6, at('mr_restart', $proj_names),
    $tsb * 1e6, at('tl_restart', $per_tl);
printf "#   first sync:   %.0f entries/s (one timeline of %d) -> %.1f h;"
    . " one worker per timeline on %d cores, if it scales (mirror-sync):"
    . " %.1f h\n", $sync, $sizes[-1], $proj_names / $sync / 3600,
    min($proj_tls, $cores), $proj_names / $sync / min($proj_tls, $cores)
    / 3600;
