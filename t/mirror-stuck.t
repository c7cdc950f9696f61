#!/usr/bin/perl
# A Stuck timeline is served from the mirror's last checked state, with
# its checkpoint's age (Checkpoint-Age), and the client's freshness rules
# decide what that age is worth.  Three real sk-timelines hold a Bind; one
# is stopped: the mirror marks it Stuck and still answers with its
# checkpoint and entry; `sk verify --json` shows the age and the state,
# accepts it while within T2 and fails closed once a trust file's T2 is
# shorter than the age.  Defunct is not served.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use JSON::PP;
use Test::More;
use SKTest;
use SKTimeline;
use SKMirror;

plan skip_all => 'sk-mirror or sk-timeline not built'
    unless -x $SKMirror::MR && -x $SKTimeline::TL;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'testca');
my $sk = ed25519_key($d, 'example');
my $crt = issue($d, $ca, $sk, 'example.com', "$d/example");

my (%t, @tl);
for my $tid (7, 8, 9) {
    mkdir "$d/tl$tid";
    $t{$tid} = start_timeline("$d/tl$tid", tid => $tid,
        operator_key => "$d/operator.pub");
    ok($t{$tid}{up}, "timeline $tid listens") or BAIL_OUT(slurp($t{$tid}{log}));
    push @tl, [$tid, $t{$tid}{url}, "$d/tl$tid/timeline.pub",
        "sk-timeline-$tid"];
    is(append($t{$tid}, root_entry(cert => "$ca.crt", key => $op))->{code},
        201, "timeline $tid trusts the CA");
    is(append($t{$tid}, bind_entry(name => 'example.com', key => $sk,
        chain => [$crt]))->{code}, 201, "timeline $tid: Bind example.com");
}
my $m = start_mirror("$d/m", \@tl, defunct_after => 30);
ok($m->{up}, 'sk-mirror listens') or BAIL_OUT(slurp($m->{log}));
my %keys = map { $_->[0] => [$_->[2], $_->[3]] } @tl;

sub answer {
    my $r = query($m, 'example.com');
    return { ok => 0, err => "HTTP $r->{code}" } if $r->{code} != 200;
    return check_answer($r->{body}, $m->{pub}, \%keys, 'example.com');
}
ok(wait_until(sub { my $a = answer(); $a->{ok}
    && 3 == grep { @{$a->{timelines}{$_}{entries}} } 7, 8, 9 }, 20),
    'all three timelines served') or diag(slurp($m->{log}));

stop_daemon($t{9}{pid});
ok(wait_state($m, 9, 'Stuck'), 'timeline 9 stopped: Stuck');
sleep 3;
my $a = answer();
ok($a->{ok}, 'the answer still verifies') or diag($a->{err});
my $b = $a->{timelines}{9};
is($b->{state}, 'Stuck', 'timeline 9 is listed as Stuck');
is(scalar @{$b->{entries}}, 1, '... with its entry from the last checked state');
ok(defined $b->{age} && $b->{age} >= 3,
    "... and the checkpoint's age ($b->{age} s)");
is($a->{timelines}{7}{age}, undef, 'no age line for an Idle timeline');

# The client: the age is its freshness rules' to judge.
my $trust = "$d/trust.conf";
my $tlines = join('', map { "timeline = $_->[0] $_->[2]\n" } @tl);
spew($trust, $tlines . "mirror = $m->{url} $m->{pub}\nt1 = 0\n");
my $closed = free_port();
sub verify {
    my ($tr, $tag) = @_;
    my $r = sk('verify', '--trust', $tr, '--cache', "$d/cache.$tag",
        '--connect', "127.0.0.1:$closed", '--json', 'https://example.com');
    return eval { decode_json($r->{out}) } // { raw => "$r->{out} $r->{err}" };
}
my $j = verify($trust, 'default');
is($j->{freshness}, 'answer', 'sk verify: the answer is fresh enough')
    or diag(explain($j));
is($j->{entries}, 3, '... with all three Binds');
my ($c9) = grep { $_->{tid} == 9 } @{$j->{checkpoints} // []};
is($c9->{state}, 'Stuck', '--json shows timeline 9 as Stuck');
ok($c9->{age} >= 3, "... with its checkpoint's age ($c9->{age} s)");
my ($c7) = grep { $_->{tid} == 7 } @{$j->{checkpoints} // []};
is($c7->{state}, 'Idle', '... and 7 as Idle');

# T2 of 5 s: the Idle timelines' checkpoints (polled every second, signed
# every second) are younger, the Stuck one's, once 8 s old, is not.
sleep(8 - $c9->{age}) if $c9->{age} < 8;
spew("$trust.short", $tlines . "mirror = $m->{url} $m->{pub}\nt1 = 0\nt2 = 5\n");
$j = verify("$trust.short", 'short');
is($j->{fresh}, 2, 'T2 shorter than the age: only two timelines fresh')
    or diag(explain($j));
is($j->{freshness}, 'fail-closed', '... too few: fail closed');

# Stuck past defunct_after: Defunct, no longer served.
ok(wait_state($m, 9, 'Defunct', 40), 'Defunct after defunct_after');
$a = answer();
ok($a->{ok} && !@{$a->{timelines}{9}{entries}}
    && !defined $a->{timelines}{9}{size}, 'Defunct: nothing of it served')
    or diag(explain($a));

stop_daemon($_) for $m->{pid}, $t{7}{pid}, $t{8}{pid};
done_testing();
