#!/usr/bin/perl
# sk register: entries made by `sk entry ... -o FILE`, submitted to two
# running sk-timelines (and one that is down); per-timeline outcome lines
# and --json, exit 0 only if every timeline stored the entry.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP;
use SKTest;
use SKTimeline;

plan skip_all => 'sk-timeline not built' unless -x $SKTimeline::TL;
plan skip_all => 'sk not built' unless -x $SKTest::SK;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'testca');
my $key = ed25519_key($d, 'example');
issue($d, $ca, $key, 'example.com', "$d/example");

my @t;
for my $tid (7, 8) {
    mkdir "$d/tl$tid";
    push @t, start_timeline("$d/tl$tid", tid => $tid,
        operator_key => "$d/operator.pub");
    ok($t[-1]{up}, "timeline $tid listens") or BAIL_OUT(slurp($t[-1]{log}));
    is(append($t[-1], root_entry(cert => "$ca.crt", key => $op))->{code}, 201,
        "timeline $tid trusts the test CA");
}
my @urls = map { $_->{url} } @t;
my $down = 'http://127.0.0.1:' . free_port();

my $r = sk('entry', 'bind', '-k', $key, '-n', 'example.com', '-s', 'https',
    '-c', "$d/example.crt", '-o', "$d/bind.e");
is($r->{rc}, 0, 'sk entry bind -o') or diag($r->{err});

$r = sk('register', '-i', "$d/bind.e", '-t', $urls[0], '-t', "$urls[1]/");
is($r->{rc}, 0, 'register with two timelines: exit 0') or diag($r->{err});
# Each append is a batch ended by a Map-Root entry: the root is SN 0, its
# Map-Root SN 1, the Bind SN 2.
is($r->{out}, "$urls[0]: 201 accepted, SN 2\n$urls[1]/: 201 accepted, SN 2\n",
    'one line per timeline, with the SN');
like(slurp("$d/tl7/entries.log"), qr/^Name: example.com$/m,
    'the entry is in the first log');
like(slurp("$d/tl8/entries.log"), qr/^TID: 8$/m, 'and in the second');

$r = sk('register', '-i', "$d/bind.e", '-t', $urls[0], '--json');
is($r->{rc}, 1, 'the same Bind again: exit 1');
my $j = eval { decode_json($r->{out}) };
ok($j, '--json parses') or diag($r->{out});
is($j->{type}, 'Bind', 'json: type');
is($j->{name}, 'example.com', 'json: name');
is($j->{timelines}[0]{status}, 403, 'json: status 403');
ok(!$j->{timelines}[0]{accepted}, 'json: not accepted');
like($j->{timelines}[0]{reason}, qr/^bind: example.com already has a Bind/,
    'json: the rule');
is($j->{accepted}, 0, 'json: accepted 0');
like($r->{err}, qr/^sk: \Q$d\E\/bind.e: accepted by 0 of 1 timelines$/,
    'stderr sums up');

$r = sk('entry', 'change-services', '-k', $key, '-n', 'example.com', '-s',
    'https,smtps', '-o', "$d/cs.e");
is($r->{rc}, 0, 'sk entry change-services -o') or diag($r->{err});
$r = sk('register', '-i', "$d/cs.e", '-t', $urls[0], '-t', $down, '-t',
    $urls[1], '--timeout', '5');
is($r->{rc}, 1, 'one timeline down: exit 1');
like($r->{out}, qr/^\Q$urls[0]\E: 201 accepted, SN 4\n\Q$down\E: unreachable: .+\n\Q$urls[1]\E: 201 accepted, SN 4\n\z/,
    'each timeline reported, the down one unreachable') or diag($r->{out});
like($r->{err}, qr/accepted by 2 of 3 timelines/, 'sums up 2 of 3');

$r = sk('register', '-i', "$d/cs.e", '-t', $urls[0]);
like($r->{out}, qr/: 403 rejected: change-services: example.com: this entry \(its SK-Signature\) was taken before: a replay$/,
    'the same Change-Services again: refused as a replay');
$r = sk('entry', 'change-services', '-k', $key, '-n', 'example.com', '-s',
    'https', '-o', "$d/cs2.e");
$r = sk('register', '-i', "$d/cs2.e", '-t', $urls[0], '--json');
$j = eval { decode_json($r->{out}) };
ok($j && $j->{timelines}[0]{accepted} && $j->{timelines}[0]{sn} == 6,
    'json: accepted, with its SN') or diag($r->{out});
is($r->{rc}, 0, 'exit 0');

# 503 names the reason too: the budget is 5, three are spent above.
$r = sk('entry', 'unbind', '-k', $key, '-n', 'example.com', '-o', "$d/ub.e");
$r = sk('register', '-i', "$d/ub.e", '-t', $urls[1]);
is($r->{rc}, 0, 'unbind registered');
like($r->{out}, qr/: 201 accepted, SN 6$/, 'unbind SN');
$r = sk('register', '-i', "$d/ub.e", '-t', $urls[1]);
like($r->{out}, qr/: 403 rejected: unbind: example.com is not bound$/,
    '403 line names the rule');

# Local errors: nothing sent.
spew("$d/bad.e", "Bind: 1\nName: x\n");
$r = sk('register', '-i', "$d/bad.e", '-t', $urls[0]);
is($r->{rc}, 1, 'malformed file: exit 1');
like($r->{err}, qr/^sk: \Q$d\E\/bad.e: /, '... naming the file');
is($r->{out}, '', '... and nothing reported as sent');
$r = sk('register', '-i', "$d/bind.e");
is($r->{rc}, 2, 'no -t: usage');
$r = sk('register', '-i', "$d/bind.e", '-t', 'ftp://x');
is($r->{rc}, 2, 'not http(s): usage');
$r = sk('register', '-i', "$d/none.e", '-t', $urls[0]);
is($r->{rc}, 1, 'missing file: exit 1');

is(http('GET', "$urls[0]/status")->{body} =~ /^Tree-Size: (\d+)$/m && $1, 8,
    'first timeline: root, bind, two change-services, each with its Map-Root');
stop_daemon($_->{pid}) for @t;
unlike(slurp($_->{log}), qr/Sanitizer|runtime error/, 'no sanitizer reports')
    for @t;

done_testing();
