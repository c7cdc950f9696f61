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
# target is 50 ms a scrape.  A scrape is timed as Prometheus sees it: the
# request sent on a new connection to the answer's last byte read (1 MiB
# reads; HTTP::Tiny's own buffering doubled nginx's figure).  For nginx
# the worker's CPU time per scrape is printed too: it does not depend on
# the load of the machine.
#
# Setup, kept short (`make bench` runs everything in 10 minutes): the
# carriers (and the CA, certificate and SK they go with) are made once
# in BUILD/bench/metrics-scrape-N/ and reused for a week, and made while
# the timelines are; the two small timelines have one CA and certificate;
# the big nginx is stopped before the small one starts (it would refresh
# staples under the reference); every daemon is stopped at once.  Each
# step's time is printed ("# ... at S s").
#
# Environment: BUILD, NAMES (10000), SCRAPES (30).

use strict;
use warnings;
use File::Path qw(make_path remove_tree);
use HTTP::Tiny;
use IO::Socket::INET;
use POSIX ();
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
my (@pids, @nginx, $maker);
my $t_start = time;
sub phase { printf "# %s at %.1f s\n", $_[0], time - $t_start }

# nginx runs as a daemon of its own (not ours to reap): stopped (TERM:
# nothing of it is kept), then killed.  Every daemon is told at once.
sub stop_nginx {
    my @p = grep { kill 0, $_ } @_;
    kill 'TERM', @p;
    wait_until(sub { !grep { kill 0, $_ } @p }, 60);
    kill 'KILL', grep { kill 0, $_ } @p;
}
END {
    if ($maker) { kill 'TERM', $maker; waitpid($maker, 0) }
    kill 'TERM', grep { defined } @pids;
    stop_nginx(@nginx);
    stop_daemon($_) for grep { defined } reverse @pids;
}

sub run_ok {
    my ($what, @cmd) = @_;
    my $r = run_cmd([@cmd]);
    die "bench_metrics_scrape: $what: $r->{out}$r->{err}" if $r->{rc} != 0;
}

# One GET of url on a new connection, the whole answer read: its status.
sub scrape1 {
    my ($url) = @_;
    my ($hp, $path) = $url =~ m{^http://([^/]+)(/.*)$} or die "url $url";
    my $s = IO::Socket::INET->new(PeerAddr => $hp, Timeout => 30)
        or die "bench_metrics_scrape: $url: $!\n";
    print $s "GET $path HTTP/1.0\r\nHost: $hp\r\n\r\n";
    my ($buf, $n) = ('', 0);
    while (($n = sysread($s, $buf, 1 << 20, length $buf)) > 0) {}
    die "bench_metrics_scrape: $url: $!\n" unless defined $n;
    my ($status) = $buf =~ m{^HTTP/1\.[01] (\d+)};
    return $status // 0;
}

# The median time of SCRAPES GETs of url, in ms (each must answer 200).
sub scrape_ms {
    my ($url) = @_;
    my @t;
    for (1 .. $scrapes) {
        my $t0 = time;
        my $status = scrape1($url);
        push @t, (time - $t0) * 1000;
        die "bench_metrics_scrape: $url: $status\n" if $status != 200;
    }
    @t = sort { $a <=> $b } @t;
    return $t[$#t / 2];
}

# CPU seconds (user + system) of a process so far.
sub cpu_s {
    my ($pid) = @_;
    my @f = split ' ', (slurp("/proc/$pid/stat") =~ s/^.*\)//sr);
    return ($f[11] + $f[12]) / POSIX::sysconf(POSIX::_SC_CLK_TCK());
}

# The carriers and what they go with, made once a week in BUILD (a
# carrier_gen newer than them, relinked with a changed libsk, makes them
# again): the CA and the
# certificate for *.bench.example (30 days), the SK, N carriers (30 days).
# Made by a child while the timelines are; fixtures() waits for it.
my $fix = "$bin/bench/metrics-scrape-$n";
my $fix_ok = -f "$fix/made" && -M "$fix/made" < 7
    && -M "$fix/made" < -M $cgen;
if (!$fix_ok && -f $mod && -x '/usr/sbin/nginx') {
    $maker = fork // die "fork: $!";
    if ($maker == 0) {
        my $rc = eval {
            my $tmp = "$fix.tmp";
            remove_tree($tmp, $fix);
            make_path("$tmp/carriers");
            NginxTest::make_ca($tmp);
            NginxTest::make_cert($tmp, 'bench.example', 'ec',
                ['*.bench.example']);
            run_ok('sk keygen', "$bin/sk", 'keygen', '-n', 'bench.example',
                '-o', "$tmp/sk.key", '--no-backups-i-accept-the-risk');
            run_ok('carrier_gen', $cgen, "$tmp/sk.key",
                "$tmp/bench.example-ec.pem", $n, "$tmp/carriers");
            spew("$tmp/made", "");
            rename $tmp, $fix or die "rename $tmp: $!";
            1;
        } ? 0 : 1;
        print STDERR $@ if $rc;
        POSIX::_exit($rc);
    }
}
sub fixtures {
    if ($maker) {
        waitpid($maker, 0);
        die "bench_metrics_scrape: making the carriers failed\n" if $?;
        $maker = undef;
        phase("$n carriers made");
    } else {
        phase("$n carriers reused from $fix");
    }
    return ("$fix/bench.example-ec.pem", "$fix/bench.example-ec.keyfile",
        "$fix/sk.key.pub", "$fix/carriers");
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
    # the small ones: one CA, one certificate (its RSA keys take seconds)
    local $ENV{GEN_CAS} = $tid == 1 ? $ENV{GEN_CAS} : 1;
    local $ENV{GEN_CERTS} = $tid == 1 ? $ENV{GEN_CERTS} : 1;
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
phase('timelines up');
line('timeline', scrape_ms($tl{1}{metrics}), scrape_ms($tl{2}{metrics}));

# Mirrors: a big one (timelines 1 and 2), a small one (2 and 3).
my %mr;
for my $m (['big', 1, 2], ['small', 2, 3]) {
    my ($name, @tids) = @$m;
    my $mp = free_port();
    $mr{$name} = start_mirror("$d/m-$name", [map { [$_, $tl{$_}{url},
        "$d/tl$_/timeline.pub"] } @tids], metrics_listen => "127.0.0.1:$mp",
        # one nginx fetching 10,000 staples at its start is one client: the
        # default share (100 a second) would pace the set-up, not the scrape
        rate_per_client => 0);
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
phase('mirrors Idle');
line('mirror', scrape_ms($mr{big}{metrics}), scrape_ms($mr{small}{metrics}));

# nginx: N server blocks (and 2), one certificate for all (its key is what
# every carrier certifies), each server its own name, carrier and staple.
if (-f $mod && -x '/usr/sbin/nginx') {
    my ($cert, $key, $skpub, $carriers) = fixtures();
    make_path("$d/scache");
    chmod 0777, "$d/scache";
    my $t0;
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
                . "$skpub; sovereign_key_carrier $carriers/n$i.pem; "
                . "sovereign_key_staple extension; sovereign_key_trust "
                . "$d/trust.conf; sovereign_key_staple_cache $d/scache; }\n";
        }
        spew("$nd/nginx.conf", "$conf}\n");
        $t0 = time;
        run_ok("nginx ($count servers)", '/usr/sbin/nginx', '-p', $nd, '-c',
            "$nd/nginx.conf");
        wait_until(sub { -s "$nd/nginx.pid" }, 600)
            or die "bench_metrics_scrape: nginx: " . slurp("$nd/error.log");
        my $master = slurp("$nd/nginx.pid") + 0;
        push @nginx, $master;
        wait_for_port($mport, 60) or die "bench_metrics_scrape: nginx metrics";
        phase("nginx with $count servers up");
        # the staples fetched (or not): the scrape shows every name
        wait_until(sub { my $b = $ua->get("http://127.0.0.1:$mport/metrics")
            ->{content}; (() = $b =~ /^sk_nginx_staple_age_seconds\{/mg)
            >= $count }, 300);
        phase("nginx with $count servers: staples held");
        my ($worker) = map { /^\s*(\d+)\s+(\d+)$/ && $2 == $master ? $1 : () }
            split /\n/, `ps -e -o pid=,ppid=`;
        my $cpu = $worker ? cpu_s($worker) : 0;
        $ms{$count} = scrape_ms("http://127.0.0.1:$mport/metrics");
        printf "# nginx with %d servers: %.2f ms of its worker's CPU a "
            . "scrape\n", $count, 1000 * (cpu_s($worker) - $cpu) / $scrapes
            if $worker;
        stop_nginx($master);
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
phase('done');
