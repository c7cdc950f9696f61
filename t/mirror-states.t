#!/usr/bin/perl
# The per-timeline state machine against real sk-timelines, with short
# timeouts: Idle once caught up; a stopped
# timeline goes Stuck (with the reason), is retried with a growing
# backoff, turns Defunct after defunct_after seconds, and is Idle again
# soon after it returns, with the entries it took meanwhile; answers stop
# while fewer than two timelines are healthy.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time);
use SKTest;
use SKTimeline;
use SKMirror;

plan skip_all => 'sk-timeline or sk-mirror not built'
    unless -x $SKTimeline::TL && -x $SKMirror::MR;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'testca');
my (%t, %keys);
for my $tid (3, 4) {
    mkdir "$d/tl$tid";
    $t{$tid} = start_timeline("$d/tl$tid", tid => $tid,
        operator_key => "$d/operator.pub", chunk_interval => 1);
    ok($t{$tid}{up}, "timeline $tid listens") or BAIL_OUT(slurp($t{$tid}{log}));
    $keys{$tid} = ["$d/tl$tid/timeline.pub", "sk-timeline-$tid"];
    is(append($t{$tid}, root_entry(cert => "$ca.crt", key => $op))->{code},
        201, "timeline $tid: an entry");
}

my $m = start_mirror("$d/m", [map { [$_, $t{$_}{url}, @{$keys{$_}}] } 3, 4],
    defunct_after => 3, retry_min => 1, retry_max => 2);
ok($m->{up}, 'sk-mirror listens') or BAIL_OUT(slurp($m->{log}));
ok(wait_state($m, 3, 'Idle') && wait_state($m, 4, 'Idle'), 'both Idle');
is(query($m, 'x.example')->{code}, 200, 'two healthy timelines: answers');

my $down = time;
stop_daemon($t{4}{pid});
ok(wait_state($m, 4, 'Stuck', 5), 'stopped timeline: Stuck');
my $s = mirror_status($m)->{timelines}[1];
like($s->{reason}, qr/GET .*checkpoint.*(connect|refused)/i,
    '... the reason names the failed request');
is(query($m, 'x.example')->{code}, 503, 'one healthy timeline: 503');
ok(wait_state($m, 4, 'Defunct', 10), 'Stuck for defunct_after: Defunct');
my $took = time - $down;
ok($took >= 3, sprintf('... not before 3 s (%.1f s)', $took));
my $f = mirror_status($m)->{timelines}[1]{failures};
ok($f >= 2 && $f <= 6, "retried with backoff, not in a loop ($f failures)");

# It took an entry while the mirror could not see it.
restart_timeline($t{4});
ok($t{4}{up}, 'timeline 4 restarted');
my $away = append($t{4}, root_entry(cert => "$ca.crt", key => $op,
    serial => 2));
is($away->{code}, 201, 'an entry while the mirror was away');
my ($sn) = $away->{body} =~ /^SN: (\d+)$/m;
ok(wait_state($m, 4, 'Idle', 10), 'back: Idle');
# Past it: the Map-Root entry that ends its batch.
ok(wait_until(sub {
    mirror_status($m)->{timelines}[1]{entries} == $sn + 2 }, 10),
    '... with the entry it missed');
is(mirror_status($m)->{timelines}[1]{reason}, '', '... and no reason left');
is(query($m, 'x.example')->{code}, 200, 'answers again');

stop_daemon($m->{pid});
stop_daemon($t{$_}{pid}) for 3, 4;
done_testing();
