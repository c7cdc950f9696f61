#!/usr/bin/perl
# bench_mirror.pl -- two real sk-timelines holding a Bind for example.com,
# two sk-mirrors on them (one caching answers, one not), and a private
# nginx serving a file of exactly the answer's size.  The load client
# (build/bench/mirror_client: CONNS keep-alive connections, one thread
# each) runs in interleaved windows: nginx, cached, uncached, ... and the
# medians are reported:
#
#   mirror-query-cached     answers/s, ref = nginx static file   target 0.5
#   mirror-query-uncached   answers/s, ref = cached answers      (no target)
#   mirror-query-p99        p99 latency of cached answers (us),
#                           ref = nginx's p99                    target <= 4
#   mirror-query-nonce      answers/s to queries with a new nonce each (the
#                           cached answer and its trailer, one signature a
#                           query), ref = cached answers without  target 0.8
#
# Environment: BUILD, WINDOWS (5), WINDOW (seconds, 2), CONNS (16).

use strict;
use warnings;
use SKTest;
use SKTimeline;
use SKMirror;

my $windows = $ENV{WINDOWS} // 5;
my $window = $ENV{WINDOW} // 2;
my $conns = $ENV{CONNS} // 16;
my $client = "$SKTest::ROOT/" . ($ENV{BUILD} // 'build')
    . '/bench/mirror_client';

for my $need ($SKTimeline::TL, $SKMirror::MR, $client) {
    if (!-x $need) { print "bench_mirror: $need not built: skipped\n"; exit 0 }
}
if (!-x '/usr/sbin/nginx') {
    print "bench_mirror: no nginx: skipped\n";
    exit 0;
}

my $d = tmpdir();
chmod 0755, $d;
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'testca');
my $key = ed25519_key($d, 'example');
my $crt = issue($d, $ca, $key, 'example.com', "$d/example");
my (%t, %keys);
for my $tid (1, 2) {
    mkdir "$d/tl$tid";
    $t{$tid} = start_timeline("$d/tl$tid", tid => $tid,
        operator_key => "$d/operator.pub", chunk_interval => 1);
    append($t{$tid}, root_entry(cert => "$ca.crt", key => $op));
    append($t{$tid}, bind_entry(name => 'example.com', key => $key,
        chain => [$crt]));
    append($t{$tid}, cs_entry(name => 'example.com', services => 'https,smtps',
        key => $key));
}
my @tl = map { [$_, $t{$_}{url}, "$d/tl$_/timeline.pub"] } 1, 2;
# One load client asks everything: no per-client rate limit.
my $mc = start_mirror("$d/mc", \@tl, poll_interval => 600, threads => 2,
    rate_per_client => 0);
my $mu = start_mirror("$d/mu", \@tl, poll_interval => 600, threads => 2,
    rate_per_client => 0,
    query_cache => 0);
for my $m ($mc, $mu) {
    wait_until(sub { 2 == grep { tl_state($m, $_) eq 'Idle' } 1, 2 }, 20)
        or die "bench_mirror: mirror not ready: " . slurp($m->{log});
}
my $answer = query($mc, 'example.com')->{body};
my $size = length $answer;

mkdir "$d/ngx";
chmod 0755, "$d/ngx";
spew("$d/ngx/answer", 'x' x $size);
my $np = free_port();
spew("$d/ngx/nginx.conf", <<"EOF2");
worker_processes 2;
pid $d/ngx/nginx.pid;
error_log $d/ngx/error.log;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 10000000;
    sendfile on; tcp_nodelay on; open_file_cache max=16;
    client_body_temp_path $d/ngx/cb; proxy_temp_path $d/ngx/px;
    fastcgi_temp_path $d/ngx/fc; uwsgi_temp_path $d/ngx/uw;
    scgi_temp_path $d/ngx/sc;
    server {
        listen 127.0.0.1:$np;
        location / { root $d/ngx; default_type text/plain; }
    }
}
EOF2
system('/usr/sbin/nginx', '-p', "$d/ngx", '-c', "$d/ngx/nginx.conf", '-e',
    "$d/ngx/error.log") == 0 or die "bench_mirror: nginx did not start";
wait_for_port($np, 10);

sub load {
    my ($port, $path) = @_;
    my $r = run_cmd([$client, '127.0.0.1', $port, $path, $window, $conns]);
    die "bench_mirror: client on port $port$path: rc $r->{rc} $r->{out} $r->{err}"
        if $r->{rc} != 0;
    my ($rps, $p50, $p99, $bytes) = split ' ', $r->{out};
    return { rps => $rps, p50 => $p50, p99 => $p99, bytes => $bytes };
}

my (@n, @c, @u, @q);
for (1 .. $windows) {
    push @n, load($np, '/answer');
    push @c, load($mc->{port}, '/query/example.com');
    push @u, load($mu->{port}, '/query/example.com');
    push @q, load($mc->{port}, '/query/example.com?nonce={nonce}');
}
sub med {
    my @v = sort { $a <=> $b } @_;
    return $v[int(@v / 2)];
}
my ($nr, $cr, $ur, $qr) = map { my $k = $_; med(map { $_->{rps} } @$k) }
    \@n, \@c, \@u, \@q;
my ($np99, $cp99) = (med(map { $_->{p99} } @n), med(map { $_->{p99} } @c));
printf "answer: %d bytes (nginx file %d), %d connections, %d x %ds windows\n",
    $size, $n[0]{bytes}, $conns, $windows, $window;
printf "BENCH mirror-query-cached %.0f req/s ref=%.0f ratio=%.3f target=0.5\n",
    $cr, $nr, $cr / $nr;
printf "BENCH mirror-query-uncached %.0f req/s ref=%.0f ratio=%.3f "
    . "target=0.1\n", $ur, $cr, $ur / $cr;
printf "BENCH mirror-query-p99 %d us ref=%d ratio=%.3f target=4\n",
    $cp99, $np99, $cp99 / ($np99 || 1);
printf "BENCH mirror-query-nonce %.0f req/s ref=%.0f ratio=%.3f target=0.8\n",
    $qr, $cr, $qr / $cr;

kill 'QUIT', slurp("$d/ngx/nginx.pid") =~ /(\d+)/;
stop_daemon($_->{pid}) for $mc, $mu, $t{1}, $t{2};
