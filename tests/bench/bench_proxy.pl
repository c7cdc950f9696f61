#!/usr/bin/perl
# bench_proxy.pl -- `sk proxy` against no proxy, the same client (curl)
# both ways: two real sk-timelines hold a Bind for example.com, an
# sk-mirror serves it, Debian's nginx with the module serves the site
# (HTTP/2, the carrier) and nosk.test (no SK).  Interleaved runs, medians.
#
#   page-load   ms to load a page and its 20 resources (32 KiB each) from
#               the SK site, one curl (HTTP/2, parallel) per load: through
#               the proxy (checked, minted, spliced) / directly; lower is
#               better, the target an upper bound             target 1.25
#   tunnel      bytes/s of a 64 MiB download from nosk.test through the
#               blind tunnel / directly                       target 0.9
#
# Usage: bench_proxy.pl page-load|tunnel.  Environment: BUILD, ROUNDS (15
# page loads, 5 downloads).

use strict;
use warnings;
use POSIX qw(:sys_wait_h);
use Time::HiRes qw(time);
use SKTest;
use SKTimeline ();
use SKMirror ();
use NginxTest ();
use SKSite;

my $mode = shift // 'page-load';
my $rounds = $ENV{ROUNDS} // ($mode eq 'tunnel' ? 5 : 15);

for my $need ($SKTimeline::TL, $SKMirror::MR, $SKTest::SK) {
    if (!-x $need) { print "bench_proxy: $need not built: skipped\n"; exit 0 }
}
if (my $why = NginxTest::nginx_skip()) {
    print "bench_proxy: $why: skipped\n";
    exit 0;
}
if (!has_cmd('curl')) { print "bench_proxy: no curl: skipped\n"; exit 0 }

my $ngx = NginxTest->new;
my ($d, $port) = ($ngx->dir, $ngx->port);
my $w = world($d, names => { 'example.com' => 'https' }, tids => [1, 2]);
my $ca = NginxTest::make_ca($d);
my $conf = site($w, $d, $port, 'example.com', 'nosk.test');
$conf =~ s/listen 127\.0\.0\.1:$port ssl;/listen 127.0.0.1:$port ssl http2;/g;
$ngx->write_conf($conf);
$ngx->start;

# The page: 20 resources of 32 KiB; the download: 64 MiB.
my @urls = ("https://example.com:$port/");
for my $i (1 .. 20) {
    spew("$d/www-example.com/r$i.js", sprintf("/* %d */\n", $i) . ('x' x 32768));
    push @urls, "https://example.com:$port/r$i.js";
}
{
    open my $f, '>', "$d/www-nosk.test/big" or die $!;
    print $f 'y' x (1 << 20) for 1 .. 64;
    close $f;
    chmod 0644, "$d/www-nosk.test/big";
}

my $pport = free_port();
my $ppid = run_daemon([$SKTest::SK, 'proxy', '--listen', "127.0.0.1:$pport",
    '--trust', $w->{trust}, '--cache', "$d/cache", '--cacert', $ca,
    '--ca-dir', "$d/pca", '--resolve', "example.com:$port:127.0.0.1",
    '--resolve', "nosk.test:$port:127.0.0.1"], "$d/proxy.log");
wait_for_port($pport, 10) or die "sk proxy did not start: " . slurp("$d/proxy.log");
spew("$d/both.pem", slurp($ca) . slurp("$d/pca/ca.pem"));

my @resolve = ('--resolve', "example.com:$port:127.0.0.1", '--resolve',
    "nosk.test:$port:127.0.0.1");
my @via = ('-x', "http://127.0.0.1:$pport");

# One curl, stdout to /dev/null; its wall time in seconds.
sub run1 {
    my @cmd = @_;
    my $t0 = time;
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open STDOUT, '>', '/dev/null';
        exec @cmd or POSIX::_exit(127);
    }
    waitpid($pid, 0);
    die "bench_proxy: @cmd: exit " . ($? >> 8) . "\n" if $? != 0;
    return time - $t0;
}

sub med {
    my @v = sort { $a <=> $b } @_;
    return $v[int(@v / 2)];
}

if ($mode eq 'page-load') {
    my @load = ('curl', '-sSf', '--http2', '--parallel', '--parallel-max',
        6, '--cacert', "$d/both.pem", (map { ('-o', '/dev/null', $_) } @urls));
    my (@direct, @proxy);
    run1(@load, @resolve) for 1 .. 2;
    run1(@load, @via) for 1 .. 2;
    for (1 .. $rounds) {
        push @direct, 1000 * run1(@load, @resolve);
        push @proxy, 1000 * run1(@load, @via);
    }
    my ($p, $r) = (med(@proxy), med(@direct));
    printf "%d page loads each way, 21 requests of 32 KiB, HTTP/2\n", $rounds;
    printf "BENCH proxy-page-load %.1f ms ref=%.1f ratio=%.3f target=1.25\n",
        $p, $r, $p / $r;
} else {
    my @get = ('curl', '-sSf', '--cacert', $ca, '-o', '/dev/null',
        "https://nosk.test:$port/big");
    my (@direct, @proxy);
    run1(@get, @resolve);
    run1(@get, @via);
    for (1 .. $rounds) {
        push @direct, 64 / run1(@get, @resolve);
        push @proxy, 64 / run1(@get, @via);
    }
    my ($p, $r) = (med(@proxy), med(@direct));
    printf "%d downloads of 64 MiB each way (TLS, the proxy blind)\n", $rounds;
    printf "BENCH proxy-tunnel-throughput %.0f MiB/s ref=%.0f ratio=%.3f "
        . "target=0.9\n", $p, $r, $p / $r;
}

stop_daemon($ppid);
$ngx->stop;
stop_world($w);
