#!/usr/bin/perl
# sk-timeline and sk-mirror against slow and idle clients (the quick
# version; t/fault/http-load.t is the long one), for each daemon:
#  - a declared body above the limit, with Expect: 100-continue, gets 413
#    at once, never 100 Continue;
#  - the strict rules: a Content-Length with leading zeros, a %00 in the
#    path or the query, a query argument given twice are each a 400 naming
#    it (never 100 Continue), client bytes are quoted escaped in answers,
#    and nothing is stored;
#  - with the default limits, 1,000 idle and trickling connections from
#    twenty addresses leave a legitimate client (GET, and POST /append on
#    the timeline) answered within 2 s -- sk-timeline once answered none
#    of them for 88 s;
#  - SIGTERM with 1,000 connections held, or with a daemon at its
#    connection limit, exits within 2 s -- sk-mirror once took ~25 s;
#  - request_timeout closes a trickling connection that never completes
#    its request (libmicrohttpd's own timeout restarts with every byte),
#    an idle one too, and connections_per_ip refuses the connections of
#    one address past the limit at once while others are served.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);
use SKTest;
use SKTimeline;
use SKMirror;
use SKLoad;

plan skip_all => 'sk-timeline or sk-mirror not built'
    unless -x $SKTimeline::TL && -x $SKMirror::MR;
plan skip_all => 'no openssl' unless has_cmd('openssl');
raise_nofile();
my $nofile = `sh -c 'ulimit -n'`;
plan skip_all => "open files limited to $nofile (want 4096)"
    unless $nofile =~ /^\d+$/ && $nofile >= 4096;

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'testca');
my $serial = 0;

# A daemon of each kind; %conf goes into its configuration.
sub start {
    my ($kind, $name, %conf) = @_;
    mkdir "$d/$name";
    return start_timeline("$d/$name", operator_key => "$d/operator.pub",
        %conf) if $kind eq 'timeline';
    # Timelines that never answer: the mirror serves /status all the same.
    return start_mirror("$d/$name", [[1, 'http://127.0.0.1:1',
        "$d/operator.pub"], [2, 'http://127.0.0.1:1', "$d/operator.pub"]],
        %conf);
}

# A legitimate client, served within $secs; the timeline also takes an
# append.
sub served {
    my ($kind, $s, $secs, $what) = @_;
    my $r = timed('GET', "$s->{url}/status", undef, $secs + 5);
    ok($r->{code} == 200 && $r->{secs} < $secs,
        "$kind: $what: GET /status answered within $secs s")
        or diag("$r->{code} after $r->{secs} s");
    return if $kind ne 'timeline';
    $serial++;
    $r = timed('POST', "$s->{url}/append",
        { e => root_entry(cert => "$ca.crt", key => $op, serial => $serial) },
        $secs + 5);
    ok($r->{code} == 201 && $r->{secs} < $secs,
        "$kind: $what: POST /append stored within $secs s")
        or diag("$r->{code} after $r->{secs} s: $r->{body}");
}

# One request on its own connection: the whole answer.
sub ask {
    my ($s, $head, $body) = @_;
    return raw($s->{port}, "$head HTTP/1.1\r\nHost: x\r\n"
        . "Connection: close\r\n" . ($body // "\r\n"), 3);
}

sub tree_size {
    my ($s) = @_;
    my $r = timed('GET', "$s->{url}/status", undef, 5);
    return $r->{body} =~ /^Tree-Size: (\d+)$/m ? $1 : "none ($r->{code})";
}

# Requests libmicrohttpd lets by but the daemons must not read loosely:
# each once got 100 Continue, no answer, or a 2xx for something else.
sub strict {
    my ($kind, $s) = @_;
    my $tl = $kind eq 'timeline';
    my $path = $tl ? '/append' : '/query/example.com';
    if ($tl) {
        $serial++;
        is(timed('POST', "$s->{url}/append", { e => root_entry(
            cert => "$ca.crt", key => $op, serial => $serial) })->{code}, 201,
            'timeline: an entry, so SN 0 exists');
    }
    my $size = $tl ? tree_size($s) : undef;
    for my $cl ('0100000', '0070000', '00') {
        my $out = ask($s, "POST $path", "Content-Type: application/"
            . "x-www-form-urlencoded\r\nContent-Length: $cl\r\n"
            . "Expect: 100-continue\r\n\r\n");
        like($out, qr{\AHTTP/1\.1 400 .*\r\n\r\nContent-Length: "$cl" is not a decimal without sign or leading zero\n\z}s,
            "$kind: Content-Length: $cl, Expect: 100-continue: 400 at once")
            or diag($out);
        unlike($out, qr/100 Continue/, "$kind: ... and no 100 Continue");
    }
    my $out = ask($s, "POST $path", "Content-Type: application/"
        . "x-www-form-urlencoded\r\nContent-Length: 0070000\r\n\r\n"
        . 'e=' . ('x' x 69998));
    like($out, qr{\AHTTP/1\.1 400 .*Content-Length: "0070000"}s,
        "$kind: Content-Length: 0070000 and 70000 bytes: 400") or diag($out);
    my @bad = $tl
        ? (['/entry/0%00x', qr/url: contains a NUL byte/],
           ['/proof/inclusion?sn=0%00&size=1', qr/url: contains a NUL byte/],
           ['/chunks/since/0%00', qr/url: contains a NUL byte/],
           ['/proof/inclusion?sn=0&sn=5&size=1', qr/query: "sn" given twice/],
           ['/proof/inclusion?size=1&sn=0&size', qr/query: "size" given twice/],
           ['/entry/%ff%fe', qr/\Aentry: bad SN "\\xff\\xfe"\n\z/],
           ['/entry/' . ('9' x 60),
            qr/\Aentry: bad SN "9{40}\.\.\."\n\z/],
           ['/chunks/since/%22%0a', qr/\Achunks: bad SN "\\x22\\x0a"\n\z/],
           ['/tile/%ff', qr/\Atile path "\\xff": not a tile path\n\z/,
            404])
        : (['/query/example.com%00evil', qr/url: contains a NUL byte/],
           ['/query/example.com?since=1%00', qr/url: contains a NUL byte/],
           ['/query/example.com?since=1&since=x',
            qr/query: "since" given twice/],
           ['/query/example.com?since=%ff%01',
            qr/\Aquery: since "\\xff\\x01" is not a POSIX time\n\z/]);
    for my $b (@bad) {
        my $code = $b->[2] // 400;
        $out = ask($s, "GET $b->[0]");
        like($out, qr{\AHTTP/1\.1 $code .*\r\n\r\n}s,
            "$kind: GET $b->[0]: $code")
            and like((split /\r\n\r\n/, $out, 2)[1], $b->[1],
                "$kind: ... saying why") or diag($out);
    }
    ok(daemon_alive($s->{pid}), "$kind: still up");
    is(tree_size($s), $size, 'timeline: nothing stored') if $tl;
}

# SIGTERM: gone within 2 s.
sub stopped {
    my ($kind, $s, $what) = @_;
    my $t0 = time;
    kill 'TERM', $s->{pid};
    my $gone = wait_until(sub { !daemon_alive($s->{pid}) }, 40);
    my $secs = time - $t0;
    ok($gone && $secs < 2, "$kind: SIGTERM with $what: gone within 2 s")
        or diag(sprintf '%.1f s', $secs);
    stop_daemon($s->{pid});
}

for my $kind (qw(timeline mirror)) {
    my $s = start($kind, "$kind-a");
    ok($s->{up}, "$kind listens") or BAIL_OUT(slurp($s->{log}));

    my $out = raw($s->{port}, "POST /append HTTP/1.1\r\nHost: x\r\n"
        . "Content-Type: application/x-www-form-urlencoded\r\n"
        . "Content-Length: 1073741824\r\nExpect: 100-continue\r\n\r\n", 5);
    like($out, qr{\AHTTP/1\.1 413 }, "$kind: 1 GB declared, Expect: "
        . '100-continue: 413 at once') or diag($out);
    unlike($out, qr/100 Continue/, "$kind: ... and no 100 Continue");
    strict($kind, $s);

    # 50 and 25 a source address: under the default per-address limit.
    my $idle = hold($s->{port}, 500, mode => 'idle', from => [addrs(10)]);
    my $slow = hold($s->{port}, 500, mode => 'trickle', every => 1,
        from => [addrs(20, 10)]);
    is(held($idle)->{open} + held($slow)->{open}, 1000,
        "$kind: 1,000 idle and trickling connections held");
    served($kind, $s, 2, "1,000 held") for 1 .. 2;
    sleep 1;
    served($kind, $s, 2, "1,000 held, a second later");
    stopped($kind, $s, '1,000 held');
    release($_) for $idle, $slow;

    # At the connection limit, libmicrohttpd's threads stop polling the
    # listener: SIGTERM must still wake them.
    $s = start($kind, "$kind-c", connections => 200);
    $idle = hold($s->{port}, 400, mode => 'idle', from => [addrs(10)]);
    stopped($kind, $s, '400 held, 200 the limit');
    release($idle);

    # Short timeouts and a per-address limit, to see them act.
    $s = start($kind, "$kind-b", request_timeout => 2,
        connections_per_ip => 16);
    ok($s->{up}, "$kind with request_timeout 2, connections_per_ip 16");
    $slow = hold($s->{port}, 100, mode => 'trickle', every => 0.3,
        from => [addrs(10)]);
    $idle = hold($s->{port}, 100, mode => 'idle', from => [addrs(10)]);
    my $one = hold($s->{port}, 40, mode => 'idle', from => ['127.0.0.250']);
    ok(wait_until(sub { held($one)->{closed} >= 24 }, 2)
        && held($one)->{closed} == 24 && held($one)->{open} == 16,
        "$kind: 40 from one address: 24 refused at once, 16 kept")
        or diag(explain(held($one)));
    served($kind, $s, 1, 'one address at its limit');
    is(held($slow)->{closed}, 0, "$kind: no trickler closed before 2 s");
    ok(wait_until(sub { held($slow)->{closed} == 100
        && held($idle)->{closed} == 100 }, 5),
        "$kind: every trickler and idle connection closed by request_timeout");
    my ($f, $l) = @{held($slow)}{qw(first last)};
    ok($f >= 1.7 && $l < 3.5, "$kind: ... 2 s after it came, though it "
        . 'kept sending') or diag("first $f, last $l");
    served($kind, $s, 1, 'after the tricklers');
    release($_) for $slow, $idle, $one;
    stop_daemon($s->{pid});
    like(slurp($s->{log}), qr/http: closed \d+ connections that sent no whole request within 2 s \(request_timeout\)/,
        "$kind: the log says what it closed, and why");
    unlike(slurp($s->{log}), qr/Sanitizer|runtime error/,
        "$kind: no sanitizer reports");
}

# The keys are checked by -n, naming the key.
for my $x ([$SKTimeline::TL, "tid = 1\n"],
           [$SKMirror::MR, "timeline = 1 http://127.0.0.1:1 $d/operator.pub\n"])
{
    my ($bin, $extra) = @$x;
    for my $bad (["connections_per_ip = 5000\n",
                  qr/"connections_per_ip" must be at most "connections"/],
                 ["request_timeout = 0\n",
                  qr/"request_timeout" and "idle_timeout" must be within 1\.\.86400/],
                 ["connections = 0\n", qr/"connections" must be within 1\.\./])
    {
        spew("$d/bad.conf", "listen = 127.0.0.1:1\ndata_dir = $d\n$extra"
            . $bad->[0]);
        my $r = run_cmd([$bin, '-n', '-c', "$d/bad.conf"]);
        (my $what = $bad->[0]) =~ s/\n//;
        ok($r->{rc} == 78 && $r->{err} =~ $bad->[1],
            ($bin =~ m{([^/]+)$})[0] . " -n refuses $what") or diag($r->{err});
    }
}

done_testing();
