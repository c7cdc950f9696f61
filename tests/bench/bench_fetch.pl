#!/usr/bin/perl
# bench_fetch.pl -- `sk fetch` next to curl on the same small page, both
# one process per fetch: two real sk-timelines hold a Bind for
# example.com, an sk-mirror serves it, Debian's nginx with the module
# serves the page with the carrier.  Interleaved windows, medians:
#
#   fetch-cached  fetches/s with the SK decision in the local cache (no
#                 mirror asked), ref = curl's fetches/s       target 0.9
#   fetch-first   ms for a first contact (empty cache: the decision comes
#                 from the mirror), ref = curl's ms; lower is better, the
#                 target is an upper bound                   target 1.5
#
# Environment: BUILD, WINDOWS (5), WINDOW (seconds, 2), FIRSTS (15).

use strict;
use warnings;
use POSIX qw(:sys_wait_h);
use Time::HiRes qw(time);
use SKTest;
use SKTimeline ();
use SKMirror ();
use NginxTest ();
use SKSite;

my $windows = $ENV{WINDOWS} // 5;
my $window = $ENV{WINDOW} // 2;
my $firsts = $ENV{FIRSTS} // 15;

for my $need ($SKTimeline::TL, $SKMirror::MR, $SKTest::SK) {
    if (!-x $need) { print "bench_fetch: $need not built: skipped\n"; exit 0 }
}
if (my $why = NginxTest::nginx_skip()) {
    print "bench_fetch: $why: skipped\n";
    exit 0;
}
if (!has_cmd('curl')) { print "bench_fetch: no curl: skipped\n"; exit 0 }

my $ngx = NginxTest->new;
my ($d, $port) = ($ngx->dir, $ngx->port);
my $w = world($d, names => { 'example.com' => 'https' }, tids => [1, 2]);
my $ca = NginxTest::make_ca($d);
$ngx->write_conf(site($w, $d, $port, 'example.com'));
$ngx->start;

my $url = "https://example.com:$port/";
my @common = ('--cacert', $ca, '--resolve', "example.com:$port:127.0.0.1",
    '-o', '/dev/null');
my @curl = ('curl', '-s', '-f', @common, $url);
sub sk_cmd {
    my ($cache) = @_;
    return ($SKTest::SK, 'fetch', '--trust', $w->{trust}, '--cache', $cache,
        @common, $url);
}

# One run, stdout and stderr to /dev/null; dies on a failed fetch.
sub run1 {
    my @cmd = @_;
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open STDOUT, '>', '/dev/null';
        open STDERR, '>', '/dev/null';
        exec @cmd or POSIX::_exit(127);
    }
    waitpid($pid, 0);
    die "bench_fetch: @cmd: exit " . ($? >> 8) . "\n" if $? != 0;
}

# Fetches per second over one window.
sub rate {
    my @cmd = @_;
    my ($n, $t0) = (0, time);
    while (time - $t0 < $window) {
        run1(@cmd);
        $n++;
    }
    return $n / (time - $t0);
}

sub med {
    my @v = sort { $a <=> $b } @_;
    return $v[int(@v / 2)];
}

# The cache now holds the decision; within T1 no mirror is asked.
my $cache = "$d/cache";
run1(sk_cmd($cache));
run1(@curl);
my (@s, @c);
for (1 .. $windows) {
    push @c, rate(@curl);
    push @s, rate(sk_cmd($cache));
}
my ($sr, $cr) = (med(@s), med(@c));

# First contact: a new empty cache each time.
my (@sf, @cf);
for my $i (1 .. $firsts) {
    my $t0 = time;
    run1(@curl);
    push @cf, (time - $t0) * 1000;
    $t0 = time;
    run1(sk_cmd("$d/first$i"));
    push @sf, (time - $t0) * 1000;
}
my ($sm, $cm) = (med(@sf), med(@cf));

printf "%d x %ds windows, %d first contacts\n", $windows, $window, $firsts;
printf "BENCH fetch-cached %.1f fetch/s ref=%.1f ratio=%.3f target=0.9\n",
    $sr, $cr, $sr / $cr;
printf "BENCH fetch-first %.1f ms ref=%.1f ratio=%.3f target=1.5\n",
    $sm, $cm, $sm / $cm;

$ngx->stop;
stop_world($w);
