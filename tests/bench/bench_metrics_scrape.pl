#!/usr/bin/perl
# bench_metrics_scrape.pl -- how long a Prometheus scrape of each daemon
# takes with NAMES (10,000) names served or configured (issue 41), against
# the same daemon with 2, measured in the same run:
#
#   metrics-scrape-timeline@N  GET /metrics of an sk-timeline holding N
#                              Binds (mirror_gen), ms, median of SCRAPES
#   metrics-scrape-mirror@N    of an sk-mirror serving it (and a small one)
#   metrics-scrape-nginx@N     of nginx with N server blocks, each with its
#                              own carrier (carrier_gen) and staple for
#                              n<i>.bench.example from that mirror: N
#                              server labels, N carrier expiries, N staple
#                              ages and served gauges
#   metrics-scrape-milter@N    of sk-milter with N TrustFile names
#
# each "ms ref=<the 2-name figure> ratio target=<50 ms / ref>": the issue's
# target is 50 ms a scrape.
#
# Environment: BUILD, NAMES (10000), SCRAPES (30).

use strict;
use warnings;
use File::Path qw(make_path);
use HTTP::Tiny;
use Time::HiRes qw(time sleep);
use SKTest;
use SKTimeline;
use SKMirror;
use NginxTest ();

my $build = $ENV{BUILD} // 'build';
my $n = $ENV{NAMES} // 10000;
my $scrapes = $ENV{SCRAPES} // 30;
my $bin = "$SKTest::ROOT/$build";
my ($gen, $cgen) = ("$bin/bench/mirror_gen", "$bin/bench/carrier_gen");
my ($mod, $skm) = ("$bin/ngx/ngx_http_sk_module.so", "$bin/sk-milter");

for my $need ($SKTimeline::TL, $SKMirror::MR, $gen, $cgen, $skm) {
    if (!-x $need) { print "bench_metrics_scrape: $need not built: skipped\n";
        exit 0 }
}
my $ua = HTTP::Tiny->new(timeout => 30, keep_alive => 0);
my $d = tmpdir();
chmod 0755, $d;
my (@pids, @nginx);
# nginx runs as a daemon of its own (not ours to reap): asked to quit,
# then killed; 10,000 servers take it a while.
END {
    stop_daemon($_) for grep { defined } reverse @pids;
    kill 'QUIT', @nginx;
    wait_until(sub { !grep { kill 0, $_ } @nginx }, 120);
    kill 'KILL', grep { kill 0, $_ } @nginx;
}

sub run_ok {
    my ($what, @cmd) = @_;
    my $r = run_cmd([@cmd]);
    die "bench_metrics_scrape: $what: $r->{out}$r->{err}" if $r->{rc} != 0;
}

# The median time of SCRAPES GETs of url, in ms (each must answer 200).
sub scrape_ms {
    my ($url) = @_;
    my @t;
    for (1 .. $scrapes) {
        my $t0 = time;
        my $r = $ua->get($url);
        push @t, (time - $t0) * 1000;
        die "bench_metrics_scrape: $url: $r->{status}\n" if $r->{status} != 200;
    }
    @t = sort { $a <=> $b } @t;
    return $t[$#t / 2];
}

sub line {
    my ($what, $ms, $ref) = @_;
    printf "BENCH metrics-scrape-%s\@%d %.2f ms ref=%.2f ratio=%.2f "
        . "target=%.2f\n", $what, $n, $ms, $ref, $ms / $ref, 50 / $ref;
}

# Timelines: 1 holds N Binds; 2 and 3 a root and one Bind each (a mirror
# answers with two timelines at least).
my %tl;
for my $t ([1, $n], [2, 2], [3, 2]) {
    my ($tid, $count) = @$t;
    my $dir = "$d/tl$tid";
    make_path($dir);
    ed25519_key($dir, 'timeline');
    run_ok("mirror_gen $tid", $gen, 'gen', "$dir/timeline.key", $tid,
        $count, $dir);
    spew("$dir/tl.conf", "listen = 127.0.0.1:1\ndata_dir = $dir\n"
        . "tid = $tid\n");
    run_ok("--repair $tid", $SKTimeline::TL, '--repair', '-c',
        "$dir/tl.conf");
    my $mp = free_port();
    $tl{$tid} = start_timeline($dir, tid => $tid, chunk_interval => 1,
        metrics_listen => "127.0.0.1:$mp");
    $tl{$tid}{up} ||= wait_for_port($tl{$tid}{port}, 60);
    die "bench_metrics_scrape: timeline $tid: " . slurp($tl{$tid}{log})
        unless $tl{$tid}{up};
    push @pids, $tl{$tid}{pid};
    $tl{$tid}{metrics} = "http://127.0.0.1:$mp/metrics";
}
line('timeline', scrape_ms($tl{1}{metrics}), scrape_ms($tl{2}{metrics}));

# Mirrors: a big one (timelines 1 and 2), a small one (2 and 3).
my %mr;
for my $m (['big', 1, 2], ['small', 2, 3]) {
    my ($name, @tids) = @$m;
    my $mp = free_port();
    $mr{$name} = start_mirror("$d/m-$name", [map { [$_, $tl{$_}{url},
        "$d/tl$_/timeline.pub"] } @tids], metrics_listen => "127.0.0.1:$mp");
    die "bench_metrics_scrape: mirror $name: " . slurp($mr{$name}{log})
        unless $mr{$name}{up};
    push @pids, $mr{$name}{pid};
    $mr{$name}{metrics} = "http://127.0.0.1:$mp/metrics";
    for my $tid (@tids) {
        wait_state($mr{$name}, $tid, 'Idle', 600)
            or die "bench_metrics_scrape: mirror $name: timeline $tid not "
            . "Idle: " . slurp($mr{$name}{log});
    }
}
line('mirror', scrape_ms($mr{big}{metrics}), scrape_ms($mr{small}{metrics}));

# nginx: N server blocks (and 2), one certificate for all (its key is what
# every carrier certifies), each server its own name, carrier and staple.
if (-f $mod && -x '/usr/sbin/nginx') {
    NginxTest::make_ca($d);
    my ($cert, $key) = NginxTest::make_cert($d, 'bench.example', 'ec',
        ['*.bench.example']);
    run_ok('sk keygen', "$bin/sk", 'keygen', '-n', 'bench.example', '-o',
        "$d/sk.key", '--no-backups-i-accept-the-risk');
    make_path("$d/carriers", "$d/scache");
    chmod 0777, "$d/scache";
    my $t0 = time;
    run_ok('carrier_gen', $cgen, "$d/sk.key", $cert, $n, "$d/carriers");
    printf "# %d carriers made in %.1f s\n", $n, time - $t0;
    spew("$d/trust.conf", join('', map { "timeline = $_ $d/tl$_/timeline.pub\n" }
        1, 2) . "mirror = $mr{big}{url} $mr{big}{pub}\n");
    my %ms;
    for my $count ($n, 2) {
        my $nd = "$d/nginx-$count";
        make_path($nd);
        chmod 0755, $nd;
        my ($port, $mport) = (free_port(), free_port());
        my $conf = "error_log $nd/error.log;\npid $nd/nginx.pid;\n"
            . "load_module $mod;\nworker_processes 1;\nevents {}\nhttp {\n"
            . join('', map { "    ${_}_temp_path $nd/$_;\n" }
                qw(client_body proxy fastcgi uwsgi scgi))
            . "    access_log off;\n"
            . "    server { listen 127.0.0.1:$mport; location = /metrics "
            . "{ sovereign_key_metrics; } }\n";
        for my $i (0 .. $count - 1) {
            $conf .= "    server { listen 127.0.0.1:$port ssl; server_name "
                . "n$i.bench.example; ssl_certificate $cert; "
                . "ssl_certificate_key $key; sovereign_key_public "
                . "$d/sk.key.pub; sovereign_key_carrier $d/carriers/n$i.pem; "
                . "sovereign_key_staple extension; sovereign_key_trust "
                . "$d/trust.conf; sovereign_key_staple_cache $d/scache; }\n";
        }
        spew("$nd/nginx.conf", "$conf}\n");
        $t0 = time;
        run_ok("nginx ($count servers)", '/usr/sbin/nginx', '-p', $nd, '-c',
            "$nd/nginx.conf");
        wait_until(sub { -s "$nd/nginx.pid" }, 600)
            or die "bench_metrics_scrape: nginx: " . slurp("$nd/error.log");
        push @nginx, slurp("$nd/nginx.pid") + 0;
        wait_for_port($mport, 60) or die "bench_metrics_scrape: nginx metrics";
        printf "# nginx with %d servers up in %.1f s\n", $count, time - $t0;
        # the staples fetched (or not): the scrape shows every name
        wait_until(sub { my $b = $ua->get("http://127.0.0.1:$mport/metrics")
            ->{content}; (() = $b =~ /^sk_nginx_staple_age_seconds\{/mg)
            >= $count }, 300);
        $ms{$count} = scrape_ms("http://127.0.0.1:$mport/metrics");
    }
    line('nginx', $ms{$n}, $ms{2});
} else {
    print "bench_metrics_scrape: no nginx or no $mod: nginx skipped\n";
}

# sk-milter: N names in its TrustFile (and 2).
my %ms;
for my $count ($n, 2) {
    my ($sport, $mport) = (free_port(), free_port());
    spew("$d/trust-$count", join('', map { "n$_.bench.example smtp\n" }
        0 .. $count - 1));
    spew("$d/milter-$count.conf", "Socket inet:$sport\@127.0.0.1\n"
        . "Name mx.bench.example\nTrustFile $d/trust-$count\nSyslog no\n"
        . "MetricsListen 127.0.0.1:$mport\n");
    push @pids, run_daemon([$skm, '-f', '-c', "$d/milter-$count.conf"],
        "$d/milter-$count.log");
    wait_for_port($mport, 30)
        or die "bench_metrics_scrape: sk-milter: " . slurp("$d/milter-$count.log");
    $ms{$count} = scrape_ms("http://127.0.0.1:$mport/metrics");
}
line('milter', $ms{$n}, $ms{2});
