#!/usr/bin/perl
# The long version of t/http-limits.t: sk-timeline and sk-mirror, each with
# its default limits, under a flood that never lets up -- 3,000 sockets
# from fifty addresses, half idle and half sending a header line every
# 10 s, each made again as soon as the daemon closes it -- for 35 s.
# Every second a legitimate client (GET /status and POST /append on the
# timeline, GET /query on the mirror) must be answered within 1 s; the
# trickling sockets must be closed by request_timeout (10 s) though they
# keep sending; SIGTERM with all of it held must stop the daemon within
# 2 s.  The worst latencies are printed (diag).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use Time::HiRes qw(time sleep);
use SKTest;
use SKTimeline;
use SKMirror;
use SKLoad;

plan skip_all => 'sk-timeline or sk-mirror not built'
    unless -x $SKTimeline::TL && -x $SKMirror::MR;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');
raise_nofile();
my $nofile = `sh -c 'ulimit -n'`;
plan skip_all => "open files limited to $nofile (want 8192)"
    unless $nofile =~ /^\d+$/ && $nofile >= 8192;

my $SECS = 35;
my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'testca');
my $serial = 0;

my (%t, @tl);
for my $tid (1, 2) {
    mkdir "$d/tl$tid";
    $t{$tid} = start_timeline("$d/tl$tid", tid => $tid,
        operator_key => "$d/operator.pub", chunk_interval => 1);
    ok($t{$tid}{up}, "timeline $tid listens")
        or BAIL_OUT(slurp($t{$tid}{log}));
    is(append($t{$tid}, root_entry(cert => "$ca.crt", key => $op,
        serial => ++$serial))->{code}, 201, "timeline $tid: a root");
    push @tl, [$tid, $t{$tid}{url}, "$d/tl$tid/timeline.pub"];
}
my $m = start_mirror("$d/m", \@tl);
ok($m->{up}, 'sk-mirror listens') or BAIL_OUT(slurp($m->{log}));
ok(wait_until(sub { 2 == grep { tl_state($m, $_) eq 'Idle' } 1, 2 }, 15),
    'both timelines Idle');

sub legit {
    my ($kind, $s) = @_;
    my @r;
    if ($kind eq 'timeline') {
        push @r, timed('GET', "$s->{url}/status", undef, 10);
        push @r, timed('POST', "$s->{url}/append", { e => root_entry(
            cert => "$ca.crt", key => $op, serial => ++$serial) }, 10);
        $r[-1]{code} = 200 if $r[-1]{code} == 201;
    } else {
        push @r, timed('GET', "$s->{url}/query/x.example", undef, 10);
    }
    return @r;
}

for my $kind (qw(mirror timeline)) {
    my $s = $kind eq 'timeline' ? $t{1} : $m;
    my $idle = hold($s->{port}, 1500, mode => 'idle', reconnect => 1,
        from => [addrs(25)]);
    my $slow = hold($s->{port}, 1500, mode => 'trickle', every => 10,
        reconnect => 1, from => [addrs(25, 25)]);
    is(held($idle)->{open} + held($slow)->{open}, 3000,
        "$kind: 3,000 sockets held");
    my ($n, $late, $worst, $sum) = (0, 0, 0, 0);
    my $end = time + $SECS;
    while (time < $end) {
        my $t0 = time;
        for my $r (legit($kind, $s)) {
            $n++;
            $sum += $r->{secs};
            $worst = $r->{secs} if $r->{secs} > $worst;
            $late++ if $r->{code} != 200 || $r->{secs} >= 1;
        }
        sleep(1 - (time - $t0)) if time - $t0 < 1;
    }
    my ($hi, $hs) = (held($idle), held($slow));
    diag(sprintf "%s: %d legitimate requests in %d s beside 3,000 held "
        . "sockets: mean %.3f s, worst %.3f s; the daemon closed %d idle and "
        . "%d trickling sockets (first after %.1f s)", $kind, $n, $SECS,
        $sum / $n, $worst, $hi->{closed}, $hs->{closed}, $hs->{first});
    is($late, 0, "$kind: $n legitimate requests, each answered within 1 s");
    ok($hs->{first} >= 9.5 && $hs->{first} < 12,
        "$kind: trickling sockets closed at request_timeout, though sending")
        or diag(explain($hs));
    ok($hs->{closed} >= 3000 && $hi->{closed} >= 3000,
        "$kind: and closed again as they came back");
    is($hi->{open} + $hs->{open}, 3000, "$kind: the flood still on");

    my $t0 = time;
    kill 'TERM', $s->{pid};
    my $gone = wait_until(sub { !daemon_alive($s->{pid}) }, 40);
    my $secs = time - $t0;
    ok($gone && $secs < 2, "$kind: SIGTERM under the flood: gone within 2 s")
        or diag(sprintf '%.1f s', $secs);
    release($_) for $idle, $slow;
    stop_daemon($s->{pid});
    my $log = slurp($s->{log});
    unlike($log, qr/Sanitizer|runtime error/, "$kind: no sanitizer reports");
    my $lines = () = $log =~ /\n/g;
    ok($lines < 300, "$kind: the log stayed short ($lines lines)");
}

stop_daemon($t{2}{pid});
done_testing();
